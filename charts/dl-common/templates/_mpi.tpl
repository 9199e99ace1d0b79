{{/*
MPI machinery shared by the MPI charts (horovod-mpi, cntk-dist): an mpirun-style launcher (an Indexed Job
of 1) that reaches the worker pods (an Indexed Job of N running sshd) over SSH, all under the release's
one headless Service. Everything a chart needs besides the generic Job skeleton (dl-common.job.indexed)
is in the _mpi*.tpl files, one subject each:
  _mpi.tpl           names, identity and paths, both roles' settings, pod counts and ports
  _mpi_hosts.tpl     slots, ranks and the hostfile
  _mpi_ssh.tpl       the per-release SSH key Secret, ssh_config and sshd_config
  _mpi_pod.tpl       the ConfigMap, the mpi-setup init container, volumes, mounts, env and commands
  _mpi_validate.tpl  the MPI-specific validation
The MPI scripts (mpi-setup.sh, mpi-sshd.sh, mpi-launcher.sh, discover_hosts.sh) are files in scripts/, rendered
into _shell.tpl.

Values the helpers read (every MPI chart has this block; see the charts' values.yaml):
  mpi:
    implementation: openmpi      # openmpi | intel | mpich: hostfile format and launcher variables
    slots: null                  # ranks per worker; null = the worker's GPU count (1 without GPUs)
    sshPort: 2222
    user: {name: mpi, home: /home/mpi}   # identity of a non-root uid (see "Identity" below)
    waitForWorkers: {timeoutSeconds: 600, intervalSeconds: 5}
    mcaParams: {btl_vader_single_copy_mechanism: none}   # OMPI_MCA_<name> on the launcher (openmpi)
    sshd: {logLevel: INFO}
    setup: {resources: {...}}    # the mpi-setup init container
plus the common layout (worker, defaults, roles.launcher, roles.worker, watchdog, peerWait, ...).

Run-time layout of every MPI pod:
  /etc/mpi          ConfigMap <fullname>-mpi (read-only): hostfile, ssh_config, sshd_config, scripts
  <ssh dir>         emptyDir "mpi-home": id_ecdsa (0600), authorized_keys, config, sshd_config, written by
                    the mpi-setup init container from the Secret <fullname>-ssh, which only that init
                    container mounts. <ssh dir> is <mpi.user.home>/.ssh for a non-root uid (the emptyDir
                    is the home directory) and /root/.ssh for root (the emptyDir is mounted there only, so
                    the image's /root stays visible).
Identity: ssh and sshd need a passwd entry for the uid they run as, with a home and a login shell. For a
non-root uid the init container writes /etc/passwd and /etc/group (the image's files plus or adjusting the
entry of that uid: home = mpi.user.home, a real shell) into the emptyDir "mpi-etc", which the main
container mounts over /etc/passwd and /etc/group (subPath, read-only). So any image with sshd works
non-root, without root, added capabilities or a writable /etc. Root (runAsUser 0) keeps the image's files.
*/}}

{{/*
dl-common.mpi.names: JSON {configMap, secret, mount}: the names of the release's MPI ConfigMap and SSH
Secret and the mount path of the ConfigMap.
  {{- $n := include "dl-common.mpi.names" (dict "context" $) | fromJson -}}
*/}}
{{- define "dl-common.mpi.names" -}}
{{- toJson (dict
  "configMap" (include "dl-common.names.component" (dict "component" "mpi" "context" .context))
  "secret" (include "dl-common.names.component" (dict "component" "ssh" "context" .context))
  "mount" "/etc/mpi") -}}
{{- end -}}

{{/*
dl-common.mpi.runAsUser: the effective runAsUser of a role's main container (container securityContext,
else podSecurityContext), or "" when neither sets one.
  {{ include "dl-common.mpi.runAsUser" (dict "settings" $s) }}
*/}}
{{- define "dl-common.mpi.runAsUser" -}}
{{- $c := (.settings.securityContext | default dict).runAsUser -}}
{{- $p := (.settings.podSecurityContext | default dict).runAsUser -}}
{{- if not (kindIs "invalid" $c) -}}{{ int64 $c }}{{- else if not (kindIs "invalid" $p) -}}{{ int64 $p }}{{- end -}}
{{- end -}}

{{/*
dl-common.mpi.paths: JSON {root, home, sshDir, homeMount} for a role's settings: root (bool) when the pod
runs as uid 0; sshDir holds the keys and configs; homeMount is where the "mpi-home" emptyDir is mounted.
  {{- $p := include "dl-common.mpi.paths" (dict "settings" $s "context" $) | fromJson -}}
*/}}
{{- define "dl-common.mpi.paths" -}}
{{- $root := eq (include "dl-common.mpi.runAsUser" .) "0" -}}
{{- if $root -}}
{{- toJson (dict "root" true "home" "/root" "sshDir" "/root/.ssh" "homeMount" "/root/.ssh") -}}
{{- else -}}
{{- $home := trimSuffix "/" .context.Values.mpi.user.home -}}
{{- toJson (dict "root" false "home" $home "sshDir" (printf "%s/.ssh" $home) "homeMount" $home) -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.mpi.settings: JSON {launcher, worker}: both roles' merged settings (dl-common.values.role), without
defaults.args when a script is set (they are then the script's arguments in the launch line, see
dl-common.script.mpiSettings). A chart memoizes it under its own name:
  {{- define "horovod-mpi.settings" -}}{{ include "dl-common.mpi.settings" (dict "context" .) }}{{- end -}}
*/}}
{{- define "dl-common.mpi.settings" -}}
{{- $out := dict -}}
{{- range $role := list "launcher" "worker" -}}
{{- $s := include "dl-common.values.role" (dict "role" $role "context" $.context) | fromJson -}}
{{- $_ := set $out $role (include "dl-common.script.mpiSettings" (dict "role" $role "settings" $s "context" $.context) | fromJson) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
dl-common.mpi.roles: JSON role -> pod count of an MPI release: {launcher: 1, worker: .Values.worker}.
  {{- $roles := include "dl-common.mpi.roles" (dict "context" $) | fromJson -}}
*/}}
{{- define "dl-common.mpi.roles" -}}
{{- toJson (dict "launcher" 1 "worker" (int .context.Values.worker)) -}}
{{- end -}}

{{/*
dl-common.mpi.ports: JSON list with the sshd port (name "ssh"), for the headless Service and the pods.
  {{- $ports := include "dl-common.mpi.ports" (dict "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.mpi.ports" -}}
{{- toJson (list (dict "name" "ssh" "port" (int .context.Values.mpi.sshPort))) -}}
{{- end -}}

{{/*
dl-common.mpi.testSettings: the settings for the helm test pod (dl-common.peers.testPod): the worker's,
but when the workers run as root (sshd needs capabilities then) a restricted non-root context, since the
test only runs nslookup.
  {{- $ts := include "dl-common.mpi.testSettings" (dict "settings" $ws "context" $) | fromJson -}}
*/}}
{{- define "dl-common.mpi.testSettings" -}}
{{- $s := deepCopy .settings -}}
{{- if (include "dl-common.mpi.paths" . | fromJson).root -}}
{{- $_ := set $s "podSecurityContext" (dict "runAsNonRoot" true "runAsUser" 65534 "runAsGroup" 65534 "seccompProfile" (dict "type" "RuntimeDefault")) -}}
{{- $_ := set $s "securityContext" (dict "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "capabilities" (dict "drop" (list "ALL"))) -}}
{{- end -}}
{{- toJson $s -}}
{{- end -}}
