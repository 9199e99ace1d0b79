{{/*
Your own training program without building an image: the value `script` of every training chart, set with
`helm install ... --set-file script=train.py`. Its text becomes script.py in the release's scripts ConfigMap
(dl-common.script.configMap, which also holds the chart's benchmark), every role mounts that ConfigMap
read-only at /opt/dl-charts (dl-common.script.volume / volumeMount), and each chart runs
/opt/dl-charts/script.py with its own launcher in place of its benchmark (dl-common.script.program; the MPI
charts through their mpirun line, dl-common.mpi.program). dl-common.validate.script (validate/_script.tpl)
checks the value. A script that is empty or only whitespace is the same as none.
*/}}

{{/*
dl-common.script.set: "true" when .Values.script holds a program (a string with more than whitespace), else "".
  {{- if include "dl-common.script.set" (dict "context" $) }}...{{ end }}
*/}}
{{- define "dl-common.script.set" -}}
{{- $script := .context.Values.script -}}
{{- if and (kindIs "string" $script) (trim $script) -}}true{{- end -}}
{{- end -}}

{{/*
dl-common.script.key / dl-common.script.mountPath / dl-common.script.path: the ConfigMap key of the user's
program (script.py), where the scripts ConfigMap is mounted (/opt/dl-charts) and so the path every role runs.
  {{ include "dl-common.script.path" (dict "context" $) }}   -> /opt/dl-charts/script.py
*/}}
{{- define "dl-common.script.key" -}}
script.py
{{- end -}}
{{- define "dl-common.script.mountPath" -}}
/opt/dl-charts
{{- end -}}
{{- define "dl-common.script.path" -}}
{{- printf "%s/%s" (include "dl-common.script.mountPath" .) (include "dl-common.script.key" .) -}}
{{- end -}}

{{/*
dl-common.script.volume / dl-common.script.volumeMount: JSON of the pod volume "scripts" (the release's
scripts ConfigMap, files mode 0555) and of its read-only mount at dl-common.script.mountPath, for the
"volumes" / "volumeMounts" of dl-common.job.indexed.
  "volumes" (list (include "dl-common.script.volume" (dict "context" $) | fromJson))
*/}}
{{- define "dl-common.script.volume" -}}
{{- toJson (dict "name" "scripts" "configMap" (dict "name" (include "dl-common.names.component" (dict "component" "scripts" "context" .context)) "defaultMode" 365)) -}}
{{- end -}}
{{- define "dl-common.script.volumeMount" -}}
{{- toJson (dict "name" "scripts" "mountPath" (include "dl-common.script.mountPath" .) "readOnly" true) -}}
{{- end -}}

{{/*
dl-common.script.configMap: the release's scripts ConfigMap "<fullname>-scripts": "files" (file name -> text,
e.g. the chart's benchmark read with .Files.Get) plus, when a script is set, script.py with the exact text of
.Values.script. Every file is written with toYaml, so the mounted file has the same bytes as the original.
  {{ include "dl-common.script.configMap" (dict "files" (dict "bench_tf.py" (.Files.Get "files/bench_tf.py")) "context" .) }}
*/}}
{{- define "dl-common.script.configMap" -}}
{{- $ctx := .context -}}
{{- $key := include "dl-common.script.key" . -}}
{{- $data := dict -}}
{{- range $name, $text := .files -}}
{{- if eq $name $key -}}
{{- fail (printf "dl-common.script.configMap: the chart's file %s would hide the user's script; rename it" $name) -}}
{{- end -}}
{{- $_ := set $data $name (toString $text) -}}
{{- end -}}
{{- if include "dl-common.script.set" . -}}
{{- $_ := set $data $key $ctx.Values.script -}}
{{- end -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "dl-common.names.component" (dict "component" "scripts" "context" $ctx) }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "scripts" "context" $ctx) | nindent 4 }}
data:
  {{- toYaml $data | nindent 2 }}
{{- end -}}

{{/*
dl-common.script.program: JSON {command, args} of a role's program. Without a script: "command" and "args"
as given (the chart's benchmark). With one: "command" followed by dl-common.script.path, and no args: the
benchmark's flags are dropped, and dl-common.pod.command then gives the role's settings.args
(defaults.args / roles.<role>.args) to the script. Wiring (env, the chart's "extraArgs"), peer waits and
the watchdog stay as they are.
  {{- $p := include "dl-common.script.program" (dict "command" (list "python") "args" $benchArgs "context" $) | fromJson -}}
*/}}
{{- define "dl-common.script.program" -}}
{{- if include "dl-common.script.set" . -}}
{{- toJson (dict "command" (append (.command | default list) (include "dl-common.script.path" .)) "args" list) -}}
{{- else -}}
{{- toJson (dict "command" (.command | default list) "args" (.args | default list)) -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.script.podAnnotations: JSON {"dl-charts.io/script-sha256": <digest>} when a script is set, else
{}: pass it as "podAnnotations" of dl-common.job.indexed. It shows which program a pod ran, and it is part
of the pod template, so `helm upgrade` with another script is refused while the release's Jobs exist
(dl-common.job.refuseImmutableChange) instead of retried pods running another program than their peers.
  "podAnnotations" (include "dl-common.script.podAnnotations" (dict "context" $) | fromJson)
*/}}
{{- define "dl-common.script.podAnnotations" -}}
{{- if include "dl-common.script.set" . -}}
{{- toJson (dict "dl-charts.io/script-sha256" (sha256sum .context.Values.script)) -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}
