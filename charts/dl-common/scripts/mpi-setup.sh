#!/bin/sh
#: dl-common.mpi.setupScript: POSIX sh of the mpi-setup init container: copies the SSH key and configs from
#: the Secret (/etc/mpi-secret) and ConfigMap (/etc/mpi) into MPI_SSH_DIR with mode 0600, owned by the
#: pod's uid, and for a non-root uid writes /mpi-etc/passwd and /mpi-etc/group (see "Identity" above).
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
  # shellcheck disable=SC2015 # a failed cp falls back to writing the file itself, which set -e then guards
  awk -F: -v g="$gid" '$3 == g { found = 1 } END { exit !found }' /etc/group && cp /etc/group /mpi-etc/group ||
    { cat /etc/group; echo "$MPI_USER:x:$gid:"; } > /mpi-etc/group
  chmod 0644 /mpi-etc/passwd /mpi-etc/group
  say "uid $uid is $(awk -F: -v u="$uid" '$3 == u { print $1 ":" $6 ":" $7; exit }' /mpi-etc/passwd) (name:home:shell)"
fi
say "SSH key and configuration are ready in $dir"
