{{/*
dl-common.validate.collect: appends a message to a list when a condition holds. Charts collect every
broken cross-field rule in templates/validation.yaml, then call dl-common.validate.fail once, so a user
sees all problems in one run.
  {{- $errors := list -}}
  {{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (lt (int .Values.worker.replicas) 1) "message" "worker.replicas: must be >= 1; set --set worker=N") | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.collect" -}}
{{- $errors := .errors -}}
{{- if .when -}}
{{- $errors = append $errors .message -}}
{{- end -}}
{{- toJson $errors -}}
{{- end -}}

{{/*
dl-common.validate.fail: fails the render with every collected message, one per line, or does nothing.
  {{ include "dl-common.validate.fail" (dict "errors" $errors "context" $) }}
*/}}
{{- define "dl-common.validate.fail" -}}
{{- if .errors -}}
{{- fail (printf "\n%s values are invalid:\n  - %s" .context.Chart.Name (join "\n  - " .errors)) -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.validate.releaseName: the error for a release name too long for the longest derived name.
"longestSuffix" is the longest suffix the chart appends (e.g. "-evaluator-999").
  {{- $errors = include "dl-common.validate.releaseName" (dict "errors" $errors "longestSuffix" "-worker-999" "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.releaseName" -}}
{{- $name := include "dl-common.names.fullname" . -}}
{{- $max := sub 63 (len .longestSuffix) | int -}}
{{- include "dl-common.validate.collect" (dict "errors" .errors "when" (gt (len $name) $max) "message" (printf "release name %q is %d characters; names derived from it (e.g. %s%s) must stay within 63. Use a release name of at most %d characters or set fullnameOverride." $name (len $name) $name .longestSuffix $max)) -}}
{{- end -}}
