{{/*
dl-common.validate.image: the errors of one image value {repository, tag} ("image"; "paths" maps
repository and tag to the value paths the user set, for the messages): an empty repository or tag, the tag
"latest", and a repository that carries a tag (a ":" after its last "/"; a registry port as in
localhost:5000/team/app is fine) or a digest ("@"): the chart writes "<repository>:<tag>", so either would
give a broken reference such as pytorch/pytorch:2.9.1:2.9.1. Training charts call it for every image value:
the roles' (through dl-common.validate.role) and peerWait.image (dl-common.validate.release). "tagDefault"
(optional) is the tag an empty tag stands for (gpu-device-plugin: its appVersion); then an empty tag is fine.
  {{- $errors = include "dl-common.validate.image" (dict "errors" $errors "image" .Values.peerWait.image "paths" (dict "repository" "peerWait.image.repository" "tag" "peerWait.image.tag")) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.image" -}}
{{- $errors := .errors -}}
{{- $image := .image | default dict -}}
{{- $paths := .paths -}}
{{- $tagDefault := toString (.tagDefault | default "") -}}
{{- range $field := list "repository" "tag" -}}
{{- $path := get $paths $field -}}
{{- $v := toString (index $image $field | default "") -}}
{{- if (and (eq (trim $v) "") (or (eq $field "repository") (eq $tagDefault ""))) -}}{{- $errors = append $errors (printf "%s is empty; set the image %s, e.g. --set %s=<%s>." $path $field $path $field) -}}{{- end -}}
{{- end -}}
{{- if (eq (toString ($image.tag | default "")) "latest") -}}{{- $errors = append $errors (printf "%s is \"latest\"; pin a published version tag so every pod runs the same image." $paths.tag) -}}{{- end -}}
{{- $repo := toString ($image.repository | default "") -}}
{{- $name := regexReplaceAll "^.*/" $repo "" -}}
{{- if contains "@" $repo -}}
{{- $bare := regexReplaceAll "@.*$" $repo "" -}}
{{- $errors = append $errors (printf "%s is %q, which carries a digest; the chart writes <repository>:<tag>, so set %s=%s and give the version in %s (a digest may follow the tag there: <tag>@sha256:<digest>)." $paths.repository $repo $paths.repository $bare $paths.tag) -}}
{{- else if contains ":" $name -}}
{{- $bare := regexReplaceAll ":[^:/]*$" $repo "" -}}
{{- $tag := regexReplaceAll "^.*:" $repo "" -}}
{{- $errors = append $errors (printf "%s is %q, which carries the tag %q; the chart appends %s, which would give %s:%s. Set %s=%s and %s.tag=%s." $paths.repository $repo $tag $paths.tag $repo (toString ($image.tag | default $tagDefault)) $paths.repository $bare (trimSuffix ".repository" $paths.repository) $tag) -}}
{{- end -}}
{{- toJson $errors -}}
{{- end -}}
