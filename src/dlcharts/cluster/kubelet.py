"""A real node's kubelet: it registers the node ``real-<i>`` with the API server and runs its pods on containerd.

It listens on the node's address only (:mod:`dlcharts.cluster.network`), with a client and serving certificate
signed by the cluster's CA; its root (pod volumes), config and kubeconfig live in the node's ``kubelet/`` folder, the
containers' logs in its ``pod-logs/``, and its pods' cgroups under its cgroup
(:mod:`dlcharts.cluster.cgroups`). Pods resolve names through the node's CoreDNS (:mod:`dlcharts.cluster.dns`).

Scheduling: the node is labelled ``dlcharts.io/node-type=real`` and tainted
``dlcharts.io/node-type=real:NoSchedule``, so only pods that tolerate the taint (and should select the
label) land on it; the fake GPU nodes keep every other pod (see :data:`TOLERATION`, :data:`NODE_SELECTOR`).

``start`` starts it and waits until the node is Ready; ``stop`` deletes the node's pods through the API (so their
sandboxes are torn down the normal way) and stops it; ``clean_up`` unmounts what is left under its folder (pod
volumes), and removes its container-log links and the host folders it made.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from dlcharts.cluster import containerd, dns
from dlcharts.cluster.node_layout import NodeLayout, node_name
from dlcharts.errors import ClusterError
from dlcharts.host import binaries as _bin
from dlcharts.host import pki, procs, system
from dlcharts.waiting import poll

#: the first real node (every cluster with real nodes has it)
NODE_NAME = node_name(0)
LABEL_KEY = "dlcharts.io/node-type"
LABEL_VALUE = "real"
#: what a pod adds to run on the real node
NODE_SELECTOR: dict[str, str] = {LABEL_KEY: LABEL_VALUE}
TOLERATION: dict[str, str] = {"key": LABEL_KEY, "operator": "Equal", "value": LABEL_VALUE, "effect": "NoSchedule"}
# The device-plugin socket and checkpoint directory: a path the kubelet hard-codes (it has no setting for it).
DEVICE_PLUGINS = Path("/var/lib/kubelet/device-plugins")
# Where the kubelet links each container's log: removed by clean_up() when the node made it and it is empty again.
LOG_LINKS = Path("/var/log/containers")
HOST_DIRS = (LOG_LINKS,)


def start(node: NodeLayout, kubeconfig: Path, timeout: float) -> None:
    """Start the kubelet of the cluster whose admin kubeconfig is ``kubeconfig``; wait until the node is Ready."""
    kdir = node.dir / "kubelet"
    kdir.mkdir(parents=True, exist_ok=True)
    ca, cert, key = _credentials(node)
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    kube = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": node.cluster, "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": node.name, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "kubelet", "context": {"cluster": node.cluster, "user": node.name}}],
        "current-context": "kubelet",
    }
    (kdir / "kubeconfig.yaml").write_text(yaml.safe_dump(kube, sort_keys=False))
    resolv = kdir / "resolv.conf"  # the host's search domains stay out of pods
    resolv.write_text(f"nameserver {node.network.node_ip}\n")
    (kdir / "config.yaml").write_text(yaml.safe_dump(_config(node, ca, cert, key, resolv), sort_keys=False))
    procs.spawn(
        "kubelet",
        [
            str(_bin.binary("kubelet", node.cache).path),
            f"--config={kdir / 'config.yaml'}",
            f"--kubeconfig={kdir / 'kubeconfig.yaml'}",
            f"--root-dir={kdir / 'root'}",
            f"--hostname-override={node.name}",
            f"--node-ip={node.network.node_ip}",
            f"--node-labels={LABEL_KEY}={LABEL_VALUE},dlcharts.io/node-pool={LABEL_VALUE}",
        ],
        node.pid_dir,
        node.logs_dir / "kubelet.log",
    )
    _wait_ready(node, kubeconfig, timeout)


def _credentials(node: NodeLayout) -> tuple[Path, Path, Path]:
    """A client + serving certificate for the kubelet (system:node:<name>, group system:nodes, with the
    node address as SAN), signed by the cluster's CA; returns (ca, cert, key)."""
    out = node.dir / "kubelet" / "pki"
    cert, key = out / "kubelet.crt", out / "kubelet.key"
    ca = pki.sign(node.state_dir, cert, key, f"/O=system:nodes/CN=system:node:{node.name}",
                  [f"IP:{node.network.node_ip}", f"DNS:{node.name}"], usages="clientAuth,serverAuth")  # fmt: skip
    return ca, cert, key


def _config(node: NodeLayout, ca: Path, cert: Path, key: Path, resolv: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # cgroup v1 hierarchy on this machine kind; kubelet 1.35 refuses v1 unless told
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{node.cgroup_name}",
        "address": node.network.node_ip,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": node.network.node_ip,
        "healthzPort": 10248,
        "tlsCertFile": str(cert),
        "tlsPrivateKeyFile": str(key),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDomain": dns.DOMAIN,
        "clusterDNS": [node.network.node_ip],
        "resolvConf": str(resolv),
        "containerRuntimeEndpoint": f"unix://{node.socket}",
        "podLogsDir": str(node.dir / "pod-logs"),
        "makeIPTablesUtilChains": False,
        "failSwapOn": False,
        "registerWithTaints": [{"key": LABEL_KEY, "value": LABEL_VALUE, "effect": "NoSchedule"}],
        # a shared CI disk may be fuller than the defaults allow; pods here are tiny
        "evictionHard": {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },  # fmt: skip
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "nodeStatusReportFrequency": "10s",
        "syncFrequency": "10s",
    }


def _wait_ready(node: NodeLayout, kubeconfig: Path, timeout: float) -> None:
    from kubernetes import client
    from kubernetes import config as kconfig

    log = node.logs_dir / "kubelet.log"
    api = kconfig.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with contextlib.closing(api):
        core: Any = client.CoreV1Api(api)

        def ready() -> bool:
            pid = node.pids().get("kubelet")
            if pid is None or not procs.alive(pid):
                raise ClusterError(f"kubelet exited; see {log}")
            found = core.read_node(node.name)
            return any(c.type == "Ready" and c.status == "True" for c in found.status.conditions or [])

        poll(ready, timeout, f"the real node {node.name} to be Ready (log {log})")


def stop(node: NodeLayout, kubeconfig: Path | None) -> None:
    """Delete the node's pods (when the API server still answers at ``kubeconfig``) and stop the kubelet. Safe when
    it does not run."""
    pid = node.pids().get("kubelet")
    if pid is None:
        return
    if kubeconfig is not None and kubeconfig.is_file():
        with contextlib.suppress(Exception):
            _drain(node, kubeconfig)
    procs.stop(pid, "kubelet")


def _drain(node: NodeLayout, kubeconfig: Path) -> None:
    """Delete the node's pods through the API and give the kubelet a moment to stop their sandboxes
    (that releases their addresses and network namespaces the normal way)."""
    from kubernetes import client
    from kubernetes import config as kconfig

    api = kconfig.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with contextlib.closing(api):
        core: Any = client.CoreV1Api(api)
        pods = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node.name}").items
        for pod in pods:
            with contextlib.suppress(Exception):
                core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
    if pods:
        deadline = time.monotonic() + 20
        while containerd.tasks(node) and time.monotonic() < deadline:
            time.sleep(0.5)


def clean_up(node: NodeLayout, made_dirs: list[str], made_device_plugins_dir: bool) -> None:
    """Unmount the pod volumes left under the kubelet's folder, drop its links to our container logs, and remove
    the host folders it made (when empty; the device-plugin folder once no kubelet runs on the machine)."""
    system.unmount(system.below(node.dir / "kubelet"))
    if LOG_LINKS.is_dir():
        ours = str(node.dir / "pod-logs")
        for link in LOG_LINKS.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(ours):
                    link.unlink()
    for made in HOST_DIRS:
        if str(made) in made_dirs:
            with contextlib.suppress(OSError):
                made.rmdir()
    kubelets = [p for p in procs.all_pids() if Path((procs.cmdline(p) or [""])[0]).name == "kubelet"]
    if made_device_plugins_dir and not [p for p in kubelets if procs.alive(p)]:
        shutil.rmtree(DEVICE_PLUGINS, ignore_errors=True)
        with contextlib.suppress(OSError):
            DEVICE_PLUGINS.parent.rmdir()  # /var/lib/kubelet, when nothing else is in it
