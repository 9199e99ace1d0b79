#!/usr/bin/env bash
# Time a cold `.ci/run`: a fresh clone of this checkout's HEAD, run as CI runs it, with every cache pointed at
# an empty folder (the dl-charts cache, Go's module and build caches, pip's and npm's). Debian packages that
# .ci/run installs are not removed. Needs root (the real node) and about 20 GB in WORKDIR.
#
#   bench/cold_ci.sh WORKDIR     # WORKDIR must not exist; prints the wall time and leaves the log there
# Recorded results: bench/results.md, section 5.
set -euo pipefail
work=${1:?usage: bench/cold_ci.sh WORKDIR (a folder that does not exist yet)}
[[ ! -e $work ]] || { echo "cold_ci: $work exists; name a new folder" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$work/cache"
git clone -q "$repo" "$work/clone"
commit=$(git -C "$work/clone" rev-parse --short HEAD)  # the repository's HEAD may move while this runs
export DLCHARTS_CACHE=$work/cache/dlcharts GOCACHE=$work/cache/go-build GOMODCACHE=$work/cache/gomod \
  PIP_CACHE_DIR=$work/cache/pip npm_config_cache=$work/cache/npm CI=true
start=$(date +%s)
rc=0
(cd "$work/clone" && bash .ci/run) >"$work/ci.log" 2>&1 || rc=$?
echo "cold .ci/run of $commit: exit $rc in $(($(date +%s) - start)) s; log $work/ci.log"
exit "$rc"
