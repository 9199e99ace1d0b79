# shellcheck shell=sh
#: dl-common.peers.waitScript: POSIX sh (busybox) that expands DL_PEER_GROUPS ("<job>:<count> ...") into
#: "<job>-<i>.$DL_PEER_DOMAIN" names and waits until every one resolves, logging progress after each round;
#: the rounds of the first 30 s come a quarter second apart (logged once a second; a shell whose sleep takes only
#: whole seconds sleeps 1 s), later ones every DL_PEER_INTERVAL seconds (peers started together resolve within
#: seconds of each other, and the main container starts on the round after the last one does: the first rounds
#: come soon; late ones are polled at the interval);
#: after DL_PEER_TIMEOUT seconds it prints which peers are missing and exits 1.
#: busybox nslookup applies no search list to dotted names, so the script appends the cluster domain it
#: reads from the pod's own resolv.conf (the "svc.<domain>" search entry) instead of hard-coding one.
#: Used by dl-common.peers.waitContainer and dl-common.peers.testPod.
set -u
dom=""
# shellcheck disable=SC2013 # the search line's domains are words, and the loop wants its words
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
# shellcheck disable=SC2086 # $pending: DNS names split into words on purpose (they hold no glob characters)
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
  # shellcheck disable=SC2086 # $pending: DNS names split into words on purpose (they hold no glob characters)
  missing=$(echo $pending | wc -w)
  if [ "$elapsed" -ge "$DL_PEER_TIMEOUT" ]; then
    echo "peer-wait: ERROR: after ${elapsed}s, $missing of $total peer(s) still do not resolve:" >&2
    # shellcheck disable=SC2086 # $pending: DNS names split into words on purpose (they hold no glob characters)
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
