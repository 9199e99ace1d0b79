{{/*
dl-common.validate.collect: appends a message to a list when a condition holds. Charts collect every
broken cross-field rule in templates/validation.yaml, then call dl-common.validate.fail once, so a user
sees all problems in one run.
  {{- $errors := list -}}
  {{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (lt (int .Values.worker.replicas) 1) "message" "worker.replicas: must be >= 1; set --set worker=N") | fromJsonArray -}}
The charts of this repository append in place instead, which renders faster (no JSON round trip, and the
message is only built when the rule is broken):
  {{- if lt (int .Values.worker.replicas) 1 -}}{{- $errors = append $errors "worker.replicas: must be >= 1; set --set worker=N" -}}{{- end -}}
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
