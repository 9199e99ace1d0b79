{{/*
dl-common.hostfile.lines: hostfile text, one line per host of "hosts" (a list of names), in "format":
  openmpi -> "<host> slots=<slots>"      mpich / intel -> "<host>:<slots>"      plain -> "<host>"
"slots" is required for every format but plain (usually the GPUs per worker).
  {{ include "dl-common.hostfile.lines" (dict "hosts" $hosts "format" "openmpi" "slots" 8) }}
*/}}
{{- define "dl-common.hostfile.lines" -}}
{{- /* Written line by line: collecting lines with Sprig's append copies the list each time, quadratic in the
hosts (1.8 s at 10,000 workers). */ -}}
{{- $slots := "" -}}
{{- if eq .format "openmpi" -}}
{{- $slots = printf " slots=%d" (int .slots) -}}
{{- else if or (eq .format "mpich") (eq .format "intel") -}}
{{- $slots = printf ":%d" (int .slots) -}}
{{- else if ne .format "plain" -}}
{{- if .hosts -}}
{{- fail (printf "dl-common.hostfile.lines: unknown format %q; use openmpi, mpich, intel or plain" .format) -}}
{{- end -}}
{{- end -}}
{{- range $i, $host := .hosts -}}
{{- if $i }}{{ "\n" }}{{ end -}}{{ $host }}{{ $slots }}
{{- end -}}
{{- end -}}
