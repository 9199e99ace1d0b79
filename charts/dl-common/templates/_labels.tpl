{{/*
dl-common.labels.selector: the only labels selectors may use (name, instance and, when given, component).
  {{ include "dl-common.labels.selector" (dict "component" "worker" "context" $) }}
*/}}
{{- define "dl-common.labels.selector" -}}
app.kubernetes.io/name: {{ .context.Chart.Name }}
app.kubernetes.io/instance: {{ .context.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}

{{/*
dl-common.labels.standard: the full recommended label set for metadata (selector labels plus version,
managed-by, chart and part-of).
  {{ include "dl-common.labels.standard" (dict "component" "worker" "context" $) }}
*/}}
{{- define "dl-common.labels.standard" -}}
{{ include "dl-common.labels.selector" . }}
app.kubernetes.io/managed-by: {{ .context.Release.Service }}
app.kubernetes.io/part-of: {{ .context.Release.Name }}
helm.sh/chart: {{ include "dl-common.names.chart" . }}
{{- with .context.Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
{{- end -}}
