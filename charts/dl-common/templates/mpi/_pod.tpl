{{/*
The pod spec parts of the MPI roles: the ConfigMap, volumes and mounts, the mpi-setup init container,
the environment and the commands (see _layout.tpl for the run-time layout).
*/}}

{{/*
dl-common.mpi.configMap: the release's MPI ConfigMap (mounted at /etc/mpi, mode 0555): hostfile (format
mpi.implementation), ssh_config, sshd_config, mpi-setup.sh, mpi-sshd.sh, mpi-launcher.sh, plus "files"
(name -> content) from the chart (e.g. discover_hosts.sh). Only the host list grows with the workers.
  {{ include "dl-common.mpi.configMap" (dict "launcher" $ls "worker" $ws "files" (dict "discover_hosts.sh" $s) "context" $) }}
*/}}
{{- define "dl-common.mpi.configMap" -}}
{{- $ctx := .context -}}
{{- $paths := include "dl-common.mpi.paths" (dict "settings" .worker "context" $ctx) | fromJson -}}
{{- $name := (include "dl-common.mpi.names" . | fromJson).configMap -}}
{{- $own := list
  (list "hostfile" (include "dl-common.mpi.hostfile" (dict "launcher" .launcher "worker" .worker "context" $ctx)))
  (list "ssh_config" (include "dl-common.mpi.sshConfig" (dict "paths" $paths "context" $ctx)))
  (list "sshd_config" (include "dl-common.mpi.sshdConfig" (dict "paths" $paths "context" $ctx)))
  (list "mpi-setup.sh" (include "dl-common.mpi.setupScript" .))
  (list "mpi-sshd.sh" (include "dl-common.mpi.sshdScript" .))
  (list "mpi-launcher.sh" (include "dl-common.mpi.launcherScript" .)) -}}
{{- $data := deepCopy (.files | default dict) -}}
{{- range $own }}{{ $_ := set $data (index . 0) (index . 1) }}{{ end -}}
{{- include "dl-common.validate.configMapSize" (dict "data" $data "configMap" $name "grows" "worker" "count" $ctx.Values.worker "context" $ctx) -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $name }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "mpi" "context" $ctx) | nindent 4 }}
data:
  {{- range $own }}
  {{ index . 0 }}: |
    {{- index . 1 | nindent 4 }}
  {{- end }}
  {{- range $name, $content := .files }}
  {{ $name }}: |
    {{- $content | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
dl-common.mpi.volumes: the MPI pod volumes (list of dicts, for dl-common.job.indexed "volumes"):
mpi-config (the ConfigMap), mpi-ssh-secret (the Secret; defaultMode 0440 for a non-root uid, which reads
it through fsGroup, 0400 for root; only the mpi-setup init container mounts it), mpi-home (emptyDir) and,
for a non-root uid, mpi-etc (the passwd/group emptyDir).
  {{- $volumes := include "dl-common.mpi.volumes" (dict "settings" $s "context" $) | fromYamlArray -}}
*/}}
{{- define "dl-common.mpi.volumes" -}}
{{- $n := include "dl-common.mpi.names" . | fromJson -}}
{{- $paths := include "dl-common.mpi.paths" . | fromJson -}}
- name: mpi-config
  configMap:
    name: {{ $n.configMap }}
    defaultMode: 365
- name: mpi-ssh-secret
  secret:
    secretName: {{ $n.secret }}
    defaultMode: {{ ternary 256 288 $paths.root }}
- name: mpi-home
  emptyDir: {}
{{- if not $paths.root }}
- name: mpi-etc
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
{{- end }}
{{- end -}}

{{/*
dl-common.mpi.volumeMounts: the MPI mounts of a main container (list of dicts, for dl-common.job.indexed
"volumeMounts"): /etc/mpi, the home/ssh emptyDir and, for a non-root uid, /etc/passwd and /etc/group.
  {{- $mounts := include "dl-common.mpi.volumeMounts" (dict "settings" $s "context" $) | fromYamlArray -}}
*/}}
{{- define "dl-common.mpi.volumeMounts" -}}
{{- $n := include "dl-common.mpi.names" . | fromJson -}}
{{- $paths := include "dl-common.mpi.paths" . | fromJson -}}
- name: mpi-config
  mountPath: {{ $n.mount }}
  readOnly: true
- name: mpi-home
  mountPath: {{ $paths.homeMount }}
{{- if not $paths.root }}
- name: mpi-etc
  mountPath: /etc/passwd
  subPath: passwd
  readOnly: true
- name: mpi-etc
  mountPath: /etc/group
  subPath: group
  readOnly: true
{{- end }}
{{- end -}}

{{/*
dl-common.mpi.setupContainer: the mpi-setup init container (list of one dict, for dl-common.job.indexed
"initContainers"): the role's image (already pulled for the main container) runs mpi-setup.sh with the
role's securityContext minus added capabilities, and resources mpi.setup.resources.
  {{- $init := include "dl-common.mpi.setupContainer" (dict "settings" $s "context" $) | fromYamlArray -}}
*/}}
{{- define "dl-common.mpi.setupContainer" -}}
{{- $s := .settings -}}
{{- $paths := include "dl-common.mpi.paths" . | fromJson -}}
{{- $sc := deepCopy ($s.securityContext | default dict) -}}
{{- if $sc.capabilities -}}
{{- $caps := omit $sc.capabilities "add" -}}
{{- $_ := set $sc "capabilities" $caps -}}
{{- end -}}
- name: mpi-setup
  image: {{ include "dl-common.pod.image" (dict "image" $s.image "context" .context) | quote }}
  imagePullPolicy: {{ ($s.image | default dict).pullPolicy | default "IfNotPresent" }}
  command: ["/bin/sh", "/etc/mpi/mpi-setup.sh"]
  env:
    - name: MPI_SSH_DIR
      value: {{ $paths.sshDir | quote }}
    - name: MPI_USER
      value: {{ .context.Values.mpi.user.name | quote }}
    - name: MPI_HOME
      value: {{ $paths.home | quote }}
  resources:
    {{- include "dl-common.values.merge" (dict "override" .context.Values.mpi.setup.resources) | fromJson | toYaml | nindent 4 }}
  {{- with $sc }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: mpi-config
      mountPath: /etc/mpi
      readOnly: true
    - name: mpi-ssh-secret
      mountPath: /etc/mpi-secret
      readOnly: true
    - name: mpi-home
      mountPath: {{ $paths.homeMount }}
    {{- if not $paths.root }}
    - name: mpi-etc
      mountPath: /mpi-etc
    {{- end }}
{{- end -}}

{{/*
dl-common.mpi.initContainers: the init containers of an MPI role (list, for dl-common.job.indexed
"initContainers"): mpi-setup (dl-common.mpi.setupContainer) and, on a launcher that runs its image's own
entrypoint (settings.imageEntrypoint), mpi-wait (dl-common.mpi.waitContainer), which waits for the workers' sshd
as the launcher wrapper would have before the launch line.
  "initContainers" (include "dl-common.mpi.initContainers" (dict "role" $role "settings" $rs "launcher" $s.launcher "worker" $s.worker "context" $) | fromYamlArray)
*/}}
{{- define "dl-common.mpi.initContainers" -}}
{{- $init := include "dl-common.mpi.setupContainer" . | fromYamlArray -}}
{{- if and (eq .role "launcher") .settings.imageEntrypoint -}}
{{- $init = concat $init (include "dl-common.mpi.waitContainer" . | fromYamlArray) -}}
{{- end -}}
{{- toYaml $init -}}
{{- end -}}

{{/*
dl-common.mpi.waitContainer: the mpi-wait init container of a launcher that runs its image's own entrypoint: the
launcher's image runs mpi-launcher.sh with MPI_WAIT_ONLY=true (bounded by mpi.waitForWorkers, logged; every worker
must resolve and accept an SSH login with the release's key), with the launcher's MPI env and mounts (the ssh dir
and identity mpi-setup wrote), mpi.setup.resources and the securityContext of mpi-setup. One list item.
  {{- $wait := include "dl-common.mpi.waitContainer" (dict "settings" $ls "launcher" $ls "worker" $ws "context" $) | fromYamlArray -}}
*/}}
{{- define "dl-common.mpi.waitContainer" -}}
{{- $setup := include "dl-common.mpi.setupContainer" . | fromYamlArray | first -}}
{{- $env := append (include "dl-common.mpi.env" (dict "role" "launcher" "launcher" .launcher "worker" .worker "context" .context) | fromJsonArray) (dict "name" "MPI_WAIT_ONLY" "value" "true") -}}
{{- $wait := dict "name" "mpi-wait" "command" (include "dl-common.mpi.launcherCommand" . | fromJsonArray) "env" $env "volumeMounts" (include "dl-common.mpi.volumeMounts" . | fromYamlArray) -}}
{{- toYaml (list (merge $wait (pick $setup "image" "imagePullPolicy" "resources" "securityContext"))) -}}
{{- end -}}

{{/*
dl-common.mpi.env: the MPI env of a main container (JSON list of EnvVar dicts, for dl-common.job.indexed
"env"). "role" is "launcher" or "worker"; "launcher"/"worker" are both roles' settings. Every MPI pod:
MPI_SSH_DIR, MPI_SSH_PORT. A worker adds DL_WATCH_SEEN_FILE, the run marker every launcher attempt leaves in its ssh
dir, which tells its watchdog that the launcher ran however briefly (dl-common.pod.watchdogScript). The launcher adds its wait parameters (MPI_PEER_GROUPS, MPI_PEER_DOMAIN,
MPI_WAIT_TIMEOUT, MPI_WAIT_INTERVAL, MPI_RESTARTS_IN_POD (mpi.restartsInPod), MPI_WAIT_MIN when "waitMin" is given, MPI_RELEASE,
MPI_LAUNCHER_SSHD, MPI_HOSTFILE; with hot spares MPI_SPARES and MPI_RUN_HOSTFILE, the hostfile the launch line
reads, dl-common.mpi.hostfilePath) and the implementation's variables, which name the hostfile the launch line reads:
  openmpi: OMPI_MCA_orte_keep_fqdn_hostnames=true, OMPI_MCA_orte_default_hostfile, OMPI_MCA_plm_rsh_args
           ("-o ConnectionAttempts=10 -p <port>"), OMPI_MCA_<name> of mpi.mcaParams, and as root
           OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1 (Open MPI 5 ignores orte_*: always pass --hostfile too);
  intel:   I_MPI_HYDRA_HOST_FILE, I_MPI_HYDRA_BOOTSTRAP=ssh;
  mpich:   HYDRA_HOST_FILE, HYDRA_LAUNCHER=ssh.
  {{- $env := include "dl-common.mpi.env" (dict "role" "launcher" "launcher" $ls "worker" $ws "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.mpi.env" -}}
{{- $ctx := .context -}}
{{- $mpi := $ctx.Values.mpi -}}
{{- $n := include "dl-common.mpi.names" . | fromJson -}}
{{- $self := ternary .launcher .worker (eq .role "launcher") -}}
{{- $paths := include "dl-common.mpi.paths" (dict "settings" $self "context" $ctx) | fromJson -}}
{{- $hostfile := include "dl-common.mpi.hostfilePath" (dict "launcher" .launcher "context" $ctx) -}}
{{- $port := int $mpi.sshPort -}}
{{- $env := list (dict "name" "MPI_SSH_DIR" "value" $paths.sshDir) (dict "name" "MPI_SSH_PORT" "value" (toString $port)) -}}
{{- if eq .role "worker" -}}
{{- $env = append $env (dict "name" "DL_WATCH_SEEN_FILE" "value" (printf "%s/mpi-run" $paths.sshDir)) -}}
{{- end -}}
{{- if eq .role "launcher" -}}
{{- $waitGroups := include "dl-common.peers.groups" (dict "roles" (pick (include "dl-common.mpi.roles" . | fromJson) "worker") "context" $ctx) -}}
{{- $env = concat $env (list
  (dict "name" "MPI_HOSTFILE" "value" (printf "%s/hostfile" $n.mount))
  (dict "name" "MPI_PEER_GROUPS" "value" $waitGroups)
  (dict "name" "MPI_PEER_DOMAIN" "value" (include "dl-common.peers.domain" (dict "context" $ctx)))
  (dict "name" "MPI_WAIT_TIMEOUT" "value" (toString (int $mpi.waitForWorkers.timeoutSeconds)))
  (dict "name" "MPI_WAIT_INTERVAL" "value" (toString (int $mpi.waitForWorkers.intervalSeconds)))
  (dict "name" "MPI_RESTARTS_IN_POD" "value" (toString (int $mpi.restartsInPod)))
  (dict "name" "MPI_RELEASE" "value" $ctx.Release.Name)
  (dict "name" "MPI_LAUNCHER_SSHD" "value" (ternary "true" "false" (gt (int (include "dl-common.mpi.launcherRanks" (dict "settings" .launcher))) 0)))) -}}
{{- if not (kindIs "invalid" .waitMin) -}}
{{- $env = append $env (dict "name" "MPI_WAIT_MIN" "value" (toString (int .waitMin))) -}}
{{- end -}}
{{- if gt (int $mpi.spareWorkers) 0 -}}
{{- $env = concat $env (list (dict "name" "MPI_SPARES" "value" (toString (int $mpi.spareWorkers))) (dict "name" "MPI_RUN_HOSTFILE" "value" $hostfile)) -}}
{{- end -}}
{{- if eq $mpi.implementation "openmpi" -}}
{{- $env = concat $env (list
  (dict "name" "OMPI_MCA_orte_keep_fqdn_hostnames" "value" "true")
  (dict "name" "OMPI_MCA_orte_default_hostfile" "value" $hostfile)
  (dict "name" "OMPI_MCA_plm_rsh_args" "value" (printf "-o ConnectionAttempts=10 -p %d" $port))) -}}
{{- range $k, $v := ($mpi.mcaParams | default dict) -}}
{{- if not (kindIs "invalid" $v) -}}
{{- $env = append $env (dict "name" (printf "OMPI_MCA_%s" $k) "value" (toString $v)) -}}
{{- end -}}
{{- end -}}
{{- if $paths.root -}}
{{- $env = concat $env (list (dict "name" "OMPI_ALLOW_RUN_AS_ROOT" "value" "1") (dict "name" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM" "value" "1")) -}}
{{- end -}}
{{- else if eq $mpi.implementation "intel" -}}
{{- $env = concat $env (list (dict "name" "I_MPI_HYDRA_HOST_FILE" "value" $hostfile) (dict "name" "I_MPI_HYDRA_BOOTSTRAP" "value" "ssh")) -}}
{{- else if eq $mpi.implementation "mpich" -}}
{{- $env = concat $env (list (dict "name" "HYDRA_HOST_FILE" "value" $hostfile) (dict "name" "HYDRA_LAUNCHER" "value" "ssh")) -}}
{{- end -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{/*
dl-common.mpi.launcherWaitFor: JSON "waitFor" of the launcher's dl-common.job.indexed: none, as the launcher wrapper
(or, with imageEntrypoint, its mpi-wait init container) waits for the workers' DNS names and SSH itself, and a
peer-wait init container before it would only delay the launch; the workers' DNS names with
mpi.replaceEntrypoint, whose command may not wait.
  {{- $_ := set $job "waitFor" (include "dl-common.mpi.launcherWaitFor" (dict "context" $) | fromJson) -}}
*/}}
{{- define "dl-common.mpi.launcherWaitFor" -}}
{{- toJson (ternary (dict "worker" (int .context.Values.worker)) dict (and .context.Values.mpi.replaceEntrypoint true)) -}}
{{- end -}}

{{/*
dl-common.mpi.launcherCommand / dl-common.mpi.workerCommand: JSON command lists of the two roles' main
containers: the launcher wrapper (the chart passes the mpirun/horovodrun command line as args) and sshd.
  "command" (include "dl-common.mpi.launcherCommand" (dict "context" $) | fromJsonArray)
*/}}
{{- define "dl-common.mpi.launcherCommand" -}}
{{- toJson (list "/bin/sh" "/etc/mpi/mpi-launcher.sh") -}}
{{- end -}}
{{- define "dl-common.mpi.workerCommand" -}}
{{- toJson (list "/bin/sh" "/etc/mpi/mpi-sshd.sh") -}}
{{- end -}}
