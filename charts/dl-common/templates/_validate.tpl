{{/*
dl-common.validate.collect: appends a message to a list when a condition holds. Charts collect every
broken cross-field rule in templates/validation.yaml, then call dl-common.validate.fail once, so a user
sees all problems in one run.
  {{- $errors := list -}}
  {{- $errors = include "dl-common.validate.collect" (dict "errors" $errors "when" (lt (int .Values.worker.replicas) 1) "message" "worker.replicas: must be >= 1; set --set worker=N") | fromJsonArray -}}
The charts of this repository append in place instead, which renders faster (no JSON round trip, and the
message is only built when the rule is broken):
  {{- if lt (int .Values.worker.replicas) 1 -}}{{- $errors = append $errors "worker.replicas: must be >= 1; set --set worker=N" -}}{{- end -}}
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
{{- $message := printf "release name %q is %d characters; names derived from it (e.g. %s%s) must stay within 63. Use a release name of at most %d characters or set fullnameOverride." $name (len $name) $name .longestSuffix $max -}}
{{- if .context.Values.fullnameOverride -}}
{{- $message = printf "fullnameOverride %q is %d characters; names derived from it (e.g. %s%s) must stay within 63. Set fullnameOverride to at most %d characters." $name (len $name) $name .longestSuffix $max -}}
{{- end -}}
{{- $errors := .errors -}}
{{- if gt (len $name) $max -}}{{- $errors = append $errors $message -}}{{- end -}}
{{- toJson $errors -}}
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
{{- $message := printf "release name %q must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter, no dots; it names the headless Service every pod uses as subdomain. Choose another release name or set fullnameOverride to such a label." $name -}}
{{- if .context.Values.fullnameOverride -}}
{{- $message = printf "fullnameOverride is %q, which is not a DNS-1035 label: use lowercase letters, digits and '-', starting with a letter, no dots (e.g. %q); it names the headless Service every pod uses as subdomain." $name (include "dl-common.validate.dnsLabel" (dict "name" $name)) -}}
{{- end -}}
{{- if (not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name)) -}}{{- $errors = append $errors $message -}}{{- end -}}
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
dl-common.validate.dnsLabel: "name" made into a DNS-1035 label (lowercase; characters other than letters,
digits and '-' become '-'; leading non-letters and trailing '-' dropped), for the fix a message suggests.
  {{ include "dl-common.validate.dnsLabel" (dict "name" "My_Job") }}   -> my-job
*/}}
{{- define "dl-common.validate.dnsLabel" -}}
{{- $label := regexReplaceAll "[^a-z0-9-]" (lower .name) "-" -}}
{{- $label = regexReplaceAll "^[^a-z]+" $label "" | trunc 63 -}}
{{- regexReplaceAll "-+$" $label "" | default "train" -}}
{{- end -}}

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

{{/*
dl-common.validate.role: the errors in one role's merged "settings" (dl-common.values.role), each naming
the values path it comes from (roles.<role>.x or defaults.x) and the fix: the image (dl-common.validate.image:
empty or "latest", a repository carrying a tag or digest); a GPU count that is not set, not a whole
number or above 9223372036854775 (the most a Kubernetes quantity holds in thousandths); the GPU resource also written into resources.requests/limits; /dev/shm and /tmp sizes
(dl-common.validate.scratch); an env name set twice in the final container env (the chart's "env" and
"watch" as given to dl-common.job.indexed, plus settings.env) or set in settings.env although the
"entrypoint" wrapper exports it (its "sets"); a schedulerName that contradicts the gang
scheduler; maxFailedIndexes without backoffLimitPerIndex. Messages name the values path (defaults.x or
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
{{- $errors = include "dl-common.validate.resources" (dict "errors" $errors "resources" $s.resources "role" $role "context" $ctx) | fromJsonArray -}}
{{- $errors = include "dl-common.validate.scratch" (dict "errors" $errors "role" $role "settings" $s "context" $ctx) | fromJsonArray -}}
{{- $env := include "dl-common.pod.env" (dict "env" .env "watch" .watch "settings" $s "context" $ctx) | fromYamlArray -}}
{{- $seen := dict -}}
{{- $chartNames := dict -}}
{{- range (.env | default list) -}}
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
