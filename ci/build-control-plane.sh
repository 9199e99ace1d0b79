#!/usr/bin/env bash
# Build the embedded control plane's binaries from Go modules, once, into a cache keyed by version.
#
#   ci/build-control-plane.sh            build what is missing, print one "<name> <path>" line per binary
#   ci/build-control-plane.sh --check    build nothing; exit 1 naming every missing binary
#   ci/build-control-plane.sh NAME...    only these (kube-apiserver kube-controller-manager kube-scheduler
#                                        kubelet kwok kwokctl etcd coredns registry crane kube-router, or the render
#                                        servers helm4-render helm3-render, the validator k8s-validate,
#                                        or helm-unittest for the benchmark: no default build includes these)
#   ci/build-control-plane.sh addons     the embedded cluster's add-ons (dlcharts.cluster.addons), each with the
#                                        manifests it is installed from beside it: kueue (Kueue's manager and
#                                        its Helm chart), scheduler-plugins (kube-scheduler with coscheduling,
#                                        the PodGroup CRD) and scheduler-plugins-controller (PodGroup status)
#   ci/build-control-plane.sh oldest     the oldest Kubernetes minor the charts support, at
#                                        $OLDEST_KUBERNETES_VERSION: kube-apiserver@oldest,
#                                        kube-controller-manager@oldest, kube-scheduler@oldest and the validator
#                                        k8s-validate@oldest (each NAME@oldest can be named alone too)
#   DLCHARTS_PLATFORM=darwin/arm64 ci/build-control-plane.sh [NAME...]   cross-compile the harness's helpers
#                                        (helm4-render helm3-render k8s-validate k8s-validate@oldest) for a wheel
#
# Layout: ${DLCHARTS_CACHE:-$HOME/.cache/dlcharts}/bin/<name>-<version>/<name>, with <name>.sha256 beside it (the
# render servers: the same under the tools folder, see target()). NAME@oldest lands at the oldest version's path.
# A binary that is already there is reused when its sha256 is the recorded one (a damaged one is rebuilt); a match
# is remembered against the file's stamp (NAME.verified), so a second run only reads stamps. Versions are pinned in
# src/dlcharts/versions.env (read by the Python side too).
#
# Sources, all through the Go module proxy (no release downloads, no VCS fallback):
#   k8s.io/kubernetes   kube-apiserver, kube-controller-manager, kube-scheduler and kubelet (the real node),
#                       through a generated wrapper
#                       module that requires k8s.io/kubernetes and replaces every k8s.io/<staging> module
#                       (published as v0.0.0 in its go.mod) with its published v0.<minor>.<patch>.
#   sigs.k8s.io/kwok    kwok (fake nodes and pod stages) and kwokctl.
#   go.etcd.io/etcd/server/v3   etcd. Built rather than Debian's etcd-server because Debian ships 3.4,
#                       older than the 3.5+/3.6 line Kubernetes 1.35 is released and tested with (1.35's
#                       default is etcd 3.6); a Go build also keeps one install path on every machine.
#   github.com/coredns/coredns  coredns, the real node's cluster DNS (Debian has no coredns package).
#   github.com/cloudnativelabs/kube-router/v2   kube-router, the real node's NetworkPolicy firewall.
#   helm.sh/helm/v4, helm.sh/helm/v3   helm4-render and helm3-render, the harness's in-process `helm template`
#                       (dlcharts.render_server), from the modules in native/helm-render/ with their committed
#                       go.sum, at the helm versions their go.mod pins (the same as src/dlcharts/toolchain.py's).
#                       Their cache version is the helm version and a hash of native/helm-render/common and the
#                       server's own folder, so an edit to the server's source builds a new one beside the old.
#   native/k8s-validate     k8s-validate, the API server's create validation linked from k8s.io/kubernetes at
#                       $KUBERNETES_VERSION (dlcharts.apirules), in its committed module (go.mod, go.sum); in the
#                       tools folder like the render servers, keyed by that version and a hash of its sources.
# containerd, runc and the CNI plugins of the real node are Debian packages (see .ci/run), not built here.
# The wrapper modules are generated under ${DLCHARTS_CACHE}/build/, never committed.
# Builds run under `nice -n 10` (2 shared cores), with -trimpath -ldflags='-s -w', CGO_ENABLED=0, and a
# file lock so two callers (CLI and pytest) never build at once.
#
# Measured on the project machine (2 shared cores, Go 1.26.8, nice -n 10, other agents busy):
#   cold, empty GOMODCACHE and GOCACHE: 13m10s wall (702 s user), of which module downloads ~45 s,
#     kube-apiserver 521 s, kube-controller-manager 69 s, kube-scheduler 5 s (they share most packages),
#     kwok 94 s, kwokctl 12 s, etcd 44 s. An earlier cold run on a quieter machine: 12m20s
#     (kube-apiserver 307 s). Caches grow by ~1.4 GB (modules) and ~3.5 GB (Go build cache).
#   relink after a version-flag change (Go build cache warm): 17 s for the three Kubernetes binaries.
#   warm (every binary present): 0.01-0.02 s, nothing is run but file checks.
# The builds are reproducible: two cold builds on separate caches gave bit-identical binaries.
# The real node's two binaries, measured 2026-11-23 on the same machine kind while other agents kept the load
# average near 10 on its 2 cores:
#   kubelet 109 s wall (Go build cache warm from the kube-* binaries just built; it shares most packages);
#   coredns 691 s wall with a cold Go build cache for its own packages (its module downloads, ~1 min, done
#     before); both together 363 s user + 76 s sys CPU. On a quiet machine expect roughly half the wall time.
# All ten binaries cold (empty module and build caches, quiet machine, 2026-11-23 inside a cold .ci/run):
#   1,050 s wall: kube-apiserver 373 s, kube-controller-manager 91, kube-scheduler 7, kubelet 27, kwok 118,
#   kwokctl 20, etcd 41, registry 100, crane 7, the rest module downloads and CoreDNS.
# kube-router v2.1.0 (2026-11-24, 2 cores, nice -n 10, a kube-apiserver and kubelet build running beside it): cold
#   (empty Go build cache, its modules downloaded) 366 s wall: go mod tidy with the downloads 31 s, compile 335 s;
#   from a warm build cache (a relink with the version flag) 41 s.
# The oldest minor (`oldest`: kube-apiserver, controller-manager, scheduler and k8s-validate at v1.29.15), 2026-11-25,
#   every cache empty (its modules downloaded too), machine otherwise idle: 392 s wall (530 s user): kube-apiserver
#   260 s, kube-controller-manager 61, kube-scheduler 5, k8s-validate 2 (it shares the API server's packages), the
#   rest module downloads. Caches grow by ~1.7 GB (modules) and ~2.7 GB (Go build cache).
# The add-ons (`addons`: kueue, scheduler-plugins, scheduler-plugins-controller), 2026-11-26, empty Go build cache,
#   module cache warm, machine otherwise idle: 376 s wall (603 s user). Under load 7-11 beside a cluster tier:
#   kueue 627 s, scheduler-plugins 720 s, the controller 12 s after them (shared packages).
# `dlcharts cluster up` with the real node: 11-15 s in all (the real node's share, containerd + image import
# + CoreDNS + kubelet until Ready, is ~4 s); `down` 4-5 s.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../src/dlcharts/versions.env
. "$repo/src/dlcharts/versions.env"

cache=${DLCHARTS_CACHE:-$HOME/.cache/dlcharts}
bindir=$cache/bin
workdir=$cache/build

die() { echo "build-control-plane: $*" >&2; exit 1; }
log() { echo "build-control-plane: $*" >&2; }

declare -A version=(
  [kube-apiserver]=$KUBERNETES_VERSION
  [kube-controller-manager]=$KUBERNETES_VERSION
  [kube-scheduler]=$KUBERNETES_VERSION
  [kubelet]=$KUBERNETES_VERSION
  [kwok]=$KWOK_VERSION
  [kwokctl]=$KWOK_VERSION
  [etcd]=$ETCD_VERSION
  [coredns]=$COREDNS_VERSION
)
all=(kube-apiserver kube-controller-manager kube-scheduler kubelet kwok kwokctl etcd coredns)
# images: the local OCI registry and crane (dlcharts registry / dlcharts images)
version[registry]=$DISTRIBUTION_VERSION
version[crane]=$CRANE_VERSION
all+=(registry crane)
# the real node's NetworkPolicy enforcement (dlcharts.cluster.netpol)
version[kube-router]=$KUBE_ROUTER_VERSION
all+=(kube-router)
# the render servers: helm version from their go.mod, then a hash of their sources (see the header)
render_version() { # MAJOR
  local src=$repo/native/helm-render helm hash
  helm=$(sed -n "s#^[[:space:]]*helm\.sh/helm/v$1 \(v[0-9][^ ]*\)\$#\1#p" "$src/helm$1/go.mod" | head -1)
  [[ -n $helm ]] || die "native/helm-render/helm$1/go.mod requires no helm.sh/helm/v$1"
  hash=$(cd "$src" && find common "helm$1" -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
  echo "$helm-$hash"
}
version[helm4-render]=$(render_version 4)
version[helm-unittest]=$HELM_UNITTEST_VERSION  # bench/renderers.py's third renderer; no default build
version[helm3-render]=$(render_version 3)
# the API server's create validation, offline (dlcharts.apirules): the Kubernetes version, then a source hash
validator_hash=$(cd "$repo/native/k8s-validate" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
version[k8s-validate]=$KUBERNETES_VERSION-$validator_hash
# the oldest supported minor (a second API server for tests/cluster/test_oldest_kubernetes.py, its validator for
# `dlcharts validate --kube-version 1.29`): built on request only (the `oldest` group, `make control-plane`)
oldest=(kube-apiserver@oldest kube-controller-manager@oldest kube-scheduler@oldest k8s-validate@oldest)
# the add-ons (built on request only: the `addons` group, `make control-plane`)
addons=(kueue scheduler-plugins scheduler-plugins-controller)
version[kueue]=$KUEUE_VERSION
version[scheduler-plugins]=$SCHEDULER_PLUGINS_VERSION
version[scheduler-plugins-controller]=$SCHEDULER_PLUGINS_VERSION
for name in kube-apiserver kube-controller-manager kube-scheduler; do version[$name@oldest]=$OLDEST_KUBERNETES_VERSION; done
version[k8s-validate@oldest]=$OLDEST_KUBERNETES_VERSION-$validator_hash

# The harness's own helpers (the render servers and validators) are the ones a wheel carries (native/wheels.py):
# DLCHARTS_PLATFORM=GOOS/GOARCH (darwin/arm64, linux/arm64, ...) cross-compiles them, and only them, for another
# platform, into folders named for it.
harness=(helm4-render helm3-render k8s-validate k8s-validate@oldest)
host_platform() {
  local os arch
  case $(uname -s) in Linux) os=linux ;; Darwin) os=darwin ;; *) os=$(uname -s | tr '[:upper:]' '[:lower:]') ;; esac
  case $(uname -m) in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
  echo "$os/$arch"
}
platform=${DLCHARTS_PLATFORM:-$(host_platform)}
[[ $platform =~ ^[a-z0-9]+/[a-z0-9]+$ ]] || die "DLCHARTS_PLATFORM=$platform is not GOOS/GOARCH, such as darwin/arm64"
cross=""
[[ $platform == "$(host_platform)" ]] || cross="-${platform/\//-}"

# The harness's helpers go with the pinned helm binaries, in the harness's tools folder (dlcharts.toolchain.tools_dir:
# $DLCHARTS_TOOLS_DIR, else .tools/ of this checkout), not under $DLCHARTS_CACHE, which tests point elsewhere.
target() {
  local base=${1%@oldest}
  case $base in
    helm*-render | k8s-validate) echo "${DLCHARTS_TOOLS_DIR:-$repo/.tools}/$base-${version[$1]}$cross/$base" ;;
    *) echo "$bindir/$base-${version[$1]}/$base" ;;
  esac
}

# The arguments with which a binary prints its version (running it proves an unrecorded cache entry is whole).
version_args() { case ${1%@oldest} in coredns) echo -version ;; crane) echo version ;; helm-unittest) echo --help ;; *) echo --version ;; esac; }

# stamp FILE: what a write to FILE changes (size, modification and change times in nanoseconds, inode).
stamp() { stat -L -c '%s %.9Y %.9Z %i' "$1"; }

# cached NAME: the cache holds NAME as it was built: its sha256 equals the one install_bin recorded beside it
# (NAME.sha256). An entry without a record (cached before records existed) is adopted when it runs its version
# command. A damaged entry (truncated, changed, not executable) is reported and removed, so it is rebuilt.
# Hashing takes ~0.15 s a render server, and every pytest session and dlcharts command checks its servers, so a
# match is remembered in NAME.verified (the file's stamp and the record) and hashed again once the file changes.
cached() {
  local bin recorded
  bin=$(target "$1")
  [[ -e $bin ]] || return 1
  if [[ -f $bin.sha256 ]]; then
    recorded=$(<"$bin.sha256")
    [[ -x $bin && -f $bin.verified && $(<"$bin.verified") == "$(stamp "$bin") $recorded" ]] && return 0
    if [[ -x $bin && $(sha256sum <"$bin") == "$recorded  -" ]]; then
      # remembered where the cache is writable; a read-only cache is hashed each time
      { echo "$(stamp "$bin") $recorded" >"$bin.verified.$$" && mv -f "$bin.verified.$$" "$bin.verified"; } 2>/dev/null ||
        rm -f "$bin.verified.$$" 2>/dev/null || true
      return 0
    fi
    log "$1: $bin is damaged (its sha256 is not the one recorded when it was built); rebuilding it"
  elif [[ -z $cross && -x $bin ]] && timeout 60 "$bin" $(version_args "$1") >/dev/null 2>&1; then
    sha256sum <"$bin" | cut -d' ' -f1 >"$bin.sha256"
    return 0
  else
    log "$1: $bin does not run ($bin $(version_args "$1") failed) and has no recorded sha256; rebuilding it"
  fi
  rm -f "$bin" "$bin.sha256" "$bin.verified"
  return 1
}

check=0
wanted=()
for arg in "$@"; do
  case $arg in
    --check) check=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) die "unknown option $arg (see --help)" ;;
    oldest) wanted+=("${oldest[@]}") ;;
    addons) wanted+=("${addons[@]}") ;;
    *) [[ -n ${version[$arg]+x} ]] ||
         die "unknown binary $arg; known: ${all[*]} helm4-render helm3-render k8s-validate helm-unittest ${addons[*]} ${oldest[*]} (or: oldest, addons)"
       wanted+=("$arg") ;;
  esac
done
if [[ -n $cross ]]; then
  ((${#wanted[@]})) || wanted=("${harness[@]}")
  for name in "${wanted[@]}"; do
    [[ " ${harness[*]} " == *" $name "* ]] || die "$name is not built for another platform ($platform); only: ${harness[*]}"
  done
fi
((${#wanted[@]})) || wanted=("${all[@]}")

missing=()
for name in "${wanted[@]}"; do
  cached "$name" || missing+=("$name")
done
if ((check)); then
  for name in "${wanted[@]}"; do echo "$name $(target "$name")"; done
  ((${#missing[@]} == 0)) || die "missing: ${missing[*]}; build with: $0"
  exit 0
fi

if ((${#missing[@]})); then
  gobin=$(command -v go || true)
  [[ -n $gobin ]] || { [[ -x /usr/local/go/bin/go ]] && gobin=/usr/local/go/bin/go; }
  [[ -n $gobin ]] || die "no Go toolchain on PATH (or /usr/local/go/bin/go); install Go >= 1.26"
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=mod" GOOS=${platform%/*} GOARCH=${platform#*/}
  # The module proxy only: drop any "direct" (VCS) fallback from whatever GOPROXY is configured.
  proxy=$("$gobin" env GOPROXY)
  proxy=$(tr ',|' '\n' <<<"$proxy" | grep -vxE 'direct|off|' | paste -sd, -)
  [[ -n $proxy ]] || die "GOPROXY ($("$gobin" env GOPROXY)) names no module proxy"
  export GOPROXY=$proxy
  go() { nice -n 10 "$gobin" "$@"; }

  mkdir -p "$bindir" "$workdir"
  exec 9>"$bindir/.build.lock"
  flock 9
fi

# install NAME FILE: move a fresh build into the cache atomically, with its sha256 beside it (see cached).
install_bin() {
  local dest
  dest=$(target "$1")
  mkdir -p "$(dirname "$dest")"
  sha256sum <"$2" | cut -d' ' -f1 >"$dest.sha256.partial"
  mv -f "$2" "$dest.partial"
  mv -f "$dest.partial" "$dest"
  mv -f "$dest.sha256.partial" "$dest.sha256"
}

# module_info MODULE@VERSION FIELD: a field of `go mod download -json` (Dir, GoMod, Info, Origin's Hash).
module_info() {
  go mod download -json "$1" | sed -n "s/^[[:space:]]*\"$2\": \"\\(.*\\)\",\\{0,1\\}$/\\1/p" | head -1
}

need() {
  local name
  for name in "$@"; do [[ -x $(target "$name") ]] || return 0; done
  return 1
}

timed_build() { # NAME PKG LDFLAGS (run inside the wrapper module)
  local name=$1 pkg=$2 ldflags=$3 start out
  [[ -x $(target "$name") ]] && return 0
  start=$SECONDS
  out=$(mktemp -d "$workdir/out.XXXXXX")
  log "building $name ${version[$name]}${cross:+ for $platform} ($pkg)"
  go build -trimpath -ldflags="-s -w $ldflags" -o "$out/$name" "$pkg"
  install_bin "$name" "$out/$name"
  rmdir "$out"
  log "built $name ${version[$name]} in $((SECONDS - start))s -> $(target "$name")"
}

# build_kubernetes VERSION SUFFIX: kube-apiserver, kube-controller-manager, kube-scheduler (and kubelet at the pinned
# version; k8s-validate at the oldest) from k8s.io/kubernetes@VERSION, named NAME$SUFFIX ("" or "@oldest").
build_kubernetes() {
  local kversion=$1 suffix=$2 names=() mod gomod time hash staging name ld k8s_minor
  if [[ -z $suffix ]]; then names=(kube-apiserver kube-controller-manager kube-scheduler kubelet); else
    names=(kube-apiserver kube-controller-manager kube-scheduler); fi
  need "${names[@]/%/$suffix}" || { [[ -n $suffix ]] && need "k8s-validate$suffix"; } || return 0
  k8s_minor=${kversion#v1.}  # 35.8
  mod=$workdir/kubernetes-$kversion
  mkdir -p "$mod"
  gomod=$(module_info "k8s.io/kubernetes@$kversion" GoMod)
  time=$(sed -n 's/.*"Time": *"\([^"]*\)".*/\1/p' "$(module_info "k8s.io/kubernetes@$kversion" Info)")
  hash=$(module_info "k8s.io/kubernetes@$kversion" Hash)
  [[ -f $gomod ]] || die "could not fetch k8s.io/kubernetes@$kversion from $GOPROXY"
  # Every staging module, from the replace block of kubernetes' own go.mod: k8s.io/x => ./staging/src/k8s.io/x
  mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/.*#\1#p' "$gomod")
  ((${#staging[@]} > 10)) || die "found no staging modules in $gomod; its layout changed"
  if [[ -n $suffix ]]; then  # the validator at this version: native/k8s-validate's source in the wrapper module
    mkdir -p "$mod/k8s-validate"
    cp "$repo/native/k8s-validate/"*.go "$mod/k8s-validate/" # +crd.go
  fi
  {
    echo "// Generated by ci/build-control-plane.sh: builds Kubernetes server binaries from k8s.io/kubernetes."
    echo "module dlcharts.local/control-plane/kubernetes"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes $kversion"
    echo
    echo "replace ("
    for name in "${staging[@]}"; do echo "	$name => $name v0.$k8s_minor"; done
    echo ")"
    echo
    echo "tool ("
    for name in "${names[@]}"; do echo "	k8s.io/kubernetes/cmd/$name"; done
    echo ")"
  } >"$mod/go.mod"
  (cd "$mod" && go mod tidy)
  ld=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$kversion -X $pkg.gitMajor=1 -X $pkg.gitMinor=${k8s_minor%%.*}"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$time"
    [[ -z $hash ]] || ld+=" -X $pkg.gitCommit=$hash"
  done
  (
    cd "$mod"
    for name in "${names[@]/%/$suffix}"; do  # only those asked for (another platform: the validator only)
      [[ -z $cross && " ${missing[*]} " == *" $name "* ]] && timed_build "$name" "k8s.io/kubernetes/cmd/${name%@oldest}" "$ld"
    done
    [[ " ${missing[*]} " != *" k8s-validate$suffix "* ]] || timed_build "k8s-validate$suffix" ./k8s-validate ""
  )
}

build_kwok() {
  need kwok kwokctl || return 0
  local mod=$workdir/kwok-$KWOK_VERSION ld
  mkdir -p "$mod"
  cat >"$mod/go.mod" <<EOF
// Generated by ci/build-control-plane.sh: builds kwok and kwokctl from sigs.k8s.io/kwok.
module dlcharts.local/control-plane/kwok

go 1.26.0

require sigs.k8s.io/kwok $KWOK_VERSION

tool (
	sigs.k8s.io/kwok/cmd/kwok
	sigs.k8s.io/kwok/cmd/kwokctl
)
EOF
  (cd "$mod" && go mod tidy)
  ld="-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBERNETES_VERSION#v}"
  (
    cd "$mod"
    timed_build kwok sigs.k8s.io/kwok/cmd/kwok "$ld"
    timed_build kwokctl sigs.k8s.io/kwok/cmd/kwokctl "$ld"
  )
}

build_etcd() {
  need etcd || return 0
  local mod=$workdir/etcd-$ETCD_VERSION hash
  mkdir -p "$mod"
  cat >"$mod/go.mod" <<EOF
// Generated by ci/build-control-plane.sh: builds the etcd server from go.etcd.io/etcd/server/v3.
module dlcharts.local/control-plane/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

tool go.etcd.io/etcd/server/v3
EOF
  (cd "$mod" && go mod tidy)
  hash=$(module_info "go.etcd.io/etcd/server/v3@$ETCD_VERSION" Hash)
  (cd "$mod" && timed_build etcd go.etcd.io/etcd/server/v3 "${hash:+-X go.etcd.io/etcd/api/v3/version.GitSHA=${hash:0:10}}")
}

# Go tools each built from its own generated module: registry (github.com/distribution/distribution/v3,
# cmd/registry), crane (github.com/google/go-containerregistry, cmd/crane) and CoreDNS (its default plugin set).
# registry and crane measured cold (empty module cache for both, Go build cache shared with a kube-apiserver build running at
# the same time, load 12-17 on 2 cores): registry 1109 s wall (most of it waiting for CPU), crane 30 s;
# 3m41s user for both, 20 min wall. Warm: file checks only.
# With KEEP_REPLACES=1 the wrapper also takes the module's own replace directives that point at other modules (a
# dependency's replaces are ignored otherwise, and helm-unittest builds only with its fork of yaml-jsonpath), and
# EXTRA_REQUIRES pins what that fork needs and its go.mod does not name (go mod tidy would take the newest).
# REPLACE_VERSIONS ("OLD=NEW ...") moves the kept replaces from version OLD to NEW, for a module whose replaces name
# versions the module proxy does not serve.
build_go_tool() { # NAME MODULE VERSION PKG LDFLAGS
  local name=$1 module=$2 ver=$3 pkg=$4 ldflags=$5 mod
  need "$name" || return 0
  mod=$workdir/$name-$ver
  mkdir -p "$mod"
  printf '%s\n' "// Generated by ci/build-control-plane.sh: builds $name from $module." \
    "module dlcharts.local/tools/$name" "" "go 1.26.0" "" "require $module $ver" "" "tool $pkg" >"$mod/go.mod"
  if [[ ${KEEP_REPLACES:-0} == 1 ]]; then  # one-line replaces and replace ( ... ) blocks, to other modules only
    awk '/^replace \($/ { block = 1; next } block && /^\)/ { block = 0; next }
         { line = block ? $0 : (/^replace / ? substr($0, 9) : "") }
         { sub(/^[ \t]+/, "", line) } line ~ / => [^.\/][^ ]* v[^ ]*$/ { print "replace " line }' \
      "$(module_info "$module@$ver" GoMod)" >"$mod/replaces"
    local pair
    for pair in ${REPLACE_VERSIONS:-}; do sed -i "s/ ${pair%%=*}\$/ ${pair#*=}/" "$mod/replaces"; done
    cat "$mod/replaces" >>"$mod/go.mod"
  fi
  local req
  for req in ${EXTRA_REQUIRES:-}; do echo "require ${req/@/ }" >>"$mod/go.mod"; done
  (cd "$mod" && go mod tidy)
  (cd "$mod" && timed_build "$name" "$pkg" "$ldflags")
}

# build_addon NAME MODULE VERSION PKG LDFLAGS FILES...: an add-on built as build_go_tool builds tools, with FILES (paths in
# the module, files or folders) copied first into manifests/ beside the binary: what dlcharts.cluster.addons installs
# it from.
build_addon() {
  local name=$1 module=$2 ver=$3 pkg=$4 ldflags=$5 src dest file
  shift 5
  need "$name" || return 0
  src=$(module_info "$module@$ver" Dir)
  [[ -d $src ]] || die "could not fetch $module@$ver from $GOPROXY"
  dest=$(dirname "$(target "$name")")/manifests
  mkdir -p "$dest"
  for file in "$@"; do
    [[ -e $src/$file ]] || die "$module@$ver has no $file; its layout changed"
    rm -rf "${dest:?}/$(basename "$file")"
    cp -R "$src/$file" "$dest/" && chmod -R u+w "$dest/$(basename "$file")"
  done
  build_go_tool "$name" "$module" "$ver" "$pkg" "$ldflags"
}

# helm4-render / helm3-render, built in their own committed module (go.sum checks every module it downloads).
# Cold (empty Go build cache, module cache warm): 8.5 CPU-minutes for both (README, "Renders run in-process").
build_render_server() { # NAME MAJOR
  need "$1" || return 0
  (cd "$repo/native/helm-render/helm$2" && export GOFLAGS="-buildvcs=false -mod=readonly" && timed_build "$1" . "")
}

if ((${#missing[@]})); then
  start=$SECONDS
  for name in "${missing[@]}"; do
    case $name in
      helm4-render) build_render_server helm4-render 4 ;;
      helm-unittest) KEEP_REPLACES=1 EXTRA_REQUIRES="golang.org/x/xerrors@v0.0.0-20240903120638-7835f813f4da \
        github.com/nxadm/tail@v1.4.11" build_go_tool helm-unittest github.com/helm-unittest/helm-unittest \
        "$HELM_UNITTEST_VERSION" github.com/helm-unittest/helm-unittest/cmd/helm-unittest "" ;;
      helm3-render) build_render_server helm3-render 3 ;;
      k8s-validate) need k8s-validate && (cd "$repo/native/k8s-validate" && export GOFLAGS="-buildvcs=false -mod=readonly" &&
        timed_build k8s-validate . "") ;;
      registry) build_go_tool registry github.com/distribution/distribution/v3 "$DISTRIBUTION_VERSION" \
        github.com/distribution/distribution/v3/cmd/registry \
        "-X github.com/distribution/distribution/v3/version.version=$DISTRIBUTION_VERSION" ;;
      crane) build_go_tool crane github.com/google/go-containerregistry "$CRANE_VERSION" \
        github.com/google/go-containerregistry/cmd/crane \
        "-X github.com/google/go-containerregistry/cmd/crane/cmd.Version=$CRANE_VERSION" ;;
      coredns) build_go_tool coredns github.com/coredns/coredns "$COREDNS_VERSION" github.com/coredns/coredns \
        "-X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" ;;
      kube-router) build_go_tool kube-router github.com/cloudnativelabs/kube-router/v2 "$KUBE_ROUTER_VERSION" \
        github.com/cloudnativelabs/kube-router/v2/cmd/kube-router \
        "-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" ;;
      kube-apiserver|kube-controller-manager|kube-scheduler|kubelet) build_kubernetes "$KUBERNETES_VERSION" "" ;;
      *@oldest) build_kubernetes "$OLDEST_KUBERNETES_VERSION" @oldest ;;
      kueue) build_addon kueue sigs.k8s.io/kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue \
        "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" charts/kueue ;;
      # scheduler-plugins v0.34.7 replaces every k8s.io module with v0.34.7 (k8s.io/kubernetes v1.34.7), and the proxy
      # answers 403 for twelve of those; v0.34.3 is the newest patch it serves for all of them. Its version is the
      # Kubernetes one it links: kube-scheduler derives its emulation version from it (v0.34.7 is refused at start).
      # Its documented second-scheduler install runs the scheduler and its controller (PodGroup status, whose updates
      # requeue a gang's pods): both, with the PodGroup and ElasticQuota CRDs they watch.
      scheduler-plugins) KEEP_REPLACES=1 REPLACE_VERSIONS="v0.34.7=v0.34.3 v1.34.7=v1.34.3" build_addon scheduler-plugins \
        sigs.k8s.io/scheduler-plugins "$SCHEDULER_PLUGINS_VERSION" sigs.k8s.io/scheduler-plugins/cmd/scheduler \
        "-X k8s.io/component-base/version.gitVersion=v1.34.3 -X k8s.io/component-base/version.gitMajor=1 \
         -X k8s.io/component-base/version.gitMinor=34" manifests/coscheduling \
        config/crd/bases/scheduling.x-k8s.io_elasticquotas.yaml ;;
      scheduler-plugins-controller) KEEP_REPLACES=1 REPLACE_VERSIONS="v0.34.7=v0.34.3 v1.34.7=v1.34.3" build_go_tool \
        scheduler-plugins-controller sigs.k8s.io/scheduler-plugins "$SCHEDULER_PLUGINS_VERSION" \
        sigs.k8s.io/scheduler-plugins/cmd/controller "" ;;
      kwok*) build_kwok ;;
      etcd) build_etcd ;;
    esac
  done
  log "done in $((SECONDS - start))s"
fi

for name in "${wanted[@]}"; do
  [[ -x $(target "$name") ]] || die "$name was not built"
  echo "$name $(target "$name")"
done
