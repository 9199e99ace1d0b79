{{/*
deepspeed-dist.settings: JSON {launcher, worker}: both roles' merged settings (dl-common.mpi.settings: without
defaults.args when `script` is set, since they are the script's arguments).
  {{- $s := include "dl-common.values.memo" (dict "name" "deepspeed-dist.settings" "context" .) | fromJson -}}
*/}}
{{- define "deepspeed-dist.settings" -}}
{{- include "dl-common.mpi.settings" (dict "context" .) -}}
{{- end -}}

{{/*
deepspeed-dist.configPath: where every pod finds the ds_config (ds_config.json in the scripts ConfigMap).
*/}}
{{- define "deepspeed-dist.configPath" -}}
{{- printf "%s/ds_config.json" (include "dl-common.script.mountPath" (dict "context" .)) -}}
{{- end -}}

{{/*
deepspeed-dist.config: the ds_config file's text: `dsConfig` as given (a file set with --set-file; validation
checks that it is a JSON object), else deepspeed.config as indented JSON.
*/}}
{{- define "deepspeed-dist.config" -}}
{{- $file := .Values.dsConfig -}}
{{- if and (kindIs "string" $file) (trim $file) -}}
{{- $file -}}
{{- else -}}
{{- toPrettyJson (.Values.deepspeed.config | default dict) }}
{{- end -}}
{{- end -}}

{{/*
deepspeed-dist.program: JSON list: what every rank runs: deepspeed.command, else the user's `script` (python
/opt/dl-charts/script.py <defaults.args>; dl-common.mpi.program), else the chart's benchmark; then
`<deepspeed.configArg> <ds_config path>` unless configArg is empty.
*/}}
{{- define "deepspeed-dist.program" -}}
{{- $d := .Values.deepspeed -}}
{{- $program := list -}}
{{- if $d.command -}}
{{- $program = $d.command -}}
{{- else -}}
{{- $b := .Values.benchmark -}}
{{- $bench := list "python" "/opt/dl-charts/ds_bench.py" "--hidden" (toString (int $b.hidden)) "--layers" (toString (int $b.layers)) "--warmup-steps" (toString (int $b.warmupSteps)) "--steps" (toString (int $b.steps)) -}}
{{- $program = include "dl-common.mpi.program" (dict "program" $bench "context" .) | fromJsonArray -}}
{{- end -}}
{{- if $d.configArg -}}
{{- $program = concat $program (list $d.configArg (include "deepspeed-dist.configPath" .)) -}}
{{- end -}}
{{- toJson $program -}}
{{- end -}}

{{/*
deepspeed-dist.launchArgs: JSON list: the line the launcher wrapper (mpi-launcher.sh) runs.
  deepspeed: `deepspeed --hostfile /etc/mpi/hostfile --launcher openmpi --no_ssh_check --master_addr <first host>
             [--launcher_args "<deepspeed.launcherArgs>"] <deepspeed.extraArgs> --no_python <program>`
             (the wrapper has already checked every worker's sshd, and the first host's name spares DeepSpeed
             its `ssh <host> hostname -I`; --no_python: the program names its own interpreter);
  mpirun:    `mpirun --hostfile /etc/mpi/hostfile (dl-common.mpi.hostfilePath) -np <all slots> --bind-to none --map-by slot
             <deepspeed.launcherArgs> <program>`.
*/}}
{{- define "deepspeed-dist.launchArgs" -}}
{{- $d := .Values.deepspeed -}}
{{- $s := include "dl-common.values.memo" (dict "name" "deepspeed-dist.settings" "context" .) | fromJson -}}
{{- $program := include "deepspeed-dist.program" . | fromJsonArray -}}
{{- $a := list -}}
{{- if eq $d.launcher "deepspeed" -}}
{{- $groups := include "dl-common.mpi.hostGroups" (dict "launcher" $s.launcher "worker" $s.worker "context" .) | fromJsonArray -}}
{{- $first := index (include "dl-common.peers.hosts" (dict "role" (index $groups 0).role "count" 1 "context" .) | fromJsonArray) 0 -}}
{{- $a = list "deepspeed" "--hostfile" "/etc/mpi/hostfile" "--launcher" "openmpi" "--no_ssh_check" "--master_addr" $first -}}
{{- with $d.launcherArgs }}{{ $a = concat $a (list "--launcher_args" (join " " .)) }}{{ end -}}
{{- $a = concat $a ($d.extraArgs | default list) (list "--no_python") -}}
{{- else -}}
{{- $np := include "dl-common.mpi.np" (dict "launcher" $s.launcher "worker" $s.worker "context" .) -}}
{{- $a = concat (list "mpirun" "--hostfile" (include "dl-common.mpi.hostfilePath" (dict "launcher" $s.launcher "context" .)) "-np" $np "--bind-to" "none" "--map-by" "slot") ($d.launcherArgs | default list) -}}
{{- end -}}
{{- toJson (concat $a $program) -}}
{{- end -}}

{{/*
deepspeed-dist.jobs: JSON {launcher, worker}: the dl-common.job.indexed arguments of both roles (shared by the
Job templates and validation, so both see the same env). Every pod gets PYTHONUNBUFFERED=1 (rank output reaches
the launcher's log line by line) and DEEPSPEED_CONFIG_FILE (the ds_config's path), and the annotation
dl-charts.io/ds-config-sha256: part of the pod template, so `helm upgrade` with another ds_config is refused while
the release's Jobs exist, as for another script.
  {{- $jobs := include "dl-common.values.memo" (dict "name" "deepspeed-dist.jobs" "context" .) | fromJson -}}
*/}}
{{- define "deepspeed-dist.jobs" -}}
{{- $s := include "dl-common.values.memo" (dict "name" "deepspeed-dist.settings" "context" .) | fromJson -}}
{{- $roles := include "dl-common.mpi.roles" (dict "context" .) | fromJson -}}
{{- $ports := include "dl-common.mpi.ports" (dict "context" .) | fromJsonArray -}}
{{- $scripts := include "dl-common.script.volume" (dict "context" .) | fromJson -}}
{{- $scriptsMount := include "dl-common.script.volumeMount" (dict "context" .) | fromJson -}}
{{- $dsEnv := list (dict "name" "PYTHONUNBUFFERED" "value" "1") (dict "name" "DEEPSPEED_CONFIG_FILE" "value" (include "deepspeed-dist.configPath" .)) -}}
{{- $out := dict -}}
{{- range $role := list "launcher" "worker" -}}
{{- $rs := index $s $role -}}
{{- $job := dict
  "role" $role
  "count" (index $roles $role)
  "settings" $rs
  "roles" $roles
  "env" (concat (include "dl-common.mpi.env" (dict "role" $role "launcher" $s.launcher "worker" $s.worker "context" $) | fromJsonArray) $dsEnv)
  "ports" $ports
  "volumes" (append (include "dl-common.mpi.volumes" (dict "settings" $rs "context" $) | fromYamlArray) $scripts)
  "volumeMounts" (append (include "dl-common.mpi.volumeMounts" (dict "settings" $rs "context" $) | fromYamlArray) $scriptsMount)
  "initContainers" (include "dl-common.mpi.initContainers" (dict "role" $role "settings" $rs "launcher" $s.launcher "worker" $s.worker "context" $) | fromYamlArray)
  "podAnnotations" (merge (dict "dl-charts.io/ds-config-sha256" (sha256sum (include "deepspeed-dist.config" $))) (include "dl-common.script.podAnnotations" (dict "context" $) | fromJson)) -}}
{{- if eq $role "launcher" -}}
{{- $_ := set $job "command" (include "dl-common.mpi.launcherCommand" (dict "context" $) | fromJsonArray) -}}
{{- $_ := set $job "args" (include "deepspeed-dist.launchArgs" $ | fromJsonArray) -}}
{{- $_ := set $job "waitFor" (include "dl-common.mpi.launcherWaitFor" (dict "context" $) | fromJson) -}}
{{- else -}}
{{- $_ := set $job "command" (include "dl-common.mpi.workerCommand" (dict "context" $) | fromJsonArray) -}}
{{- $_ := set $job "watch" (dict "launcher" 1) -}}
{{- end -}}
{{- $_ := set $out $role $job -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
