"""The real node's container runtime: a containerd of its own (with runc), never the system's.

Its config, state and socket live in ``<cluster>/node/containerd/``, its root (the image store) in
``$DLCHARTS_CACHE/node-images/<name>`` (:mod:`dlcharts.cluster.node_layout`); it pulls from the cluster's registry
over plain HTTP through a ``hosts.toml`` of its own, and its CRI plugin runs pods with runc (state in
``node/runc/``) on the CNI network of :mod:`dlcharts.cluster.network`.

``start`` writes the config and starts it (removing containers a node that did not stop cleanly left in the image
store); ``stop`` kills every task, removes every container (the image store keeps images only), stops containerd
and kills the runc shims it left; ``clean_up`` unmounts what is left under its folder (container root file
systems, sandbox namespaces and /dev/shm) and removes the host folders it made.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

from dlcharts.cluster import node_registry
from dlcharts.cluster.node_layout import NodeLayout
from dlcharts.errors import ClusterError
from dlcharts.host import procs, system
from dlcharts.waiting import poll

SHIM = "containerd-shim-runc-v2"
# Directories containerd's shims create on first use (their sockets): removed by clean_up() when the node made
# them and they are empty again.
HOST_DIRS = (Path("/run/containerd/s"), Path("/run/containerd"))
# Unix sockets take at most 107 bytes; containerd adds ".ttrpc" to its socket path.
_MAX_SOCKET = 100


def check(node: NodeLayout) -> None:
    """Refuse a socket path too long for a Unix socket."""
    if len(str(node.socket)) + len(".ttrpc") > _MAX_SOCKET:
        raise ClusterError(
            f"containerd's socket path {node.socket} is too long for a Unix socket; "
            "set DLCHARTS_CACHE to a shorter directory"
        )


def versions() -> dict[str, str]:
    """The first lines of ``containerd --version`` and ``runc --version``."""

    def first_line(cmd: list[str]) -> str:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        return (proc.stdout or proc.stderr).strip().splitlines()[0] if (proc.stdout or proc.stderr).strip() else "?"

    return {"containerd": first_line(["containerd", "--version"]), "runc": first_line(["runc", "--version"])}


def start(node: NodeLayout, images: node_registry.NodeImages) -> None:
    """Write containerd's config (sandbox image ``images.pause``, pulls from ``images.registry``) and start it."""
    root = node.dir / "containerd"
    # pulls from the cluster's registry go over plain HTTP (only this host; nothing else is configured)
    hosts = root / "certs.d" / images.registry
    hosts.mkdir(parents=True, exist_ok=True)
    (hosts / "hosts.toml").write_text(
        f'server = "http://{images.registry}"\n\n'
        f'[host."http://{images.registry}"]\n  capabilities = ["pull", "resolve"]\n'
    )
    config = f"""# Written by dlcharts.cluster.containerd: this cluster's own containerd.
version = 2
root = "{node.image_store}"
state = "{root / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{node.socket}"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{root / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{images.pause}"
  # containerd here lacks CAP_SYS_RESOURCE: without this, runc fails to lower oom_score_adj
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "{node.dir / "runc"}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{node.dir / "cni" / "bin"}"
    conf_dir = "{node.dir / "cni" / "net.d"}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{root / "certs.d"}"
"""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.toml").write_text(config)
    _spawn(node, root / "config.toml")
    if _containers(node):  # left in the image store by a node that did not stop cleanly
        _remove_containers(node)
        procs.stop(node.pids()["containerd"], "containerd")  # so that its CRI plugin forgets them too
        _spawn(node, root / "config.toml")


def _spawn(node: NodeLayout, config: Path) -> None:
    log = node.logs_dir / "containerd.log"
    procs.spawn("containerd", ["containerd", "--config", str(config)], node.pid_dir, log)
    poll(
        lambda: (
            node.socket.is_socket()
            and system.run(["ctr", "--address", str(node.socket), "version"], check=False).returncode == 0
        ),
        60,
        f"containerd to serve {node.socket} (log {log})",
        interval=0.2,
    )


def stop(node: NodeLayout) -> None:
    """Kill every task, remove every container, stop containerd and kill the shims it left. Safe when nothing
    runs."""
    pid = node.pids().get("containerd")
    if pid is not None:
        if node.socket.is_socket() and procs.alive(pid):
            _kill_tasks(node)
            _remove_containers(node)
        procs.stop(pid, "containerd")
    shims = {p for p in procs.all_pids() if is_shim_of(node, p)}
    procs.kill(procs.children(shims) | shims)


def clean_up(node: NodeLayout, made_dirs: list[str]) -> None:
    """Unmount what is left under containerd's folder and remove the host folders it made (when empty)."""
    system.unmount(system.below(node.dir / "containerd"))
    for made in HOST_DIRS:
        if str(made) in made_dirs:
            with contextlib.suppress(OSError):
                made.rmdir()


def tasks(node: NodeLayout) -> list[str]:
    """The running tasks (containers' processes) of the Kubernetes namespace."""
    return [t for t in _ctr(node, "tasks", "ls", "-q").stdout.split() if t]


def _ctr(node: NodeLayout, *args: str) -> subprocess.CompletedProcess[str]:
    return system.run(["ctr", "--address", str(node.socket), "-n", "k8s.io", *args], check=False, timeout=30)


def _containers(node: NodeLayout) -> list[str]:
    return [c for c in _ctr(node, "containers", "ls", "-q").stdout.split() if c]


def _remove_containers(node: NodeLayout) -> None:
    """Remove every container's record (their tasks are gone): the image store keeps images only."""
    if ids := _containers(node):
        _ctr(node, "containers", "rm", *ids)


def _kill_tasks(node: NodeLayout) -> None:
    for task in tasks(node):
        _ctr(node, "tasks", "kill", "--all", "--signal", "SIGKILL", task)
    deadline = time.monotonic() + 10
    for task in tasks(node):
        while _ctr(node, "tasks", "delete", task).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.2)


def is_shim_of(node: NodeLayout, pid: int) -> bool:
    """Whether ``pid`` is a containerd shim of ``node``'s containerd."""
    argv = procs.cmdline(pid)
    return bool(argv) and Path(argv[0]).name == SHIM and str(node.socket) in argv
