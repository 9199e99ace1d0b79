{{/*
dl-common.scheduling.pod: the placement fields of a role's pod spec from its "settings": nodeSelector
(e.g. nvidia.com/gpu.product, virtual.gpu.type), affinity, tolerations (with the start watch's node-loss ones,
dl-common.startWatch.nodeLossTolerations), topologySpreadConstraints,
priorityClassName and schedulerName. A topology spread constraint without labelSelector gets the role's
selector labels, so `{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}`
is enough. With gang scheduling (.Values.gang) the gang's scheduler name is used.
  {{- include "dl-common.scheduling.pod" (dict "role" "worker" "settings" $s "context" $) | nindent 6 }}
*/}}
{{- define "dl-common.scheduling.pod" -}}
{{- $s := .settings -}}
{{- with $s.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $s.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $lost := include "dl-common.startWatch.nodeLossTolerations" (dict "tolerations" $s.tolerations "context" .context) | fromYamlArray }}
{{- with concat ($s.tolerations | default list) $lost }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $s.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- range . }}
  {{- $c := deepCopy . }}
  {{- if not $c.labelSelector }}
  {{- $_ := set $c "labelSelector" (dict "matchLabels" (include "dl-common.labels.selector" (dict "component" $.role "context" $.context) | fromYaml)) }}
  {{- end }}
  - {{- toYaml $c | nindent 4 }}
  {{- end }}
{{- end }}
{{- with $s.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with (include "dl-common.queue.schedulerName" (dict "settings" $s "context" .context)) }}
schedulerName: {{ . | quote }}
{{- end }}
{{- end -}}
