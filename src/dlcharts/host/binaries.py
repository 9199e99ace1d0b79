"""The embedded cluster's pinned binaries: their build table, where they live, whether they are there.

Versions are pinned in ``dlcharts/versions.env`` (dlcharts.pins). Binaries live in
``$DLCHARTS_CACHE/bin/<name>-<version>/<name>`` (``DLCHARTS_CACHE`` defaults to ``~/.cache/dlcharts``), outside the
repository, built by dlcharts.gobuild from the Go module proxy (``dlcharts cluster build``; with Go, no checkout).

Sources: kube-apiserver, kube-controller-manager, kube-scheduler and the real node's kubelet from k8s.io/kubernetes
(through the wrapper module of dlcharts.native.kubernetes_module); kwok (fake nodes, pod stages) and kwokctl from
sigs.k8s.io/kwok; etcd from go.etcd.io/etcd/server/v3, built rather than taken from Debian, whose etcd-server is 3.4,
older than the 3.5+/3.6 line Kubernetes 1.35 is released and tested with (its default is etcd 3.6), and so that every
machine has one install path; coredns, the real node's cluster DNS (Debian has no coredns package), with its default
plugin set; kube-router, the real node's NetworkPolicy firewall; registry (distribution v3) and crane
(go-containerregistry), the local OCI registry and its client. containerd, runc and the CNI plugins of the real node
are Debian packages, not built here. The add-ons (dlcharts.cluster.addons) are built with the manifests they are
installed from beside them, in manifests/: kueue (Kueue's manager and its Helm chart), scheduler-plugins
(kube-scheduler with coscheduling; the PodGroup and ElasticQuota CRDs) and scheduler-plugins-controller (PodGroup
status). helm-unittest is the benchmark's third renderer (bench/renderers.py), built only when named.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from dlcharts import gobuild, native, pins
from dlcharts.errors import ClusterError, DLChartsError
from dlcharts.gobuild import Spec, Wrapper
from dlcharts.pins import OLDEST as OLDEST
from dlcharts.pins import VERSIONS_FILE

#: the version keys in versions.env that the table below needs
_PINS = ("KUBERNETES_VERSION", "OLDEST_KUBERNETES_VERSION", "KWOK_VERSION", "ETCD_VERSION", "COREDNS_VERSION",
         "KUBE_ROUTER_VERSION", "DISTRIBUTION_VERSION", "CRANE_VERSION", "KUEUE_VERSION", "SCHEDULER_PLUGINS_VERSION",
         "HELM_UNITTEST_VERSION", "TRAINING_OPERATOR_VERSION", "MPI_OPERATOR_VERSION", "JOBSET_VERSION",
         "TRAINER_VERSION")  # fmt: skip

#: the control plane and the real node, which a cluster needs
BINARY_NAMES: tuple[str, ...] = (
    "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwokctl", "etcd",
    "kubelet", "coredns", "kube-router",  # the real node (dlcharts.cluster.node, .dns, .netpol)
)  # fmt: skip
REAL_NODE_BINARIES: tuple[str, ...] = ("kubelet", "coredns", "kube-router")
CONTROL_PLANE_BINARIES: tuple[str, ...] = tuple(n for n in BINARY_NAMES if n not in REAL_NODE_BINARIES)
#: the binaries that follow the cluster's Kubernetes version; at the oldest supported minor they are NAME@oldest
#: (the ``oldest`` group), in bin/NAME-<OLDEST_KUBERNETES_VERSION>/NAME
VERSIONED_BINARIES: tuple[str, ...] = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
#: the add-ons' binaries (dlcharts.cluster.addons), built on request: the ``addons`` group
ADDON_BINARIES: tuple[str, ...] = ("kueue", "scheduler-plugins", "scheduler-plugins-controller")
#: the training operators the benchmark compares the charts with (dlcharts.cluster.addons.operators): the ``operators``
#: group, built only when named (``make operators``), never by ``make control-plane`` or ``make test``
OPERATOR_BINARIES: tuple[str, ...] = ("training-operator", "mpi-operator", "jobset", "trainer")


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """versions.env as a dict, with a pin for every binary of the cluster."""
    try:
        return pins.read_versions(path, required=_PINS)
    except DLChartsError as exc:
        raise ClusterError(str(exc)) from None


VERSIONS: dict[str, str] = read_versions()
KUBERNETES_VERSION = VERSIONS["KUBERNETES_VERSION"]
KWOK_VERSION = VERSIONS["KWOK_VERSION"]
ETCD_VERSION = VERSIONS["ETCD_VERSION"]
COREDNS_VERSION = VERSIONS["COREDNS_VERSION"]
KUBE_ROUTER_VERSION = VERSIONS["KUBE_ROUTER_VERSION"]
OLDEST_KUBERNETES_VERSION = VERSIONS["OLDEST_KUBERNETES_VERSION"]
KUEUE_VERSION = VERSIONS["KUEUE_VERSION"]
SCHEDULER_PLUGINS_VERSION = VERSIONS["SCHEDULER_PLUGINS_VERSION"]
DISTRIBUTION_VERSION = VERSIONS["DISTRIBUTION_VERSION"]
CRANE_VERSION = VERSIONS["CRANE_VERSION"]
HELM_UNITTEST_VERSION = VERSIONS["HELM_UNITTEST_VERSION"]
TRAINING_OPERATOR_VERSION = VERSIONS["TRAINING_OPERATOR_VERSION"]
MPI_OPERATOR_VERSION = VERSIONS["MPI_OPERATOR_VERSION"]
JOBSET_VERSION = VERSIONS["JOBSET_VERSION"]
TRAINER_VERSION = VERSIONS["TRAINER_VERSION"]
#: the Kubernetes versions an embedded cluster can run: the pinned one (default) and the oldest the charts support
CLUSTER_VERSIONS: tuple[str, ...] = (KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION)
# scheduler-plugins v0.34.7 replaces every k8s.io module with v0.34.7 (k8s.io/kubernetes v1.34.7), and the proxy answers
# 403 for twelve of those; v0.34.3 is the newest patch it serves for all of them. Its version is the Kubernetes one it
# links: kube-scheduler derives its emulation version from it (v0.34.7 is refused at start).
_SCHEDULER_PLUGINS_LINKS = (("v0.34.7", "v0.34.3"), ("v1.34.7", "v1.34.3"))


def _go_tool(name: str, module: str, version: str, package: str, ldflags: str = "", **options: Any) -> Spec:
    """``package`` of ``module`` at ``version``, built from a generated module of its own (options: Spec's
    version_args and manifests, the rest Wrapper's)."""
    spec_options = {key: options.pop(key) for key in ("version_args", "manifests") if key in options}
    wrapper = Wrapper(f"{name}-{version}", f"dlcharts.local/tools/{name}", module, version, (package,), **options)
    return Spec(name, version, wrapper, package, ldflags, **spec_options)


def _table() -> dict[str, Spec]:
    k8s = {v: native.kubernetes_module(v) for v in (KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION)}
    kube = [
        Spec(name + suffix, version, k8s[version], f"k8s.io/kubernetes/cmd/{name}", stamp=True)
        for version, suffix in ((KUBERNETES_VERSION, ""), (OLDEST_KUBERNETES_VERSION, OLDEST))
        for name in (*VERSIONED_BINARIES, *(["kubelet"] if not suffix else []))
    ]
    kwok = Wrapper(
        f"kwok-{KWOK_VERSION}", "dlcharts.local/control-plane/kwok", "sigs.k8s.io/kwok", KWOK_VERSION,
        ("sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok/cmd/kwokctl"),
    )  # fmt: skip
    kwok_ld = (
        f"-X sigs.k8s.io/kwok/pkg/consts.Version={KWOK_VERSION.removeprefix('v')} "
        f"-X sigs.k8s.io/kwok/pkg/consts.KubeVersion={KUBERNETES_VERSION.removeprefix('v')}"
    )
    etcd = Wrapper(
        f"etcd-{ETCD_VERSION}", "dlcharts.local/control-plane/etcd", "go.etcd.io/etcd/server/v3", ETCD_VERSION,
        ("go.etcd.io/etcd/server/v3",), git_sha_var="go.etcd.io/etcd/api/v3/version.GitSHA",
    )  # fmt: skip
    plugins, plugins_version = "sigs.k8s.io/scheduler-plugins", SCHEDULER_PLUGINS_VERSION
    links: dict[str, Any] = {"keep_replaces": True, "replace_versions": _SCHEDULER_PLUGINS_LINKS}
    unittest = "github.com/helm-unittest/helm-unittest"
    kubeflow = "github.com/kubeflow"
    specs = [
        *kube,
        Spec("kwok", KWOK_VERSION, kwok, "sigs.k8s.io/kwok/cmd/kwok", kwok_ld),
        Spec("kwokctl", KWOK_VERSION, kwok, "sigs.k8s.io/kwok/cmd/kwokctl", kwok_ld),
        Spec("etcd", ETCD_VERSION, etcd, "go.etcd.io/etcd/server/v3", stamp=True),
        _go_tool("coredns", "github.com/coredns/coredns", COREDNS_VERSION, "github.com/coredns/coredns",
                 f"-X github.com/coredns/coredns/coremain.GitCommit={COREDNS_VERSION}", version_args=("-version",)),
        _go_tool("kube-router", "github.com/cloudnativelabs/kube-router/v2", KUBE_ROUTER_VERSION,
                 "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router",
                 f"-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version={KUBE_ROUTER_VERSION}"),
        _go_tool("registry", "github.com/distribution/distribution/v3", DISTRIBUTION_VERSION,
                 "github.com/distribution/distribution/v3/cmd/registry",
                 f"-X github.com/distribution/distribution/v3/version.version={DISTRIBUTION_VERSION}"),
        _go_tool("crane", "github.com/google/go-containerregistry", CRANE_VERSION,
                 "github.com/google/go-containerregistry/cmd/crane",
                 f"-X github.com/google/go-containerregistry/cmd/crane/cmd.Version={CRANE_VERSION}",
                 version_args=("version",)),
        _go_tool("kueue", "sigs.k8s.io/kueue", KUEUE_VERSION, "sigs.k8s.io/kueue/cmd/kueue",
                 f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_VERSION}", manifests=("charts/kueue",)),
        # the documented second-scheduler install runs the scheduler and its controller (PodGroup status, whose
        # updates requeue a gang's pods), with the PodGroup and ElasticQuota CRDs they watch
        _go_tool("scheduler-plugins", plugins, plugins_version, f"{plugins}/cmd/scheduler",
                 "-X k8s.io/component-base/version.gitVersion=v1.34.3 -X k8s.io/component-base/version.gitMajor=1 "
                 "-X k8s.io/component-base/version.gitMinor=34",
                 manifests=("manifests/coscheduling", "config/crd/bases/scheduling.x-k8s.io_elasticquotas.yaml"),
                 **links),
        _go_tool("scheduler-plugins-controller", plugins, plugins_version, f"{plugins}/cmd/controller", **links),
        # helm-unittest builds only with its own fork of yaml-jsonpath (its replace), which needs two modules its
        # go.mod does not name
        _go_tool("helm-unittest", unittest, HELM_UNITTEST_VERSION, f"{unittest}/cmd/helm-unittest",
                 version_args=("--help",), keep_replaces=True,
                 extra_requires=("golang.org/x/xerrors@v0.0.0-20240903120638-7835f813f4da",
                                 "github.com/nxadm/tail@v1.4.11")),
        # the training operators (bench/operators.py), each with the CRDs and webhook configurations it is installed
        # from; their RBAC is not needed (the processes run with the cluster's admin kubeconfig)
        _go_tool("training-operator", f"{kubeflow}/training-operator", TRAINING_OPERATOR_VERSION,
                 f"{kubeflow}/training-operator/cmd/training-operator.v1", version_args=("--help",),
                 manifests=("manifests/base/crds", "manifests/base/webhook/manifests.yaml")),
        _go_tool("mpi-operator", f"{kubeflow}/mpi-operator", MPI_OPERATOR_VERSION,
                 f"{kubeflow}/mpi-operator/cmd/mpi-operator",
                 version_args=("--help",),
                 manifests=("manifests/base/kubeflow.org_mpijobs.yaml",)),
        _go_tool("jobset", "sigs.k8s.io/jobset", JOBSET_VERSION, "sigs.k8s.io/jobset",
                 f"-X sigs.k8s.io/jobset/pkg/version.GitVersion={JOBSET_VERSION}", version_args=("--help",),
                 manifests=("charts/jobset",)),
        _go_tool("trainer", f"{kubeflow}/trainer/v2", TRAINER_VERSION,
                 f"{kubeflow}/trainer/v2/cmd/trainer-controller-manager",
                 version_args=("--help",),
                 manifests=("manifests/base/crds", "manifests/base/webhook/manifests.yaml",
                            "manifests/base/manager/controller_manager_config.yaml", "manifests/base/runtimes")),
    ]  # fmt: skip
    return {spec.name: spec for spec in specs}


#: every binary the cluster builds, by name (the harness's helpers are dlcharts.native's)
TABLE: dict[str, Spec] = _table()
#: what ``dlcharts cluster build`` builds with no name: the control plane, the real node and the images' tools
DEFAULT_BINARIES: tuple[str, ...] = (*BINARY_NAMES, "registry", "crane")
#: names ``dlcharts cluster build`` (build_binaries) takes for sets of binaries
GROUPS: dict[str, tuple[str, ...]] = {
    "default": DEFAULT_BINARIES,
    "control-plane": CONTROL_PLANE_BINARIES,
    "real-node": REAL_NODE_BINARIES,
    "images": ("registry", "crane"),
    # the oldest supported minor: a second control plane (tests/cluster oldest-Kubernetes tests), and its validator
    # for `dlcharts validate --kube-version` at that minor
    "oldest": (*(name + OLDEST for name in VERSIONED_BINARIES), native.VALIDATOR + OLDEST),
    "addons": ADDON_BINARIES,
    "tools": native.HELPERS,
    "bench": ("helm-unittest",),
    "operators": OPERATOR_BINARIES,
}


def control_plane_binaries(kubernetes_version: str = KUBERNETES_VERSION) -> tuple[str, ...]:
    """The control plane's binary names for a cluster at ``kubernetes_version`` (one of CLUSTER_VERSIONS)."""
    if kubernetes_version == KUBERNETES_VERSION:
        return CONTROL_PLANE_BINARIES
    if kubernetes_version == OLDEST_KUBERNETES_VERSION:
        return tuple(n + OLDEST if n in VERSIONED_BINARIES else n for n in CONTROL_PLANE_BINARIES)
    raise ClusterError(
        f"Kubernetes {kubernetes_version!r} is not one the embedded cluster runs; use {KUBERNETES_VERSION} (pinned) "
        f"or {OLDEST_KUBERNETES_VERSION} (the oldest minor the charts support)"
    )


@dataclasses.dataclass(frozen=True)
class Binary:
    name: str
    version: str
    path: Path

    @property
    def present(self) -> bool:
        return self.path.is_file() and os.access(self.path, os.X_OK)


def binary(name: str, cache: Path | None = None) -> Binary:
    """The pinned binary ``name`` (of TABLE: BINARY_NAMES, a VERSIONED_BINARIES name + OLDEST, an add-on, ...) and
    where it lives in the cache."""
    if name not in TABLE:
        raise ClusterError(f"unknown control-plane binary {name!r}; known: {', '.join(TABLE)}")
    spec = TABLE[name]
    return Binary(name, spec.version, spec.path(cache))


def pinned_binaries(cache: Path | None = None) -> dict[str, Binary]:
    return {name: binary(name, cache) for name in BINARY_NAMES}


def build_command() -> str:
    """The command a person runs to build the cluster's binaries (a group or names follow)."""
    return "dlcharts cluster build"


def require_binaries(cache: Path | None = None, names: tuple[str, ...] = BINARY_NAMES) -> dict[str, Path]:
    """Paths of the binaries ``names`` (default: all); ClusterError naming each missing one and the command
    that builds it."""
    found = {name: binary(name, cache) for name in names}
    missing = [b for b in found.values() if not b.present]
    if missing:
        lines = "\n".join(f"  {b.name} {b.version}: expected at {b.path}" for b in missing)
        raise ClusterError(
            f"the embedded control plane is missing {len(missing)} binar{'y' if len(missing) == 1 else 'ies'}:\n"
            f"{lines}\n"
            f"build them once (the default group took 14 minutes cold on 2 cores, bench/results.md section 13;"
            f" then cached)"
            f" with:\n"
            f"  {build_command()}{''.join(sorted(_build_groups(missing)))}\n"
            f"or from Python: dlcharts.cluster.build_binaries()"
        )
    return {name: b.path for name, b in found.items()}


def _build_groups(missing: list[Binary]) -> set[str]:
    """The group arguments of build_command() that build ``missing`` (" oldest", " addons"); none for the default
    set."""
    groups = {" oldest" for b in missing if b.name.endswith(OLDEST)}
    groups |= {" operators" for b in missing if b.name in OPERATOR_BINARIES}
    return groups | {" addons" for b in missing if b.name in ADDON_BINARIES}


def specs(names: list[str] | tuple[str, ...] | None = None) -> list[Spec]:
    """The build table's entries for ``names``: groups (GROUPS) and single names (TABLE, dlcharts.native.HELPERS),
    in order, once each; the default group when there are none. A group's helpers are left out where this is not a
    checkout (an installed wheel carries them)."""
    wanted: list[str] = []
    for arg in names or ["default"]:
        if arg in GROUPS:
            checkout = native.sources() is not None
            wanted += [n for n in GROUPS[arg] if n not in wanted and (checkout or n not in native.HELPERS)]
            if not checkout and set(GROUPS[arg]) & set(native.HELPERS):
                left = " ".join(n for n in GROUPS[arg] if n in native.HELPERS)
                print(f"{gobuild.PREFIX}{left}: built in a dl-charts checkout only (a platform wheel carries them)",
                      file=sys.stderr)  # fmt: skip
        elif arg in TABLE or arg in native.HELPERS:
            wanted += [] if arg in wanted else [arg]
        else:
            raise ClusterError(
                f"unknown binary or group {arg!r}; groups: {', '.join(GROUPS)}; binaries: "
                f"{', '.join([*TABLE, *native.HELPERS])}"
            )
    named = [n for n in wanted if n in native.HELPERS]
    try:
        helpers = {spec.name: spec for spec in native.specs(named)} if named else {}
    except DLChartsError as exc:
        raise ClusterError(str(exc)) from None
    return [TABLE[name] if name in TABLE else helpers[name] for name in wanted]


def build_binaries(
    names: list[str] | None = None, *, log: Path | None = None, cache: Path | None = None, platform: str | None = None
) -> dict[str, Path]:
    """Build (or reuse) the binaries ``names`` (groups or names, see specs; default: the default group) and return
    their paths. Progress and Go's output go to ``log`` when given (else to stderr); a ClusterError says what failed.
    ``platform`` (GOOS/GOARCH) cross-builds the harness's helpers for another platform's wheel."""
    table = specs(names)
    try:
        if log is None:
            return gobuild.build(table, cache=cache, platform=platform)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as fh:
            return gobuild.build(table, cache=cache, platform=platform, out=fh)
    except DLChartsError as exc:
        raise ClusterError(f"{exc}{f'; see {log}' if log is not None else ''}") from None


def missing_binaries(
    names: list[str] | None = None, *, cache: Path | None = None, platform: str | None = None
) -> tuple[dict[str, Path], list[str]]:
    """Where the binaries ``names`` live, and those the cache does not hold as built (nothing is built)."""
    table = specs(names)
    try:
        absent = gobuild.missing(table, platform=platform, cache=cache)
    except DLChartsError as exc:
        raise ClusterError(str(exc)) from None
    return {spec.name: spec.path(cache, platform) for spec in table}, [spec.name for spec in absent]
