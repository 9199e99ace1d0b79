{{/*
dl-common.hostfile.lines: hostfile text, one line per host of "hosts" (a list of names), in "format":
  openmpi -> "<host> slots=<slots>"      mpich / intel -> "<host>:<slots>"      plain -> "<host>"
"slots" is required for every format but plain (usually the GPUs per worker).
  {{ include "dl-common.hostfile.lines" (dict "hosts" $hosts "format" "openmpi" "slots" 8) }}
*/}}
{{- define "dl-common.hostfile.lines" -}}
{{- $lines := list -}}
{{- range .hosts -}}
{{- if eq $.format "openmpi" -}}
{{- $lines = append $lines (printf "%s slots=%d" . (int $.slots)) -}}
{{- else if or (eq $.format "mpich") (eq $.format "intel") -}}
{{- $lines = append $lines (printf "%s:%d" . (int $.slots)) -}}
{{- else if eq $.format "plain" -}}
{{- $lines = append $lines . -}}
{{- else -}}
{{- fail (printf "dl-common.hostfile.lines: unknown format %q; use openmpi, mpich, intel or plain" $.format) -}}
{{- end -}}
{{- end -}}
{{- join "\n" $lines -}}
{{- end -}}
