"""The control plane's pinned binaries: where they live, whether they are there, and how to build them.

Versions are pinned in ``dlcharts/versions.env`` (dlcharts.pins), which ``ci/build-control-plane.sh`` sources
too. Binaries live in ``$DLCHARTS_CACHE/bin/<name>-<version>/<name>`` (``DLCHARTS_CACHE`` defaults to
``~/.cache/dlcharts``), outside the repository, and are built from Go modules by that script.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

from dlcharts import pins
from dlcharts.errors import ClusterError, DLChartsError
from dlcharts.native import build_command as build_command
from dlcharts.native import build_script as build_script
from dlcharts.pins import OLDEST as OLDEST
from dlcharts.pins import VERSIONS_FILE
from dlcharts.toolchain import cache_root

#: binary name -> key of its version in versions.env
_COMPONENTS: dict[str, str] = {
    "kube-apiserver": "KUBERNETES_VERSION",
    "kube-controller-manager": "KUBERNETES_VERSION",
    "kube-scheduler": "KUBERNETES_VERSION",
    "kwok": "KWOK_VERSION",
    "kwokctl": "KWOK_VERSION",
    "etcd": "ETCD_VERSION",
    # the real node (dlcharts.cluster.node, dlcharts.cluster.dns)
    "kubelet": "KUBERNETES_VERSION",
    "coredns": "COREDNS_VERSION",
    "kube-router": "KUBE_ROUTER_VERSION",  # dlcharts.cluster.netpol
}
BINARY_NAMES: tuple[str, ...] = tuple(_COMPONENTS)
REAL_NODE_BINARIES: tuple[str, ...] = ("kubelet", "coredns", "kube-router")
CONTROL_PLANE_BINARIES: tuple[str, ...] = tuple(n for n in BINARY_NAMES if n not in REAL_NODE_BINARIES)
#: the binaries that follow the cluster's Kubernetes version; at the oldest supported minor they are NAME@oldest
#: (``ci/build-control-plane.sh oldest``), in bin/NAME-<OLDEST_KUBERNETES_VERSION>/NAME
VERSIONED_BINARIES: tuple[str, ...] = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
_COMPONENTS.update({name + OLDEST: "OLDEST_KUBERNETES_VERSION" for name in VERSIONED_BINARIES})
#: the add-ons' binaries (dlcharts.cluster.addons), built on request: ``ci/build-control-plane.sh addons``
ADDON_BINARIES: tuple[str, ...] = ("kueue", "scheduler-plugins", "scheduler-plugins-controller")
_COMPONENTS.update({"kueue": "KUEUE_VERSION", "scheduler-plugins": "SCHEDULER_PLUGINS_VERSION",
                    "scheduler-plugins-controller": "SCHEDULER_PLUGINS_VERSION"})  # fmt: skip


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    """versions.env as a dict, with a pin for every binary of the cluster."""
    try:
        return pins.read_versions(path, required=tuple(_COMPONENTS.values()))
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
#: the Kubernetes versions an embedded cluster can run: the pinned one (default) and the oldest the charts support
CLUSTER_VERSIONS: tuple[str, ...] = (KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION)


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


def cache_dir() -> Path:
    """``$DLCHARTS_CACHE`` or ``~/.cache/dlcharts``: binaries under bin/, clusters under clusters/."""
    return cache_root()


@dataclasses.dataclass(frozen=True)
class Binary:
    name: str
    version: str
    path: Path

    @property
    def present(self) -> bool:
        return self.path.is_file() and os.access(self.path, os.X_OK)


def binary(name: str, cache: Path | None = None) -> Binary:
    """The pinned binary ``name`` (one of BINARY_NAMES, or a VERSIONED_BINARIES name + OLDEST) and where it lives
    in the cache."""
    if name not in _COMPONENTS:
        raise ClusterError(f"unknown control-plane binary {name!r}; known: {', '.join(_COMPONENTS)}")
    version = VERSIONS[_COMPONENTS[name]]
    root = cache if cache is not None else cache_dir()
    base = name.removesuffix(OLDEST)
    return Binary(name, version, root / "bin" / f"{base}-{version}" / base)


def pinned_binaries(cache: Path | None = None) -> dict[str, Binary]:
    return {name: binary(name, cache) for name in BINARY_NAMES}


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
            f"build them once (about 13 minutes on 2 cores, 10-20 more for kubelet and CoreDNS; then cached)"
            f" with:\n"
            f"  {build_command()}{''.join(sorted(_build_groups(missing)))}\n"
            f"or from Python: dlcharts.cluster.build_binaries()"
        )
    return {name: b.path for name, b in found.items()}


def _build_groups(missing: list[Binary]) -> set[str]:
    """The build script's group arguments that build ``missing`` (" oldest", " addons"); none for the default set."""
    groups = {" oldest" for b in missing if b.name.endswith(OLDEST)}
    return groups | {" addons" for b in missing if b.name in ADDON_BINARIES}


def build_binaries(names: list[str] | None = None, *, log: Path | None = None) -> dict[str, Path]:
    """Build (or reuse) the pinned binaries with ci/build-control-plane.sh; return their paths.

    Output goes to ``log`` when given (else it is inherited). Raises ClusterError if the build fails.
    """
    script = build_script()
    cmd = ["bash", str(script), *(names or [])]
    env = dict(os.environ)
    env.setdefault("DLCHARTS_CACHE", str(cache_dir()))
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as fh:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=fh, env=env, check=False)
    else:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, env=env, check=False)
    if proc.returncode != 0:
        where = f"; see {log}" if log is not None else ""
        raise ClusterError(f"{script} failed with exit code {proc.returncode}{where}")
    paths: dict[str, Path] = {}
    for line in proc.stdout.decode().splitlines():
        name, _, path = line.partition(" ")
        if name in _COMPONENTS and path:
            paths[name] = Path(path)
    return paths
