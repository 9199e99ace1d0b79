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
container start. A role that runs its image's own entrypoint ("settings".imageEntrypoint) cannot be wrapped, so
it gets TF_CONFIG in its env, as a TFJob's pods had it (tensorflow-dist.tfConfig). YAML list.
  {{ include "tensorflow-dist.env" (dict "role" "worker" "settings" $s "context" $) }}
*/}}
{{- define "tensorflow-dist.env" -}}
- {{ include "dl-common.cluster.env" (dict "context" .context) }}
{{- if .settings.imageEntrypoint }}
- name: TF_CONFIG
  value: {{ include "tensorflow-dist.tfConfig" . | quote }}
{{- end }}
{{- end -}}

{{/*
tensorflow-dist.tfConfig: TF_CONFIG of a pod of "role" as an env value: the cluster (tensorflow-dist.clusterSpec),
the task, whose index Kubernetes expands from DL_TASK_INDEX, and "environment":"cloud", the layout of Kubeflow's
TFJob and of scripts/tf-config.sh.
  {{ include "tensorflow-dist.tfConfig" (dict "role" "ps" "context" $) }}
*/}}
{{- define "tensorflow-dist.tfConfig" -}}
{"cluster":{{ include "tensorflow-dist.clusterSpec" .context }},"task":{"type":"{{ .role }}","index":$(DL_TASK_INDEX)},"environment":"cloud"}
{{- end -}}

{{/*
tensorflow-dist.clusterFile: the name of the file in the cluster ConfigMap (dl-common.cluster.configMap)
that holds tensorflow-dist.clusterSpec.
*/}}
{{- define "tensorflow-dist.clusterFile" -}}
cluster.json
{{- end -}}

{{/*
tensorflow-dist.entrypoint: the "entrypoint" of a role's Job (dl-common.pod.command), JSON dict {script, sets}:
tensorflow-dist.entrypointScript (scripts/tf-config.sh, rendered into _shell.tpl), which composes TF_CONFIG
from the cluster ConfigMap when the container starts and exports it (with legacyFlags it also appends
--ps_hosts and --worker_hosts).
  "entrypoint" (include "tensorflow-dist.entrypoint" (dict "role" "worker" "context" $) | fromJson)
*/}}
{{- define "tensorflow-dist.entrypoint" -}}
{{- toJson (dict "script" (include "tensorflow-dist.entrypointScript" .) "sets" (list "TF_CONFIG")) -}}
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
user's `script` (dl-common.script.program); the legacy flags follow either. A role that runs its image's own
entrypoint has neither the entrypoint wrapper nor the legacy flags (TF_CONFIG is in its env instead).
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
  "env" (include "tensorflow-dist.env" (dict "role" $role "settings" $s "context" $ctx) | fromYamlArray)
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
{{- if $s.imageEntrypoint -}}
{{- $job = omit $job "entrypoint" "extraArgs" -}}
{{- end -}}
{{- if not (hasKey $driver $role) -}}
{{- $_ := set $job "watch" $driver -}}
{{- else if and (eq $role "worker") (gt (int $v.worker) 1) -}}
{{- $_ := set $job "successPolicy" (dict "rules" (list (dict "succeededIndexes" "0"))) -}}
{{- end -}}
{{- toJson $job -}}
{{- end -}}
