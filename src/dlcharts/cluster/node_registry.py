"""The real node's images, served by the cluster's own registry on 127.0.0.1: the kubelet pulls from there, as
a user's cluster pulls from a mirror.

Each cluster with a real node owns one registry (:class:`dlcharts.host.registry.Registry`, distribution v3)
whose config, log, pid and storage live under ``$DLCHARTS_CACHE/registry/clusters/<name>/``. ``cluster up``
starts it (or reuses it when it still runs from an earlier start of that cluster), and ``cluster down`` stops
it; its storage stays, so the next ``up`` pushes nothing new. It is not the registry of ``dlcharts registry
up`` (``$DLCHARTS_CACHE/registry/``): two clusters, or a cluster and that registry, never share a process, so
stopping one never takes images away from another. Its port is a free one, remembered in its ``state.json``
(``$DLCHARTS_REGISTRY_PORT`` is for ``dlcharts registry`` only).

Images, all made with kept tools (no hand-written OCI):

``<registry>/busybox:1.37.0``
    the helper image of :mod:`dlcharts.images` (mmdebstrap + umoci, cached by content: a no-op when
    cached), pushed with ``crane push``. It runs as user 1000:1000.
``<registry>/pause:busybox-1.37.0``
    the sandbox (pause) image: ``crane mutate --cmd /usr/bin/sleep,infinity`` of that busybox image, so it
    shares its layers (the node pulls them once) and its process sleeps until the sandbox is killed.

containerd pulls over plain HTTP from ``127.0.0.1:<port>`` through a ``hosts.toml`` the node writes
(``node/containerd/certs.d/``), not through any system-wide registry setting.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

from dlcharts.errors import ClusterError
from dlcharts.host.registry import Registry, require_tool

HELPER = "busybox"
PAUSE_REPOSITORY = "pause"
PAUSE_CMD = ("/usr/bin/sleep", "infinity")


@dataclasses.dataclass(frozen=True)
class NodeImages:
    """Where the real node's images are: ``registry`` is ``127.0.0.1:<port>``; references carry the tag, and
    the digests are the manifests' in the registry (what a pulled container's ``imageID`` names)."""

    registry: str
    busybox: str
    busybox_digest: str
    pause: str
    pause_digest: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def registry_for(cluster: str, cache: Path) -> Registry:
    """The registry owned by cluster ``cluster`` (state under ``<cache>/registry/clusters/<cluster>``)."""
    return Registry(cache / "registry" / "clusters" / cluster, use_env_port=False)


def ensure(cluster: str, cache: Path) -> NodeImages:
    """Start (or reuse) the cluster's registry, build the helper image (cached), push it and derive the pause
    image from it; return the references. Tool output goes to ``<cache>/images/logs/busybox.log``."""
    from dlcharts.errors import ImageError
    from dlcharts.images.build import Builder
    from dlcharts.images.definitions import IMAGES

    address = registry_for(cluster, cache).start().address
    helper = IMAGES[HELPER]
    try:
        builder = Builder(cache, say=lambda line: print(f"[cluster {cluster}] {line}", file=sys.stderr))
        pushed = builder.push(builder.build(helper), address)
    except ImageError as exc:
        raise ClusterError(f"the real node's image {helper.reference}: {exc}") from exc
    busybox, _, busybox_digest = pushed.partition("@")
    pause = f"{address}/{PAUSE_REPOSITORY}:{helper.name}-{helper.tag}"
    _crane(cache, "mutate", busybox, "--cmd", ",".join(PAUSE_CMD), "--tag", pause)
    return NodeImages(
        registry=address,
        busybox=busybox,
        busybox_digest=busybox_digest,
        pause=pause,
        pause_digest=digest(pause, cache),
    )


def digest(reference: str, cache: Path) -> str:
    """The manifest digest the registry serves for ``reference`` (``crane digest``)."""
    return _crane(cache, "digest", reference).strip()


def stop(cluster: str, cache: Path) -> bool:
    """Stop the cluster's registry (its storage stays); True when it was running."""
    reg = registry_for(cluster, cache)
    return reg.root.is_dir() and reg.stop()  # no folder: never started (stop() would make one)


def _crane(cache: Path, *args: str) -> str:
    crane = require_tool("crane", cache)
    # crane reads registry credentials from ~/.docker; the local registry needs none
    env = {"DOCKER_CONFIG": "/nonexistent", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(crane), *args], capture_output=True, text=True, env=env, check=False, timeout=300)
    if proc.returncode != 0:
        raise ClusterError(f"`crane {' '.join(args)}` failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout
