{{/*
dl-common.validate.script: "errors" plus the errors of the value `script`, each naming what the user set
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
  {{- $errors = include "dl-common.validate.script" (dict "errors" $errors "roles" (list "worker") "conflicts" (dict) "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.script" -}}
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
