{{/*
dl-common.validate.release: the errors in the values every role shares: the names derived from the release
(dl-common.validate.names, "roles": role -> count), the helper image peerWait.image (used by the
peer-wait init containers and the helm test pod; dl-common.validate.image) and its resources, the start watch's
image and resources (startWatch, when enabled), and the global values
(dl-common.validate.global). Training charts call it once.
  {{- $errors = include "dl-common.validate.release" (dict "errors" $errors "roles" $roles "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.release" -}}
{{- $errors := include "dl-common.validate.names" . | fromJsonArray -}}
{{- $errors = include "dl-common.validate.image" (dict "errors" $errors "image" .context.Values.peerWait.image "paths" (dict "repository" "peerWait.image.repository" "tag" "peerWait.image.tag")) | fromJsonArray -}}
{{- $errors = include "dl-common.validate.resources" (dict "errors" $errors "resources" .context.Values.peerWait.resources "prefix" "peerWait.resources") | fromJsonArray -}}
{{- $sw := .context.Values.startWatch | default dict -}}
{{- if $sw.enabled -}}
{{- $errors = include "dl-common.validate.image" (dict "errors" $errors "image" $sw.image "paths" (dict "repository" "startWatch.image.repository" "tag" "startWatch.image.tag")) | fromJsonArray -}}
{{- $errors = include "dl-common.validate.resources" (dict "errors" $errors "resources" $sw.resources "prefix" "startWatch.resources") | fromJsonArray -}}
{{- end -}}
{{- $errors = include "dl-common.validate.global" (dict "errors" $errors "context" .context) | fromJsonArray -}}
{{- toJson $errors -}}
{{- end -}}

{{/*
dl-common.validate.global: "errors" plus the errors in .Values.global: global.imageRegistry (see
dl-common.pod.image) must be a registry host[:port] with an optional path, without a scheme, since it
becomes the start of every image reference. Other globals are an umbrella chart's business and pass, except
a key that starts with "image" and is not one of ours: that is a typo of global.imageRegistry or
global.imagePullSecrets, which would otherwise be ignored. Every chart calls it (training charts through
dl-common.validate.release).
  {{- $errors = include "dl-common.validate.global" (dict "errors" $errors "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.global" -}}
{{- $errors := .errors | default list -}}
{{- $global := .context.Values.global | default dict -}}
{{- range $key := keys $global | sortAlpha -}}
{{- if and (hasPrefix "image" (lower $key)) (not (has $key (list "imageRegistry" "imagePullSecrets"))) -}}
{{- $errors = append $errors (printf "global.%s is not a value this chart reads; the image globals are global.imageRegistry and global.imagePullSecrets." $key) -}}
{{- end -}}
{{- end -}}
{{- $registry := toString ($global.imageRegistry | default "") -}}
{{- if $registry -}}
{{- $host := `[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?` -}}
{{- $path := `(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*` -}}
{{- if regexMatch "^[a-zA-Z][a-zA-Z0-9+.-]*://" $registry -}}
{{- $bare := regexReplaceAll "^[a-zA-Z][a-zA-Z0-9+.-]*://" $registry "" | trimSuffix "/" -}}
{{- $errors = append $errors (printf "global.imageRegistry is %q, which starts with a scheme; image references carry no scheme (the container runtime decides https or http). Set the registry host[:port][/path] alone, e.g. --set global.imageRegistry=%s." $registry $bare) -}}
{{- else if not (regexMatch (printf "^%s%s$" $host $path) $registry) -}}
{{- $errors = append $errors (printf "global.imageRegistry is %q, which is not a registry host[:port][/path] (letters, digits, '.', '-' in the host; lowercase path components; no trailing '/', tag or digest). Set e.g. --set global.imageRegistry=mirror.example.com:5000/team." $registry) -}}
{{- end -}}
{{- end -}}
{{- toJson $errors -}}
{{- end -}}
