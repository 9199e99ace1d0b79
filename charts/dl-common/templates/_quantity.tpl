{{/*
dl-common.quantity.parse: a Kubernetes quantity ("value": a string such as "16Gi", "500m", "1.5e9", or a
number) read the way Kubernetes' resource.Quantity reads it, as JSON:
  {"valid": true, "number": <the amount in base units (bytes for memory), float64>, "suffix": "Gi",
   "unit": "binary" | "decimal" | "exponent" | "none"}
or {"valid": false} when it is not a quantity. Suffixes: binary Ki Mi Gi Ti Pi Ei (powers of 1024), decimal
n u m k M G T P E (powers of 1000; "m" is a thousandth), an exponent e<n> / E<n>, or none (a plain number).
Float64 is exact to 2^53 (8 PiB), plenty for comparing sizes; an exponent beyond e30 counts as 1e30.
  {{- $q := include "dl-common.quantity.parse" (dict "value" "16Gi") | fromJson -}}   -> number 17179869184
*/}}
{{- define "dl-common.quantity.parse" -}}
{{- $v := .value -}}
{{- $text := "" -}}
{{- if or (kindIs "string" $v) (kindIs "float64" $v) (kindIs "int64" $v) (kindIs "int" $v) -}}
{{- $text = toString $v -}}
{{- end -}}
{{- if not (regexMatch "^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$" $text) -}}
{{- toJson (dict "valid" false) -}}
{{- else -}}
{{- $digits := regexFind "^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)" $text -}}
{{- $suffix := trimPrefix $digits $text -}}
{{- $binary := dict "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 -}}
{{- $decimal := dict "n" 1e-9 "u" 1e-6 "m" 1e-3 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 -}}
{{- $factor := 1.0 -}}
{{- $unit := "none" -}}
{{- if hasKey $binary $suffix -}}
{{- $factor = get $binary $suffix -}}
{{- $unit = "binary" -}}
{{- else if hasKey $decimal $suffix -}}
{{- $factor = get $decimal $suffix -}}
{{- $unit = "decimal" -}}
{{- else if $suffix -}}
{{- $unit = "exponent" -}}
{{- $exp := int (substr 1 (len $suffix) $suffix) -}}
{{- $steps := ternary $exp (sub 0 $exp) (gt $exp 0) -}}
{{- range until (min 30 $steps | int) -}}
{{- $factor = ternary (mulf $factor 10.0) (divf $factor 10.0) (gt $exp 0) -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "valid" true "number" (mulf (float64 $digits) $factor) "suffix" $suffix "unit" $unit) -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.quantity.size: the error (a sentence, or "" when fine) for a size a user gives in bytes, such as a
sizeLimit: it must be a Kubernetes quantity with a unit (binary Ki..Ei or decimal k..E), because a plain
number is bytes ("16" is 16 bytes, not 16 GiB). "path" is the value path the user set, for the message.
  {{- $err := include "dl-common.quantity.size" (dict "value" $s.shm.sizeLimit "path" "defaults.shm.sizeLimit") -}}
*/}}
{{- define "dl-common.quantity.size" -}}
{{- $q := include "dl-common.quantity.parse" . | fromJson -}}
{{- if not $q.valid -}}
{{- printf "%s is %q, which is not a Kubernetes quantity; write a size with a unit, e.g. --set %s=16Gi (binary Ki, Mi, Gi, Ti or decimal k, M, G, T)." .path (toString .value) .path -}}
{{- else if eq $q.unit "none" -}}
{{- printf "%s is %v, a size without a unit, which Kubernetes reads as bytes; write the unit, e.g. --set %s=%vGi for %v GiB." .path .value .path $q.number $q.number -}}
{{- else if eq $q.unit "exponent" -}}
{{- printf "%s is %q, a size without a unit (bytes); write it with a unit, e.g. --set %s=16Gi." .path (toString .value) .path -}}
{{- else if or (has $q.suffix (list "n" "u" "m")) (lt $q.number 1.0) -}}
{{- printf "%s is %q, less than one byte (m is a thousandth, not mega); write the size with a unit such as Mi or Gi, e.g. --set %s=16Gi." .path (toString .value) .path -}}
{{- end -}}
{{- end -}}
