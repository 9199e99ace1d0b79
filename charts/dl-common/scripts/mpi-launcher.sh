#!/bin/sh
#: dl-common.mpi.launcherScript: POSIX sh run as `sh /etc/mpi/mpi-launcher.sh <command...>` on the launcher:
#: 1. waits (bounded by MPI_WAIT_TIMEOUT; rounds 0.25 s apart for 30 s, logged once a second, then MPI_WAIT_INTERVAL
#:    s; 1 s where sleep takes whole seconds only) until MPI_WAIT_MIN
#:    (default: all) workers of MPI_PEER_GROUPS resolve in DNS AND accept an SSH login with the release key; on
#:    timeout it lists the missing workers with the reason (no DNS / ssh error) and exits 1;
#:    With MPI_SPARES (hot spares, mpi.spareWorkers) it waits for all but that many, and the first of them in
#:    host order run the ranks: it writes MPI_RUN_HOSTFILE, MPI_HOSTFILE without the other workers' lines (the
#:    spares, and workers not up), which the command reads; steps 2 and 4 then look at those workers only;
#: 2. leaves a marker unique to this run in every worker's SSH dir (<ssh dir>/mpi-run, an emptyDir, so a replaced
#:    worker pod has none), unless the run is elastic (MPI_WAIT_MIN set);
#: 3. runs the command (signals are passed on);
#: 4. checks that every worker still holds the marker: one that does not (replaced) or cannot be reached (lost)
#:    means ranks were lost, whatever the command's exit status (Open MPI 5's prterun exits 0 after losing a
#:    daemon). Then, up to MPI_RESTARTS_IN_POD times per launcher pod, it goes back to step 1 in this pod: the
#:    replacement workers join, and the command runs again (resuming from its checkpoint, if it keeps one), with
#:    no new launcher pod and no Job back-off; past that it exits 1 (or the command's status), naming the workers,
#:    and leaves them up for a launcher retry (the Job's backoffLimitPerIndex). A command that fails with every
#:    worker in place failed by itself: the launcher exits with its status at once (their watchdog stops the
#:    workers once the launcher is gone for good). On success it releases every worker over SSH (they exit 0 and
#:    free their GPUs at once);
#: 5. exits with the command's status.
#: With MPI_WAIT_ONLY=true (the launcher runs its image's own entrypoint, `imageEntrypoint`) it is the mpi-wait init
#: container instead: steps 1 and 2, then exit 0, and the main container runs the launch line; the workers then stop
#: through their watchdog, which the marker tells that the launcher ran.
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
# shellcheck disable=SC2086 # word splitting counts the hosts
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
# shellcheck disable=SC2317 # called through on_hosts
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
    # shellcheck disable=SC2086 # one host per word
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
        # shellcheck disable=SC2086 # word splitting counts the hosts
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
# shellcheck disable=SC2317 # called through on_hosts
mark() {
  out=$(ssh -o ConnectTimeout=5 -o ConnectionAttempts=2 "$1" "echo '$token' > '$marker'" 2>&1) ||
    echo "  $1: $(last "$out")"
}
# lost <host>: prints why the worker no longer holds this run's marker; nothing when it does
# shellcheck disable=SC2317 # called through on_hosts
lost() {
  # shellcheck disable=SC2086,SC2029 # options, one per word; $marker is the launcher's value, the same path
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
    # shellcheck disable=SC2086 # one host per word
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
  # shellcheck disable=SC2086 # one host per word
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
# shellcheck disable=SC2317 # called through on_hosts
release() {
  out=$(ssh -o ConnectTimeout=5 -o ConnectionAttempts=2 "$1" "touch '$MPI_SSH_DIR/mpi-done'" 2>&1) ||
    echo "mpi-launcher: WARNING: could not release $1 (its watchdog stops it): $(last "$out")" >&2
}
# shellcheck disable=SC2086 # one host per word
on_hosts release $hosts
say "done (a worker that missed the release stops through its watchdog once this launcher is gone)"
exit 0
