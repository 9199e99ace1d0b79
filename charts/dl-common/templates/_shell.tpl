{{/*
The chart's shell scripts, one define each. GENERATED from charts/dl-common/scripts/*.sh by
charts/dl-common/scripts/build.py: edit the script there (shellchecked by `make lint`), then run
`python charts/dl-common/scripts/build.py`. Never edit this file.
*/}}

{{/*
dl-common.mpi.discoverHostsScript: bash for Horovod elastic (--host-discovery-script): prints
"<host>:<slots>" for every pod of "groups" (list of {job, count, slots}, e.g. dl-common.mpi.hostGroups
with the elastic maximum) that resolves and whose sshd accepts TCP connections, sorted by index. A host
that answered once is remembered with its IP in <ssh dir>/discovered and only re-probed when its IP
changes (the pod was replaced), so sshd is not probed every second.
  {{ include "dl-common.mpi.discoverHostsScript" (dict "groups" $groups "context" $) }}
Source: scripts/discover_hosts.sh.
*/}}
{{- define "dl-common.mpi.discoverHostsScript" -}}
#!/bin/bash
# discover_hosts.sh: Horovod elastic host discovery (dl-charts): one "<host>:<slots>" per available pod
set -u
port={{ int .context.Values.mpi.sshPort }}
domain={{ include "dl-common.peers.domain" . | quote }}
groups=({{ range .groups }}"{{ .job }}:{{ int .count }}:{{ int .slots }}" {{ end }})
cache="${MPI_SSH_DIR:-/tmp}/discovered"
declare -A known=()
if [ -r "$cache" ]; then
  while read -r h ip; do [ -n "$h" ] && known["$h"]="$ip"; done < "$cache"
fi
check() {
  local h="$1" slots="$2" ip
  ip=$(getent hosts "$h" 2>/dev/null | awk '{ print $1; exit }')
  [ -n "$ip" ] || return 0
  if [ "${known[$h]:-}" = "$ip" ] || timeout 2 bash -c ": > /dev/tcp/$ip/$port" 2>/dev/null; then
    echo "$h $ip $slots"
  fi
}
found=$(
  for g in "${groups[@]}"; do
    IFS=: read -r job count slots <<< "$g"
    for ((i = 0; i < count; i++)); do check "$job-$i.$domain" "$slots" & done
  done
  wait
)
printf '%s\n' "$found" | awk 'NF { print $1, $2 }' > "$cache.$$" && mv -f "$cache.$$" "$cache"
printf '%s\n' "$found" | awk 'NF { print $1 ":" $3 }' | sort -V
{{- end -}}

{{/*
dl-common.mpi.setupScript: POSIX sh of the mpi-setup init container: copies the SSH key and configs from
the Secret (/etc/mpi-secret) and ConfigMap (/etc/mpi) into MPI_SSH_DIR with mode 0600, owned by the
pod's uid, and for a non-root uid writes /mpi-etc/passwd and /mpi-etc/group (see "Identity" above).
Source: scripts/mpi-setup.sh.
*/}}
{{- define "dl-common.mpi.setupScript" -}}
#!/bin/sh
# mpi-setup: prepares SSH for MPI in this pod (dl-charts)
set -eu
say() { echo "mpi-setup: $*"; }
die() { echo "mpi-setup: ERROR: $*" >&2; exit 1; }
secret=/etc/mpi-secret
dir="$MPI_SSH_DIR"
uid=$(id -u)
gid=$(id -g)
for f in ssh-privatekey authorized_keys; do
  [ -r "$secret/$f" ] || die "cannot read $secret/$f as uid $uid: the SSH Secret is readable through the pod's fsGroup; set podSecurityContext.fsGroup (the chart default does) or run as root"
done
mkdir -p "$dir" || die "cannot create $dir as uid $uid"
umask 077
cp "$secret/ssh-privatekey" "$dir/id_ecdsa"
cp "$secret/authorized_keys" "$dir/authorized_keys"
cp /etc/mpi/ssh_config "$dir/config"
cp /etc/mpi/sshd_config "$dir/sshd_config"
chmod 0600 "$dir/id_ecdsa" "$dir/authorized_keys" "$dir/config" "$dir/sshd_config"
if [ "$uid" != 0 ]; then
  shell=/bin/sh
  [ -x /bin/bash ] && shell=/bin/bash
  # the entry of this uid gets our home and gid (sshd cannot switch groups without root) and a login
  # shell; another entry holding our user name is dropped; without an entry for the uid, one is added
  awk -F: -v OFS=: -v u="$uid" -v g="$gid" -v n="$MPI_USER" -v h="$MPI_HOME" -v s="$shell" '
    $3 == u { $4 = g; $6 = h; if ($7 == "" || $7 ~ /(nologin|false)$/) $7 = s; found = 1; print; next }
    $1 == n { next }
    { print }
    END { if (!found) print n, "x", u, g, "MPI user", h, s }' /etc/passwd > /mpi-etc/passwd
  awk -F: -v g="$gid" '$3 == g { found = 1 } END { exit !found }' /etc/group && cp /etc/group /mpi-etc/group ||
    { cat /etc/group; echo "$MPI_USER:x:$gid:"; } > /mpi-etc/group
  chmod 0644 /mpi-etc/passwd /mpi-etc/group
  say "uid $uid is $(awk -F: -v u="$uid" '$3 == u { print $1 ":" $6 ":" $7; exit }' /mpi-etc/passwd) (name:home:shell)"
fi
say "SSH key and configuration are ready in $dir"
{{- end -}}

{{/*
dl-common.mpi.sshdScript: POSIX sh that runs sshd in the foreground on a worker (or on a launcher that
runs ranks, with "&"): checks that the image has sshd, writes the container environment to
<ssh dir>/environment for SSH sessions, starts `sshd -De`, and exits 0 when the launcher releases the
worker (it creates <ssh dir>/mpi-done over SSH after a successful run), and 143 when terminated from outside
(a deleted worker is a failed one, which the Job replaces, not a completed index). On a worker it runs under the
dl-common watchdog, which stops it once the launcher pod is gone (launcher failed for good, or release
signal missed).
Source: scripts/mpi-sshd.sh.
*/}}
{{- define "dl-common.mpi.sshdScript" -}}
#!/bin/sh
# mpi-sshd: the SSH server MPI launchers start ranks through (dl-charts)
set -u
say() { echo "mpi-sshd: $*"; }
dir="$MPI_SSH_DIR"
sshd=""
for c in /usr/sbin/sshd /usr/local/sbin/sshd "$(command -v sshd 2>/dev/null || true)"; do
  if [ -n "$c" ] && [ -x "$c" ]; then sshd="$c"; break; fi
done
if [ -z "$sshd" ]; then
  echo "mpi-sshd: ERROR: this image has no sshd (OpenSSH server). MPI workers need one: use an image with openssh-server installed (see the chart README for a two-line Dockerfile)." >&2
  exit 1
fi
[ -r "$dir/sshd_config" ] || { echo "mpi-sshd: ERROR: $dir/sshd_config is missing; the mpi-setup init container did not run" >&2; exit 1; }
if [ "$(id -u)" = 0 ]; then
  # sshd as root separates privileges into /run/sshd (images that never started sshd lack it), which
  # needs CAP_SYS_CHROOT, CAP_SETUID and CAP_SETGID (bits 18, 7, 6 of CapEff)
  if [ ! -d /run/sshd ]; then
    mkdir -p /run/sshd && chmod 0755 /run/sshd || echo "mpi-sshd: WARNING: cannot create /run/sshd (read-only root filesystem?); root sshd needs it" >&2
  fi
  eff=$(awk '/^CapEff:/ { print $2 }' /proc/self/status 2>/dev/null)
  if [ -n "$eff" ] && [ $(( (0x$eff >> 6 & 1) + (0x$eff >> 7 & 1) + (0x$eff >> 18 & 1) )) -lt 3 ]; then
    echo "mpi-sshd: WARNING: sshd runs as root without all of CAP_SETGID, CAP_SETUID and CAP_SYS_CHROOT (CapEff $eff), so it will refuse every login. Add them to the worker's securityContext.capabilities.add, or run as a non-root uid." >&2
  fi
fi
# sessions (orted, hydra proxies, horovod) get this container's environment
awk 'BEGIN { for (k in ENVIRON) if (k !~ /^(HOME|USER|LOGNAME|SHELL|PWD|OLDPWD|SHLVL|_|HOSTNAME|TERM|MAIL)$/ && k ~ /^[A-Za-z_][A-Za-z0-9_]*$/ && index(ENVIRON[k], "\n") == 0) print k "=" ENVIRON[k] }' > "$dir/environment"
chmod 0600 "$dir/environment"
rm -f "$dir/mpi-done"
"$sshd" -D -e -f "$dir/sshd_config" &
pid=$!
stopping=0
trap 'stopping=1; kill -TERM "$pid" 2>/dev/null' TERM INT
say "sshd (pid $pid) listens on port $MPI_SSH_PORT for user $(id -un 2>/dev/null || id -u); waiting for the launcher"
while kill -0 "$pid" 2>/dev/null; do
  if [ -e "$dir/mpi-done" ]; then
    say "the launcher finished and released this pod; stopping sshd"
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    exit 0
  fi
  sleep 2 &
  wait $!
done
rc=0
wait "$pid" || rc=$?
# stopped from outside (pod deleted, node drained): not a finished job, so the Job replaces this pod (its
# watchdog and the launcher's release exit 0 themselves)
if [ "$stopping" = 1 ]; then say "terminated (SIGTERM): exiting 143 (a worker deleted from outside fails, and its Job replaces it; a stop by the watchdog still ends the pod with 0)"; exit 143; fi
echo "mpi-sshd: ERROR: sshd exited with status $rc (see its messages above)" >&2
[ "$rc" -eq 0 ] && rc=1
exit "$rc"
{{- end -}}

{{/*
dl-common.peers.waitScript: POSIX sh (busybox) that expands DL_PEER_GROUPS ("<job>:<count> ...") into
"<job>-<i>.$DL_PEER_DOMAIN" names and waits until every one resolves, logging progress every
DL_PEER_INTERVAL seconds; after DL_PEER_TIMEOUT seconds it prints which peers are missing and exits 1.
busybox nslookup applies no search list to dotted names, so the script appends the cluster domain it
reads from the pod's own resolv.conf (the "svc.<domain>" search entry) instead of hard-coding one.
Used by dl-common.peers.waitContainer and dl-common.peers.testPod.
Source: scripts/peer-wait.sh.
*/}}
{{- define "dl-common.peers.waitScript" -}}
set -u
dom=""
for s in $(sed -n 's/^search[[:space:]]*//p' /etc/resolv.conf); do
  case "$s" in svc.*) dom="${s#svc.}"; break ;; esac
done
resolves() {
  name="$1"
  if [ -n "$dom" ]; then name="$1.$dom"; fi
  nslookup "$name" 2>/dev/null | grep -q '^Name:'
}
pending=""
for g in $DL_PEER_GROUPS; do
  job="${g%:*}"; n="${g##*:}"; i=0
  while [ "$i" -lt "$n" ]; do pending="$pending $job-$i.$DL_PEER_DOMAIN"; i=$((i + 1)); done
done
total=$(echo $pending | wc -w)
start=$(date +%s)
echo "peer-wait: waiting up to ${DL_PEER_TIMEOUT}s for $total peer(s) of $DL_PEER_DOMAIN to resolve"
while :; do
  left=""
  for h in $pending; do resolves "$h" || left="$left $h"; done
  pending="$left"
  elapsed=$(( $(date +%s) - start ))
  if [ -z "$pending" ]; then
    echo "peer-wait: all $total peer(s) resolve (after ${elapsed}s)"
    exit 0
  fi
  missing=$(echo $pending | wc -w)
  if [ "$elapsed" -ge "$DL_PEER_TIMEOUT" ]; then
    echo "peer-wait: ERROR: after ${elapsed}s, $missing of $total peer(s) still do not resolve:" >&2
    echo $pending | tr ' ' '\n' | head -n 20 >&2
    echo "peer-wait: their pods are not running (unschedulable, pulling, or failed). Check: kubectl get pods -l app.kubernetes.io/instance=$DL_RELEASE and the pods' events. Raise peerWait.timeoutSeconds, or enable gang scheduling (gang.scheduler) so that all pods start together." >&2
    exit 1
  fi
  first="${pending# }"
  echo "peer-wait: $missing of $total peer(s) do not resolve yet (first: ${first%% *}); ${elapsed}s of ${DL_PEER_TIMEOUT}s"
  sleep "$DL_PEER_INTERVAL"
done
{{- end -}}

{{/*
dl-common.pod.watchdogScript: POSIX sh run as `sh -c <script> dl-watchdog <program> <args...>` around the
program of a long-running role (TF parameter servers, MXNet scheduler/servers, ...). It starts the
program, and every DL_WATCH_INTERVAL seconds checks the pods listed in DL_WATCH_GROUPS ("<job>:<count> ...",
under DL_PEER_DOMAIN): one is up while an address of its name is among the addresses of DL_WATCH_READY, the
release's Service of ready pods (dl-common.service.headless: a completed pod can keep its name in the main
Service, never in that one). Once it has seen one of them up, and then none of them is up for
DL_WATCH_MISSES checks in a row, it stops the program (TERM, then KILL after 30 s) and exits 0, so the pod
completes and frees its GPU and node. A pod that replaces a failed one (DL_WATCH_RETRY, the Job's per-index
failure count, is not 0) counts the misses from its start: the pods it serves may have finished for good
before it started (e.g. an MPI launcher that failed after a worker was killed), and it would never see them. If
the program exits on its own, its exit status is passed through. Uses getent (glibc images) or python.
Source: scripts/watchdog.sh.
*/}}
{{- define "dl-common.pod.watchdogScript" -}}
addresses() {
  if command -v getent >/dev/null 2>&1; then getent ahosts "$1" 2>/dev/null
  else
    py=python3; command -v python3 >/dev/null 2>&1 || py=python
    "$py" -c 'import socket,sys; print("\n".join(sorted({a[4][0] for a in socket.getaddrinfo(sys.argv[1], None)})))' "$1" 2>/dev/null
  fi | while read -r ip _; do echo "$ip"; done
}
hosts=""
for g in $DL_WATCH_GROUPS; do
  job="${g%:*}"; n="${g##*:}"; i=0
  while [ "$i" -lt "$n" ]; do hosts="$hosts $job-$i.$DL_PEER_DOMAIN"; i=$((i + 1)); done
done
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
echo "watchdog: started $1 (pid $child); it will be stopped once none of [$DL_WATCH_GROUPS] is ready any more"
seen=0; misses=0
if [ "${DL_WATCH_RETRY:-0}" != 0 ]; then
  # a replacement of a failed pod: what it serves may have ended meanwhile, so it never shows up; count from now
  echo "watchdog: this pod replaces a failed one (failure ${DL_WATCH_RETRY}); it stops unless one of [$DL_WATCH_GROUPS] is ready within $DL_WATCH_MISSES checks"
  seen=1
fi
while kill -0 "$child" 2>/dev/null; do
  sleep "$DL_WATCH_INTERVAL" & wait $!
  up=0
  ready=" $(echo $(addresses "$DL_WATCH_READY")) "
  if [ "$ready" != "  " ]; then
    for h in $hosts; do
      for ip in $(addresses "$h"); do
        case "$ready" in *" $ip "*) up=1; break 2 ;; esac
      done
    done
  fi
  if [ "$up" = 1 ]; then
    [ "$seen" = 0 ] && echo "watchdog: peers [$DL_WATCH_GROUPS] are up"
    seen=1; misses=0
  elif [ "$seen" = 1 ]; then
    misses=$((misses + 1))
    echo "watchdog: none of [$DL_WATCH_GROUPS] is ready ($misses/$DL_WATCH_MISSES)"
    if [ "$misses" -ge "$DL_WATCH_MISSES" ]; then
      echo "watchdog: the pods this role serves have finished; stopping $1"
      kill -TERM "$child" 2>/dev/null
      t=0
      while kill -0 "$child" 2>/dev/null && [ "$t" -lt 30 ]; do sleep 1; t=$((t + 1)); done
      if kill -KILL "$child" 2>/dev/null; then echo "watchdog: $1 was still running 30s after TERM; killed it"; fi
      exit 0
    fi
  fi
done
wait "$child"
{{- end -}}
