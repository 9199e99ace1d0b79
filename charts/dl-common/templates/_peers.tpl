{{/*
dl-common.peers.domain: the DNS suffix every pod of the release shares, "<service>.<namespace>.svc"
(the headless Service is named after the release; the cluster domain is left to the pod's resolver
search list, never hard-coded).
  {{ include "dl-common.peers.domain" (dict "context" $) }}  -> train.default.svc
*/}}
{{- define "dl-common.peers.domain" -}}
{{- printf "%s.%s.svc" (include "dl-common.names.fullname" .) .context.Release.Namespace -}}
{{- end -}}

{{/*
dl-common.peers.host: the full DNS name of pod "index" of a role's Indexed Job,
"<fullname>-<role>-<index>.<service>.<namespace>.svc".
  {{ include "dl-common.peers.host" (dict "role" "worker" "index" 0 "context" $) }}
*/}}
{{- define "dl-common.peers.host" -}}
{{- printf "%s-%d.%s" (include "dl-common.names.component" (dict "component" .role "context" .context)) (int .index) (include "dl-common.peers.domain" .) -}}
{{- end -}}

{{/*
dl-common.peers.hosts: JSON list of the full DNS names of all "count" pods of a role, each with
":<port>" appended when "port" is given.
  {{- $workers := include "dl-common.peers.hosts" (dict "role" "worker" "count" 4 "port" 2222 "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.peers.hosts" -}}
{{- $job := include "dl-common.names.component" (dict "component" .role "context" .context) -}}
{{- $domain := include "dl-common.peers.domain" . -}}
{{- $suffix := ternary "" (printf ":%d" (int .port)) (kindIs "invalid" .port) -}}
{{- /* Written as JSON directly: Sprig's append copies the list on each call, quadratic at 1000 workers. */ -}}
[{{- range $i := until (int .count) -}}{{ if $i }},{{ end }}{{ printf "%s-%d.%s%s" $job $i $domain $suffix | toJson }}{{- end -}}]
{{- end -}}

{{/*
dl-common.peers.groups: the compact peer list the wait and watchdog scripts expand at run time,
"<job>:<count> <job>:<count>", one entry per role of "roles" (a dict role -> pod count; roles with
count 0 are skipped). The rendered object stays the same size whatever the worker count.
  {{ include "dl-common.peers.groups" (dict "roles" (dict "worker" 4 "ps" 2) "context" $) }}  -> train-ps:2 train-worker:4
*/}}
{{- define "dl-common.peers.groups" -}}
{{- $groups := list -}}
{{- range $role, $count := .roles -}}
{{- if gt (int $count) 0 -}}
{{- $groups = append $groups (printf "%s:%d" (include "dl-common.names.component" (dict "component" $role "context" $.context)) (int $count)) -}}
{{- end -}}
{{- end -}}
{{- join " " $groups -}}
{{- end -}}

{{/*
dl-common.peers.total: the number of pods of a release, the sum of "roles" (role -> count).
  {{ include "dl-common.peers.total" (dict "roles" (dict "worker" 4 "ps" 2)) }}  -> 6
*/}}
{{- define "dl-common.peers.total" -}}
{{- $total := 0 -}}
{{- range $role, $count := .roles -}}
{{- $total = add $total (int $count) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
dl-common.peers.waitEnv: the environment of the wait script (internal; see dl-common.peers.waitContainer).
*/}}
{{- define "dl-common.peers.waitEnv" -}}
- name: DL_PEER_GROUPS
  value: {{ include "dl-common.peers.groups" . | quote }}
- name: DL_PEER_DOMAIN
  value: {{ include "dl-common.peers.domain" . | quote }}
- name: DL_PEER_TIMEOUT
  value: {{ .timeout | int | quote }}
- name: DL_PEER_INTERVAL
  value: {{ .context.Values.peerWait.intervalSeconds | int | quote }}
- name: DL_RELEASE
  value: {{ .context.Release.Name | quote }}
{{- end -}}

{{/*
dl-common.peers.waitIn: where a pod waits until every pod of "roles" (role -> count) resolves in DNS: "main" (the
main container runs the wait before its program, dl-common.peers.inlineWait: the program starts the moment the last
peer resolves, where an init container's exit waits for the kubelet's next look at the pod, about a second), "init"
(dl-common.peers.waitContainer: peerWait.initContainer is set, or the role runs its image's own entrypoint, which no
wrapper can go before), or "" (peerWait.enabled is false, or "roles" holds no pod). "settings" is the role's.
  {{- if eq (include "dl-common.peers.waitIn" (dict "roles" $roles "settings" $s "context" $)) "main" }}...{{ end }}
*/}}
{{- define "dl-common.peers.waitIn" -}}
{{- $pw := .context.Values.peerWait -}}
{{- if and $pw.enabled (gt (int (include "dl-common.peers.total" .)) 0) -}}
{{- ternary "init" "main" (or $pw.initContainer (.settings | default dict).imageEntrypoint | default false) -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.peers.inlineWait: the wait (dl-common.peers.waitScript) as the main container runs it before its program,
in a subshell so that its own exits end only the wait, when dl-common.peers.waitIn says "main"; else nothing. Its
environment comes from dl-common.pod.env (dl-common.peers.waitEnv). Composed into the entrypoint wrapper by
dl-common.pod.command.
*/}}
{{- define "dl-common.peers.inlineWait" -}}
{{- if eq (include "dl-common.peers.waitIn" .) "main" -}}
(
{{ include "dl-common.peers.waitScript" . }}
) || exit 1
{{- end -}}
{{- end -}}

{{/*
dl-common.peers.waitContainer: a bounded, logged init container that waits until every pod of "roles"
(role -> count) resolves in DNS, then lets the main container start; it fails the pod with a clear message
after .Values.peerWait.timeoutSeconds. Image, interval and resources come from .Values.peerWait; the
container securityContext from the role "settings". Renders one list item when dl-common.peers.waitIn says
"init", else nothing.
  initContainers:
    {{- include "dl-common.peers.waitContainer" (dict "roles" (dict "worker" 4) "settings" $s "context" $) | nindent 4 }}
*/}}
{{- define "dl-common.peers.waitContainer" -}}
{{- $pw := .context.Values.peerWait -}}
{{- $image := $pw.image | default dict -}}
{{- if eq (include "dl-common.peers.waitIn" .) "init" -}}
- name: peer-wait
  image: {{ include "dl-common.pod.image" (dict "image" $image "context" .context) | quote }}
  imagePullPolicy: {{ $image.pullPolicy | default "IfNotPresent" }}
  command: ["/bin/sh", "-c"]
  args:
    - |
      {{- include "dl-common.peers.waitScript" . | nindent 6 }}
  env:
    {{- include "dl-common.peers.waitEnv" (dict "roles" .roles "timeout" $pw.timeoutSeconds "context" .context) | nindent 4 }}
  resources:
    {{- include "dl-common.values.merge" (dict "override" $pw.resources) | fromJson | toYaml | nindent 4 }}
  {{- with .settings.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
{{- end -}}

{{/*
dl-common.peers.testPod: the `helm test` hook Pod: checks that every pod of "roles" (role -> count)
resolves (run it while the job is running; finished pods leave DNS). Uses the peerWait image with
.Values.tests.timeoutSeconds, and the pod/container security contexts of the "settings" given
(usually the worker's). Renders nothing when .Values.tests.enabled is false.
  {{ include "dl-common.peers.testPod" (dict "roles" (include "mychart.roles" . | fromJson) "settings" $s "context" $) }}
*/}}
{{- define "dl-common.peers.testPod" -}}
{{- $ctx := .context -}}
{{- if $ctx.Values.tests.enabled -}}
{{- $pw := $ctx.Values.peerWait -}}
{{- $image := $pw.image | default dict -}}
apiVersion: v1
kind: Pod
metadata:
  name: {{ include "dl-common.names.component" (dict "component" "test-peers" "context" $ctx) }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "test" "context" $ctx) | nindent 4 }}
  annotations:
    helm.sh/hook: test
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  enableServiceLinks: false
  {{- with .settings.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with include "dl-common.pod.pullSecrets" (dict "secrets" .settings.imagePullSecrets "context" $ctx) }}
  imagePullSecrets:
    {{- . | nindent 4 }}
  {{- end }}
  containers:
    - name: test-peers
      image: {{ include "dl-common.pod.image" (dict "image" $image "context" .context) | quote }}
      imagePullPolicy: {{ $image.pullPolicy | default "IfNotPresent" }}
      command: ["/bin/sh", "-c"]
      args:
        - |
          {{- include "dl-common.peers.waitScript" . | nindent 10 }}
      env:
        {{- include "dl-common.peers.waitEnv" (dict "roles" .roles "timeout" $ctx.Values.tests.timeoutSeconds "context" $ctx) | nindent 8 }}
      resources:
        {{- include "dl-common.values.merge" (dict "override" $pw.resources) | fromJson | toYaml | nindent 8 }}
      {{- with .settings.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
{{- end -}}
