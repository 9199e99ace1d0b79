# shellcheck shell=sh
#: dl-common.pod.watchdogScript: POSIX sh run as `sh -c <script> dl-watchdog <program> <args...>` around the
#: program of a long-running role (TF parameter servers, MXNet scheduler/servers, ...). It starts the
#: program, and every DL_WATCH_INTERVAL seconds checks the pods listed in DL_WATCH_GROUPS ("<job>:<count> ...",
#: under DL_PEER_DOMAIN): one is up while an address of its name is among the addresses of DL_WATCH_READY, the
#: release's Service of ready pods (dl-common.service.headless: a completed pod can keep its name in the main
#: Service, never in that one). Once it has seen one of them up, and then none of them is up for
#: DL_WATCH_MISSES checks in a row, it stops the program (TERM, then KILL after 30 s) and exits 0, so the pod
#: completes and frees its GPU and node. A pod that replaces a failed one (DL_WATCH_RETRY, the Job's per-index
#: failure count, is not 0) counts the misses from its start: the pods it serves may have finished for good
#: before it started (e.g. an MPI launcher that failed after a worker was killed), and it would never see them. So does
#: a pod whose DL_WATCH_SEEN_FILE exists (an MPI worker's run marker, which every launcher attempt leaves there over
#: SSH): what it serves started, and may have ended between two checks. If
#: the program exits on its own, its exit status is passed through. Without a program (a role that runs its image's
#: own entrypoint, `imageEntrypoint`, in a native sidecar beside this one: dl-common.pod.template) it only watches,
#: and exits 0 at the same point; the kubelet then stops the sidecar and the pod completes. Uses getent (glibc
#: images) or python.
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
  # shellcheck disable=SC2046,SC2005 # echo joins the addresses, one a line, into words (IPs hold no glob characters)
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
