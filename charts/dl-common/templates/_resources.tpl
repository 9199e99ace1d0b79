{{/*
dl-common.resources.container: the `resources` block of a role's main container from its "settings":
settings.resources (requests/limits for cpu, memory, ephemeral-storage, ...) plus the GPU request
settings.gpu.count of settings.gpu.resource (default nvidia.com/gpu), which goes into limits only
(Kubernetes sets the request equal). Any resource name works (nvidia.com/gpu.shared, nvidia.com/gpumem,
nvidia.com/mig-1g.10gb, amd.com/gpu). Count 0 renders no GPU at all.
  resources:
    {{- include "dl-common.resources.container" (dict "settings" $s) | nindent 4 }}
*/}}
{{- define "dl-common.resources.container" -}}
{{- $res := deepCopy (.settings.resources | default dict) -}}
{{- $gpu := .settings.gpu | default dict -}}
{{- $count := $gpu.count | default 0 | float64 -}}
{{- if gt $count 0.0 -}}
{{- $limits := $res.limits | default dict -}}
{{- $_ := set $limits ($gpu.resource | default "nvidia.com/gpu") (int64 $count) -}}
{{- $_ := set $res "limits" $limits -}}
{{- end -}}
{{- toYaml $res -}}
{{- end -}}

{{/*
dl-common.resources.gpuCount: the whole GPU count of a role's "settings" (0 when none), as a string.
  {{ include "dl-common.resources.gpuCount" (dict "settings" $s) }}
*/}}
{{- define "dl-common.resources.gpuCount" -}}
{{- $gpu := .settings.gpu | default dict -}}
{{- $gpu.count | default 0 | int64 -}}
{{- end -}}
