#!/usr/bin/env bash
# Build kubeconform from its Go module, and bench/kcengine (kubeconform's validation path timed without YAML
# decoding), through the Go module proxy only (no release downloads), into a cache keyed by version, and
# print one "<name> <path>" line for each. A binary already in the cache is reused untouched.
#
#   bench/build-kubeconform.sh
#     kubeconform ${DLCHARTS_CACHE:-$HOME/.cache/dlcharts}/bin/kubeconform-<version>/kubeconform
#     kcengine    ${DLCHARTS_CACHE:-$HOME/.cache/dlcharts}/bin/kcengine-<hash of its sources>/kcengine
#   KUBECONFORM_VERSION=v0.7.0 bench/build-kubeconform.sh   (kcengine's go.mod pins v0.8.0 separately)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=${KUBECONFORM_VERSION:-v0.8.0}
cache=${DLCHARTS_CACHE:-$HOME/.cache/dlcharts}
kc=$cache/bin/kubeconform-$version/kubeconform
engine_hash=$(cat "$here/kcengine/go.mod" "$here/kcengine/go.sum" "$here/kcengine/main.go" | sha256sum | cut -c1-12)
engine=$cache/bin/kcengine-$engine_hash/kcengine

go_env() {
  gobin=$(command -v go || true)
  [[ -n $gobin ]] || { [[ -x /usr/local/go/bin/go ]] && gobin=/usr/local/go/bin/go; }
  [[ -n $gobin ]] || { echo "build-kubeconform: no Go toolchain on PATH (or /usr/local/go/bin/go)" >&2; exit 1; }
  # The module proxy only: drop any "direct" (VCS) fallback.
  proxy=$("$gobin" env GOPROXY)
  proxy=$(tr ',|' '\n' <<<"$proxy" | grep -vxE 'direct|off|' | paste -sd, -)
  [[ -n $proxy ]] || { echo "build-kubeconform: GOPROXY names no module proxy" >&2; exit 1; }
  export GOPROXY=$proxy GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-buildvcs=false"
}

if [[ ! -x $kc ]]; then
  go_env
  mkdir -p "$(dirname "$kc")"
  tmp=$(mktemp -d "$(dirname "$kc")/.build.XXXXXX")
  echo "build-kubeconform: go install github.com/yannh/kubeconform/cmd/kubeconform@$version" >&2
  GOBIN=$tmp nice -n 10 "$gobin" install -trimpath -ldflags="-s -w -X main.version=$version" \
    "github.com/yannh/kubeconform/cmd/kubeconform@$version"
  mv -f "$tmp/kubeconform" "$kc"
  rmdir "$tmp"
fi

if [[ ! -x $engine ]]; then
  go_env
  mkdir -p "$(dirname "$engine")"
  echo "build-kubeconform: go build bench/kcengine" >&2
  (cd "$here/kcengine" && nice -n 10 "$gobin" build -trimpath -ldflags="-s -w" -o "$engine.partial" .)
  mv -f "$engine.partial" "$engine"
fi

echo "kubeconform $kc"
echo "kcengine $engine"
