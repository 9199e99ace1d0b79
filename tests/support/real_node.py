"""Pods for the embedded cluster's real node, and what a process on the host listens on."""

from __future__ import annotations

import collections
import ipaddress
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dlcharts.cluster import node

RESTRICTED = {
    "runAsNonRoot": True,
    "runAsUser": 1000,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def real_pod_spec(image: str, script: str, **extra: Any) -> dict[str, Any]:
    """A pod spec for the real node that passes Pod Security `restricted` and runs ``sh -c script``."""
    container: dict[str, Any] = {
        "name": "main",
        "image": image,
        "command": ["sh", "-c", script],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
        "securityContext": dict(RESTRICTED),
    }
    container.update(extra.pop("container", {}))
    return {
        "restartPolicy": "Never",
        "nodeSelector": dict(node.NODE_SELECTOR),
        "tolerations": [dict(node.TOLERATION)],
        "terminationGracePeriodSeconds": 1,
        "containers": [container],
        **extra,
    }


def listening_addresses(pids: set[int]) -> set[str]:
    """host:port of every listening TCP socket owned by ``pids`` (from /proc)."""
    inodes: set[str] = set()
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        for fd in fd_dir.iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found: set[str] = set()
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            host_hex, port_hex = local.split(":")
            found.add(f"{_decode_host(host_hex, v6)}:{int(port_hex, 16)}")
    return found


def _decode_host(hex_host: str, v6: bool) -> str:
    raw = bytes.fromhex(hex_host)
    if not v6:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    addr = ipaddress.IPv6Address(words)
    if addr.ipv4_mapped:
        return str(addr.ipv4_mapped)
    return f"[{addr}]"


def assert_spread(pods: Iterable[Any], cluster: Any) -> None:
    """Each role's pods (``run.PodOutcome``s, grouped by their Job) ran on real nodes, on as many different ones as
    the cluster has (up to their number): with several real nodes, `dlcharts run`'s spread put the ranks of one job
    on different hosts, so their traffic crossed nodes."""
    names = [n["name"] for n in cluster.real_nodes]
    by_job: dict[str, list[str]] = collections.defaultdict(list)
    for pod in pods:
        by_job[pod.owner].append(pod.node)
    for job, nodes in by_job.items():
        assert set(nodes) <= set(names), f"{job}: pods on {nodes}, not only on the real nodes {names}"
        assert len(set(nodes)) == min(len(nodes), len(names)), f"{job}: pods on {nodes}, not spread over {names}"
