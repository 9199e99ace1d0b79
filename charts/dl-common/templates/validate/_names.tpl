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
