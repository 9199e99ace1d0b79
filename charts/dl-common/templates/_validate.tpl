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

{{/*
dl-common.validate.names: the errors for names derived from the release: the base name (release name
or fullnameOverride) must be a DNS-1035 label (the headless Service and every pod's subdomain carry it),
and the longest pod hostname "<fullname>-<role>-<last index>" of "roles" (role -> count) must stay
within 63 characters (checked with dl-common.validate.releaseName).
  {{- $errors = include "dl-common.validate.names" (dict "errors" $errors "roles" (dict "worker" 4) "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.names" -}}
{{- $errors := .errors -}}
{{- $name := include "dl-common.names.fullname" . -}}
{{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name)) "message" (printf "release name %q (or fullnameOverride) must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter, no dots; it names the headless Service every pod uses as subdomain. Choose another release name or set fullnameOverride." $name)) | fromJsonArray -}}
{{- $longest := "" -}}
{{- range $role, $count := .roles -}}
{{- if gt (int $count) 0 -}}
{{- $suffix := printf "-%s-%d" $role (sub (int $count) 1) -}}
{{- if gt (len $suffix) (len $longest) -}}
{{- $longest = $suffix -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- include "dl-common.validate.releaseName" (dict "errors" $errors "longestSuffix" $longest "context" .context) -}}
{{- end -}}

{{/*
dl-common.validate.role: the errors in one role's merged "settings" (dl-common.values.role), each naming
the values path it comes from (roles.<role>.x or defaults.x) and the fix: empty or "latest" image
repository/tag; a GPU count that is not a whole number; the GPU resource also written into
resources.requests/limits; an env name set twice in the final container env (the chart's "env" and
"watch" as given to dl-common.job.indexed, plus settings.env); a schedulerName that contradicts the gang
scheduler; maxFailedIndexes without backoffLimitPerIndex. Messages name the values path (defaults.x or
roles.<role>.x) and not the role, so a chart can `uniq` the list when several roles inherit one mistake.
  {{- $errors = include "dl-common.validate.role" (dict "errors" $errors "role" "worker" "settings" $s "env" $env "watch" $watch "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.role" -}}
{{- $errors := .errors -}}
{{- $ctx := .context -}}
{{- $role := .role -}}
{{- $s := .settings -}}
{{- $image := $s.image | default dict -}}
{{- range $field := list "repository" "tag" -}}
{{- $path := include "dl-common.values.path" (dict "role" $role "key" (printf "image.%s" $field) "context" $ctx) -}}
{{- $v := toString (index $image $field | default "") -}}
{{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (eq (trim $v) "") "message" (printf "%s is empty; set the image %s, e.g. --set %s=<%s>." $path $field $path $field)) | fromJsonArray -}}
{{- end -}}
{{- $tagPath := include "dl-common.values.path" (dict "role" $role "key" "image.tag" "context" $ctx) -}}
{{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (eq (toString ($image.tag | default "")) "latest") "message" (printf "%s is \"latest\"; pin a published version tag so every pod runs the same image." $tagPath)) | fromJsonArray -}}
{{- $gpu := $s.gpu | default dict -}}
{{- $count := $gpu.count | default 0 | float64 -}}
{{- $resName := $gpu.resource | default "nvidia.com/gpu" -}}
{{- $countPath := include "dl-common.values.path" (dict "role" $role "key" "gpu.count" "context" $ctx) -}}
{{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (ne $count (float64 (int64 $count))) "message" (printf "%s is %v, not a whole number. %s is counted in whole devices (Kubernetes extended resources take whole numbers). Use a whole count; to give a pod part of a GPU, set %s to a sharing resource the cluster offers, such as nvidia.com/gpu.shared (time-slicing/MPS) or HAMi's nvidia.com/gpumem, with a whole count." $countPath $gpu.count $resName (include "dl-common.values.path" (dict "role" $role "key" "gpu.resource" "context" $ctx)))) | fromJsonArray -}}
{{- range $kind := list "requests" "limits" -}}
{{- $block := index ($s.resources | default dict) $kind | default dict -}}
{{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (hasKey $block $resName) "message" (printf "%s sets %s; GPUs are requested with gpu.count and gpu.resource only (rendered into limits). Remove it from resources and set %s." (include "dl-common.values.path" (dict "role" $role "key" (printf "resources.%s" $kind) "context" $ctx)) $resName $countPath)) | fromJsonArray -}}
{{- end -}}
{{- $env := include "dl-common.pod.env" (dict "env" .env "watch" .watch "settings" $s "context" $ctx) | fromYamlArray -}}
{{- $seen := dict -}}
{{- $chartNames := dict -}}
{{- range (.env | default list) -}}
{{- $_ := set $chartNames (toString .name) true -}}
{{- end -}}
{{- range $env -}}
{{- $n := toString .name -}}
{{- if hasKey $seen $n -}}
{{- $envPath := include "dl-common.values.path" (dict "role" $role "key" "env" "context" $ctx) -}}
{{- $why := ternary "which the chart already sets for the framework" "more than once" (hasKey $chartNames $n) -}}
{{- $errors = append $errors (printf "%s sets %s %s; remove it from %s (duplicate env names are rejected by server-side apply)." $envPath $n $why $envPath) -}}
{{- end -}}
{{- $_ := set $seen $n true -}}
{{- end -}}
{{- $gang := $ctx.Values.gang | default dict -}}
{{- if and (ne ($gang.scheduler | default "none") "none") $s.schedulerName -}}
{{- $want := include "dl-common.queue.schedulerName" (dict "settings" $s "context" $ctx) -}}
{{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (ne $s.schedulerName $want) "message" (printf "%s is %q but gang.scheduler=%s schedules the pods with %q; remove the role's schedulerName or set gang.schedulerName." (include "dl-common.values.path" (dict "role" $role "key" "schedulerName" "context" $ctx)) $s.schedulerName $gang.scheduler $want)) | fromJsonArray -}}
{{- end -}}
{{- $job := $s.job | default dict -}}
{{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (and (not (kindIs "invalid" $job.maxFailedIndexes)) (kindIs "invalid" $job.backoffLimitPerIndex)) "message" (printf "%s is set but backoffLimitPerIndex is null; Kubernetes accepts maxFailedIndexes only with backoffLimitPerIndex. Set %s or remove maxFailedIndexes." (include "dl-common.values.path" (dict "role" $role "key" "job.maxFailedIndexes" "context" $ctx)) (include "dl-common.values.path" (dict "role" $role "key" "job.backoffLimitPerIndex" "context" $ctx)))) | fromJsonArray -}}
{{- toJson $errors -}}
{{- end -}}
