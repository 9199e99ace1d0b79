{{/*
mxnet-dist.roles: role -> pod count of this release (the scheduler is always 1), as JSON.
  {{- $roles := include "mxnet-dist.roles" . | fromJson -}}
*/}}
{{- define "mxnet-dist.roles" -}}
{{- toJson (dict "scheduler" 1 "server" (int .Values.server) "worker" (int .Values.worker)) -}}
{{- end -}}

{{/*
mxnet-dist.env: the ps-lite (DMLC_*) wiring of a role's pods, as a YAML list. DMLC_USE_KUBERNETES=1 makes
the scheduler bind to all interfaces instead of its DNS name; workers get DMLC_WORKER_ID from their index.
  {{ include "mxnet-dist.env" (dict "role" "worker" "context" $) }}
*/}}
{{- define "mxnet-dist.env" -}}
{{- $v := .context.Values -}}
- name: DMLC_ROLE
  value: {{ .role }}
- name: DMLC_PS_ROOT_URI
  value: {{ include "dl-common.peers.host" (dict "role" "scheduler" "index" 0 "context" .context) | quote }}
- name: DMLC_PS_ROOT_PORT
  value: {{ $v.port | int | quote }}
- name: DMLC_NUM_SERVER
  value: {{ $v.server | int | quote }}
- name: DMLC_NUM_WORKER
  value: {{ $v.worker | int | quote }}
- name: DMLC_USE_KUBERNETES
  value: "1"
{{- if eq .role "worker" }}
- name: DMLC_WORKER_ID
  value: "$(DL_TASK_INDEX)"
{{- end }}
{{- end -}}

{{/*
mxnet-dist.job: the arguments of dl-common.job.indexed for one role, as JSON (shared by the role's Job
template and validation.yaml). Scheduler and servers run under the watchdog, watching the workers. Every
role runs python with the benchmark and its flags, or with the user's `script` (dl-common.script.program):
MXNet's ps-lite makes a process the scheduler, a server or a worker from DMLC_ROLE.
  {{- $job := include "dl-common.values.memo" (dict "name" "mxnet-dist.job" "role" "server" "context" $) | fromJson -}}
*/}}
{{- define "mxnet-dist.job" -}}
{{- $ctx := .context -}}
{{- $v := $ctx.Values -}}
{{- $roles := include "mxnet-dist.roles" $ctx | fromJson -}}
{{- $s := include "dl-common.values.role" (dict "role" .role "context" $ctx) | fromJson -}}
{{- $b := $v.benchmark -}}
{{- $args := list "/opt/dl-charts/bench_mx.py" "--kvstore" $v.kvstore "--steps" (toString (int $b.steps)) "--warmup-steps" (toString (int $b.warmupSteps)) "--batch-size" (toString (int $b.batchSize)) "--image-size" (toString (int $b.imageSize)) -}}
{{- $program := include "dl-common.script.program" (dict "command" (list "python") "args" $args "context" $ctx) | fromJson -}}
{{- $fullname := include "dl-common.names.fullname" (dict "context" $ctx) -}}
{{- $job := dict
  "role" .role
  "count" (index $roles .role)
  "settings" $s
  "roles" $roles
  "env" (include "mxnet-dist.env" (dict "role" .role "context" $ctx) | fromYamlArray)
  "command" $program.command
  "args" $program.args
  "waitFor" (dict "scheduler" 1)
  "volumes" (list
    (include "dl-common.script.volume" (dict "context" $ctx) | fromJson)
    (dict "name" "hostfile" "configMap" (dict "name" (printf "%s-hostfile" $fullname))))
  "volumeMounts" (list
    (include "dl-common.script.volumeMount" (dict "context" $ctx) | fromJson)
    (dict "name" "hostfile" "mountPath" "/etc/dl-charts" "readOnly" true))
  "podAnnotations" (include "dl-common.script.podAnnotations" (dict "context" $ctx) | fromJson)
-}}
{{- if eq .role "scheduler" -}}
{{- $_ := set $job "ports" (list (dict "name" "ps-root" "port" (int $v.port))) -}}
{{- end -}}
{{- if ne .role "worker" -}}
{{- $_ := set $job "watch" (dict "worker" (int $v.worker)) -}}
{{- end -}}
{{- toJson $job -}}
{{- end -}}
