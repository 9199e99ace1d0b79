{{/*
dl-common.validate.role: the errors in one role's merged "settings" (dl-common.values.role), each naming
the values path it comes from (roles.<role>.x or defaults.x) and the fix: the image (dl-common.validate.image:
empty or "latest", a repository carrying a tag or digest); a GPU count that is not set, not a whole
number or above 9223372036854775 (the most a Kubernetes quantity holds in thousandths); the GPU resource also written into resources.requests/limits; /dev/shm and /tmp sizes
(dl-common.validate.scratch); an env name set twice in the final container env (the chart's "env" and
"watch" as given to dl-common.job.indexed, plus settings.env) or set in settings.env although the
"entrypoint" wrapper exports it (its "sets"); a schedulerName that contradicts the gang
scheduler; maxFailedIndexes without backoffLimitPerIndex; imageEntrypoint together with a command or with
`script` (both name the program that the image's entrypoint replaces). Messages name the values path (defaults.x or
roles.<role>.x) and not the role, so a chart can `uniq` the list when several roles inherit one mistake.
  {{- $errors = include "dl-common.validate.role" (dict "errors" $errors "role" "worker" "settings" $s "env" $env "watch" $watch "entrypoint" $entrypoint "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.role" -}}
{{- $errors := .errors -}}
{{- $ctx := .context -}}
{{- $role := .role -}}
{{- $s := .settings -}}
{{- $paths := dict -}}
{{- range $field := list "repository" "tag" -}}
{{- $_ := set $paths $field (include "dl-common.values.path" (dict "role" $role "key" (printf "image.%s" $field) "context" $ctx)) -}}
{{- end -}}
{{- $errors = include "dl-common.validate.image" (dict "errors" $errors "image" $s.image "paths" $paths) | fromJsonArray -}}
{{- $gpu := $s.gpu | default dict -}}
{{- if (kindIs "invalid" $gpu.count) -}}{{- $errors = append $errors (printf "%s is not set (null removes the chart's default from defaults); set the GPUs per pod, e.g. --set %s=1 (0 = no GPU)." (include "dl-common.values.path" (dict "role" $role "key" "gpu.count" "context" $ctx)) (include "dl-common.values.path" (dict "role" $role "key" "gpu.count" "context" $ctx))) -}}{{- end -}}
{{- $count := $gpu.count | default 0 | float64 -}}
{{- $resName := $gpu.resource | default "nvidia.com/gpu" -}}
{{- $countPath := include "dl-common.values.path" (dict "role" $role "key" "gpu.count" "context" $ctx) -}}
{{- if (ne $count (float64 (int64 $count))) -}}{{- $errors = append $errors (printf "%s is %v, not a whole number. %s is counted in whole devices (Kubernetes extended resources take whole numbers). Use a whole count; to give a pod part of a GPU, set %s to a sharing resource the cluster offers, such as nvidia.com/gpu.shared (time-slicing/MPS) or HAMi's nvidia.com/gpumem, with a whole count." $countPath $gpu.count $resName (include "dl-common.values.path" (dict "role" $role "key" "gpu.resource" "context" $ctx))) -}}{{- end -}}
{{- if or (ge $count 9223372036854775808.0) (gt (int64 $count) 9223372036854775) -}}{{- $errors = append $errors (printf "%s is %.0f, more than Kubernetes can count: it keeps a quantity in thousandths within 64 bits, so an extended resource such as %s takes at most 9223372036854775. Set the GPUs (or the amount) per pod, e.g. --set %s=8." $countPath $count $resName $countPath) -}}{{- end -}}
{{- range $kind := list "requests" "limits" -}}
{{- $block := index ($s.resources | default dict) $kind | default dict -}}
{{- if (hasKey $block $resName) -}}{{- $errors = append $errors (printf "%s sets %s; GPUs are requested with gpu.count and gpu.resource only (rendered into limits). Remove it from resources and set %s." (include "dl-common.values.path" (dict "role" $role "key" (printf "resources.%s" $kind) "context" $ctx)) $resName $countPath) -}}{{- end -}}
{{- end -}}
{{- if $s.imageEntrypoint -}}
{{- $ep := include "dl-common.values.path" (dict "role" $role "key" "imageEntrypoint" "context" $ctx) -}}
{{- if $s.command -}}
{{- $cp := include "dl-common.values.path" (dict "role" $role "key" "command" "context" $ctx) -}}
{{- $errors = append $errors (printf "%s is true and %s is set, but the image's own entrypoint runs without a command. Drop %s (its arguments stay in args), or set %s false to run the command." $ep $cp $cp $ep) -}}
{{- end -}}
{{- if include "dl-common.script.set" (dict "context" $ctx) -}}
{{- $errors = append $errors (printf "%s is true and script is set, but the script runs under the chart's program, which the image's own entrypoint replaces. Leave script empty (the image brings its program), or set %s false to run the script." $ep $ep) -}}
{{- end -}}
{{- end -}}
{{- $errors = include "dl-common.validate.resources" (dict "errors" $errors "resources" $s.resources "role" $role "context" $ctx) | fromJsonArray -}}
{{- $errors = include "dl-common.validate.scratch" (dict "errors" $errors "role" $role "settings" $s "context" $ctx) | fromJsonArray -}}
{{- $env := include "dl-common.pod.env" (dict "env" .env "envDefaults" .envDefaults "watch" .watch "settings" $s "context" $ctx) | fromYamlArray -}}
{{- $seen := dict -}}
{{- $chartNames := dict -}}
{{- range concat (.env | default list) (include "dl-common.checkpoint.env" (dict "context" $ctx) | fromYamlArray) -}}
{{- $_ := set $chartNames (toString .name) true -}}
{{- end -}}
{{- range ((.entrypoint | default dict).sets | default list) -}}
{{- $_ := set $chartNames (toString .) true -}}
{{- $_ := set $seen (toString .) true -}}
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
{{- if (ne $s.schedulerName $want) -}}{{- $errors = append $errors (printf "%s is %q but gang.scheduler=%s schedules the pods with %q; remove the role's schedulerName or set gang.schedulerName." (include "dl-common.values.path" (dict "role" $role "key" "schedulerName" "context" $ctx)) $s.schedulerName $gang.scheduler $want) -}}{{- end -}}
{{- end -}}
{{- $job := $s.job | default dict -}}
{{- if (and (not (kindIs "invalid" $job.maxFailedIndexes)) (kindIs "invalid" $job.backoffLimitPerIndex)) -}}{{- $errors = append $errors (printf "%s is set but backoffLimitPerIndex is null; Kubernetes accepts maxFailedIndexes only with backoffLimitPerIndex. Set %s or remove maxFailedIndexes." (include "dl-common.values.path" (dict "role" $role "key" "job.maxFailedIndexes" "context" $ctx)) (include "dl-common.values.path" (dict "role" $role "key" "job.backoffLimitPerIndex" "context" $ctx))) -}}{{- end -}}
{{- toJson $errors -}}
{{- end -}}
