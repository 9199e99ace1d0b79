{{/*
jax-dist.roles: role -> pod count of this release, as JSON.
  {{- $roles := include "jax-dist.roles" . | fromJson -}}
*/}}
{{- define "jax-dist.roles" -}}
{{- toJson (dict "worker" (int .Values.worker)) -}}
{{- end -}}

{{/*
jax-dist.env: the JAX wiring of a worker pod, as a YAML list. The names are Kubeflow Trainer's JAX runtime's, so
programs written for it run unchanged:
- JAX_COORDINATOR_ADDRESS: host:port of the coordinator, which process 0 runs (worker 0 through the headless
  Service); jax.distributed.initialize reads it itself. JAX_COORDINATOR_PORT: its port alone;
- JAX_NUM_PROCESSES: one process per pod, so the worker count; JAX_PROCESS_ID: the pod's completion index;
- JAX_LOCAL_DEVICE_IDS: the local devices of the pod's process, 0..n-1 for the n GPUs the pod gets
  (dl-common.resources.gpu "procs": gpu.count for whole devices, 1 for an amount such as HAMi nvidia.com/gpumem or
  for no GPU). jax.distributed.initialize reads it as local_device_ids, so the process uses exactly the GPUs of its
  pod, and with all four set it skips JAX's cluster auto-detection (whose Kubernetes method needs a service
  account that may list pods). Left out above 64 GPUs per pod, more than any node has: JAX then uses every GPU
  the pod sees, the same ones;
- without GPUs, JAX_PLATFORMS=cpu (a CUDA build of JAX then does not look for GPUs) and
  JAX_CPU_COLLECTIVES_IMPLEMENTATION=gloo (JAX's cross-process collectives on CPU; JAX 0.12 has it as default,
  older releases had none). Both only when the role's env does not set them: they are defaults, not wiring;
- DL_HEARTBEAT_TIMEOUT_SECONDS: heartbeatTimeoutSeconds, for the program's jax.distributed.initialize.
  {{- $env := include "jax-dist.env" (dict "settings" $s "context" $) | fromYamlArray -}}
*/}}
{{- define "jax-dist.env" -}}
{{- $v := .context.Values -}}
{{- $coordinator := include "dl-common.peers.host" (dict "role" "worker" "index" 0 "context" .context) -}}
{{- $gpu := include "dl-common.resources.gpu" (dict "settings" .settings) | fromJson -}}
{{- $ids := list -}}
{{- if le (int $gpu.procs) 64 -}}
{{- range $i := until (int $gpu.procs) -}}{{- $ids = append $ids (toString $i) -}}{{- end -}}
{{- end -}}
{{- $userNames := dict -}}
{{- range (.settings.env | default list) -}}{{- $_ := set $userNames (toString .name) true -}}{{- end -}}
- name: JAX_COORDINATOR_ADDRESS
  value: {{ printf "%s:%d" $coordinator (int $v.port) | quote }}
- name: JAX_COORDINATOR_PORT
  value: {{ int $v.port | quote }}
- name: JAX_NUM_PROCESSES
  value: {{ int $v.worker | quote }}
- name: JAX_PROCESS_ID
  value: "$(DL_TASK_INDEX)"
{{- with $ids }}
- name: JAX_LOCAL_DEVICE_IDS
  value: {{ join "," . | quote }}
{{- end }}
{{- if eq (int $gpu.count) 0 }}
{{- if not (hasKey $userNames "JAX_PLATFORMS") }}
- name: JAX_PLATFORMS
  value: cpu
{{- end }}
{{- if not (hasKey $userNames "JAX_CPU_COLLECTIVES_IMPLEMENTATION") }}
- name: JAX_CPU_COLLECTIVES_IMPLEMENTATION
  value: gloo
{{- end }}
{{- end }}
{{- if not (kindIs "invalid" $v.heartbeatTimeoutSeconds) }}
- name: DL_HEARTBEAT_TIMEOUT_SECONDS
  value: {{ $v.heartbeatTimeoutSeconds | int | quote }}
{{- end }}
{{- end -}}

{{/*
jax-dist.job: everything dl-common.job.indexed needs for the worker role, as a dict (shared by the Job template
and validation, so both see the same env). The program is python with the benchmark and its flags, or with the
user's `script` (dl-common.script.program). Every process waits for worker 0's name: the coordinator runs there.
  {{- $job := include "dl-common.values.memo" (dict "name" "jax-dist.job" "context" .) | fromJson -}}
*/}}
{{- define "jax-dist.job" -}}
{{- $s := include "dl-common.values.role" (dict "role" "worker" "context" .) | fromJson -}}
{{- $b := .Values.benchmark -}}
{{- $args := list "/opt/dl-charts/bench_jax.py" "--steps" (toString (int $b.steps)) "--warmup-steps" (toString (int $b.warmupSteps)) "--batch-size" (toString (int $b.batchSize)) "--features" (toString (int $b.features)) "--hidden" (toString (int $b.hidden)) "--learning-rate" (toString $b.learningRate) -}}
{{- $program := include "dl-common.script.program" (dict "command" (list "python") "args" $args "context" .) | fromJson -}}
{{- toJson (dict
  "role" "worker"
  "count" (int .Values.worker)
  "settings" $s
  "roles" (include "jax-dist.roles" . | fromJson)
  "env" (include "jax-dist.env" (dict "settings" $s "context" .) | fromYamlArray)
  "ports" (list (dict "name" "coordinator" "port" (int .Values.port)))
  "command" $program.command
  "args" $program.args
  "waitFor" (dict "worker" 1)
  "volumes" (list (include "dl-common.script.volume" (dict "context" .) | fromJson))
  "volumeMounts" (list (include "dl-common.script.volumeMount" (dict "context" .) | fromJson))
  "podAnnotations" (include "dl-common.script.podAnnotations" (dict "context" .) | fromJson)
) -}}
{{- end -}}
