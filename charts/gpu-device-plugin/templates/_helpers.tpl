{{/*
Chart-local helpers of gpu-device-plugin. Names, labels and validation come from dl-common.
*/}}

{{/*
gpu-device-plugin.set: "true" when a tri-state value was given (anything but null), else "".
  {{- if include "gpu-device-plugin.set" .Values.migStrategy }}...{{ end }}
*/}}
{{- define "gpu-device-plugin.set" -}}
{{- if not (kindIs "invalid" .) -}}true{{- end -}}
{{- end -}}

{{/*
gpu-device-plugin.asList: a deviceListStrategy value (a string or a list) as a JSON list.
  {{- $l := include "gpu-device-plugin.asList" .Values.deviceListStrategy | fromJsonArray -}}
*/}}
{{- define "gpu-device-plugin.asList" -}}
{{- if kindIs "invalid" . -}}
{{- toJson list -}}
{{- else if kindIs "string" . -}}
{{- toJson (list .) -}}
{{- else -}}
{{- toJson . -}}
{{- end -}}
{{- end -}}

{{/*
gpu-device-plugin.facts: what the whole values imply, as JSON, computed in one place:
  configNames     sorted names of config.map (entries as objects: gpu-device-plugin.configs)
  hasConfigs      config.map is not empty (ConfigMap + config-manager + node RBAC)
  defaultConfig   the config for unlabelled nodes: config.default, else "default" if present, else the only one
  effective       per config (or one "" entry without configs): the settings the plugin will really use,
                  the environment (top-level values) winning over the config file, as the plugin does
  migPossible     some node may run a MIG strategy other than none (SYS_ADMIN, NVIDIA_MIG_MONITOR_DEVICES)
  volumeMounts    some node may use the volume-mounts device list strategy (SYS_ADMIN)
  cdi             some node may use a cdi-* device list strategy (mount /var/run/cdi)
  mps             some config shares with MPS (MPS_ROOT, MPS mounts, the MPS control daemon)
  testResource    the resource the helm test pod requests
  {{- $facts := include "gpu-device-plugin.facts" (dict "context" $) | fromJson -}}
*/}}
{{- define "gpu-device-plugin.facts" -}}
{{- $v := .context.Values -}}
{{- $map := (include "dl-common.values.memo" (dict "name" "gpu-device-plugin.configs" "context" .context) | fromJson).configs -}}
{{- $names := keys $map | sortAlpha -}}
{{- $default := $v.config.default -}}
{{- if and (not $default) $names -}}
{{- if hasKey $map "default" -}}
{{- $default = "default" -}}
{{- else if eq (len $names) 1 -}}
{{- $default = first $names -}}
{{- end -}}
{{- end -}}
{{- $envDLS := include "gpu-device-plugin.asList" $v.deviceListStrategy | fromJsonArray -}}
{{- $effective := list -}}
{{- $entries := $names | default (list "") -}}
{{- range $name := $entries -}}
{{- $cfg := dict -}}
{{- if $name -}}
{{- $cfg = index $map $name | default dict -}}
{{- end -}}
{{- $mig := $v.migStrategy | default (dig "flags" "migStrategy" "none" $cfg) -}}
{{- $dls := $envDLS -}}
{{- if not $dls -}}
{{- $dls = include "gpu-device-plugin.asList" (dig "flags" "plugin" "deviceListStrategy" nil $cfg) | fromJsonArray -}}
{{- end -}}
{{- $dls = $dls | default (list "envvar") -}}
{{- $mode := "" -}}
{{- $rr := dict -}}
{{- if dig "sharing" "mps" nil $cfg -}}
{{- $mode = "mps" -}}
{{- $rr = $cfg.sharing.mps -}}
{{- else if dig "sharing" "timeSlicing" nil $cfg -}}
{{- $mode = "timeSlicing" -}}
{{- $rr = $cfg.sharing.timeSlicing -}}
{{- end -}}
{{- $effective = append $effective (dict "name" $name "migStrategy" $mig "deviceListStrategy" $dls "sharing" $mode "renameByDefault" (dig "renameByDefault" false $rr)) -}}
{{- end -}}
{{- $migPossible := false -}}
{{- $volumeMounts := false -}}
{{- $cdi := false -}}
{{- $mps := false -}}
{{- $testResource := "nvidia.com/gpu" -}}
{{- range $effective -}}
{{- if ne .migStrategy "none" -}}{{- $migPossible = true -}}{{- end -}}
{{- if has "volume-mounts" .deviceListStrategy -}}{{- $volumeMounts = true -}}{{- end -}}
{{- if or (has "cdi-annotations" .deviceListStrategy) (has "cdi-cri" .deviceListStrategy) -}}{{- $cdi = true -}}{{- end -}}
{{- if eq .sharing "mps" -}}{{- $mps = true -}}{{- end -}}
{{- if and (eq .name $default) .renameByDefault -}}{{- $testResource = "nvidia.com/gpu.shared" -}}{{- end -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.tests.resourceName -}}
{{- $testResource = $v.tests.resourceName -}}
{{- end -}}
{{- toJson (dict "configNames" $names "hasConfigs" (gt (len $names) 0) "defaultConfig" $default "effective" $effective "migPossible" $migPossible "volumeMounts" $volumeMounts "cdi" $cdi "mps" $mps "testResource" $testResource) -}}
{{- end -}}

{{/*
gpu-device-plugin.configFile: one named config (an object, see gpu-device-plugin.configs) rendered as the
plugin's `version: v1` config file.
  {{ include "gpu-device-plugin.configFile" (dict "config" (index $configs "default")) }}
*/}}
{{- define "gpu-device-plugin.configFile" -}}
version: v1
{{- with .config.flags }}
flags:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .config.sharing }}
sharing:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
gpu-device-plugin.configData: the ConfigMap data (config name -> config file), as YAML; also hashed into the
checksum/config pod annotation so that a config change restarts the pods that read it.
  {{- include "gpu-device-plugin.configData" (dict "context" $) | nindent 2 }}
*/}}
{{- define "gpu-device-plugin.configData" -}}
{{- $map := (include "dl-common.values.memo" (dict "name" "gpu-device-plugin.configs" "context" .context) | fromJson).configs -}}
{{- range $i, $name := keys $map | sortAlpha }}
{{- if $i }}{{ "\n" }}{{ end }}
{{- $name | quote }}: |
  {{- include "gpu-device-plugin.configFile" (dict "config" (index $map $name | default dict)) | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
gpu-device-plugin.configMapName: the name of the ConfigMap that holds the named configs.
  {{ include "gpu-device-plugin.configMapName" (dict "context" $) }}
*/}}
{{- define "gpu-device-plugin.configMapName" -}}
{{- include "dl-common.names.component" (dict "component" "configs" "context" .context) -}}
{{- end -}}

{{/*
gpu-device-plugin.serviceAccountName: the ServiceAccount of the pods that read node labels (config-manager)
or publish NodeFeature objects (GFD).
  {{ include "gpu-device-plugin.serviceAccountName" (dict "context" $) }}
*/}}
{{- define "gpu-device-plugin.serviceAccountName" -}}
{{- include "dl-common.names.component" (dict "component" "device-plugin" "context" .context) -}}
{{- end -}}

{{/*
gpu-device-plugin.podAnnotations: the pod annotations of a DaemonSet: podAnnotations plus, when the pod
reads the named configs, checksum/config.
  {{- include "gpu-device-plugin.podAnnotations" (dict "configs" $facts.hasConfigs "context" $) | nindent 8 }}
*/}}
{{- define "gpu-device-plugin.podAnnotations" -}}
{{- $annotations := deepCopy (.context.Values.podAnnotations | default dict) -}}
{{- if .configs -}}
{{- $_ := set $annotations "checksum/config" (include "gpu-device-plugin.configData" (dict "context" .context) | sha256sum) -}}
{{- end -}}
{{- with $annotations -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{/*
gpu-device-plugin.placement: the pod fields shared by every DaemonSet: priority class, runtime class,
affinity (default: a required match on the NVIDIA node labels), node selector and tolerations (the built-in
nvidia.com/gpu toleration first, then the user's). Pass "runtimeClass" false for pods that need no NVML, and
"nodeSelector" for labels a component requires on top of the user's (they win over the user's). Also
imagePullSecrets.
  {{- include "gpu-device-plugin.placement" (dict "runtimeClass" true "context" $) | trim | nindent 6 }}
*/}}
{{- define "gpu-device-plugin.placement" -}}
{{- $v := .context.Values -}}
{{- with $v.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- if and .runtimeClass $v.runtimeClassName }}
runtimeClassName: {{ $v.runtimeClassName | quote }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with merge (dict) (.nodeSelector | default dict) ($v.nodeSelector | default dict) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
tolerations:
  - key: nvidia.com/gpu
    operator: Exists
    effect: NoSchedule
  {{- with $v.tolerations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with include "dl-common.pod.pullSecrets" (dict "secrets" $v.imagePullSecrets "context" .context) }}
imagePullSecrets:
  {{- . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
gpu-device-plugin.updateStrategy: the DaemonSet updateStrategy (rollingUpdate only with RollingUpdate).
  {{- include "gpu-device-plugin.updateStrategy" (dict "context" $) | nindent 2 }}
*/}}
{{- define "gpu-device-plugin.updateStrategy" -}}
{{- $u := .context.Values.updateStrategy -}}
updateStrategy:
  type: {{ $u.type | quote }}
  {{- if and (eq $u.type "RollingUpdate") $u.rollingUpdate }}
  rollingUpdate:
    {{- toYaml $u.rollingUpdate | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
gpu-device-plugin.securityContext.root: a container security context for a component that must run as
root (the kubelet's device-plugin socket directory, host driver files, NVML/MIG capability devices).
Least privilege otherwise: no privilege escalation, every capability dropped, RuntimeDefault seccomp.
"sysAdmin" adds CAP_SYS_ADMIN (MIG, volume-mounts); "privileged" makes the container privileged (then the
capability and escalation fields are left out, as the API requires).
  {{- include "gpu-device-plugin.securityContext.root" (dict "sysAdmin" $facts.migPossible "privileged" false) | nindent 10 }}
*/}}
{{- define "gpu-device-plugin.securityContext.root" -}}
runAsUser: 0
runAsNonRoot: false
{{- if .privileged }}
privileged: true
{{- else }}
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
  {{- if .sysAdmin }}
  add: ["SYS_ADMIN"]
  {{- end }}
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
gpu-device-plugin.securityContext.nonRoot: the restricted container security context (Pod Security
"restricted"), for containers that need neither root nor the host.
  {{- include "gpu-device-plugin.securityContext.nonRoot" (dict "readOnlyRootFilesystem" true) | nindent 10 }}
*/}}
{{- define "gpu-device-plugin.securityContext.nonRoot" -}}
runAsUser: 65534
runAsGroup: 65534
runAsNonRoot: true
allowPrivilegeEscalation: false
{{- if .readOnlyRootFilesystem }}
readOnlyRootFilesystem: true
{{- end }}
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
gpu-device-plugin.configManager: a config-manager container (NVIDIA's, shipped in the plugin image) that
links /config/config.yaml to the config named by the node label nvidia.com/device-plugin.config (or the
default). "oneshot" true gives the init container (picks once, runs as non-root); false gives the sidecar
that watches the label and sends SIGHUP to "processToSignal" (it shares the pod's PID namespace, and runs
as root with no capabilities because the process it signals runs as root).
  {{- include "gpu-device-plugin.configManager" (dict "name" "config-manager-init" "oneshot" true "processToSignal" "" "facts" $facts "context" $) | nindent 8 }}
*/}}
{{- define "gpu-device-plugin.configManager" -}}
{{- $v := .context.Values -}}
- name: {{ .name }}
  image: {{ include "dl-common.pod.image" (dict "image" $v.image "tagDefault" .context.Chart.AppVersion "context" .context) | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy | quote }}
  command: ["config-manager"]
  {{- if .oneshot }}
  args: ["--oneshot"]
  {{- end }}
  env:
    - name: NODE_NAME
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: NODE_LABEL
      value: nvidia.com/device-plugin.config
    - name: CONFIG_FILE_SRCDIR
      value: /available-configs
    - name: CONFIG_FILE_DST
      value: /config/config.yaml
    - name: DEFAULT_CONFIG
      value: {{ .facts.defaultConfig | quote }}
    {{- if .oneshot }}
    - name: SEND_SIGNAL
      value: "false"
    {{- else }}
    - name: SEND_SIGNAL
      value: "true"
    - name: SIGNAL
      value: "1"
    - name: PROCESS_TO_SIGNAL
      value: {{ .processToSignal | quote }}
    {{- end }}
  securityContext:
    {{- if .oneshot }}
    {{- include "gpu-device-plugin.securityContext.nonRoot" (dict "readOnlyRootFilesystem" true) | nindent 4 }}
    {{- else }}
    runAsUser: 0
    runAsNonRoot: false
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: ["ALL"]
    seccompProfile:
      type: RuntimeDefault
    {{- end }}
  resources:
    {{- toYaml $v.configManager.resources | nindent 4 }}
  volumeMounts:
    - name: available-configs
      mountPath: /available-configs
      readOnly: true
    - name: config
      mountPath: /config
{{- end -}}

{{/*
gpu-device-plugin.configVolumes: the volumes of the named configs (the ConfigMap and the emptyDir where
config-manager links the selected one).
  {{- include "gpu-device-plugin.configVolumes" (dict "context" $) | nindent 8 }}
*/}}
{{- define "gpu-device-plugin.configVolumes" -}}
- name: available-configs
  configMap:
    name: {{ include "gpu-device-plugin.configMapName" . }}
- name: config
  emptyDir: {}
{{- end -}}

{{/*
gpu-device-plugin.optionEnv: the environment variables of the tri-state options shared by the plugin, GFD
and the MPS daemon ("component" picks which apply), plus CONFIG_FILE and NVIDIA_MIG_MONITOR_DEVICES.
  {{- include "gpu-device-plugin.optionEnv" (dict "component" "device-plugin" "facts" $facts "context" $) | nindent 12 }}
*/}}
{{- define "gpu-device-plugin.optionEnv" -}}
{{- $v := .context.Values -}}
{{- $env := list -}}
{{- if include "gpu-device-plugin.set" $v.migStrategy -}}
{{- $env = append $env (dict "name" "MIG_STRATEGY" "value" $v.migStrategy) -}}
{{- end -}}
{{- if ne .component "mps-control-daemon" -}}
{{- if include "gpu-device-plugin.set" $v.failOnInitError -}}
{{- $env = append $env (dict "name" "FAIL_ON_INIT_ERROR" "value" (toString $v.failOnInitError)) -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.deviceDiscoveryStrategy -}}
{{- $env = append $env (dict "name" "DEVICE_DISCOVERY_STRATEGY" "value" $v.deviceDiscoveryStrategy) -}}
{{- end -}}
{{- end -}}
{{- if eq .component "device-plugin" -}}
{{- if $v.compatWithCPUManager -}}
{{- $env = append $env (dict "name" "PASS_DEVICE_SPECS" "value" "true") -}}
{{- else if include "gpu-device-plugin.set" $v.passDeviceSpecs -}}
{{- $env = append $env (dict "name" "PASS_DEVICE_SPECS" "value" (toString $v.passDeviceSpecs)) -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.deviceListStrategy -}}
{{- $env = append $env (dict "name" "DEVICE_LIST_STRATEGY" "value" (include "gpu-device-plugin.asList" $v.deviceListStrategy | fromJsonArray | join ",")) -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.deviceIDStrategy -}}
{{- $env = append $env (dict "name" "DEVICE_ID_STRATEGY" "value" $v.deviceIDStrategy) -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.nvidiaDriverRoot -}}
{{- $env = append $env (dict "name" "NVIDIA_DRIVER_ROOT" "value" $v.nvidiaDriverRoot) -}}
{{- end -}}
{{- range $key, $name := dict "gdrcopyEnabled" "GDRCOPY_ENABLED" "gdsEnabled" "GDS_ENABLED" "mofedEnabled" "MOFED_ENABLED" -}}
{{- if include "gpu-device-plugin.set" (index $v $key) -}}
{{- $env = append $env (dict "name" $name "value" (toString (index $v $key))) -}}
{{- end -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.cdi.annotationPrefix -}}
{{- $env = append $env (dict "name" "CDI_ANNOTATION_PREFIX" "value" $v.cdi.annotationPrefix) -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.cdi.nvidiaHookPath -}}
{{- $env = append $env (dict "name" "NVIDIA_CDI_HOOK_PATH" "value" $v.cdi.nvidiaHookPath) -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.cdi.featureFlags -}}
{{- $env = append $env (dict "name" "CDI_FEATURE_FLAGS" "value" (join "," $v.cdi.featureFlags)) -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.healthChecks.disable -}}
{{- $disable := $v.healthChecks.disable -}}
{{- if kindIs "slice" $disable -}}
{{- $ids := list -}}
{{- range $disable -}}{{- $ids = append $ids (int64 . | toString) -}}{{- end -}}
{{- $disable = join "," $ids -}}
{{- end -}}
{{- $env = append $env (dict "name" "DP_DISABLE_HEALTHCHECKS" "value" $disable) -}}
{{- end -}}
{{- if include "gpu-device-plugin.set" $v.healthChecks.enable -}}
{{- $ids := list -}}
{{- range $v.healthChecks.enable -}}{{- $ids = append $ids (int64 . | toString) -}}{{- end -}}
{{- $env = append $env (dict "name" "DP_ENABLE_HEALTHCHECKS" "value" (join "," $ids)) -}}
{{- end -}}
{{- if .facts.mps -}}
{{- $env = append $env (dict "name" "MPS_ROOT" "value" $v.mps.root) -}}
{{- end -}}
{{- end -}}
{{- if .facts.hasConfigs -}}
{{- $env = append $env (dict "name" "CONFIG_FILE" "value" "/config/config.yaml") -}}
{{- end -}}
{{- if .facts.migPossible -}}
{{- $env = append $env (dict "name" "NVIDIA_MIG_MONITOR_DEVICES" "value" "all") -}}
{{- end -}}
{{- with $env -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{/*
gpu-device-plugin.lookup: the value at a dotted path inside a map, as JSON; empty when a key on the way is
missing (a present null gives "null").
  {{ include "gpu-device-plugin.lookup" (dict "obj" $cfg "path" "flags.plugin.deviceListStrategy") }}
*/}}
{{- define "gpu-device-plugin.lookup" -}}
{{- $node := .obj -}}
{{- $found := true -}}
{{- range splitList "." .path -}}
{{- if and $found (kindIs "map" $node) (hasKey $node .) -}}
{{- $node = index $node . -}}
{{- else -}}
{{- $found = false -}}
{{- end -}}
{{- end -}}
{{- if $found -}}{{- toJson $node -}}{{- end -}}
{{- end -}}
