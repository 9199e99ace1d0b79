{{/*
dl-common.validate.configMapSize: fails the render when the values of "data" (file name -> text) add up to more
than the 1 MiB the API server lets a ConfigMap hold, naming the ConfigMap and the value it grows with ("grows",
e.g. "worker") and about how many fit. Every ConfigMap whose host list grows with the worker count calls it.
  {{- include "dl-common.validate.configMapSize" (dict "data" $files "configMap" $name "grows" "worker" "count" .Values.worker "context" .) -}}
*/}}
{{- define "dl-common.validate.configMapSize" -}}
{{- $size := 0 -}}
{{- range $_, $text := .data -}}
{{- $size = add $size (len $text) -}}
{{- end -}}
{{- $max := 1048576 -}}
{{- if gt $size $max -}}
{{- $count := int .count -}}
{{- include "dl-common.validate.fail" (dict "context" .context "errors" (list (printf "%s=%d makes the ConfigMap %s %d bytes, and Kubernetes holds at most 1 MiB (%d bytes) in a ConfigMap: set %s to at most about %d (a shorter release name or namespace fits a few more), or split the job into several releases." .grows $count .configMap $size $max .grows (div (mul $max $count) $size)))) -}}
{{- end -}}
{{- end -}}
