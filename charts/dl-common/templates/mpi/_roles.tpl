{{/*
The two roles of an MPI release, launcher and workers: their settings, pod counts and ports, the program every
rank runs (the chart's, or the user's `script`: see templates/_script.tpl) and the settings of the helm test
pod (see _layout.tpl for the layout of an MPI release).
*/}}

{{/*
dl-common.mpi.settings: JSON {launcher, worker}: both roles' merged settings (dl-common.values.role), without
defaults.args when a script is set (they are then the script's arguments in the launch line, see
dl-common.mpi.roleSettings). A chart memoizes it under its own name:
  {{- define "horovod-mpi.settings" -}}{{ include "dl-common.mpi.settings" (dict "context" .) }}{{- end -}}
*/}}
{{- define "dl-common.mpi.settings" -}}
{{- $out := dict -}}
{{- range $role := list "launcher" "worker" -}}
{{- $s := include "dl-common.values.role" (dict "role" $role "context" $.context) | fromJson -}}
{{- $_ := set $out $role (include "dl-common.mpi.roleSettings" (dict "role" $role "settings" $s "context" $.context) | fromJson) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
dl-common.mpi.roleSettings: JSON of an MPI role's merged "settings" (dl-common.values.role) without
defaults.args when a script is set: they are the script's arguments in the launch line
(dl-common.mpi.program), not the launcher's launch line nor arguments of the workers' sshd. Args a
role sets itself stay (roles.launcher.args is the whole launch line; roles.worker.args is refused by
dl-common.validate.mpi).
  "launcher" (include "dl-common.mpi.roleSettings" (dict "role" "launcher" "settings" $ls "context" .) | fromJson)
*/}}
{{- define "dl-common.mpi.roleSettings" -}}
{{- $s := .settings -}}
{{- if and (include "dl-common.script.set" .) $s.args (eq (include "dl-common.values.path" (dict "role" .role "key" "args" "context" .context)) "defaults.args") -}}
{{- $s = omit $s "args" -}}
{{- end -}}
{{- toJson $s -}}
{{- end -}}

{{/*
dl-common.mpi.program: JSON list: the program every MPI rank runs (the tail of the launcher's
mpirun / horovodrun line). Without a script: "program" as given. With one: "command" (default
[python]), dl-common.script.path and defaults.args, the script's arguments (in the MPI charts they never
reach a container's args: see dl-common.mpi.roleSettings).
  {{- $program := include "dl-common.mpi.program" (dict "program" $bench "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.mpi.program" -}}
{{- if include "dl-common.script.set" . -}}
{{- $args := .context.Values.defaults.args | default list -}}
{{- toJson (concat (.command | default (list "python")) (list (include "dl-common.script.path" .)) $args) -}}
{{- else -}}
{{- toJson (.program | default list) -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.mpi.roles: JSON role -> pod count of an MPI release: {launcher: 1, worker: worker + mpi.spareWorkers}.
  {{- $roles := include "dl-common.mpi.roles" (dict "context" $) | fromJson -}}
*/}}
{{- define "dl-common.mpi.roles" -}}
{{- toJson (dict "launcher" 1 "worker" (add .context.Values.worker .context.Values.mpi.spareWorkers)) -}}
{{- end -}}

{{/*
dl-common.mpi.ports: JSON list with the sshd port (name "ssh"), for the headless Service and the pods.
  {{- $ports := include "dl-common.mpi.ports" (dict "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.mpi.ports" -}}
{{- toJson (list (dict "name" "ssh" "port" (int .context.Values.mpi.sshPort))) -}}
{{- end -}}

{{/*
dl-common.mpi.testSettings: the settings for the helm test pod (dl-common.peers.testPod): the worker's,
but when the workers run as root (sshd needs capabilities then) a restricted non-root context, since the
test only runs nslookup.
  {{- $ts := include "dl-common.mpi.testSettings" (dict "settings" $ws "context" $) | fromJson -}}
*/}}
{{- define "dl-common.mpi.testSettings" -}}
{{- $s := deepCopy .settings -}}
{{- if (include "dl-common.mpi.paths" . | fromJson).root -}}
{{- $_ := set $s "podSecurityContext" (dict "runAsNonRoot" true "runAsUser" 65534 "runAsGroup" 65534 "seccompProfile" (dict "type" "RuntimeDefault")) -}}
{{- $_ := set $s "securityContext" (dict "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "capabilities" (dict "drop" (list "ALL"))) -}}
{{- end -}}
{{- toJson $s -}}
{{- end -}}
