{{/*
dl-common.pod.image: the reference "<registry>/<path>:<tag>" of an image dict {repository, tag, pullPolicy};
every image a chart writes goes through it. "tagDefault" stands in for an empty tag (e.g. the chart's
appVersion). When .Values.global.imageRegistry is set (a mirror for air-gapped clusters), it replaces the
registry part of the repository: the first path component when it contains "." or ":" or is "localhost",
else Docker Hub's implicit one. The rest of the path is kept as written and Docker Hub's "library/" is not
added, so "busybox" becomes "<mirror>/busybox" and "nvcr.io/nvidia/k8s-device-plugin" becomes
"<mirror>/nvidia/k8s-device-plugin" (mirror what you pushed under the same path). The tag is untouched.
dl-common.validate.global checks the value.
  image: {{ include "dl-common.pod.image" (dict "image" $s.image "context" $) | quote }}
*/}}
{{- define "dl-common.pod.image" -}}
{{- $image := .image | default dict -}}
{{- $repository := toString ($image.repository | default "") -}}
{{- $registry := toString ((.context.Values.global | default dict).imageRegistry | default "") -}}
{{- if $registry -}}
{{- $parts := splitList "/" $repository -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $parts = rest $parts -}}
{{- end -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" $registry) (join "/" $parts) -}}
{{- end -}}
{{- printf "%s:%s" $repository (toString ($image.tag | default .tagDefault | default "")) -}}
{{- end -}}

{{/*
dl-common.pod.pullSecrets: the imagePullSecrets items of a pod: "secrets" (the chart's or role's list of
names or {name: ...} dicts) followed by .Values.global.imagePullSecrets, each name once. Renders nothing
when both are empty.
  {{- with include "dl-common.pod.pullSecrets" (dict "secrets" $s.imagePullSecrets "context" $) }}
  imagePullSecrets:
    {{- . | nindent 4 }}
  {{- end }}
*/}}
{{- define "dl-common.pod.pullSecrets" -}}
{{- $global := (.context.Values.global | default dict).imagePullSecrets | default list -}}
{{- $names := list -}}
{{- range concat (.secrets | default list) $global -}}
{{- if kindIs "map" . -}}
{{- $names = append $names (toString .name) -}}
{{- else -}}
{{- $names = append $names (toString .) -}}
{{- end -}}
{{- end -}}
{{- range $names | uniq }}
- name: {{ . | quote }}
{{- end -}}
{{- end -}}

{{/*
dl-common.pod.env: the complete env list of a role's main container, in this order:
  1. DL_TASK_INDEX: the pod's completion index (the same value as JOB_COMPLETION_INDEX, read from the
     batch.kubernetes.io/job-completion-index annotation), defined first so that later values can use
     "$(DL_TASK_INDEX)" (e.g. TF_CONFIG);
  2. "env": the chart's framework wiring (a list of EnvVar dicts), then the checkpoint contract
     (dl-common.checkpoint.env);
  3. the watchdog's variables when "watch" (role -> count) is not empty, and the peer wait's (dl-common.peers.waitEnv)
     when the main container waits for "waitFor" (dl-common.peers.waitIn), each name once;
  4. defaults the user may override: HOME=/tmp (when settings.tmp.enabled), for a role without GPUs
     NVIDIA_VISIBLE_DEVICES=void (CUDA images would otherwise see every GPU of the node), and the chart's own
     "envDefaults" (a list of EnvVar dicts, e.g. pytorch-dist's PYTHONUNBUFFERED=1 for an image's own entrypoint);
  5. settings.env, the user's extra variables.
A name set twice is an error reported by dl-common.validate.role (not silently dropped).
  env:
    {{- include "dl-common.pod.env" (dict "env" $env "watch" $watch "settings" $s "context" $) | nindent 4 }}
*/}}
{{- define "dl-common.pod.env" -}}
{{- $s := .settings -}}
{{- $env := list (dict "name" "DL_TASK_INDEX" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.annotations['batch.kubernetes.io/job-completion-index']"))) -}}
{{- $env = concat $env (.env | default list) (include "dl-common.checkpoint.env" . | fromYamlArray) -}}
{{- if and .watch (not (include "dl-common.pod.watchSidecar" .)) -}}
{{- $env = concat $env (include "dl-common.pod.watchEnv" . | fromJsonArray) -}}
{{- end -}}
{{- $waitFor := dict "roles" (.waitFor | default dict) "settings" $s "context" .context -}}
{{- if eq (include "dl-common.peers.waitIn" $waitFor) "main" -}}
{{- $names := dict -}}
{{- range $env -}}
{{- $_ := set $names .name true -}}
{{- end -}}
{{- range (include "dl-common.peers.waitEnv" (merge (dict "timeout" .context.Values.peerWait.timeoutSeconds) $waitFor) | fromYamlArray) -}}
{{- if not (hasKey $names .name) -}}
{{- $env = append $env . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $userNames := dict -}}
{{- range ($s.env | default list) -}}
{{- $_ := set $userNames (toString .name) true -}}
{{- end -}}
{{- if and ($s.tmp | default dict).enabled (not (hasKey $userNames "HOME")) -}}
{{- $env = append $env (dict "name" "HOME" "value" "/tmp") -}}
{{- end -}}
{{- if and (eq (include "dl-common.resources.gpuCount" .) "0") (not (hasKey $userNames "NVIDIA_VISIBLE_DEVICES")) -}}
{{- $env = append $env (dict "name" "NVIDIA_VISIBLE_DEVICES" "value" "void") -}}
{{- end -}}
{{- range (.envDefaults | default list) -}}
{{- if not (hasKey $userNames (toString .name)) -}}
{{- $env = append $env . -}}
{{- end -}}
{{- end -}}
{{- $env = concat $env ($s.env | default list) -}}
{{- toYaml $env -}}
{{- end -}}

{{/*
dl-common.pod.watchEnv: the watchdog's variables (dl-common.pod.watchdogScript) for "watch" (role -> count), as a
JSON list of EnvVar dicts: in the main container's env (dl-common.pod.env), or in the watchdog container of a role
that runs its image's entrypoint (dl-common.pod.watchSidecar).
  {{- $env := include "dl-common.pod.watchEnv" (dict "watch" $watch "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.pod.watchEnv" -}}
{{- $wd := .context.Values.watchdog -}}
{{- toJson (list
  (dict "name" "DL_WATCH_GROUPS" "value" (include "dl-common.peers.groups" (dict "roles" .watch "context" .context)))
  (dict "name" "DL_PEER_DOMAIN" "value" (include "dl-common.peers.domain" .))
  (dict "name" "DL_WATCH_READY" "value" (printf "%s.%s.svc" (include "dl-common.service.readyName" .) .context.Release.Namespace))
  (dict "name" "DL_WATCH_INTERVAL" "value" (toString (int $wd.intervalSeconds)))
  (dict "name" "DL_WATCH_MISSES" "value" (toString (int $wd.missedChecks)))
  (dict "name" "DL_WATCH_RETRY" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.annotations['batch.kubernetes.io/job-index-failure-count']")))) -}}
{{- end -}}

{{/*
dl-common.pod.watchSidecar: "true" when a role's program runs in a native sidecar beside the watchdog, else "": the
role runs its image's own entrypoint (settings.imageEntrypoint) and never ends by itself ("watch" is given), so no
wrapper can stop it and exit 0 (the entrypoint is unknown when the chart renders). The image's container is then an
init container with restartPolicy Always, and the pod's one regular container is the watchdog, in the role's image
(dl-common.pod.watchdogContainer), which exits 0 once the pods the role serves are gone: the kubelet stops the
sidecar and the pod completes, as under the wrapper. A program that fails is restarted in place by the kubelet
(Kubeflow's OnFailure), not by the Job. Native sidecars need Kubernetes 1.29 (dl-common.validate.entrypoint).
  {{- if include "dl-common.pod.watchSidecar" (dict "watch" $watch "settings" $s) }}...{{ end }}
*/}}
{{- define "dl-common.pod.watchSidecar" -}}
{{- if and .watch (.settings | default dict).imageEntrypoint -}}true{{- end -}}
{{- end -}}

{{/*
dl-common.pod.watchdogContainer: the regular container of a pod whose program is a native sidecar
(dl-common.pod.watchSidecar): the role's image runs dl-common.pod.watchdogScript without a program, with the
watchdog's variables (dl-common.pod.watchEnv), peerWait.resources and the role's securityContext. One list item.
  containers:
    {{- include "dl-common.pod.watchdogContainer" (dict "watch" $watch "settings" $s "context" $) | nindent 4 }}
*/}}
{{- define "dl-common.pod.watchdogContainer" -}}
{{- $s := .settings -}}
- name: watchdog
  image: {{ include "dl-common.pod.image" (dict "image" $s.image "context" .context) | quote }}
  imagePullPolicy: {{ ($s.image | default dict).pullPolicy | default "IfNotPresent" }}
  command:
    - /bin/sh
    - -c
    - |
      {{- include "dl-common.pod.watchdogScript" . | nindent 6 }}
    - dl-watchdog
  env:
    {{- include "dl-common.pod.watchEnv" . | fromJsonArray | toYaml | nindent 4 }}
  resources:
    {{- include "dl-common.values.merge" (dict "override" .context.Values.peerWait.resources) | fromJson | toYaml | nindent 4 }}
  {{- with $s.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
dl-common.pod.command: `command:` and `args:` of a role's main container. settings.command/args win over
the chart's "command"/"args" (a user command without args drops the chart's args); "extraArgs" are
appended (e.g. TensorFlow's legacy flags). With "watch" (role -> count) the program runs under the
watchdog (dl-common.pod.watchdogScript). With "entrypoint" (dict "script" "sets"), the container starts
with the entrypoint wrapper `/bin/sh -c <script; exec "$@"> dl-entrypoint` in front of the program (and in
front of the watchdog): "script" is POSIX sh that composes what would otherwise be copied into every pod
(e.g. TF_CONFIG from the cluster ConfigMap, dl-common.cluster.*) and exports it, or appends flags with
`set -- "$@" ...`; "sets" lists the env names it exports (dl-common.validate.role refuses them in env).
A script that fails ends the container with its status before the program starts. When the main container waits
for its peers ("waitFor", dl-common.peers.waitIn), the wait (dl-common.peers.inlineWait) opens the wrapper's script.
With settings.imageEntrypoint the image's own ENTRYPOINT runs: no `command:`, and `args:` only when settings.args
are given (else the image's CMD); the chart's program, "extraArgs", "entrypoint" and the watchdog wrapper do not
apply (the chart gives the env instead; a watched role runs as dl-common.pod.watchSidecar).
  {{- include "dl-common.pod.command" (dict "command" (list "python") "args" (list "/opt/bench.py") "extraArgs" list "watch" $watch "entrypoint" $entrypoint "settings" $s) | nindent 2 }}
*/}}
{{- define "dl-common.pod.command" -}}
{{- $s := .settings -}}
{{- if $s.imageEntrypoint -}}
{{- with $s.args }}
args:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- else -}}
{{- $cmd := $s.command | default .command | default list -}}
{{- $args := list -}}
{{- if $s.args -}}
{{- $args = $s.args -}}
{{- else if not $s.command -}}
{{- $args = .args | default list -}}
{{- end -}}
{{- $args = concat $args (.extraArgs | default list) -}}
{{- $wait := include "dl-common.peers.inlineWait" (dict "roles" (.waitFor | default dict) "settings" $s "context" .context) -}}
{{- $entrypoint := printf "%s\n%s" $wait ((.entrypoint | default dict).script | default "") | trim -}}
{{- if or .watch $entrypoint -}}
{{- if not $cmd -}}
{{- fail (printf "dl-common.pod.command: a role run under the %s needs a command (set the role's command)" (ternary "watchdog" "entrypoint wrapper" (not (empty .watch)))) -}}
{{- end }}
command:
  {{- if $entrypoint }}
  - /bin/sh
  - -c
  - |
    {{- $entrypoint | trim | nindent 4 }}
    exec "$@"
  - dl-entrypoint
  {{- end }}
  {{- if .watch }}
  - /bin/sh
  - -c
  - |
    {{- include "dl-common.pod.watchdogScript" . | nindent 4 }}
  - dl-watchdog
  {{- end }}
args:
  {{- toYaml (concat $cmd $args) | nindent 2 }}
{{- else }}
{{- with $cmd }}
command:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $args }}
args:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
dl-common.pod.container: the main container of a role (one list item), named after the role: image,
command/args (dl-common.pod.command), env (dl-common.pod.env), "ports" (list of dicts name/port),
resources with GPUs (dl-common.resources.container), securityContext, workingDir, /dev/shm and /tmp
mounts, the checkpoint volume's (dl-common.checkpoint.volumeMounts), the chart's "volumeMounts" and
settings.volumeMounts.
  containers:
    {{- include "dl-common.pod.container" (dict "role" "worker" "settings" $s "env" $env "ports" $ports "command" $cmd "args" $args "context" $) | nindent 4 }}
*/}}
{{- define "dl-common.pod.container" -}}
{{- $s := .settings -}}
- name: {{ .role }}
  image: {{ include "dl-common.pod.image" (dict "image" $s.image "context" .context) | quote }}
  imagePullPolicy: {{ ($s.image | default dict).pullPolicy | default "IfNotPresent" }}
  {{- with (include "dl-common.pod.command" . | trim) }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with $s.workingDir }}
  workingDir: {{ . | quote }}
  {{- end }}
  env:
    {{- include "dl-common.pod.env" . | nindent 4 }}
  {{- with $s.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .ports }}
  ports:
    {{- range . }}
    - name: {{ .name }}
      containerPort: {{ .port | int }}
      protocol: {{ .protocol | default "TCP" }}
    {{- end }}
  {{- end }}
  resources:
    {{- include "dl-common.resources.container" . | nindent 4 }}
  {{- with $s.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- $mounts := concat (include "dl-common.shm.volumeMounts" . | fromYamlArray) (include "dl-common.checkpoint.volumeMounts" . | fromYamlArray) (.volumeMounts | default list) ($s.volumeMounts | default list) }}
  {{- with $mounts }}
  volumeMounts:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
dl-common.pod.template: the pod template of a role's Indexed Job: labels (standard + queue/gang +
settings.podLabels), annotations (queue/gang + settings.podAnnotations + "podAnnotations"), subdomain =
the headless Service (so the pod is "<job>-<i>.<service>.<namespace>.svc"), restartPolicy Never, no
service links, no service account token unless settings.automountServiceAccountToken, placement
(dl-common.scheduling.pod), the peer-wait init container for "waitFor" (role -> count) where the wait is not the
main container's (dl-common.peers.waitIn) plus "initContainers", the main container (dl-common.pod.container) plus "sidecars", and volumes
(/dev/shm, /tmp, the checkpoint volume, the chart's "volumes", settings.volumes). "roles" (role -> count, all roles of the
release) sizes the gang annotations. A watched role that runs its image's entrypoint has its program in a native
sidecar and the watchdog as its container (dl-common.pod.watchSidecar), `kubectl logs` defaulting to the program. Takes every argument of dl-common.job.indexed.
  template:
    {{- include "dl-common.pod.template" $args | nindent 4 }}
*/}}
{{- define "dl-common.pod.template" -}}
{{- $ctx := .context -}}
{{- $s := .settings -}}
{{- $labels := merge (include "dl-common.labels.standard" (dict "component" .role "context" $ctx) | fromYaml) (include "dl-common.queue.podLabels" (dict "context" $ctx) | fromYaml) ($s.podLabels | default dict) -}}
{{- $annotations := merge (include "dl-common.queue.podAnnotations" (dict "roles" .roles "context" $ctx) | fromYaml) (.podAnnotations | default dict) ($s.podAnnotations | default dict) -}}
{{- if include "dl-common.pod.watchSidecar" . -}}
{{- $_ := set $annotations "kubectl.kubernetes.io/default-container" .role -}}
{{- end -}}
metadata:
  labels:
    {{- toYaml $labels | nindent 4 }}
  {{- with $annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  subdomain: {{ include "dl-common.names.fullname" (dict "context" $ctx) }}
  restartPolicy: Never
  enableServiceLinks: false
  automountServiceAccountToken: {{ $s.automountServiceAccountToken | default false }}
  {{- with $s.serviceAccountName }}
  serviceAccountName: {{ . | quote }}
  {{- end }}
  {{- if not (kindIs "invalid" $s.terminationGracePeriodSeconds) }}
  terminationGracePeriodSeconds: {{ $s.terminationGracePeriodSeconds | int }}
  {{- end }}
  {{- with $s.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with include "dl-common.pod.pullSecrets" (dict "secrets" $s.imagePullSecrets "context" $ctx) }}
  imagePullSecrets:
    {{- . | nindent 4 }}
  {{- end }}
  {{- with (include "dl-common.scheduling.pod" . | trim) }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- $init := concat (include "dl-common.peers.waitContainer" (dict "roles" (.waitFor | default dict) "settings" $s "context" $ctx) | fromYamlArray) (.initContainers | default list) }}
  {{- $sidecar := include "dl-common.pod.watchSidecar" . }}
  {{- if $sidecar }}
  {{- $program := include "dl-common.pod.container" . | fromYamlArray | first }}
  {{- $init = append $init (merge (dict "restartPolicy" "Always") $program) }}
  {{- end }}
  {{- with $init }}
  initContainers:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    {{- if $sidecar }}
    {{- include "dl-common.pod.watchdogContainer" . | nindent 4 }}
    {{- else }}
    {{- include "dl-common.pod.container" . | nindent 4 }}
    {{- end }}
    {{- with .sidecars }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- $volumes := concat (include "dl-common.shm.volumes" . | fromYamlArray) (include "dl-common.checkpoint.volumes" . | fromYamlArray) (.volumes | default list) ($s.volumes | default list) }}
  {{- with $volumes }}
  volumes:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
