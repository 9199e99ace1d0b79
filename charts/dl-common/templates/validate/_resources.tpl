{{/*
dl-common.validate.resources: the errors in one container's resources {requests, limits}, each naming the
values path: an amount that is not a Kubernetes quantity or is negative, a request above its limit, and an
extended resource (a name with a domain, such as example.com/foo, or hugepages-*) whose request differs from
its limit; the API server refuses all of them at install time, after helm has rendered. The paths are
dl-common.values.path's for a role ("role", "context") or "<prefix>.requests.<name>" ("prefix").
  {{- $errors = include "dl-common.validate.resources" (dict "errors" $errors "resources" $s.resources "role" "worker" "context" $) | fromJsonArray -}}
  {{- $errors = include "dl-common.validate.resources" (dict "errors" $errors "resources" .Values.peerWait.resources "prefix" "peerWait.resources") | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.resources" -}}
{{- $errors := .errors -}}
{{- $args := . -}}
{{- $resources := .resources | default dict -}}
{{- $parsed := dict -}}
{{- $paths := dict -}}
{{- range $kind := list "requests" "limits" -}}
{{- $block := index $resources $kind | default dict -}}
{{- range $name := keys $block | sortAlpha -}}
{{- $v := index $block $name -}}
{{- $key := printf "%s.%s" $kind $name -}}
{{- $path := "" -}}
{{- if $args.prefix -}}
{{- $path = printf "%s.%s" $args.prefix $key -}}
{{- else -}}
{{- $path = include "dl-common.values.path" (dict "role" $args.role "key" (printf "resources.%s" $key) "context" $args.context) -}}
{{- end -}}
{{- $_ := set $paths $key $path -}}
{{- if not (kindIs "invalid" $v) -}}
{{- $q := include "dl-common.quantity.parse" (dict "value" $v) | fromJson -}}
{{- if not $q.valid -}}
{{- $what := ternary "an amount of cores, e.g. --set %s=500m" "a size with a unit, e.g. --set %s=16Gi" (eq $name "cpu") -}}
{{- $errors = append $errors (printf "%s is %q, which is not a Kubernetes quantity; write %s." $path (toString $v) (printf $what $path)) -}}
{{- else if lt $q.number 0.0 -}}
{{- $errors = append $errors (printf "%s is %v; a resource amount cannot be negative." $path $v) -}}
{{- else -}}
{{- $_ := set $parsed $key $q.number -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $name := keys ($resources.requests | default dict) | sortAlpha -}}
{{- $request := printf "requests.%s" $name -}}
{{- $limit := printf "limits.%s" $name -}}
{{- if and (hasKey $parsed $request) (hasKey $parsed $limit) -}}
{{- $extended := or (hasPrefix "hugepages-" $name) (and (contains "/" $name) (not (hasPrefix "kubernetes.io/" $name))) -}}
{{- $r := get $resources.requests $name -}}
{{- $l := get $resources.limits $name -}}
{{- if and $extended (ne (get $parsed $request) (get $parsed $limit)) -}}
{{- $errors = append $errors (printf "%s is %v but %s is %v: Kubernetes requires the request of %s to equal its limit. Set both to the same amount, or set the limit alone (the request defaults to it)." (get $paths $request) $r (get $paths $limit) $l $name) -}}
{{- else if gt (get $parsed $request) (get $parsed $limit) -}}
{{- $errors = append $errors (printf "%s is %v but %s is %v: Kubernetes refuses a request above its limit. Lower %s or raise %s (the other one may be the chart's default)." (get $paths $request) $r (get $paths $limit) $l (get $paths $request) (get $paths $limit)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $errors -}}
{{- end -}}
