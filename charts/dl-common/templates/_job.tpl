{{/*
dl-common.job.spec: the failure and lifetime fields of a role's Job from settings.job, each emitted only
where the target Kubernetes version has it in GA (render with `helm template --kube-version`):
- backoffLimitPerIndex + maxFailedIndexes (1.33+): retries per index; on older versions backoffLimit
  (settings.job.backoffLimit, or backoffLimitPerIndex when that is null) counts failures of all indexes;
- podFailurePolicy (1.31+): by default pod disruptions (preemption, eviction, node drain) are ignored,
  so they never use up the retry budget;
- successPolicy (1.33+): settings.job.successPolicy, else the chart's "successPolicy" default (e.g.
  TensorFlow without a chief: the Job succeeds when index 0 succeeds);
- ttlSecondsAfterFinished, activeDeadlineSeconds (the backstop that ends a hung job).
null leaves a field out (Kubernetes' own default).
  spec:
    {{- include "dl-common.job.spec" (dict "settings" $s "count" 4 "successPolicy" $sp "context" $) | nindent 2 }}
*/}}
{{- define "dl-common.job.spec" -}}
{{- $job := .settings.job | default dict -}}
{{- $ge133 := include "dl-common.values.atLeast" (dict "version" "1.33" "context" .context) -}}
{{- $ge131 := include "dl-common.values.atLeast" (dict "version" "1.31" "context" .context) -}}
{{- $perIndex := $job.backoffLimitPerIndex -}}
{{- if and $ge133 (not (kindIs "invalid" $perIndex)) }}
backoffLimitPerIndex: {{ $perIndex | int }}
{{- if not (kindIs "invalid" $job.maxFailedIndexes) }}
maxFailedIndexes: {{ min ($job.maxFailedIndexes | int) (.count | int) }}
{{- end }}
{{- if not (kindIs "invalid" $job.backoffLimit) }}
backoffLimit: {{ $job.backoffLimit | int }}
{{- end }}
{{- else if not (kindIs "invalid" $job.backoffLimit) }}
backoffLimit: {{ $job.backoffLimit | int }}
{{- else if not (kindIs "invalid" $perIndex) }}
backoffLimit: {{ $perIndex | int }}
{{- end }}
{{- if and $ge131 $job.podFailurePolicy }}
podFailurePolicy:
  {{- toYaml $job.podFailurePolicy | nindent 2 }}
{{- end }}
{{- $success := $job.successPolicy | default .successPolicy }}
{{- if and $ge133 $success }}
successPolicy:
  {{- toYaml $success | nindent 2 }}
{{- end }}
{{- if not (kindIs "invalid" $job.ttlSecondsAfterFinished) }}
ttlSecondsAfterFinished: {{ $job.ttlSecondsAfterFinished | int }}
{{- end }}
{{- if not (kindIs "invalid" $job.activeDeadlineSeconds) }}
activeDeadlineSeconds: {{ $job.activeDeadlineSeconds | int }}
{{- end }}
{{- end -}}

{{/*
dl-common.job.indexed: the Indexed Job of one role: name "<fullname>-<role>", completions = parallelism =
"count", completionMode Indexed, so pod i is "<fullname>-<role>-<i>.<service>.<namespace>.svc" and reads
its index from JOB_COMPLETION_INDEX / DL_TASK_INDEX. Labels: standard + Kueue queue (dl-common.queue.jobLabels).
Failure fields: dl-common.job.spec. Pod template: dl-common.pod.template. Arguments:
  role          component name ("worker", "ps", ...)              count     pods of this role (>= 1)
  settings      the role's merged settings (dl-common.values.role)
  roles         role -> count for every role of the release (gang sizes)
  env           list of EnvVar dicts: the chart's framework wiring
  ports         list of dicts name/port (container ports)
  command, args the chart's default program (settings.command/args win)
  extraArgs     list appended to args (optional)
  waitFor       role -> count whose pods must resolve before the program starts (optional)
  watch         role -> count: run the program under the watchdog, which ends it once those pods are
                gone (optional; for roles that never exit on their own)
  volumes, volumeMounts, initContainers, sidecars, podAnnotations   chart additions (optional)
  successPolicy the chart's default Job successPolicy for this role (optional)
  {{ include "dl-common.job.indexed" (dict "role" "worker" "count" .Values.worker "settings" $s "roles" $roles "env" $env "ports" $ports "command" $cmd "args" $args "waitFor" $roles "context" $) }}
*/}}
{{- define "dl-common.job.indexed" -}}
{{- $ctx := .context -}}
{{- $count := int .count -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "dl-common.names.component" (dict "component" .role "context" $ctx) }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" .role "context" $ctx) | nindent 4 }}
    {{- with (include "dl-common.queue.jobLabels" (dict "context" $ctx)) }}
    {{- . | nindent 4 }}
    {{- end }}
spec:
  completionMode: Indexed
  completions: {{ $count }}
  parallelism: {{ $count }}
  {{- with (include "dl-common.job.spec" . | trim) }}
  {{- . | nindent 2 }}
  {{- end }}
  template:
    {{- include "dl-common.pod.template" . | nindent 4 }}
{{- end -}}
