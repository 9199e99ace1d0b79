{{/*
The MPI launcher's wrapper script. Unlike the other scripts (scripts/*.sh, rendered into _shell.tpl) it
is kept here because shellcheck cannot parse it: in "${msg:-no message, read the worker's sshd log}"
the apostrophe is an unpaired single quote inside "${...}" within double quotes, which POSIX does not
allow (dash, and bash run as sh, take it literally; bash not run as sh refuses the script). Rewording it
changes the rendered ConfigMap, so it waits for a chart version whose rendered objects may change; then
move the script to scripts/mpi-launcher.sh.
*/}}

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
