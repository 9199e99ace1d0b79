#!/bin/sh
#: dl-common.mpi.sshdScript: POSIX sh that runs sshd in the foreground on a worker (or on a launcher that
#: runs ranks, with "&"): checks that the image has sshd, writes the container environment to
#: <ssh dir>/environment for SSH sessions, starts `sshd -De`, and exits 0 when the launcher releases the
#: worker (it creates <ssh dir>/mpi-done over SSH after a successful run; looked for every 0.25 s, or every second
#: where sleep takes whole seconds only, for the Job's verdict follows the last worker's exit), and 143 when
#: terminated from outside (a deleted worker is a failed one, which the Job replaces, not a completed index). On a
#: worker it runs under the dl-common watchdog, which stops it once the launcher pod is gone (launcher failed for
#: good, or release signal missed).
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
