# shellcheck shell=sh
#: dl-common.peers.waitScript: POSIX sh that expands DL_PEER_GROUPS ("<job>:<count> ...") into
#: "<job>-<i>.$DL_PEER_DOMAIN" names and waits until every one resolves, logging progress after each round;
#: the rounds of the first 30 s come a quarter second apart (logged once a second; a shell whose sleep takes only
#: whole seconds sleeps 1 s), later ones every DL_PEER_INTERVAL seconds (peers started together resolve within
#: seconds of each other, and the program starts on the round after the last one does: the first rounds
#: come soon; late ones are polled at the interval);
#: after DL_PEER_TIMEOUT seconds it prints which peers are missing and exits 1.
#: It looks each name up as the program will, with getent: the C library's resolver, /etc/hosts then DNS with the
#: pod's search list (any glibc or musl image has it). The pod's own name counts only once DNS has it, as the
#: program needs: torch's c10d host, for one, finds itself through DNS, and a host that does not becomes a client of
#: itself (2 x 60 s). Else with nslookup (busybox, the init container's image), which applies no search list to
#: dotted names, so the cluster domain is appended, read from the pod's own resolv.conf (the "svc.<domain>" search
#: entry; none is hard-coded). An image with neither is told to wait in the init container (peerWait.initContainer).
#: Runs in the main container before the program (dl-common.peers.inlineWait: in a subshell, so its exits end only
#: the wait), or alone in dl-common.peers.waitContainer and dl-common.peers.testPod.
set -u
dom=""
# shellcheck disable=SC2013 # the search line's domains are words, and the loop wants its words
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
