{{/*
dl-common.validate.scratch: the errors in a role's /dev/shm and /tmp sizes (merged "settings"), each naming
the value path the user set: a sizeLimit that is not a Kubernetes quantity with a unit
(dl-common.quantity.size: "16" would be 16 bytes), and a /dev/shm larger than the role's memory limit
(resources.limits.memory): /dev/shm is memory-backed and counts against that limit, so the pod would be
OOM-killed before the volume fills (a memory limit that is not a quantity: dl-common.validate.resources).
  {{- $errors = include "dl-common.validate.scratch" (dict "errors" $errors "role" "worker" "settings" $s "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.scratch" -}}
{{- $errors := .errors -}}
{{- $ctx := .context -}}
{{- $role := .role -}}
{{- $s := .settings -}}
{{- range $volume := list "shm" "tmp" -}}
{{- $v := index $s $volume | default dict -}}
{{- if and $v.enabled (not (kindIs "invalid" $v.sizeLimit)) -}}
{{- $err := include "dl-common.quantity.size" (dict "value" $v.sizeLimit "path" (include "dl-common.values.path" (dict "role" $role "key" (printf "%s.sizeLimit" $volume) "context" $ctx))) -}}
{{- if $err -}}{{- $errors = append $errors $err -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $shm := $s.shm | default dict -}}
{{- $memory := (($s.resources | default dict).limits | default dict).memory -}}
{{- if not (kindIs "invalid" $memory) -}}
{{- $memoryPath := include "dl-common.values.path" (dict "role" $role "key" "resources.limits.memory" "context" $ctx) -}}
{{- $limit := include "dl-common.quantity.parse" (dict "value" $memory) | fromJson -}}
{{- if and $limit.valid $shm.enabled (not (kindIs "invalid" $shm.sizeLimit)) -}}
{{- $size := include "dl-common.quantity.parse" (dict "value" $shm.sizeLimit) | fromJson -}}
{{- $shmPath := include "dl-common.values.path" (dict "role" $role "key" "shm.sizeLimit" "context" $ctx) -}}
{{- if (and $size.valid (gt $size.number $limit.number)) -}}{{- $errors = append $errors (printf "%s is %v but %s is %v: /dev/shm is memory-backed and counts against the memory limit, so the pod would be OOM-killed before /dev/shm fills. Raise %s or lower %s." $shmPath $shm.sizeLimit $memoryPath $memory $memoryPath $shmPath) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $errors -}}
{{- end -}}
