#!/bin/bash
#: dl-common.mpi.discoverHostsScript: bash for Horovod elastic (--host-discovery-script): prints
#: "<host>:<slots>" for every pod of "groups" (list of {job, count, slots}, e.g. dl-common.mpi.hostGroups
#: with the elastic maximum) that resolves and whose sshd accepts TCP connections, sorted by index. A host
#: that answered once is remembered with its IP in <ssh dir>/discovered and only re-probed when its IP
#: changes (the pod was replaced), so sshd is not probed every second.
#:   {{ include "dl-common.mpi.discoverHostsScript" (dict "groups" $groups "context" $) }}
#@ port = {{ int .context.Values.mpi.sshPort }}
#@ domain = {{ include "dl-common.peers.domain" . | quote }}
#@ groups = {{ range .groups }}"{{ .job }}:{{ int .count }}:{{ int .slots }}" {{ end }}
# discover_hosts.sh: Horovod elastic host discovery (dl-charts): one "<host>:<slots>" per available pod
set -u
port=@port@
domain=@domain@
groups=(@groups@)
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
