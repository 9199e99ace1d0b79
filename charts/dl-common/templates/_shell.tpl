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
dl-common.mpi.launcherScript: POSIX sh run as `sh /etc/mpi/mpi-launcher.sh <command...>` on the launcher:
1. waits (bounded by MPI_WAIT_TIMEOUT; rounds 0.25 s apart for 30 s, logged once a second, then MPI_WAIT_INTERVAL
   s; 1 s where sleep takes whole seconds only) until MPI_WAIT_MIN
   (default: all) workers of MPI_PEER_GROUPS resolve in DNS AND accept an SSH login with the release key; on
   timeout it lists the missing workers with the reason (no DNS / ssh error) and exits 1;
   With MPI_SPARES (hot spares, mpi.spareWorkers) it waits for all but that many, and the first of them in
   host order run the ranks: it writes MPI_RUN_HOSTFILE, MPI_HOSTFILE without the other workers' lines (the
   spares, and workers not up), which the command reads; steps 2 and 4 then look at those workers only;
2. leaves a marker unique to this run in every worker's SSH dir (<ssh dir>/mpi-run, an emptyDir, so a replaced
   worker pod has none), unless the run is elastic (MPI_WAIT_MIN set);
3. runs the command (signals are passed on);
4. checks that every worker still holds the marker: one that does not (replaced) or cannot be reached (lost)
   means ranks were lost, whatever the command's exit status (Open MPI 5's prterun exits 0 after losing a
   daemon). Then, up to MPI_RESTARTS_IN_POD times per launcher pod, it goes back to step 1 in this pod: the
   replacement workers join, and the command runs again (resuming from its checkpoint, if it keeps one), with
   no new launcher pod and no Job back-off; past that it exits 1 (or the command's status), naming the workers,
   and leaves them up for a launcher retry (the Job's backoffLimitPerIndex). A command that fails with every
   worker in place failed by itself: the launcher exits with its status at once (their watchdog stops the
   workers once the launcher is gone for good). On success it releases every worker over SSH (they exit 0 and
   free their GPUs at once);
5. exits with the command's status.
With MPI_WAIT_ONLY=true (the launcher runs its image's own entrypoint, `imageEntrypoint`) it is the mpi-wait init
container instead: steps 1 and 2, then exit 0, and the main container runs the launch line; the workers then stop
through their watchdog, which the marker tells that the launcher ran.
Source: scripts/mpi-launcher.sh.
*/}}
{{- define "dl-common.mpi.launcherScript" -}}
#!/bin/sh
# mpi-launcher: waits for the MPI workers, runs the launcher command, checks and releases the workers (dl-charts)
set -u
say() { echo "mpi-launcher: $*"; }
die() { echo "mpi-launcher: ERROR: $*" >&2; exit 1; }
last() { printf '%s\n' "$1" | tr -d '\r' | sed '/^[[:space:]]*$/d' | tail -n 1; }
wait_only="${MPI_WAIT_ONLY:-false}"
[ "$#" -gt 0 ] || [ "$wait_only" = true ] || die "no command given"
trap 'say "terminated while waiting for the workers"; exit 143' TERM INT
command -v ssh >/dev/null 2>&1 || die "this image has no ssh client; MPI launchers need openssh-client"
[ -r "$MPI_SSH_DIR/config" ] || die "$MPI_SSH_DIR/config is missing; the mpi-setup init container did not run"
if [ "${MPI_LAUNCHER_SSHD:-false}" = true ] && [ "$wait_only" != true ]; then
  say "this launcher also runs ranks: starting its own sshd"
  sh /etc/mpi/mpi-sshd.sh &
fi
hosts=""
for g in $MPI_PEER_GROUPS; do
  job="${g%:*}"; n="${g##*:}"; i=0
  while [ "$i" -lt "$n" ]; do hosts="$hosts $job-$i.$MPI_PEER_DOMAIN"; i=$((i + 1)); done
done
total=$(echo $hosts | wc -w)
spares="${MPI_SPARES:-0}"
need="${MPI_WAIT_MIN:-$((total - spares))}"
[ "$need" -gt "$total" ] && need=$total
ranks="$hosts" # the workers that run the ranks (all but the spares)
others=""
why=""
probe() {
  if ! getent hosts "$1" >/dev/null 2>&1; then why="does not resolve (pod not running yet)"; return 1; fi
  out=$(ssh -o ConnectTimeout=5 -o ConnectionAttempts=1 "$1" true 2>&1) && return 0
  rc=$?
  msg=$(last "$out")
  why="resolves, but ssh fails (exit $rc): ${msg:-no message, read the sshd log of the worker}"
  return 1
}
tick=0.25
sleep 0.01 2>/dev/null || tick=1 # a sleep that takes whole seconds only
# on_hosts <function> <host>...: runs "<function> <host>" for each host, 32 at a time, and prints what they print
on_hosts() {
  fn="$1"; shift
  k=0
  for h in "$@"; do
    "$fn" "$h" </dev/null &
    k=$((k + 1))
    [ $((k % 32)) -eq 0 ] && wait
  done
  wait
}
probe_line() { if probe "$1"; then echo "ok $1"; else echo "no $1 $why"; fi; }
# choose_ranks: with hot spares, the first $need workers (in host order) that accept SSH run the ranks: writes
# MPI_RUN_HOSTFILE from MPI_HOSTFILE without the other workers' lines (a line names its host first, then " slots=N"
# or ":N"; a launcher that runs ranks keeps its own line)
choose_ranks() {
  ranks=""; n=0; others=""
  for h in $hosts; do
    case " $up " in
      *" $h "*) if [ "$n" -lt "$need" ]; then ranks="$ranks $h"; n=$((n + 1)); else others="$others $h"; fi ;;
      *) others="$others $h" ;;
    esac
  done
  if ! awk -v drop="$others" 'BEGIN { n = split(drop, d, " "); for (i = 1; i <= n; i++) skip[d[i]] = 1 }
      { h = $1; sub(/:.*/, "", h); if (!(h in skip)) print }' "$MPI_HOSTFILE" > "$MPI_RUN_HOSTFILE.new" ||
    ! mv "$MPI_RUN_HOSTFILE.new" "$MPI_RUN_HOSTFILE"; then
    die "could not write $MPI_RUN_HOSTFILE"
  fi
  say "ranks on:$ranks; spare(s) or not up:${others:- none}"
}
# wait_workers: step 1; returns once $need workers accept SSH, exits 1 at the timeout
wait_workers() {
  say "waiting up to ${MPI_WAIT_TIMEOUT}s until $need of $total worker(s) resolve and accept SSH on port $MPI_SSH_PORT"
  start=$(date +%s)
  said=-1
  # workers just found lost are probed only when the others are not enough: a vanished pod's address can take
  # seconds to time out, and a spare may make them up already
  pending=""
  for h in $hosts; do case " $suspects " in *" $h "*) ;; *) pending="$pending $h" ;; esac; done
  ready=0
  up=""
  while :; do
    left=""; first=""; firstwhy=""
    # every pending worker at once
    probed=$(on_hosts probe_line $pending)
    while read -r state h reason; do
      [ -n "$h" ] || continue
      if [ "$state" = ok ]; then
        ready=$((ready + 1))
        up="$up $h"
      else
        left="$left $h"
        [ -z "$first" ] && { first="$h"; firstwhy="$reason"; }
      fi
    done <<EOF
$probed
EOF
    pending="$left $suspects"
    suspects=""
    elapsed=$(( $(date +%s) - start ))
    if [ "$ready" -ge "$need" ]; then
      say "$ready of $total worker(s) accept SSH (after ${elapsed}s)"
      [ "$spares" -gt 0 ] && choose_ranks
      return 0
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
    if [ "$elapsed" -ne "$said" ]; then
      say "$ready of $total worker(s) accept SSH; waiting for $((need - ready)) more, e.g. $first: $firstwhy (${elapsed}s of ${MPI_WAIT_TIMEOUT}s)"
      said="$elapsed"
    fi
    # workers started together, or a replacement the Job is making, come up within seconds, and the command starts
    # on the round after the last one does: the rounds of the first 30 s come soon, later ones every
    # MPI_WAIT_INTERVAL s
    pause="$tick"
    [ "$elapsed" -ge 30 ] && pause="$MPI_WAIT_INTERVAL"
    sleep "$pause" &
    wait $!
  done
}
# The run marker: a worker pod that is deleted mid-run and replaced (same name, new emptyDir) or lost must not
# let the run pass as a success, and Open MPI 5's prterun exits 0 after "PRTE has lost communication with a
# remote daemon". Elastic runs (MPI_WAIT_MIN set: Horovod elastic) are left out: there workers leave and join
# by design, the program carries on with the others, and its own exit status is the verdict.
marker="$MPI_SSH_DIR/mpi-run"
token=""
mark() {
  out=$(ssh -o ConnectTimeout=5 -o ConnectionAttempts=2 "$1" "echo '$token' > '$marker'" 2>&1) ||
    echo "  $1: $(last "$out")"
}
# lost <host>: prints why the worker no longer holds this run's marker; nothing when it does
lost() {
  out=$(ssh $patience "$1" "echo \"marker=\$(cat '$marker' 2>/dev/null)\"" 2>&1)
  rc=$?
  seen=$(printf '%s\n' "$out" | sed -n 's/^marker=//p' | tail -n 1)
  if [ "$rc" -ne 0 ]; then
    echo "  $1: cannot be reached over SSH (exit $rc: $(last "$out")): its pod is gone or not running again yet"
  elif [ "$seen" != "$token" ]; then
    echo "  $1: has no marker of this run: its pod was replaced (a new pod, whose ssh dir is empty)"
  fi
}
restarts="${MPI_RESTARTS_IN_POD:-0}"
reruns=0
suspects="" # the workers the last run lost
# again <why> <workers> <status>: runs the command again in this pod (returns) while MPI_RESTARTS_IN_POD allows,
# else exits with <status>, leaving the workers up for a launcher retry
again() {
  if [ "$reruns" -lt "$restarts" ]; then
    reruns=$((reruns + 1))
    echo "mpi-launcher: $1:
$2
mpi-launcher: waiting for the workers again and running the command again in this pod ($reruns of $restarts, mpi.restartsInPod)" >&2
    return 0
  fi
  echo "mpi-launcher: ERROR: $1:
$2
mpi-launcher: failing this launcher attempt (exit $3) after $reruns run(s) again in this pod; the workers stay up for a retry of the launcher (roles.launcher.job.backoffLimitPerIndex), which runs the command again on the current workers" >&2
  exit "$3"
}
while :; do
  trap 'say "terminated while waiting for the workers"; exit 143' TERM INT
  wait_workers
  if [ -z "${MPI_WAIT_MIN:-}" ]; then
    token=$(cat /proc/sys/kernel/random/uuid 2>/dev/null) || token=""
    [ -n "$token" ] || token="$(hostname 2>/dev/null)-$$-$(date +%s)"
    unmarked=$(on_hosts mark $ranks)
    if [ -n "$unmarked" ]; then
      again "could not leave the run marker $marker on every worker (a worker that vanished after accepting SSH?)" "$unmarked" 1
      continue
    fi
  fi
  if [ "$wait_only" = true ]; then
    # the marker also tells the workers' watchdog that this launcher ran (DL_WATCH_SEEN_FILE), however short its launch line
    say "the launch line runs next, as the image's entrypoint of the launcher's main container"
    exit 0
  fi
  say "running: $*"
  "$@" &
  child=$!
  trap 'kill -TERM "$child" 2>/dev/null' TERM INT
  rc=0
  wait "$child" || rc=$?
  while kill -0 "$child" 2>/dev/null; do rc=0; wait "$child" || rc=$?; done
  gone=""
  # after a success a worker counts as lost only when it stays silent for 3 tries of 5 s (a rank lost there runs
  # everything again); after a failure a silent worker is lost after 2 s, so that a run again can start at once
  patience="-o ConnectTimeout=5 -o ConnectionAttempts=3"
  [ "$rc" -ne 0 ] && patience="-o ConnectTimeout=2 -o ConnectionAttempts=1"
  [ -n "$token" ] && gone=$(on_hosts lost $ranks)
  suspects=$(printf '%s\n' "$gone" | sed -n 's/^  \([^: ]*\): .*/\1/p' | tr '\n' ' ')
  if [ -n "$gone" ]; then
    if [ "$rc" -eq 0 ]; then
      again "the command exited 0, but worker(s) were replaced or lost during the run, so ranks were lost (Open MPI 5's prterun, for one, exits 0 after losing a daemon)" "$gone" 1
    else
      again "the command failed with exit status $rc after worker(s) were replaced or lost" "$gone" "$rc"
    fi
    continue
  fi
  if [ "$rc" -ne 0 ]; then
    say "the command failed with exit status $rc, every worker in place; the workers stay up for a retry of the launcher and stop through their watchdog once it is gone for good"
    exit "$rc"
  fi
  break
done
if [ -n "$token" ]; then
  say "the command succeeded and all $need worker(s) ran it to the end; releasing them${others:+ and the spare(s)}"
else
  say "the command succeeded; releasing the $total worker(s)"
fi
release() {
  out=$(ssh -o ConnectTimeout=5 -o ConnectionAttempts=2 "$1" "touch '$MPI_SSH_DIR/mpi-done'" 2>&1) ||
    echo "mpi-launcher: WARNING: could not release $1 (its watchdog stops it): $(last "$out")" >&2
}
on_hosts release $hosts
say "done (a worker that missed the release stops through its watchdog once this launcher is gone)"
exit 0
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
worker (it creates <ssh dir>/mpi-done over SSH after a successful run; looked for every 0.25 s, or every second
where sleep takes whole seconds only, for the Job's verdict follows the last worker's exit), and 143 when
terminated from outside (a deleted worker is a failed one, which the Job replaces, not a completed index). On a
worker it runs under the dl-common watchdog, which stops it once the launcher pod is gone (launcher failed for
good, or release signal missed).
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
tick=0.25
sleep 0.01 2>/dev/null || tick=1 # a sleep that takes whole seconds only
trap 'stopping=1; kill -TERM "$pid" 2>/dev/null' TERM INT
say "sshd (pid $pid) listens on port $MPI_SSH_PORT for user $(id -un 2>/dev/null || id -u); waiting for the launcher"
while kill -0 "$pid" 2>/dev/null; do
  if [ -e "$dir/mpi-done" ]; then
    say "the launcher finished and released this pod; stopping sshd"
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    exit 0
  fi
  sleep "$tick" &
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
dl-common.peers.waitScript: POSIX sh that expands DL_PEER_GROUPS ("<job>:<count> ...") into
"<job>-<i>.$DL_PEER_DOMAIN" names and waits until every one resolves, logging progress after each round;
the rounds of the first 30 s come a quarter second apart (logged once a second; a shell whose sleep takes only
whole seconds sleeps 1 s), later ones every DL_PEER_INTERVAL seconds (peers started together resolve within
seconds of each other, and the program starts on the round after the last one does: the first rounds
come soon; late ones are polled at the interval);
after DL_PEER_TIMEOUT seconds it prints which peers are missing and exits 1.
It looks each name up as the program will, with getent: the C library's resolver, /etc/hosts then DNS with the
pod's search list (any glibc or musl image has it). The pod's own name counts only once DNS has it, as the
program needs: torch's c10d host, for one, finds itself through DNS, and a host that does not becomes a client of
itself (2 x 60 s). Else with nslookup (busybox, the init container's image), which applies no search list to
dotted names, so the cluster domain is appended, read from the pod's own resolv.conf (the "svc.<domain>" search
entry; none is hard-coded). An image with neither is told to wait in the init container (peerWait.initContainer).
Runs in the main container before the program (dl-common.peers.inlineWait: in a subshell, so its exits end only
the wait), or alone in dl-common.peers.waitContainer and dl-common.peers.testPod.
Source: scripts/peer-wait.sh.
*/}}
{{- define "dl-common.peers.waitScript" -}}
set -u
dom=""
for s in $(sed -n 's/^search[[:space:]]*//p' /etc/resolv.conf); do
  case "$s" in svc.*) dom="${s#svc.}"; break ;; esac
done
if command -v getent >/dev/null 2>&1; then
  resolves() { getent hosts "$1" >/dev/null 2>&1; }
elif command -v nslookup >/dev/null 2>&1; then
  resolves() { nslookup "$1${dom:+.$dom}" 2>/dev/null | grep -q '^Name:'; }
else
  echo "peer-wait: ERROR: this image has neither getent nor nslookup to look up its peers with. Set peerWait.initContainer=true: the pod then waits in an init container of peerWait.image (busybox) before the program starts." >&2
  exit 1
fi
pending=""
for g in $DL_PEER_GROUPS; do
  job="${g%:*}"; n="${g##*:}"; i=0
  while [ "$i" -lt "$n" ]; do pending="$pending $job-$i.$DL_PEER_DOMAIN"; i=$((i + 1)); done
done
total=$(echo $pending | wc -w)
start=$(date +%s)
said=-1
tick=0.25
sleep 0.01 2>/dev/null || tick=1 # a sleep that takes whole seconds only
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
  if [ "$elapsed" -ne "$said" ]; then
    echo "peer-wait: $missing of $total peer(s) do not resolve yet (first: ${first%% *}); ${elapsed}s of ${DL_PEER_TIMEOUT}s"
    said="$elapsed"
  fi
  if [ "$elapsed" -ge 30 ]; then sleep "$DL_PEER_INTERVAL"; else sleep "$tick"; fi
done
{{- end -}}

{{/*
dl-common.startWatch.script: Python 3 (standard library only) run by the release's start watch, its guard
(dl-common.startWatch). Every DL_START_INTERVAL seconds it reads the release's Jobs (DL_START_JOBS,
"<job>:<count> ...") and pods from the API server with the pod's service account token.
A start that fails: a pod counts as started once its main container (the first one) has run. When an index of
a Job that started at least DL_START_TIMEOUT seconds ago has no started pod, it names each such pod's role, name
and reason (the image pull error, the scheduler's message, the failed init container, ...), writes that into
the annotation DL_START_ANNOTATION of every unfinished Job of the release and sets their activeDeadlineSeconds
to 1: the Job controller then fails them all (DeadlineExceeded) and deletes every pod, the stuck ones too. Pods
without a node count only when DL_START_UNBOUND is 1 (no gang scheduler, no elastic minimum: a pod that waits for
its gang holds nothing). A pod that replaces an earlier one of its index is not timed (the Job's retries bound
it). Suspended Jobs (a queue) are not timed.
A lost node (DL_NODE_LOSS "recover" or "fail"; "" leaves it to Kubernetes): a pod of the release (or of the
watch's own Job, DL_WATCH_JOB) whose node stopped answering is evicted by Kubernetes once it has tolerated the
node's not-ready or unreachable taint for the chart's startWatch.nodeLossSeconds, but no kubelet confirms the
deletion, so it stays Terminating and its Job waits for it. The watch deletes such a pod at once (its Job's
finalizer taken off, grace period 0, as for a node with the out-of-service taint of a non-graceful shutdown):
right away when the node controller marked it not ready and the taint manager evicted it, else once it is still
there DL_LOST_MARGIN seconds after its deletion was due; the Job controller then replaces it on a node that
works, without counting a retry. It records what it did in
the annotation DL_NODE_ANNOTATION of the release's unfinished Jobs; with "fail" it also fails the release as for
a start that fails, naming the node and the pods there. With "recover" and DL_RESTART_ALL 1 (a job that cannot go
on without the lost ranks: all but elastic ones) it evicts the release's other training pods that ran before the
loss, so that all train again together at once. With "recover" and DL_RESTART_ON_FAILURE 1 (a framework whose
running job cannot take a replacement pod: MXNet's ps-lite, where the others would wait for the lost pod
forever), once the training Jobs' failed count rises (a pod deleted, or one that failed), it evicts the release's
training pods made before its previous round, so that all start again together with the replacement.
It exits 0 once every Job has finished (without node loss handling: once every index has started), or after it
failed the release; 1 when the API server keeps refusing it. While it guards a lost node it waits between two
rounds on a watch of each unfinished Job, so that it ends within a second of the last Job's end, not up to
DL_START_INTERVAL later (`dlcharts run` and the release's every-pod-ended wait for it), and starts its next round
as soon as a Job counts a failed pod. It reaches the API
server through the kubernetes Service (KUBERNETES_SERVICE_HOST/PORT), or at DL_START_API when set.
the grace period of a survivor's eviction: its ranks are stuck in a collective with a dead peer, and a process
blocked in a socket call may not act on SIGTERM; a full grace period would only delay the restart
Source: scripts/start_watch.py.
*/}}
{{- define "dl-common.startWatch.script" -}}
import json
import os
import queue
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from ssl import create_default_context

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
ENV = os.environ
NAMESPACE = ENV["DL_NAMESPACE"]
RELEASE = ENV["DL_RELEASE"]
TIMEOUT = int(ENV["DL_START_TIMEOUT"])
INTERVAL = int(ENV["DL_START_INTERVAL"])
UNBOUND = ENV.get("DL_START_UNBOUND") == "1"
ANNOTATION = ENV["DL_START_ANNOTATION"]
JOBS = {g.rpartition(":")[0]: int(g.rpartition(":")[2]) for g in ENV["DL_START_JOBS"].split()}
NODE_LOSS = ENV.get("DL_NODE_LOSS", "")
NODE_ANNOTATION = ENV.get("DL_NODE_ANNOTATION", "dl-charts.io/node-loss")
WATCH_JOB = ENV.get("DL_WATCH_JOB", "")
LOST_MARGIN = int(ENV.get("DL_LOST_MARGIN", "15"))
RESTART_ALL = ENV.get("DL_RESTART_ALL") == "1"
RESTART_ON_FAILURE = ENV.get("DL_RESTART_ON_FAILURE") == "1"
EVICT_GRACE = 5
STAMP_MAX = "9999-12-31T23:59:59Z"
HOST = ENV.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
PORT = ENV.get("KUBERNETES_SERVICE_PORT", "443")
API = ENV.get("DL_START_API") or "https://{}:{}".format(f"[{HOST}]" if ":" in HOST else HOST, PORT)
TLS = create_default_context(cafile=ACCOUNT + "/ca.crt")
FINISHED = ("Complete", "SuccessCriteriaMet", "Failed", "FailureTarget")
IN_PROGRESS = (None, "ContainerCreating", "PodInitializing")
JOB_FINALIZER = "batch.kubernetes.io/job-tracking"
REPLACED = ("batch.kubernetes.io/job-index-failure-count", "batch.kubernetes.io/job-index-ignored-failure-count")
FAILED_PREFIX = "failed the release: "


def say(text):
    print("start-watch: " + text, flush=True)


def request_of(method, path, body=None):
    with open(ACCOUNT + "/token") as f:  # read each time: the kubelet rotates it
        token = f.read().strip()
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(API + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + token)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/merge-patch+json" if method == "PATCH" else "application/json")
    return request


def call(method, path, body=None):
    with urllib.request.urlopen(request_of(method, path, body), context=TLS, timeout=30) as response:
        return json.load(response)


def until_changed(name, seconds):
    """Wait up to ``seconds`` for Job ``name`` to finish or to count one more failed pod, on a watch of it (the
    Role's watch on the release's Jobs by name); True when it did. The watch's first event is the Job as it is now."""
    query = urllib.parse.urlencode({"fieldSelector": "metadata.name=" + name, "watch": "1", "timeoutSeconds": seconds})
    path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs?{query}"
    failures = None
    with urllib.request.urlopen(request_of("GET", path), context=TLS, timeout=seconds + 30) as stream:
        for line in stream:
            event = json.loads(line)
            if event.get("type") not in ("ADDED", "MODIFIED"):
                continue
            job = event.get("object") or {}
            count = (job.get("status") or {}).get("failed") or 0
            if finished(job) or failures is not None and count != failures:
                return True
            failures = count
    return False


def pause(jobs):
    """Between two rounds: DL_START_INTERVAL seconds, cut short when the guard sees a Job of the release finish or
    count a failed pod, on a watch of each unfinished Job (the Role may watch them by name only, so one each, side by
    side): the next round then handles a lost or deleted pod at once, and the last Job's end ends the watch."""
    began = time.monotonic()
    unfinished = [name for name in JOBS if name in jobs and not finished(jobs[name])]
    if NODE_LOSS and unfinished:
        results = queue.Queue()

        def watch(name):
            try:
                results.put(until_changed(name, INTERVAL))
            except (OSError, ValueError) as exc:  # the next round's reads report an API server that keeps refusing
                say(f"the watch of Job {name} ended early: {exc}")
                results.put(False)

        for name in unfinished:
            threading.Thread(target=watch, args=(name,), daemon=True).start()
        for _ in unfinished:
            try:
                if results.get(timeout=max(0.0, INTERVAL + 30 - (time.monotonic() - began))):
                    return
            except queue.Empty:
                break
    time.sleep(max(0.0, INTERVAL - (time.monotonic() - began)))


def seconds(stamp):
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def finished(job):
    return any(
        c.get("type") in FINISHED and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def failed(pod):
    return pod["status"].get("phase") == "Failed"


def condition(pod, kind):
    return next((c for c in pod["status"].get("conditions") or [] if c.get("type") == kind), {})


def main_started(pod):
    main = (pod["spec"].get("containers") or [{}])[0].get("name")
    for status in pod["status"].get("containerStatuses") or []:
        if status["name"] != main:
            continue
        state, last = status.get("state") or {}, status.get("lastState") or {}
        if state.get("running"):
            return True
        for ended in (state.get("terminated"), last.get("terminated")):
            if ended and ended.get("reason") != "StartError":
                return True
    return False


def replacement(pod):
    """Whether the pod replaces an earlier pod of its index (the Job controller counts the earlier one's end)."""
    annotations = pod["metadata"].get("annotations") or {}
    return any(annotations.get(key, "0") != "0" for key in REPLACED)


def why(pod):
    """(rank, reason) of a pod whose main container has not started: rank 0 for what will not fix itself
    soon (an image that cannot be pulled, no node, a failed init container), 1 for what is still under way."""
    status = pod["status"]
    main = (pod["spec"].get("containers") or [{}])[0].get("name")
    for c in status.get("containerStatuses") or []:
        waiting = (c.get("state") or {}).get("waiting") or {}
        if c["name"] == main and waiting.get("reason") not in IN_PROGRESS:
            return 0, f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    for c in status.get("initContainerStatuses") or []:
        state = c.get("state") or {}
        ended, waiting = state.get("terminated") or {}, state.get("waiting") or {}
        if ended and ended.get("exitCode", 0) != 0:
            return 0, f"init container {c['name']} failed ({ended.get('reason')}, exit code {ended['exitCode']})"
        if waiting.get("reason") not in IN_PROGRESS:
            return 0, f"init container {c['name']}: {waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
        if state.get("running"):
            return 1, f"init container {c['name']} still running"
    scheduled = condition(pod, "PodScheduled")
    if scheduled.get("status") == "False":
        return 0, f"{scheduled.get('reason') or 'Unschedulable'}: {scheduled.get('message', '')}"
    if failed(pod):
        return 0, f"pod failed: {status.get('reason', '')} {status.get('message', '')}".strip()
    return 1, f"{status.get('phase')}, main container not started yet"


def stuck(jobs, pods, started, now):
    """[(rank, text)] for every index past its deadline without a started pod."""
    found = []
    for name, count in JOBS.items():
        job = jobs[name]
        begun = (job.get("status") or {}).get("startTime")
        if finished(job) or (job.get("spec") or {}).get("suspend") or not begun or now < seconds(begun) + TIMEOUT:
            continue
        for index in range(count):
            if (name, index) in started:
                continue
            mine = pods.get((name, index), [])
            own = [p for p in mine if UNBOUND or p["spec"].get("nodeName") or failed(p)]
            if not own:
                if not mine:
                    found.append((0, f"Job {name} index {index}: no pod (kubectl describe job {name} says why)"))
                continue
            own.sort(key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)  # newest first
            ranked = [(*why(p), p) for p in own]
            rank, reason, pod = next((r for r in ranked if r[0] == 0), ranked[0])
            role = (pod["metadata"].get("labels") or {}).get("app.kubernetes.io/component", name)
            found.append((rank, f"role {role}, pod {pod['metadata']['name']}: {reason}"))
    return found


def verdict_of(found):
    culprits = [text for rank, text in found if rank == 0] or [text for _, text in found]
    return (
        f"{len(culprits)} pod(s) of release {RELEASE} did not start their main container within {TIMEOUT}s "
        f"(peerWait.timeoutSeconds) of their Job's start: " + "; ".join(culprits)
    )[:4000]


def fail(jobs, verdict, annotation=ANNOTATION):
    """Patch every unfinished Job of the release that does not carry the verdict yet (a watch that stopped halfway
    through, and its Job started again, finishes the work)."""
    patch = {"metadata": {"annotations": {annotation: verdict}}, "spec": {"activeDeadlineSeconds": 1}}
    for name, job in jobs.items():
        done = (job["metadata"].get("annotations") or {}).get(annotation) == verdict
        if not finished(job) and not (done and (job.get("spec") or {}).get("activeDeadlineSeconds") == 1):
            call("PATCH", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}", patch)
            say(f"Job {name}: failed")


def lost(pod, now):
    """Whether the pod is on a node that no longer answers: its deletion is under way but no kubelet confirms it.
    At once when the node controller marked it not ready (its Ready condition False while its containers are ready,
    which no kubelet reports) and the taint manager evicted it for the node's taint; otherwise once its deletion
    was due DL_LOST_MARGIN seconds ago (a kubelet ends a pod within its grace period)."""
    due = pod["metadata"].get("deletionTimestamp")
    if not due or pod["status"].get("phase") not in ("Pending", "Running"):  # an ended pod waits for its Job only
        return False
    statuses = pod["status"].get("containerStatuses") or []
    marked = condition(pod, "Ready").get("status") == "False" and statuses and all(s.get("ready") for s in statuses)
    evicted = condition(pod, "DisruptionTarget").get("reason") == "DeletionByTaintManager"
    return bool(marked and evicted) or now >= seconds(due) + LOST_MARGIN


def end_lost_pod(pod):
    """Delete the pod at once (grace period 0, as for a node with the out-of-service taint of a non-graceful
    shutdown). Its Job holds a finalizer on it until it has counted the pod's end, which it does only once the pod has
    failed, and no kubelet will say so: the finalizer is taken off first, or the pod would stay Terminating for good.
    The Job then replaces the pod without counting a failure (the end of a pod of a lost node is no fault of it)."""
    name = pod["metadata"]["name"]
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
    finalizers = pod["metadata"].get("finalizers") or []
    if JOB_FINALIZER in finalizers:
        kept = [f for f in finalizers if f != JOB_FINALIZER]
        call(
            "PATCH",
            path,
            {"metadata": {"finalizers": kept or None, "resourceVersion": pod["metadata"].get("resourceVersion")}},
        )
    call("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})


def end_lost(jobs, items, now):
    """Delete the release's pods on lost nodes (and the watch's own earlier pods there); with "fail", fail the
    release naming them. True once the release has been failed."""
    gone = [p for p in items if lost(p, now)]
    if not gone:
        return False
    nodes = sorted({p["spec"].get("nodeName") or "?" for p in gone})
    names = []
    for pod in gone:
        name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
        labels = pod["metadata"].get("labels") or {}
        role = labels.get("app.kubernetes.io/component", "?")
        index = (pod["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index", "?")
        try:
            end_lost_pod(pod)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # already gone
                raise
        say(f"node {node} lost: deleted pod {name} (role {role}, index {index})")
        if role != "start-watch":
            names.append(f"{name} (role {role}, index {index})")
    if not names:
        return False
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    what = f"node {', '.join(nodes)} lost: pods {', '.join(names)} deleted at {stamp}"
    if NODE_LOSS == "fail":
        verdict = (FAILED_PREFIX + what + " (startWatch.nodeLoss: fail)")[:4000]
        say("ERROR: " + verdict)
        fail(jobs, verdict, NODE_ANNOTATION)
        return True
    note = what + "; their Jobs replace them on the nodes that work"
    if RESTART_ALL:
        evicted = restart_the_rest(items, gone)
        note += f"; the release's other {len(evicted)} pod(s) evicted to train again with them" if evicted else ""
    note = note[:4000]
    for name, job in jobs.items():
        if not finished(job):
            call("PATCH", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}",
                 {"metadata": {"annotations": {NODE_ANNOTATION: note}}})  # fmt: skip
    return False


def restart_the_rest(items, gone):
    """Evict the release's other training pods that ran before the node was lost: a synchronous job cannot go on
    without the lost ranks, and its survivors would wait on them (a dead peer's connection can hold a rank up to
    15 minutes of TCP retries) instead of starting again with their replacements at once. The names of the pods
    evicted."""
    since = min(condition(p, "DisruptionTarget").get("lastTransitionTime") or STAMP_MAX for p in gone)
    return evict_older(items, since, gone, "to train again with the replacements of the lost ones")


def evict_older(items, since, spared, why):
    """Evict the release's live training pods made before ``since`` (a timestamp) but ``spared``. An eviction is a
    disruption, so their Jobs replace them without counting a retry. The names of the pods evicted."""
    evicted = []
    for pod in items:
        meta = pod["metadata"]
        job = (meta.get("labels") or {}).get("batch.kubernetes.io/job-name")
        live = pod["status"].get("phase") in ("Pending", "Running") and not meta.get("deletionTimestamp")
        if job not in JOBS or not live or pod in spared or meta["creationTimestamp"] >= since:
            continue
        options = {"gracePeriodSeconds": EVICT_GRACE}
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": meta["name"]},
            "deleteOptions": options,
        }
        try:
            call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{meta['name']}/eviction", body)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # already gone
                raise
        say(f"evicted pod {meta['name']} {why}")
        evicted.append(meta["name"])
    return evicted


def restart_after_failure(jobs, items, memory):
    """DL_RESTART_ON_FAILURE: when the training Jobs' failed count rose since the previous round (``memory`` keeps
    it; the first round only counts), evict every live training pod of the release: those that trained with the
    pod that failed cannot go on without it, and its replacement, if the Job made one before this round, may have
    joined them already (MXNet's ps-lite registers a worker with the scheduler it finds, and a new scheduler would
    wait for it for good). Evictions are disruptions, which the Jobs' podFailurePolicy ignores: they count neither
    here nor as retries."""
    count = sum(int((job.get("status") or {}).get("failed") or 0) for job in jobs.values())
    before = memory.get("failed")
    memory["failed"] = count
    if before is None or count <= before:
        return
    say(f"a training pod failed or was deleted ({count - before} more failure(s) in the release's Jobs)")
    evicted = evict_older(items, STAMP_MAX, (), "to start again with the failed pod's replacement")
    if not evicted:
        say("no live pod of the release is left to evict")


def read(selector):
    quoted = urllib.parse.quote(selector)
    items = call("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={quoted}")["items"]
    for pod in items:
        pod["spec"], pod["status"] = pod.get("spec") or {}, pod.get("status") or {}
    return items


def one_round(started, jobs, memory):
    """One look at the release, its Jobs read into ``jobs``; the exit status when the watch is done, else None.
    ``memory``: what a round leaves for the next (restart_after_failure)."""
    jobs.update((name, call("GET", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}")) for name in JOBS)
    for annotation, prefix in ((ANNOTATION, ""), (NODE_ANNOTATION, FAILED_PREFIX)):
        said = [(j["metadata"].get("annotations") or {}).get(annotation) or "" for j in jobs.values()]
        verdict = next((v for v in said if v and v.startswith(prefix)), None)
        if verdict:  # this watch, or an earlier pod of it, has failed the release: every Job must carry that
            fail(jobs, verdict, annotation)
            return 0
    items = read("app.kubernetes.io/instance=" + RELEASE)
    if NODE_LOSS:
        own = read("batch.kubernetes.io/job-name=" + WATCH_JOB) if WATCH_JOB else []
        if end_lost(jobs, items + own, time.time()):
            return 0
        if RESTART_ON_FAILURE and NODE_LOSS == "recover":
            restart_after_failure(jobs, items, memory)
    pods = {}
    for pod in items:
        job = (pod["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name")
        index = (pod["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index")
        if job not in JOBS or index is None:
            continue
        if main_started(pod) or replacement(pod):
            started.add((job, int(index)))
        pods.setdefault((job, int(index)), []).append(pod)
    if all(finished(job) for job in jobs.values()):
        say("every Job of the release has finished; done")
        return 0
    left = [(n, i) for n, c in JOBS.items() if not finished(jobs[n]) for i in range(c) if (n, i) not in started]
    if not left and not NODE_LOSS:
        say("every pod of the release has started its main container (or its Job has finished); done")
        return 0
    found = stuck(jobs, pods, started, time.time())
    if found:
        verdict = verdict_of(found)
        say("ERROR: " + verdict)
        say("failing every Job of the release (activeDeadlineSeconds: 1): the Job controller ends all its pods")
        fail(jobs, verdict)
        return 0
    return None


def main():
    # PID 1 of its container: without a handler SIGTERM does nothing, and an uninstall waits out the grace period;
    # 143 (not 0) so that a pod ended by a drain counts as failed and its Job starts another watch
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    say(f"every pod of [{ENV['DL_START_JOBS']}] must start its main container within {TIMEOUT}s of its Job's start")
    if NODE_LOSS:
        then = "replaced on the nodes that work" if NODE_LOSS == "recover" else "they fail the release"
        say(f"pods on a lost node are deleted at once: {then}")
    started, errors, jobs, memory = set(), 0, {}, {}
    while True:
        try:
            code = one_round(started, jobs, memory)
            if code is not None:
                return code
            errors = 0
        except (OSError, ValueError) as exc:  # urllib's errors are OSErrors; a 403 names the missing permission
            errors += 1
            detail = exc.read().decode(errors="replace") if isinstance(exc, urllib.error.HTTPError) else ""
            say(f"the API server did not answer ({errors} in a row): {exc} {detail}")
            if errors * INTERVAL >= max(120, 3 * INTERVAL):
                say("ERROR: giving up; check the Role and RoleBinding of this pod's service account")
                return 1
        pause(jobs)


sys.exit(main())
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
before it started (e.g. an MPI launcher that failed after a worker was killed), and it would never see them. So does
a pod whose DL_WATCH_SEEN_FILE exists (an MPI worker's run marker, which every launcher attempt leaves there over
SSH): what it serves started, and may have ended between two checks. If
the program exits on its own, its exit status is passed through. Without a program (a role that runs its image's
own entrypoint, `imageEntrypoint`, in a native sidecar beside this one: dl-common.pod.template) it only watches,
and exits 0 at the same point; the kubelet then stops the sidecar and the pod completes. Uses getent (glibc
images) or python.
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
child=""
if [ "$#" -gt 0 ]; then
  "$@" &
  child=$!
  trap 'kill -TERM "$child" 2>/dev/null' TERM INT
  echo "watchdog: started $1 (pid $child); it will be stopped once none of [$DL_WATCH_GROUPS] is ready any more"
else
  trap 'exit 143' TERM INT
  echo "watchdog: the program is the image's entrypoint in the sidecar beside this container; this pod completes once none of [$DL_WATCH_GROUPS] is ready any more"
fi
running() { [ -z "$child" ] || kill -0 "$child" 2>/dev/null; }
seen=0; misses=0
if [ "${DL_WATCH_RETRY:-0}" != 0 ]; then
  # a replacement of a failed pod: what it serves may have ended meanwhile, so it never shows up; count from now
  echo "watchdog: this pod replaces a failed one (failure ${DL_WATCH_RETRY}); it stops unless one of [$DL_WATCH_GROUPS] is ready within $DL_WATCH_MISSES checks"
  seen=1
fi
while running; do
  # one second at a time, so that the program's own end (an MPI worker released by its launcher) ends the pod at once
  t=0
  while [ "$t" -lt "$DL_WATCH_INTERVAL" ] && running; do sleep 1 & wait $!; t=$((t + 1)); done
  running || break
  up=0
  ready=" $(echo $(addresses "$DL_WATCH_READY")) "
  if [ "$ready" != "  " ]; then
    for h in $hosts; do
      for ip in $(addresses "$h"); do
        case "$ready" in *" $ip "*) up=1; break 2 ;; esac
      done
    done
  fi
  if [ "$up" = 0 ] && [ "$seen" = 0 ] && [ -n "${DL_WATCH_SEEN_FILE:-}" ] && [ -e "$DL_WATCH_SEEN_FILE" ]; then
    # what it serves left its mark here, and may have ended between two checks (a launch line of seconds)
    echo "watchdog: $DL_WATCH_SEEN_FILE shows that [$DL_WATCH_GROUPS] ran; none is ready now"
    seen=1
  fi
  if [ "$up" = 1 ]; then
    [ "$seen" = 0 ] && echo "watchdog: peers [$DL_WATCH_GROUPS] are up"
    seen=1; misses=0
  elif [ "$seen" = 1 ]; then
    misses=$((misses + 1))
    echo "watchdog: none of [$DL_WATCH_GROUPS] is ready ($misses/$DL_WATCH_MISSES)"
    if [ "$misses" -ge "$DL_WATCH_MISSES" ]; then
      if [ -z "$child" ]; then echo "watchdog: the pods this role serves have finished; ending this pod"; exit 0; fi
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
