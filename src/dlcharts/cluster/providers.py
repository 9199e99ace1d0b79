"""Where the cluster tier runs: the embedded control plane (default), any cluster from a kubeconfig, or kind.

    with open_cluster("embedded") as cluster:     # or "kubeconfig" (kubeconfig=... or $KUBECONFIG), "kind"
        subprocess.run([helm, "install", ...], env=cluster.env())

kind needs a Docker engine. The project's own machines have none, so the kind provider is for users' machines
and CI runners with Docker; here it stops at once with a ClusterError that says so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from dlcharts.cluster.config import ClusterConfig
from dlcharts.cluster.embedded import ClusterAccess, EmbeddedCluster
from dlcharts.errors import ClusterError
from dlcharts.toolchain import cache_root

PROVIDERS = ("embedded", "kubeconfig", "kind")


@contextlib.contextmanager
def open_cluster(
    provider: str = "embedded", kubeconfig: str | None = None, name: str = "dlcharts"
) -> Iterator[ClusterAccess]:  # noqa: E501
    """A reachable cluster for the duration of the block; clusters this call started are stopped after it."""
    if provider == "embedded":
        with EmbeddedCluster(ClusterConfig(name=name)) as handle:
            yield handle
    elif provider == "kubeconfig":
        yield existing_cluster(kubeconfig)
    elif provider == "kind":
        with kind_cluster(name) as access:
            yield access
    else:
        raise ClusterError(f"unknown cluster provider {provider!r}; choose one of {', '.join(PROVIDERS)}")


def existing_cluster(kubeconfig: str | None) -> ClusterAccess:
    """A cluster named by a kubeconfig file (argument, else $KUBECONFIG, else ~/.kube/config), checked reachable."""
    candidates = [kubeconfig, os.environ.get("KUBECONFIG"), str(Path.home() / ".kube" / "config")]
    path = next((Path(c) for c in candidates if c), None)
    if path is None or not path.is_file():
        raise ClusterError(f"no kubeconfig at {path}; pass --dlcharts-kubeconfig PATH or set KUBECONFIG")
    access = ClusterAccess(name=path.stem, kubeconfig=path)
    from kubernetes import client

    try:
        with contextlib.closing(access.api_client()) as api:
            client.VersionApi(api).get_code()
    except Exception as exc:  # noqa: BLE001 - any failure to reach it means the same to the user
        raise ClusterError(f"the cluster in {path} is not reachable: {exc}") from None
    return access


@contextlib.contextmanager
def kind_cluster(name: str) -> Iterator[ClusterAccess]:
    """A kind cluster (Docker required), created for the block and deleted after it."""
    kind = shutil.which("kind")
    if kind is None:
        raise ClusterError("the kind provider needs the `kind` binary on PATH (go install sigs.k8s.io/kind@v0.30.0)")
    docker = shutil.which("docker")
    probe = subprocess.run([docker, "info"], capture_output=True, text=True, check=False) if docker else None
    if probe is None or probe.returncode != 0:
        raise ClusterError(
            "the kind provider needs a running Docker engine, and this machine has none "
            "(`docker info` failed). Use the embedded provider (the default) here."
        )
    kubeconfig = cache_root() / "kind" / f"{name}.kubeconfig"
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    create = [kind, "create", "cluster", "--name", name, "--kubeconfig", str(kubeconfig), "--wait", "180s"]
    proc = subprocess.run(create, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ClusterError(f"kind create cluster failed:\n{proc.stderr.strip()}")
    try:
        yield ClusterAccess(name=f"kind-{name}", kubeconfig=kubeconfig)
    finally:
        subprocess.run([kind, "delete", "cluster", "--name", name], capture_output=True, check=False)
