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
  entrypoint    dict "script" (POSIX sh run at container start, before the program) and "sets" (the env
                names it exports): the entrypoint wrapper of dl-common.pod.command (optional; e.g. TF_CONFIG
                composed from the cluster ConfigMap, dl-common.cluster.*)
  volumes, volumeMounts, initContainers, sidecars, podAnnotations   chart additions (optional)
  successPolicy the chart's default Job successPolicy for this role (optional)
  {{ include "dl-common.job.indexed" (dict "role" "worker" "count" .Values.worker "settings" $s "roles" $roles "env" $env "ports" $ports "command" $cmd "args" $args "waitFor" $roles "context" $) }}
*/}}
{{- define "dl-common.job.indexed" -}}
{{- $ctx := .context -}}
{{- $count := int .count -}}
{{- $name := include "dl-common.names.component" (dict "component" .role "context" $ctx) -}}
{{- $template := include "dl-common.pod.template" . -}}
{{- $spec := include "dl-common.job.spec" . | fromYaml -}}
{{- $immutable := printf "%s\n%s" (pick $spec "backoffLimitPerIndex" "podFailurePolicy" "successPolicy" | toJson) $template -}}
{{- $digest := sha256sum $immutable | trunc 16 -}}
{{- include "dl-common.job.refuseImmutableChange" (dict "name" $name "digest" $digest "context" $ctx) -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ $name }}
  annotations:
    {{ include "dl-common.job.digestAnnotation" . }}: {{ $digest | quote }}
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
    {{- $template | nindent 4 }}
{{- end -}}

{{/*
dl-common.job.digestAnnotation: the Job annotation holding a digest of what Kubernetes never lets change in
an existing Job: the pod template, backoffLimitPerIndex, podFailurePolicy and successPolicy.
*/}}
{{- define "dl-common.job.digestAnnotation" -}}
dl-charts.io/immutable-digest
{{- end -}}

{{/*
dl-common.job.refuseImmutableChange: on `helm upgrade`, fail before anything is applied when the release's
Job "name" still exists with another digest (dl-common.job.digestAnnotation) than the one this render
would write: the API server would refuse the Job after Helm had already changed the release's other
objects (a half-applied, failed release). A suspended Job (queued by Kueue, never started) is left to the
API server, which lets some scheduling fields of such a Job change. `helm template` and installs look
nothing up.
  {{- include "dl-common.job.refuseImmutableChange" (dict "name" $name "digest" $digest "context" $) -}}
*/}}
{{- define "dl-common.job.refuseImmutableChange" -}}
{{- $ctx := .context -}}
{{- if $ctx.Release.IsUpgrade -}}
{{- $live := lookup "batch/v1" "Job" $ctx.Release.Namespace .name -}}
{{- $was := dig "metadata" "annotations" (include "dl-common.job.digestAnnotation" .) "" $live -}}
{{- if and $was (ne $was .digest) (not (dig "spec" "suspend" false $live)) -}}
{{- fail (printf "\n\nJob %s/%s of release %s is still there, and this upgrade changes its pod template (or backoffLimitPerIndex, podFailurePolicy, successPolicy), which Kubernetes never lets change in an existing Job: the upgrade would stop half-applied. A training job cannot change its shape (worker counts, GPUs, image, env) while it runs. Fix: `helm uninstall %s -n %s` and install again with the new values, or wait until the Job is deleted (job.ttlSecondsAfterFinished). Fields an existing Job may change (e.g. job.activeDeadlineSeconds) upgrade in place." $ctx.Release.Namespace .name $ctx.Release.Name $ctx.Release.Name $ctx.Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}
