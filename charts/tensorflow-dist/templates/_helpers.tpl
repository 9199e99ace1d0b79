{{/*
tensorflow-dist.roles: role -> pod count for the roles present in this release (count > 0), as JSON.
  {{- $roles := include "tensorflow-dist.roles" . | fromJson -}}
*/}}
{{- define "tensorflow-dist.roles" -}}
{{- $roles := dict "worker" (int .Values.worker) -}}
{{- range $role := list "chief" "ps" "evaluator" -}}
{{- if gt (int (index $.Values $role)) 0 -}}
{{- $_ := set $roles $role (int (index $.Values $role)) -}}
{{- end -}}
{{- end -}}
{{- toJson $roles -}}
{{- end -}}

{{/*
tensorflow-dist.strategy: the effective strategy: .Values.strategy, or for "auto" parameter-server when
ps > 0 and multi-worker-mirrored otherwise.
  {{ include "tensorflow-dist.strategy" . }}
*/}}
{{- define "tensorflow-dist.strategy" -}}
{{- if ne .Values.strategy "auto" -}}
{{- .Values.strategy -}}
{{- else if gt (int .Values.ps) 0 -}}
parameter-server
{{- else -}}
multi-worker-mirrored
{{- end -}}
{{- end -}}

{{/*
tensorflow-dist.clusterSpec: the "cluster" object of TF_CONFIG (Kubeflow layout): every role present
-> its "<host>:<port>" list; absent roles are absent. JSON.
  {{- $cluster := include "tensorflow-dist.clusterSpec" . | fromJson -}}
*/}}
{{- define "tensorflow-dist.clusterSpec" -}}
{{- $cluster := dict -}}
{{- range $role, $count := (include "tensorflow-dist.roles" . | fromJson) -}}
{{- $_ := set $cluster $role (include "dl-common.peers.hosts" (dict "role" $role "count" $count "port" $.Values.port "context" $) | fromJsonArray) -}}
{{- end -}}
{{- toJson $cluster -}}
{{- end -}}

{{/*
tensorflow-dist.driver: the role whose end ends the job, as JSON role -> count: the chief when there is
one (TFJob semantics), else the workers.
  {{- $driver := include "tensorflow-dist.driver" . | fromJson -}}
*/}}
{{- define "tensorflow-dist.driver" -}}
{{- if gt (int .Values.chief) 0 -}}
{{- toJson (dict "chief" 1) -}}
{{- else -}}
{{- toJson (dict "worker" (int .Values.worker)) -}}
{{- end -}}
{{- end -}}

{{/*
tensorflow-dist.env: the pod env of a role: DL_CLUSTER_DIR, where the cluster ConfigMap is mounted. TF_CONFIG
itself is not in the pod object (it grows with the worker count): tensorflow-dist.entrypoint composes it at
container start. YAML list.
  {{ include "tensorflow-dist.env" (dict "role" "worker" "context" $) }}
*/}}
{{- define "tensorflow-dist.env" -}}
- {{ include "dl-common.cluster.env" (dict "context" .context) }}
{{- end -}}

{{/*
tensorflow-dist.clusterFile: the name of the file in the cluster ConfigMap (dl-common.cluster.configMap)
that holds tensorflow-dist.clusterSpec.
*/}}
{{- define "tensorflow-dist.clusterFile" -}}
cluster.json
{{- end -}}

{{/*
tensorflow-dist.entrypoint: the "entrypoint" of a role's Job (dl-common.pod.command): POSIX sh that, when
the container starts, composes
  TF_CONFIG={"cluster":<$DL_CLUSTER_DIR/cluster.json>,"task":{"type":"<role>","index":$DL_TASK_INDEX},"environment":"cloud"}
and exports it, so the framework reads TF_CONFIG from its environment as before; with legacyFlags it also
appends --ps_hosts (when ps > 0) and --worker_hosts, comma-joined from the same file (its layout is ours:
compact JSON, host names without '"' or ']'). It logs the task, the size, and the value when short. A
value over Linux's limit for one environment string (128 KiB, MAX_ARG_STRLEN) could not reach the
program: the script says so and fails. JSON dict {script, sets}.
  "entrypoint" (include "tensorflow-dist.entrypoint" (dict "role" "worker" "context" $) | fromJson)
*/}}
{{- define "tensorflow-dist.entrypoint" -}}
{{- toJson (dict "script" (include "tensorflow-dist.entrypointScript" .) "sets" (list "TF_CONFIG")) -}}
{{- end -}}
{{- define "tensorflow-dist.entrypointScript" -}}
{{- $file := printf "$DL_CLUSTER_DIR/%s" (include "tensorflow-dist.clusterFile" .) -}}
cluster=$(cat "{{ $file }}") || { echo "tf-config: ERROR: cannot read {{ $file }} (ConfigMap {{ include "dl-common.names.component" (dict "component" "cluster" "context" .context) }})" >&2; exit 1; }
TF_CONFIG="{\"cluster\":$cluster,\"task\":{\"type\":\"{{ .role }}\",\"index\":$DL_TASK_INDEX},\"environment\":\"cloud\"}"
export TF_CONFIG
if [ "${#TF_CONFIG}" -gt 131071 ]; then
  echo "tf-config: ERROR: TF_CONFIG is ${#TF_CONFIG} bytes, over Linux's limit of 131072 bytes for one environment variable, so TensorFlow could not receive it. Run fewer tasks, or shorten the host names (a shorter release name or fullnameOverride, a shorter namespace)." >&2
  exit 1
fi
echo "tf-config: TF_CONFIG of task {{ .role }} $DL_TASK_INDEX composed from {{ $file }} (${#TF_CONFIG} bytes)"
if [ "${#TF_CONFIG}" -le 4096 ]; then echo "tf-config: TF_CONFIG=$TF_CONFIG"; fi
{{- if .context.Values.legacyFlags }}
hosts() { sed -n "s/.*\"$1\":\[\([^]]*\)\].*/\1/p" "{{ $file }}" | tr -d '"'; }
{{- if gt (int .context.Values.ps) 0 }}
set -- "$@" "--ps_hosts=$(hosts ps)"
{{- end }}
set -- "$@" "--worker_hosts=$(hosts worker)"
{{- end }}
{{- end -}}

{{/*
tensorflow-dist.legacyArgs: the TF1 / inovex / tf_cnn_benchmarks flags of a role when legacyFlags is on
that do not grow with the worker count: --job_name --task_index. --ps_hosts and --worker_hosts follow them,
appended at container start by tensorflow-dist.entrypoint. JSON list.
  {{- $flags := include "tensorflow-dist.legacyArgs" (dict "role" "worker" "context" $) | fromJsonArray -}}
*/}}
{{- define "tensorflow-dist.legacyArgs" -}}
{{- $args := list -}}
{{- if .context.Values.legacyFlags -}}
{{- $args = append $args (printf "--job_name=%s" .role) -}}
{{- $args = append $args "--task_index=$(DL_TASK_INDEX)" -}}
{{- end -}}
{{- toJson $args -}}
{{- end -}}

{{/*
tensorflow-dist.job: the arguments of dl-common.job.indexed for one role, as JSON (shared by the role's
Job template and validation.yaml). The program is `python` with the benchmark and its flags, or with the
user's `script` (dl-common.script.program); the legacy flags follow either.
  {{- $job := include "dl-common.values.memo" (dict "name" "tensorflow-dist.job" "role" "ps" "context" $) | fromJson -}}
*/}}
{{- define "tensorflow-dist.job" -}}
{{- $ctx := .context -}}
{{- $v := $ctx.Values -}}
{{- $role := .role -}}
{{- $roles := include "tensorflow-dist.roles" $ctx | fromJson -}}
{{- $driver := include "tensorflow-dist.driver" $ctx | fromJson -}}
{{- $s := include "dl-common.values.role" (dict "role" $role "context" $ctx) | fromJson -}}
{{- $b := $v.benchmark -}}
{{- $args := list "/opt/dl-charts/bench_tf.py" "--strategy" (include "tensorflow-dist.strategy" $ctx) "--steps" (toString (int $b.steps)) "--warmup-steps" (toString (int $b.warmupSteps)) "--batch-size" (toString (int $b.batchSize)) "--image-size" (toString (int $b.imageSize)) -}}
{{- $program := include "dl-common.script.program" (dict "command" (list "python") "args" $args "context" $ctx) | fromJson -}}
{{- $job := dict
  "role" $role
  "count" (index $roles $role)
  "settings" $s
  "roles" $roles
  "env" (include "tensorflow-dist.env" (dict "role" $role "context" $ctx) | fromYamlArray)
  "ports" (list (dict "name" "tf" "port" (int $v.port)))
  "command" $program.command
  "args" $program.args
  "extraArgs" (include "tensorflow-dist.legacyArgs" (dict "role" $role "context" $ctx) | fromJsonArray)
  "waitFor" $roles
  "entrypoint" (include "tensorflow-dist.entrypoint" (dict "role" $role "context" $ctx) | fromJson)
  "volumes" (list (include "dl-common.script.volume" (dict "context" $ctx) | fromJson) (include "dl-common.cluster.volume" (dict "context" $ctx) | fromJson))
  "volumeMounts" (list (include "dl-common.script.volumeMount" (dict "context" $ctx) | fromJson) (include "dl-common.cluster.volumeMount" (dict "context" $ctx) | fromJson))
  "podAnnotations" (include "dl-common.script.podAnnotations" (dict "context" $ctx) | fromJson)
-}}
{{- if not (hasKey $driver $role) -}}
{{- $_ := set $job "watch" $driver -}}
{{- else if and (eq $role "worker") (gt (int $v.worker) 1) -}}
{{- $_ := set $job "successPolicy" (dict "rules" (list (dict "succeededIndexes" "0"))) -}}
{{- end -}}
{{- toJson $job -}}
{{- end -}}
