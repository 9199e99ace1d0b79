"""A real node's first step, ``record``: ``node.json`` (:attr:`NodeLayout.state_file`), written before anything else
starts, says what a stop must undo (the network, the host folders the start is about to make, the versions); its
clean-up, the node's last, unmounts what is left under the node's folder and drops its pid files."""

from __future__ import annotations

import contextlib
import json
import shutil

from dlcharts.cluster import containerd, kubelet
from dlcharts.cluster.node_layout import NodeLayout
from dlcharts.errors import ClusterError
from dlcharts.host import binaries as _bin
from dlcharts.host import system


def record(node: NodeLayout) -> dict[str, str]:
    """Write ``node.json``; the versions the node runs."""
    node.dir.mkdir(parents=True, exist_ok=True)
    versions = {
        **containerd.versions(),
        "kubelet": _bin.KUBERNETES_VERSION,
        "coredns": _bin.COREDNS_VERSION,
        "kube-router": _bin.KUBE_ROUTER_VERSION,
    }
    doc = {
        "bridge": node.network.bridge,
        "subnet": node.network.subnet,
        "cluster_range": node.network.cluster_range,
        # whether stop() may remove kubelet's hard-coded device-plugin directory
        "made_device_plugins_dir": not kubelet.DEVICE_PLUGINS.exists(),
        "made_dirs": [str(d) for d in (*kubelet.HOST_DIRS, *containerd.HOST_DIRS) if not d.exists()],
        **versions,
    }
    node.state_file.write_text(json.dumps(doc, indent=2) + "\n")
    return versions


def made_dirs(node: NodeLayout) -> list[str]:
    """The host folders the start recorded it made (kubelet's and containerd's): their clean-ups remove them."""
    made = node.recorded().get("made_dirs", [])
    return [str(d) for d in made] if isinstance(made, list) else []


def forget(node: NodeLayout) -> None:
    """The last clean-up: unmount anything still mounted under the node's folder (``real-0``: under the
    cluster's, the other nodes' folders aside, which may still run when ``real-0`` alone is restored) and drop
    the pid files."""
    if node.index == 0:
        others = [f"{node.state_dir / f'node-{i}'}/" for i in NodeLayout.indexes_on_disk(node.state_dir) if i]
        cluster = system.below(node.state_dir)
        left = system.unmount(lambda point: cluster(point) and not point.startswith(tuple(others)))
    else:
        left = system.unmount(system.below(node.dir))
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(node.pid_dir)
    if left:
        raise ClusterError(f"could not unmount {', '.join(left)}")
