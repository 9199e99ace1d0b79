{{/*
The named configs of config.map, in either form a user may write them:
  - an object (this chart's form):          default: {sharing: {timeSlicing: {...}}}
  - a YAML string (NVIDIA's chart's form):  default: |-
                                              version: v1
                                              sharing: ...
Both forms are checked by the same rules: files/config.schema.json (through gpu-device-plugin.configSchema.check
below), then the cross-field rules of templates/validation.yaml. values.schema.json only says "object or string".
*/}}

{{/*
gpu-device-plugin.configs: config.map with every entry as an object (a string entry parsed with fromYaml), and
the problems of each entry (a string that is not a YAML mapping, then every schema violation), as JSON:
  {"configs": {<name>: <object>}, "errors": [<message>, ...]}
An entry with problems maps to {} so that nothing after validation trips over it. Root context; memoized.
  {{- $configs := (include "dl-common.values.memo" (dict "name" "gpu-device-plugin.configs" "context" $) | fromJson).configs -}}
*/}}
{{- define "gpu-device-plugin.configs" -}}
{{- $schema := .Files.Get "files/config.schema.json" | fromJson -}}
{{- $configs := dict -}}
{{- $errors := list -}}
{{- range $name, $entry := .Values.config.map | default dict -}}
{{- $at := printf "config.map.%s" $name -}}
{{- $config := $entry -}}
{{- $problems := list -}}
{{- if kindIs "string" $entry -}}
{{- $config = fromYaml $entry -}}
{{- if and (eq (len $config) 1) (hasKey $config "Error") (kindIs "string" $config.Error) -}}
{{- $problems = append $problems (printf "%s: the string is not a YAML mapping of the plugin's config file (%s). Write it as NVIDIA's chart takes it, e.g. %s: \"version: v1\\nsharing:\\n  timeSlicing:\\n    resources:\\n    - name: nvidia.com/gpu\\n      replicas: 4\", or as an object (see the README section \"Sharing configs\")." $at $config.Error $at) -}}
{{- end -}}
{{- end -}}
{{- if not $problems -}}
{{- $problems = include "gpu-device-plugin.configSchema.check" (dict "schema" $schema "defs" $schema.definitions "value" $config "path" $at "config" $at) | fromJsonArray -}}
{{- end -}}
{{- $errors = concat $errors $problems -}}
{{- $_ := set $configs $name (ternary (dict) $config (gt (len $problems) 0)) -}}
{{- end -}}
{{- toJson (dict "configs" $configs "errors" $errors) -}}
{{- end -}}

{{/*
gpu-device-plugin.configSchema.check: the problems of "value" against "schema" (a node of
files/config.schema.json, whose "definitions" are "defs"), as a JSON list of messages that start with the
value's path ("path"). "config" is the path of the config being checked, put in for {config} in the
descriptions of refused keys. Understands the keywords the file's description lists; tests keep the file to
them.
  {{- $problems := include "gpu-device-plugin.configSchema.check" (dict "schema" $schema "defs" $schema.definitions "value" $cfg "path" "config.map.default" "config" "config.map.default") | fromJsonArray -}}
*/}}
{{- define "gpu-device-plugin.configSchema.check" -}}
{{- $s := .schema -}}
{{- if hasKey $s "$ref" -}}
{{- $s = index .defs (last (splitList "/" (index $s "$ref"))) -}}
{{- end -}}
{{- $v := .value -}}
{{- $p := .path -}}
{{- $why := "" -}}
{{- if $s.description -}}{{- $why = printf " (%s)" (replace "{config}" .config $s.description | trimSuffix ".") -}}{{- end -}}
{{- $kind := include "gpu-device-plugin.configSchema.type" (dict "value" $v) -}}
{{- $errors := list -}}
{{- if hasKey $s "not" -}}
{{- $errors = append $errors (printf "%s: %s" $p (replace "{config}" .config $s.description)) -}}
{{- else -}}
{{- $types := list -}}
{{- if hasKey $s "type" -}}
{{- $types = ternary (list $s.type) $s.type (kindIs "string" $s.type) -}}
{{- end -}}
{{- if and $types (not (has $kind $types)) (not (and (eq $kind "integer") (has "number" $types))) -}}
{{- $errors = append $errors (printf "%s: got %s %s, want %s%s." $p $kind (toJson $v) (join " or " $types) $why) -}}
{{- else -}}
{{- if and (hasKey $s "const") (ne (toJson $s.const) (toJson $v)) -}}
{{- $errors = append $errors (printf "%s: got %s, want %s%s." $p (toJson $v) (toJson $s.const) $why) -}}
{{- end -}}
{{- if hasKey $s "enum" -}}
{{- $allowed := list -}}
{{- range $s.enum -}}{{- $allowed = append $allowed (toJson .) -}}{{- end -}}
{{- if not (has (toJson $v) $allowed) -}}
{{- $errors = append $errors (printf "%s: got %s, want one of %s%s." $p (toJson $v) (join ", " $allowed) $why) -}}
{{- end -}}
{{- end -}}
{{- if eq $kind "string" -}}
{{- if and (hasKey $s "pattern") (not (regexMatch $s.pattern $v)) -}}
{{- $errors = append $errors (printf "%s: %s does not match %s%s." $p (toJson $v) $s.pattern $why) -}}
{{- end -}}
{{- if and (hasKey $s "minLength") (lt (len $v) (int $s.minLength)) -}}
{{- $errors = append $errors (printf "%s: %s is shorter than %d characters%s." $p (toJson $v) (int $s.minLength) $why) -}}
{{- end -}}
{{- if and (hasKey $s "maxLength") (gt (len $v) (int $s.maxLength)) -}}
{{- $errors = append $errors (printf "%s: %s is longer than %d characters%s." $p (toJson $v) (int $s.maxLength) $why) -}}
{{- end -}}
{{- end -}}
{{- if or (eq $kind "integer") (eq $kind "number") -}}
{{- if and (hasKey $s "minimum") (lt (float64 $v) (float64 $s.minimum)) -}}
{{- $errors = append $errors (printf "%s: %s is below the minimum %s%s." $p (toJson $v) (toJson $s.minimum) $why) -}}
{{- end -}}
{{- if and (hasKey $s "maximum") (gt (float64 $v) (float64 $s.maximum)) -}}
{{- $errors = append $errors (printf "%s: %s is above the maximum %s%s." $p (toJson $v) (toJson $s.maximum) $why) -}}
{{- end -}}
{{- end -}}
{{- if eq $kind "object" -}}
{{- $properties := $s.properties | default dict -}}
{{- range $s.required -}}
{{- if not (hasKey $v .) -}}
{{- $errors = append $errors (printf "%s: %s is required%s." $p . $why) -}}
{{- end -}}
{{- end -}}
{{- range $key, $item := $v -}}
{{- if hasKey $properties $key -}}
{{- $errors = concat $errors (include "gpu-device-plugin.configSchema.check" (dict "schema" (index $properties $key) "defs" $.defs "value" $item "path" (printf "%s.%s" $p $key) "config" $.config) | fromJsonArray) -}}
{{- else if eq (toJson $s.additionalProperties) "false" -}}
{{- $allowed := list -}}
{{- range $name, $sub := $properties -}}{{- if not (hasKey $sub "not") -}}{{- $allowed = append $allowed $name -}}{{- end -}}{{- end -}}
{{- $errors = append $errors (printf "%s: unknown key %q; the keys allowed here are %s." $p $key (join ", " $allowed)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if eq $kind "array" -}}
{{- if and (hasKey $s "minItems") (lt (len $v) (int $s.minItems)) -}}
{{- $errors = append $errors (printf "%s: needs at least %d item(s)%s." $p (int $s.minItems) $why) -}}
{{- end -}}
{{- if $s.uniqueItems -}}
{{- $seen := dict -}}
{{- range $v -}}
{{- $key := toJson . -}}
{{- if hasKey $seen $key -}}
{{- $errors = append $errors (printf "%s: %s is listed twice; list each item once." $p $key) -}}
{{- end -}}
{{- $_ := set $seen $key true -}}
{{- end -}}
{{- end -}}
{{- if hasKey $s "items" -}}
{{- range $i, $item := $v -}}
{{- $errors = concat $errors (include "gpu-device-plugin.configSchema.check" (dict "schema" $s.items "defs" $.defs "value" $item "path" (printf "%s[%d]" $p $i) "config" $.config) | fromJsonArray) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if hasKey $s "anyOf" -}}
{{- $matched := false -}}
{{- range $s.anyOf -}}
{{- if not (include "gpu-device-plugin.configSchema.check" (dict "schema" . "defs" $.defs "value" $v "path" $p "config" $.config) | fromJsonArray) -}}
{{- $matched = true -}}
{{- end -}}
{{- end -}}
{{- if not $matched -}}
{{- $errors = append $errors (printf "%s: got %s, want %s." $p (toJson $v) (replace "{config}" .config ($s.description | default "a value of one of the allowed forms"))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $errors -}}
{{- end -}}

{{/*
gpu-device-plugin.configSchema.type: the JSON Schema type of "value": object, array, string, boolean, null,
integer (also a whole float64, as YAML numbers arrive) or number.
  {{ include "gpu-device-plugin.configSchema.type" (dict "value" 4) }}  -> integer
*/}}
{{- define "gpu-device-plugin.configSchema.type" -}}
{{- $v := .value -}}
{{- if kindIs "map" $v -}}object
{{- else if kindIs "slice" $v -}}array
{{- else if kindIs "string" $v -}}string
{{- else if kindIs "bool" $v -}}boolean
{{- else if kindIs "invalid" $v -}}null
{{- else if or (kindIs "int" $v) (kindIs "int64" $v) (kindIs "int32" $v) (kindIs "uint64" $v) -}}integer
{{- else if and (kindIs "float64" $v) (eq $v (floor $v)) -}}integer
{{- else -}}number
{{- end -}}
{{- end -}}
