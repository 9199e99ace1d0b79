{{/*
dl-common.values.merge: deep-merges "override" over "base" and returns the result as JSON.
Maps merge key by key; any other value in "override" (lists, strings, numbers, false, 0, "") replaces
the base value; a null in "override" keeps the base value (null = inherit). A null in "base" is left out,
so the result holds no null at any depth (null = not set; with an empty base this cleans a map).
"clean": true says the base holds no null already (an earlier merge's result), which spares walking it.
  {{- $merged := include "dl-common.values.merge" (dict "base" .Values.defaults "override" .Values.roles.ps) | fromJson -}}
*/}}
{{- define "dl-common.values.merge" -}}
{{- $out := dict -}}
{{- $clean := .clean -}}
{{- range $key, $value := (.base | default dict) -}}
{{- if and (kindIs "map" $value) (not $clean) -}}
{{- $_ := set $out $key (include "dl-common.values.merge" (dict "base" $value) | fromJson) -}}
{{- else if not (kindIs "invalid" $value) -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- end -}}
{{- range $key, $value := (.override | default dict) -}}
{{- $current := index $out $key -}}
{{- if kindIs "map" $value -}}
{{- $_ := set $out $key (include "dl-common.values.merge" (dict "base" (ternary $current dict (kindIs "map" $current)) "override" $value "clean" true) | fromJson) -}}
{{- else if not (kindIs "invalid" $value) -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
dl-common.values.role: the effective pod settings of one role: `.Values.defaults` with
`.Values.roles.<role>` deep-merged over it (see dl-common.values.merge), as JSON. Numbers come back as
float64 (fromJson); use `int` where an integer is rendered.
  {{- $s := include "dl-common.values.role" (dict "role" "worker" "context" $) | fromJson -}}
*/}}
{{- define "dl-common.values.role" -}}
{{- $values := .context.Values -}}
{{- $override := dict -}}
{{- if kindIs "map" $values.roles -}}
{{- $override = index $values.roles .role | default dict -}}
{{- end -}}
{{- $defaults := include "dl-common.values.memo" (dict "name" "dl-common.values.defaults" "context" .context) | fromJson -}}
{{- include "dl-common.values.merge" (dict "base" $defaults "override" $override "clean" true) -}}
{{- end -}}

{{/*
dl-common.values.defaults: `.Values.defaults` without its nulls (see dl-common.values.merge), as JSON; the
base of every role's settings, computed once per render through dl-common.values.memo.
*/}}
{{- define "dl-common.values.defaults" -}}
{{- include "dl-common.values.merge" (dict "base" (.Values.defaults | default dict)) -}}
{{- end -}}

{{/*
dl-common.values.path: the values path a role setting comes from, for error messages:
"roles.<role>.<key>" when the role overrides it, otherwise "defaults.<key>".
  {{ include "dl-common.values.path" (dict "role" "worker" "key" "gpu.count" "context" $) }}  -> roles.worker.gpu.count
*/}}
{{- define "dl-common.values.path" -}}
{{- $node := dict -}}
{{- if kindIs "map" .context.Values.roles -}}
{{- $node = index .context.Values.roles .role | default dict -}}
{{- end -}}
{{- $found := true -}}
{{- range (splitList "." .key) -}}
{{- if and $found (kindIs "map" $node) (hasKey $node .) (not (kindIs "invalid" (index $node .))) -}}
{{- $node = index $node . -}}
{{- else -}}
{{- $found = false -}}
{{- end -}}
{{- end -}}
{{- if $found -}}roles.{{ .role }}.{{ .key }}{{- else -}}defaults.{{ .key }}{{- end -}}
{{- end -}}

{{/*
dl-common.values.atLeast: "true" when the target Kubernetes version (.Capabilities.KubeVersion, set with
`helm template --kube-version`) is at least "version", else "". Used to emit fields only where the API has them.
  {{- if include "dl-common.values.atLeast" (dict "version" "1.33" "context" $) }}...{{ end }}
*/}}
{{- define "dl-common.values.atLeast" -}}
{{- if semverCompare (printf ">=%s.0-0" .version) .context.Capabilities.KubeVersion.Version -}}true{{- end -}}
{{- end -}}

{{/*
dl-common.values.memo: the output of `include "<name>" <root context>`, computed once per render. For
helpers that read only the root context (.Values, .Release, .Chart, .Capabilities; never .Template) and that
several templates call: a chart's validation (included at the top of every template, so that a values error
is what the user sees whatever order Helm renders templates in) and its merged role settings. During a
render the templates of a chart share one root context (Helm 3 and 4), which holds the memo; if a Helm gave
each template its own copy, the helper would only run again. With "role", the output of
`include "<name>" (dict "role" <role> "context" <root context>)`, once per render and role.
  {{- include "dl-common.values.memo" (dict "name" "horovod-mpi.validate" "context" .) -}}
  {{- $jobs := include "dl-common.values.memo" (dict "name" "horovod-mpi.jobs" "context" .) | fromJson -}}
  {{- $job := include "dl-common.values.memo" (dict "name" "tensorflow-dist.job" "role" "ps" "context" .) | fromJson -}}
*/}}
{{- define "dl-common.values.memo" -}}
{{- if not (hasKey .context "dlChartsMemo") -}}
{{- $_ := set .context "dlChartsMemo" dict -}}
{{- end -}}
{{- $memo := get .context "dlChartsMemo" -}}
{{- $key := .name -}}
{{- $data := .context -}}
{{- if hasKey . "role" -}}
{{- $key = printf "%s role=%s" .name .role -}}
{{- $data = dict "role" .role "context" .context -}}
{{- end -}}
{{- if not (hasKey $memo $key) -}}
{{- $_ := set $memo $key (include .name $data) -}}
{{- end -}}
{{- get $memo $key -}}
{{- end -}}
