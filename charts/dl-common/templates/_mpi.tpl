{{/*
MPI machinery shared by the MPI charts (horovod-mpi, cntk-dist): an mpirun-style launcher (an Indexed Job
of 1) that reaches the worker pods (an Indexed Job of N running sshd) over SSH, all under the release's
one headless Service. Everything a chart needs besides the generic Job skeleton (dl-common.job.indexed)
is here: the per-release SSH key Secret, the hostfile and scripts ConfigMap, the mpi-setup init
container, the volumes, the launcher/worker environment and the MPI-specific validation.

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
dl-common.mpi.publicKey: the OpenSSH public key line ("ecdsa-sha2-nistp256 AAAA...") of a PEM
"EC PRIVATE KEY" on P-256, as Sprig's genPrivateKey "ecdsa" writes it (SEC1 DER, 121 bytes, the public
point at bytes 56..120). Fails with a clear message for any other key shape.
  {{ include "dl-common.mpi.publicKey" (dict "privateKey" $pem) }}
*/}}
{{- define "dl-common.mpi.publicKey" -}}
{{- $body := regexReplaceAll "-----[A-Z ]+-----" .privateKey "" | nospace -}}
{{- $der := b64dec $body -}}
{{- $header := printf "%x" (substr 0 7 $der) -}}
{{- $curve := printf "%x" (substr 39 56 $der) -}}
{{- if or (ne (len $der) 121) (ne $header "30770201010420") (ne $curve "a00a06082a8648ce3d030107a144034200") -}}
{{- fail "dl-common.mpi.publicKey: the SSH key is not a P-256 EC private key in SEC1 form; delete the release's <fullname>-ssh Secret so that a new key is generated" -}}
{{- end -}}
{{- /* SSH wire format: string "ecdsa-sha2-nistp256", string "nistp256", string Q. The 39-byte prefix
       is a whole number of base64 groups, so base64(prefix + Q) = base64(prefix) + base64(Q). */ -}}
{{- printf "ecdsa-sha2-nistp256 %s%s" (b64enc "\x00\x00\x00\x13ecdsa-sha2-nistp256\x00\x00\x00\x08nistp256\x00\x00\x00\x41") (b64enc (substr 56 121 $der)) -}}
{{- end -}}

{{/*
dl-common.mpi.sshSecret: the release's SSH key Secret (type kubernetes.io/ssh-auth): ssh-privatekey (a
P-256 ECDSA key generated with genPrivateKey), ssh-publickey and authorized_keys (derived from it). The
key is generated once per release and kept across `helm upgrade` by reading the existing Secret with
`lookup`; `helm template` and client-side --dry-run cannot look up and show a fresh key each time
(harmless: nothing is installed). The key is never in values or in the repository.
  {{ include "dl-common.mpi.sshSecret" (dict "context" $) }}
*/}}
{{- define "dl-common.mpi.sshSecret" -}}
{{- $ctx := .context -}}
{{- $name := (include "dl-common.mpi.names" . | fromJson).secret -}}
{{- $key := "" -}}
{{- $existing := lookup "v1" "Secret" $ctx.Release.Namespace $name -}}
{{- if and $existing (kindIs "map" $existing.data) (hasKey $existing.data "ssh-privatekey") -}}
{{- $old := index $existing.data "ssh-privatekey" | b64dec -}}
{{- if contains "BEGIN EC PRIVATE KEY" $old -}}
{{- $key = $old -}}
{{- end -}}
{{- end -}}
{{- if not $key -}}
{{- $key = genPrivateKey "ecdsa" -}}
{{- end -}}
{{- $pub := include "dl-common.mpi.publicKey" (dict "privateKey" $key) -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ $name }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "ssh" "context" $ctx) | nindent 4 }}
type: kubernetes.io/ssh-auth
data:
  ssh-privatekey: {{ $key | b64enc | quote }}
  ssh-publickey: {{ printf "%s %s\n" $pub $name | b64enc | quote }}
  authorized_keys: {{ printf "%s %s\n" $pub $name | b64enc | quote }}
{{- end -}}

{{/*
dl-common.mpi.slots: MPI slots (ranks) of a worker pod: the processes its GPU request implies
(dl-common.resources.gpu "procs") when it requests whole GPU devices, else mpi.slots, else 1. A pod with an
amount resource (e.g. HAMi nvidia.com/gpumem) has a share of one GPU: one slot unless mpi.slots says more.
(A mpi.slots that contradicts a device count is rejected by dl-common.mpi.validate.)
  {{ include "dl-common.mpi.slots" (dict "settings" $workerSettings "context" $) }}
*/}}
{{- define "dl-common.mpi.slots" -}}
{{- $slots := .context.Values.mpi.slots -}}
{{- $gpu := include "dl-common.resources.gpu" . | fromJson -}}
{{- if gt (int $gpu.devices) 0 -}}
{{- int $gpu.procs -}}
{{- else if not (kindIs "invalid" $slots) -}}
{{- int $slots -}}
{{- else -}}
1
{{- end -}}
{{- end -}}

{{/*
dl-common.mpi.launcherRanks: the ranks the launcher runs itself: its whole GPU devices when it requests
some (dl-common.resources.gpu; it is then the first host of the hostfile and also runs sshd), else 0.
  {{ include "dl-common.mpi.launcherRanks" (dict "settings" $launcherSettings) }}
*/}}
{{- define "dl-common.mpi.launcherRanks" -}}
{{- int (include "dl-common.resources.gpu" . | fromJson).devices -}}
{{- end -}}

{{/*
dl-common.mpi.hostGroups: JSON list of {role, job, count, slots}: the launcher (when it runs ranks) and
the workers, in hostfile order. "workers" overrides the worker count (e.g. elastic maximum).
  {{- $groups := include "dl-common.mpi.hostGroups" (dict "launcher" $ls "worker" $ws "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.mpi.hostGroups" -}}
{{- $ctx := .context -}}
{{- $groups := list -}}
{{- $lr := int (include "dl-common.mpi.launcherRanks" (dict "settings" .launcher)) -}}
{{- if gt $lr 0 -}}
{{- $groups = append $groups (dict "role" "launcher" "job" (include "dl-common.names.component" (dict "component" "launcher" "context" $ctx)) "count" 1 "slots" $lr) -}}
{{- end -}}
{{- $n := int $ctx.Values.worker -}}
{{- if not (kindIs "invalid" .workers) -}}{{- $n = int .workers -}}{{- end -}}
{{- $groups = append $groups (dict "role" "worker" "job" (include "dl-common.names.component" (dict "component" "worker" "context" $ctx)) "count" $n "slots" (int (include "dl-common.mpi.slots" (dict "settings" .worker "context" $ctx)))) -}}
{{- toJson $groups -}}
{{- end -}}

{{/*
dl-common.mpi.np: the total number of ranks (sum of slots over the hostfile).
  {{ include "dl-common.mpi.np" (dict "launcher" $ls "worker" $ws "context" $) }}
*/}}
{{- define "dl-common.mpi.np" -}}
{{- $np := 0 -}}
{{- range (include "dl-common.mpi.hostGroups" . | fromJsonArray) -}}
{{- $np = add $np (mul (int .count) (int .slots)) -}}
{{- end -}}
{{- $np -}}
{{- end -}}

{{/*
dl-common.mpi.hostfile: the hostfile, one line per pod that runs ranks (launcher first when it has GPUs),
with full "<job>-<i>.<service>.<namespace>.svc" names, in "format" (default mpi.implementation):
openmpi "<host> slots=N", intel / mpich "<host>:N" (via dl-common.hostfile.lines).
  {{ include "dl-common.mpi.hostfile" (dict "launcher" $ls "worker" $ws "format" "openmpi" "context" $) }}
*/}}
{{- define "dl-common.mpi.hostfile" -}}
{{- $ctx := .context -}}
{{- $format := .format | default $ctx.Values.mpi.implementation -}}
{{- $parts := list -}}
{{- range (include "dl-common.mpi.hostGroups" . | fromJsonArray) -}}
{{- $hosts := include "dl-common.peers.hosts" (dict "role" .role "count" .count "context" $ctx) | fromJsonArray -}}
{{- $parts = append $parts (include "dl-common.hostfile.lines" (dict "hosts" $hosts "format" $format "slots" .slots)) -}}
{{- end -}}
{{- join "\n" $parts -}}
{{- end -}}

{{/*
dl-common.mpi.sshConfig: the ssh client configuration every MPI pod uses (copied to <ssh dir>/config).
  {{ include "dl-common.mpi.sshConfig" (dict "paths" $paths "context" $) }}
*/}}
{{- define "dl-common.mpi.sshConfig" -}}
# ssh client settings of the MPI launcher (written by dl-charts; mpirun, horovodrun and hydra use ssh)
Host *
    Port {{ int .context.Values.mpi.sshPort }}
    IdentityFile {{ .paths.sshDir }}/id_ecdsa
    IdentitiesOnly yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
    BatchMode yes
    ConnectionAttempts 10
    ConnectTimeout 10
    ServerAliveInterval 30
    ServerAliveCountMax 4
{{- end -}}

{{/*
dl-common.mpi.sshdConfig: the sshd configuration of the workers (copied to <ssh dir>/sshd_config): key
authentication only, the release key as host key (clients do not check host keys; every pod of the
release shares the key anyway), no PAM, StrictModes off (the keys live on an emptyDir), the pod's
environment for sessions (PermitUserEnvironment + <ssh dir>/environment), port mpi.sshPort. Options are
limited to those OpenSSH 7.2 (CNTK's Ubuntu 16.04) through 9.x all accept.
  {{ include "dl-common.mpi.sshdConfig" (dict "paths" $paths "context" $) }}
*/}}
{{- define "dl-common.mpi.sshdConfig" -}}
# sshd of the MPI workers (written by dl-charts)
Port {{ int .context.Values.mpi.sshPort }}
HostKey {{ .paths.sshDir }}/id_ecdsa
PidFile {{ .paths.sshDir }}/sshd.pid
AuthorizedKeysFile {{ .paths.sshDir }}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
ChallengeResponseAuthentication no
PermitRootLogin {{ ternary "prohibit-password" "no" .paths.root }}
StrictModes no
UsePAM no
UseDNS no
PermitUserEnvironment yes
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowAgentForwarding no
AllowTcpForwarding no
PermitTunnel no
MaxStartups 100:30:200
LogLevel {{ .context.Values.mpi.sshd.logLevel }}
{{- end -}}

{{/*
dl-common.mpi.launcherScript: POSIX sh run as `sh /etc/mpi/mpi-launcher.sh <command...>` on the launcher:
1. waits (bounded by MPI_WAIT_TIMEOUT, logging every MPI_WAIT_INTERVAL s) until MPI_WAIT_MIN (default:
   all) workers of MPI_PEER_GROUPS resolve in DNS AND accept an SSH login with the release key; on timeout
   it lists the missing workers with the reason (no DNS / ssh error) and exits 1;
2. runs the command (signals are passed on);
3. on success releases every worker over SSH (they exit 0 and free their GPUs at once); on failure leaves
   them up for a launcher retry (their watchdog stops them once the launcher is gone for good);
4. exits with the command's status.
*/}}
{{- define "dl-common.mpi.launcherScript" -}}
#!/bin/sh
# mpi-launcher: waits for the MPI workers, runs the launcher command, releases the workers (dl-charts)
set -u
say() { echo "mpi-launcher: $*"; }
die() { echo "mpi-launcher: ERROR: $*" >&2; exit 1; }
[ "$#" -gt 0 ] || die "no command given"
trap 'say "terminated while waiting for the workers"; exit 143' TERM INT
command -v ssh >/dev/null 2>&1 || die "this image has no ssh client; MPI launchers need openssh-client"
[ -r "$MPI_SSH_DIR/config" ] || die "$MPI_SSH_DIR/config is missing; the mpi-setup init container did not run"
if [ "${MPI_LAUNCHER_SSHD:-false}" = true ]; then
  say "this launcher also runs ranks: starting its own sshd"
  sh /etc/mpi/mpi-sshd.sh &
fi
hosts=""
for g in $MPI_PEER_GROUPS; do
  job="${g%:*}"; n="${g##*:}"; i=0
  while [ "$i" -lt "$n" ]; do hosts="$hosts $job-$i.$MPI_PEER_DOMAIN"; i=$((i + 1)); done
done
total=$(echo $hosts | wc -w)
need="${MPI_WAIT_MIN:-$total}"
[ "$need" -gt "$total" ] && need=$total
why=""
probe() {
  if ! getent hosts "$1" >/dev/null 2>&1; then why="does not resolve (pod not running yet)"; return 1; fi
  out=$(ssh -o ConnectTimeout=5 -o ConnectionAttempts=1 "$1" true 2>&1) && return 0
  rc=$?
  msg=$(printf '%s\n' "$out" | sed '/^[[:space:]]*$/d' | tail -n 1)
  why="resolves, but ssh fails (exit $rc): ${msg:-no message, read the worker's sshd log}"
  return 1
}
say "waiting up to ${MPI_WAIT_TIMEOUT}s until $need of $total worker(s) resolve and accept SSH on port $MPI_SSH_PORT"
start=$(date +%s)
pending="$hosts"
ready=0
while :; do
  left=""; first=""; firstwhy=""
  for h in $pending; do
    if probe "$h"; then
      ready=$((ready + 1))
    else
      left="$left $h"
      [ -z "$first" ] && { first="$h"; firstwhy="$why"; }
    fi
  done
  pending="$left"
  elapsed=$(( $(date +%s) - start ))
  if [ "$ready" -ge "$need" ]; then
    say "$ready of $total worker(s) accept SSH (after ${elapsed}s)"
    break
  fi
  if [ "$elapsed" -ge "$MPI_WAIT_TIMEOUT" ]; then
    echo "mpi-launcher: ERROR: after ${elapsed}s only $ready of $total worker(s) accept SSH (need $need). Not ready:" >&2
    k=0
    for h in $pending; do
      k=$((k + 1))
      if [ "$k" -gt 20 ]; then echo "  ... and $(( $(echo $pending | wc -w) - 20 )) more" >&2; break; fi
      probe "$h" || echo "  $h: $why" >&2
    done
    echo "mpi-launcher: 'does not resolve': the worker pod has no IP yet (pending, pulling, failed): kubectl get pods -l app.kubernetes.io/instance=$MPI_RELEASE,app.kubernetes.io/component=worker and the pods' events. 'ssh fails': read the worker's log (sshd). Raise mpi.waitForWorkers.timeoutSeconds, or enable gang scheduling (gang.scheduler) so that all pods start together." >&2
    exit 1
  fi
  say "$ready of $total worker(s) accept SSH; waiting for $((need - ready)) more, e.g. $first: $firstwhy (${elapsed}s of ${MPI_WAIT_TIMEOUT}s)"
  sleep "$MPI_WAIT_INTERVAL" &
  wait $!
done
say "running: $*"
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
rc=0
wait "$child" || rc=$?
while kill -0 "$child" 2>/dev/null; do rc=0; wait "$child" || rc=$?; done
if [ "$rc" -eq 0 ]; then
  say "the command succeeded; releasing the $total worker(s)"
  k=0
  for h in $hosts; do
    ( out=$(ssh -o ConnectTimeout=5 -o ConnectionAttempts=2 "$h" "touch '$MPI_SSH_DIR/mpi-done'" 2>&1 </dev/null) ||
      echo "mpi-launcher: WARNING: could not release $h (its watchdog stops it): $(printf '%s\n' "$out" | sed '/^[[:space:]]*$/d' | tail -n 1)" >&2 ) &
    k=$((k + 1))
    [ $((k % 32)) -eq 0 ] && wait
  done
  wait
  say "done (a worker that missed the release stops through its watchdog once this launcher is gone)"
else
  say "the command failed with exit status $rc; the workers stay up for a retry of the launcher and stop through their watchdog once it is gone for good"
fi
exit "$rc"
{{- end -}}

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
dl-common.mpi.env: the MPI env of a main container (JSON list of EnvVar dicts, for dl-common.job.indexed
"env"). "role" is "launcher" or "worker"; "launcher"/"worker" are both roles' settings. Every MPI pod:
MPI_SSH_DIR, MPI_SSH_PORT. The launcher adds its wait parameters (MPI_PEER_GROUPS, MPI_PEER_DOMAIN,
MPI_WAIT_TIMEOUT, MPI_WAIT_INTERVAL, MPI_WAIT_MIN when "waitMin" is given, MPI_RELEASE,
MPI_LAUNCHER_SSHD, MPI_HOSTFILE) and the implementation's variables:
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
{{- $hostfile := printf "%s/hostfile" $n.mount -}}
{{- $port := int $mpi.sshPort -}}
{{- $env := list (dict "name" "MPI_SSH_DIR" "value" $paths.sshDir) (dict "name" "MPI_SSH_PORT" "value" (toString $port)) -}}
{{- if eq .role "launcher" -}}
{{- $waitGroups := include "dl-common.peers.groups" (dict "roles" (dict "worker" (int $ctx.Values.worker)) "context" $ctx) -}}
{{- $env = concat $env (list
  (dict "name" "MPI_HOSTFILE" "value" $hostfile)
  (dict "name" "MPI_PEER_GROUPS" "value" $waitGroups)
  (dict "name" "MPI_PEER_DOMAIN" "value" (include "dl-common.peers.domain" (dict "context" $ctx)))
  (dict "name" "MPI_WAIT_TIMEOUT" "value" (toString (int $mpi.waitForWorkers.timeoutSeconds)))
  (dict "name" "MPI_WAIT_INTERVAL" "value" (toString (int $mpi.waitForWorkers.intervalSeconds)))
  (dict "name" "MPI_RELEASE" "value" $ctx.Release.Name)
  (dict "name" "MPI_LAUNCHER_SSHD" "value" (ternary "true" "false" (gt (int (include "dl-common.mpi.launcherRanks" (dict "settings" .launcher))) 0)))) -}}
{{- if not (kindIs "invalid" .waitMin) -}}
{{- $env = append $env (dict "name" "MPI_WAIT_MIN" "value" (toString (int .waitMin))) -}}
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

{{/*
dl-common.mpi.validate: JSON errors of the MPI rules ("launcher"/"worker": both roles' settings), each
naming the value path and the fix:
- mpi.slots set by hand unequal to the workers' whole-GPU count (one rank per GPU);
- launcher and workers running as different uids (ssh logs in as the launcher's user);
- a run-as user missing (ssh needs a numeric uid: 0 for root images, e.g. 1000 otherwise);
- a non-root uid without podSecurityContext.fsGroup (the SSH Secret is readable only through it);
- sshd as root without the capabilities its privilege separation needs (SYS_CHROOT, SETUID, SETGID), on
  the workers and on a launcher that runs ranks (AUDIT_WRITE is only needed by sshd builds with Linux audit
  support, e.g. RHEL's, so it is not required);
- mpi.user.home not an absolute directory other than /;
- a command (defaults.command, roles.launcher.command, roles.worker.command) or worker args
  (defaults.args, roles.worker.args) while mpi.replaceEntrypoint is false: a command replaces the
  launcher's wrapper (mpi-launcher.sh: waits for the workers' sshd, runs the launch line, releases the
  workers) or the workers' sshd (mpi-sshd.sh, through which every rank starts), and sshd takes no
  arguments, so the job would run no rank or silently ignore the args. The message names "program", the
  chart's value for the program every rank runs (e.g. "horovod.command"). roles.launcher.args (the whole
  launch line, still run by the wrapper) stays allowed.
  {{- $errors = include "dl-common.mpi.validate" (dict "errors" $errors "launcher" $ls "worker" $ws "program" "horovod.command" "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.mpi.validate" -}}
{{- $errors := .errors -}}
{{- $ctx := .context -}}
{{- $mpi := $ctx.Values.mpi -}}
{{- if not $mpi.replaceEntrypoint -}}
{{- $what := dict
  "defaults" "the launcher's wrapper (it waits for the workers' sshd, runs mpirun/horovodrun, releases the workers) and the workers' sshd (through which every rank starts), so every pod would run it alone, outside MPI"
  "launcher" "the launcher's wrapper (it waits for the workers' sshd, runs mpirun/horovodrun, releases the workers), so it would run once, outside mpirun"
  "worker" "the workers' sshd, through which mpirun starts every rank, so no rank could start" -}}
{{- range $role := list "launcher" "worker" -}}
{{- $s := index $ $role -}}
{{- if $s.command -}}
{{- $path := include "dl-common.values.path" (dict "role" $role "key" "command" "context" $ctx) -}}
{{- $errors = append $errors (printf "%s is set, which replaces %s. Put the program every rank runs in %s; to replace the entrypoint anyway (you then run sshd, wait for and release the workers yourself), set mpi.replaceEntrypoint=true." $path (get $what (ternary "defaults" $role (hasPrefix "defaults." $path))) $.program) -}}
{{- end -}}
{{- end -}}
{{- if and $.worker.args (not $.worker.command) -}}
{{- $path := include "dl-common.values.path" (dict "role" "worker" "key" "args" "context" $ctx) -}}
{{- $errors = append $errors (printf "%s reaches the MPI workers, whose sshd takes no arguments, so it would be ignored there. Put the program every rank runs in %s; to replace the launcher's whole launch line set roles.launcher.args instead." $path $.program) -}}
{{- end -}}
{{- end -}}
{{- $ws := .worker -}}
{{- $gpus := int (include "dl-common.resources.gpu" (dict "settings" $ws) | fromJson).devices -}}
{{- $gpuPath := include "dl-common.values.path" (dict "role" "worker" "key" "gpu.count" "context" $ctx) -}}
{{- if and (not (kindIs "invalid" $mpi.slots)) (gt $gpus 0) -}}
{{- if (ne (int $mpi.slots) $gpus) -}}{{- $errors = append $errors (printf "mpi.slots is %v but each worker requests %d %s (%s); MPI runs one rank per GPU, so the hostfile's slots are the GPU count. Leave mpi.slots null (it then follows the GPU count) or make the two equal." $mpi.slots $gpus ($ws.gpu.resource | default "nvidia.com/gpu") $gpuPath) -}}{{- end -}}
{{- end -}}
{{- $uids := dict -}}
{{- range $role := list "launcher" "worker" -}}
{{- $s := index $ (printf "%s" $role) -}}
{{- $uid := include "dl-common.mpi.runAsUser" (dict "settings" $s) -}}
{{- $_ := set $uids $role $uid -}}
{{- $uidPath := include "dl-common.values.path" (dict "role" $role "key" "securityContext.runAsUser" "context" $ctx) -}}
{{- if (eq $uid "") -}}{{- $errors = append $errors (printf "%s: the %s pods need a numeric runAsUser (securityContext or podSecurityContext): ssh and sshd log in as that user. Use e.g. 1000 (non-root; the chart adds the passwd entry) or 0 for images that only work as root." $uidPath $role) -}}{{- end -}}
{{- if and (ne $uid "") (ne $uid "0") -}}
{{- $fsGroup := ($s.podSecurityContext | default dict).fsGroup -}}
{{- if (kindIs "invalid" $fsGroup) -}}{{- $errors = append $errors (printf "%s is not set but the %s pods run as uid %s: the SSH key Secret is readable by a non-root uid only through the fsGroup. Set %s (e.g. to the runAsGroup)." (include "dl-common.values.path" (dict "role" $role "key" "podSecurityContext.fsGroup" "context" $ctx)) $role $uid (include "dl-common.values.path" (dict "role" $role "key" "podSecurityContext.fsGroup" "context" $ctx))) -}}{{- end -}}
{{- end -}}
{{- $runsSshd := or (eq $role "worker") (gt (int (include "dl-common.mpi.launcherRanks" (dict "settings" $s))) 0) -}}
{{- if and $runsSshd (eq $uid "0") -}}
{{- $added := ((($s.securityContext | default dict).capabilities | default dict).add | default list) -}}
{{- $missing := list -}}
{{- range $cap := list "SYS_CHROOT" "SETUID" "SETGID" -}}
{{- if not (has $cap $added) -}}{{- $missing = append $missing $cap -}}{{- end -}}
{{- end -}}
{{- if (gt (len $missing) 0) -}}{{- $errors = append $errors (printf "%s lacks %s: the %s pods run sshd as root (runAsUser 0), whose privilege separation needs SYS_CHROOT, SETUID and SETGID. Add them, or run as a non-root uid (e.g. 1000)." (include "dl-common.values.path" (dict "role" $role "key" "securityContext.capabilities.add" "context" $ctx)) (join ", " $missing) $role) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (ne $uids.launcher "") (ne $uids.worker "") -}}
{{- if (ne (eq $uids.launcher "0") (eq $uids.worker "0")) -}}{{- $errors = append $errors (printf "the launcher runs as uid %s but the workers as uid %s: ssh logs in to the workers as the launcher's user, so both must be root or both non-root. Set the same runAsUser for roles.launcher and roles.worker (or only in defaults)." $uids.launcher $uids.worker) -}}{{- end -}}
{{- end -}}
{{- $home := toString $mpi.user.home -}}
{{- if (or (not (hasPrefix "/" $home)) (eq (trimSuffix "/" $home) "")) -}}{{- $errors = append $errors (printf "mpi.user.home is %q; it must be an absolute directory other than / (the emptyDir mounted there holds ~/.ssh), e.g. /home/mpi." $home) -}}{{- end -}}
{{- toJson $errors -}}
{{- end -}}
