{{/*
Your own training program without building an image: the value `script` of every training chart, set with
`helm install ... --set-file script=train.py`. Its text becomes script.py in the release's scripts ConfigMap
(dl-common.script.configMap, which also holds the chart's benchmark), every role mounts that ConfigMap
read-only at /opt/dl-charts (dl-common.script.volume / volumeMount), and each chart runs
/opt/dl-charts/script.py with its own launcher in place of its benchmark (dl-common.script.program; the MPI
charts through their mpirun line, dl-common.mpi.program). dl-common.script.validate checks the value.
A script that is empty or only whitespace is the same as none.
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

{{/*
dl-common.script.validate: "errors" plus the errors of the value `script`, each naming what the user set
and the fix:
- script that is not a string (`--set script=true` reads true, numbers and lists as other types);
- a script over 900 KiB (a ConfigMap holds at most 1 MiB, the chart's own files included); the message
  points to "program" (default defaults.command; the MPI charts' value for the program every rank runs);
- script together with a command of any role in "roles" (defaults.command or roles.<role>.command): that
  command would replace the launcher that runs the script;
- script together with a chart value that also names the program ("conflicts": value path -> true when
  set, e.g. horovod.command);
- with "mpi" true: defaults.args (the script's arguments in the launch line) together with
  roles.launcher.args, which replaces that whole line.
  {{- $errors = include "dl-common.script.validate" (dict "errors" $errors "roles" (list "worker") "conflicts" (dict) "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.script.validate" -}}
{{- $errors := .errors | default list -}}
{{- $ctx := .context -}}
{{- $script := $ctx.Values.script -}}
{{- $howTo := "--set-file script=train.py" -}}
{{- $program := .program | default "defaults.command" -}}
{{- if not (or (kindIs "invalid" $script) (kindIs "string" $script)) -}}
{{- $kinds := dict "bool" "a boolean" "int" "a number" "int64" "a number" "float64" "a number" "slice" "a list" "map" "a map" -}}
{{- $errors = append $errors (printf "script is %s (%s), not the text of a program; pass the file with %s (--set script=... reads true, false, numbers and lists as other types), or leave script empty to run the chart's benchmark." (get $kinds (kindOf $script) | default (kindOf $script)) (toJson $script | trunc 60) $howTo) -}}
{{- else if include "dl-common.script.set" . -}}
{{- $max := 921600 -}}
{{- if (gt (len $script) $max) -}}{{- $errors = append $errors (printf "script is %d bytes (%d KiB); it is stored in a ConfigMap, which holds at most 1 MiB with the chart's own files, so script may be at most 900 KiB. Put a larger program in your image or on a volume (defaults.volumes / defaults.volumeMounts), run it with %s, and leave script empty." (len $script) (div (len $script) 1024) $program) -}}{{- end -}}
{{- range $role := .roles -}}
{{- $s := include "dl-common.values.role" (dict "role" $role "context" $ctx) | fromJson -}}
{{- if $s.command -}}
{{- $path := include "dl-common.values.path" (dict "role" $role "key" "command" "context" $ctx) -}}
{{- $errors = append $errors (printf "script and %s are both set, so it is unclear which program runs: %s replaces the chart's launcher, which runs the script. Drop %s to run the script with the chart's launcher (its arguments go in defaults.args), or leave script empty to run %s." $path $path $path $path) -}}
{{- end -}}
{{- end -}}
{{- range $path, $set := (.conflicts | default dict) -}}
{{- if $set -}}
{{- $errors = append $errors (printf "script and %s are both set, and both name the program to run. Clear %s to run the script, or leave script empty to run %s." $path $path $path) -}}
{{- end -}}
{{- end -}}
{{- if .mpi -}}
{{- $launcherArgs := (($ctx.Values.roles | default dict).launcher | default dict).args -}}
{{- if (and $launcherArgs $ctx.Values.defaults.args) -}}{{- $errors = append $errors (printf "script and defaults.args are set, and defaults.args are the script's arguments in the launch line, but roles.launcher.args replaces that whole line, so they would be ignored. Put the arguments after %s in roles.launcher.args, or drop roles.launcher.args." (include "dl-common.script.path" .)) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $errors -}}
{{- end -}}
