{{/*
MPI machinery shared by the MPI charts (horovod-mpi, cntk-dist, deepspeed-dist): an mpirun-style launcher (an
Indexed Job of 1) that reaches the worker pods (an Indexed Job of N running sshd) over SSH, all under the
release's one headless Service. Everything a chart needs besides the generic Job skeleton
(dl-common.job.indexed) is in templates/mpi/, one subject a file:
  _layout.tpl    this layout; the names of the release's MPI objects, the identity and paths of its pods
  _roles.tpl     both roles' settings, pod counts and ports, the program every rank runs, the test pod
  _ranks.tpl     slots and ranks: of a worker, of the launcher, in hostfile order, in all
  _hostfile.tpl  the hostfile (and the host lines of any hostfile format)
  _ssh.tpl       the per-release SSH key Secret, ssh_config and sshd_config
  _pod.tpl       the ConfigMap, the mpi-setup init container, volumes, mounts, env and commands
The MPI-specific validation is templates/validate/_mpi.tpl (dl-common.validate.mpi). The MPI scripts
(mpi-setup.sh, mpi-sshd.sh, mpi-launcher.sh, discover_hosts.sh) are files in scripts/, rendered into
templates/_shell.tpl.

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
