#!/usr/bin/env bash
# Run test sessions side by side and report each in full once it ends: `make test` runs the real node's
# training tests (with the API parity and queueing tests) beside the rest of tests/cluster, each session on an
# embedded cluster of its own, because the training tests spend most of their time waiting for pods.
#
#   ci/together.sh NAME 'COMMAND' [NAME 'COMMAND' ...]
#
# Each COMMAND runs in bash with its output in reports/NAME.log; the logs are printed in the order the
# sessions end. Exit status 1 when any session failed, naming it.
set -uo pipefail
(($# > 0 && $# % 2 == 0)) || { echo "usage: ci/together.sh NAME 'COMMAND' [NAME 'COMMAND' ...]" >&2; exit 2; }
mkdir -p reports
declare -A names
while (($#)); do
  log="reports/$1.log"
  bash -c "$2" >"$log" 2>&1 &
  names[$!]=$1
  echo "together: started $1 (pid $!): $2 > $log"
  shift 2
done
failed=()
start=$SECONDS
while ((${#names[@]})); do
  status=0
  wait -n -p pid "${!names[@]}" || status=$?
  name=${names[$pid]}
  unset "names[$pid]"
  echo "===== $name: exit $status after $((SECONDS - start)) s ====="
  cat "reports/$name.log"
  ((status == 0)) || failed+=("$name")
done
if ((${#failed[@]})); then
  echo "together: failed: ${failed[*]}" >&2
  exit 1
fi
