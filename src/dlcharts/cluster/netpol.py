"""NetworkPolicy enforcement on the real node: kube-router's firewall, alone, on the node's pod network.

Which implementation: kube-router (github.com/cloudnativelabs/kube-router/v2, built by
dlcharts cluster build, pinned in versions.env) in its firewall-only mode, which writes iptables rules and ipsets
(``--run-firewall --run-router=false --run-service-proxy=false``: no BGP, no IPVS, no CNI). The other candidate,
sigs.k8s.io/kube-network-policies, hands each new connection to a userspace verdict through an nftables ``queue``
rule, and this machine kind's kernel is built without CONFIG_NFT_QUEUE (``nft add rule ... queue num 100`` fails
with "No such file or directory"); everything kube-router needs (ip_set hash:ip/hash:net, xt_set, physdev,
addrtype, conntrack, mark, NFLOG, bridge netfilter) is built in.

Where it acts: kube-router owns the filter table it sees. Each sync saves the table, drops every KUBE-POD-FW-* and
KUBE-NWPLCY-* chain and every KUBE-SRC-*/KUBE-DST-* ipset it did not make, and restores it, so two kube-routers on
one network namespace delete each other's rules, and clusters do run side by side here (`make test` runs two,
and test_real_node starts a third). So the real node's pods live on a bridge inside a network namespace of the
node's own (:mod:`dlcharts.cluster.network`), whose iptables and ipsets belong to this kube-router alone, and the host's
are never written. kube-router itself runs on the host, where it reaches the API server on 127.0.0.1, and reaches
the namespace through the commands it runs: :data:`TOOLS` are found first in ``<cluster>/node/netpol/bin``, as
wrappers that run the host's tool inside the namespace (``nsenter --net=<namespace>``). ``cluster down`` stops it
and removes the namespace, and the rules and sets go with it.

Traffic from the node's address (the kubelet's probes, the host) counts as node-local, as on any kube-router node:
the address is also on the namespace's loopback (never answered for on the bridge, ``arp_ignore``), so the
namespace sees it as local (kube-router admits ``--src-type LOCAL``).

Flags beyond the mode: IPv4 only; the health and metrics ports off (it listens on nothing); the node name
``real-0``; the API server's default service range 10.0.0.0/24 (kwokctl sets none; kube-router insists on one
and only exempts it in the INPUT chain, which pod traffic here never crosses); a full resync every 30 s besides the
one every pod, namespace or NetworkPolicy change starts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from dlcharts.errors import ClusterError
from dlcharts.host import binaries as _bin
from dlcharts.host import procs
from dlcharts.waiting import poll

TOOLS = ("iptables", "iptables-save", "iptables-restore", "ipset")
SERVICE_RANGE = "10.0.0.0/24"
_POD_CHAIN = re.compile(r'destined to POD name:(\S+) namespace: (\S+) to chain (\S+)"')
_POLICY_RULE = re.compile(r'^-A (\S+) .*"run through nw policy (\S+)"')


def in_netns(netns: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` inside the network namespace mounted at ``netns``."""
    proc = subprocess.run(["nsenter", f"--net={netns}", *argv], capture_output=True, text=True, check=False, timeout=60)
    if check and proc.returncode != 0:
        raise ClusterError(f"`{' '.join(argv)}` in {netns} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc


def _write_wrappers(bindir: Path, netns: Path) -> None:
    bindir.mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        real = shutil.which(tool)
        if real is None:
            raise ClusterError(f"kube-router needs {tool}; install the Debian packages iptables and ipset")
        wrapper = bindir / tool
        wrapper.write_text(f'#!/bin/sh\nexec nsenter --net={netns} {real} "$@"\n')
        wrapper.chmod(0o755)


def start(node_dir: Path, logs_dir: Path, netns: Path, node_name: str, kubeconfig: Path, cache: Path) -> int:
    """Start kube-router for the node ``node_name`` on the pods' namespace ``netns``; return its pid once its
    chains are in place (its first sync)."""
    bindir = node_dir / "netpol" / "bin"
    _write_wrappers(bindir, netns)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}
    argv = [
        str(_bin.binary("kube-router", cache).path),
        f"--kubeconfig={kubeconfig}",
        f"--hostname-override={node_name}",
        "--run-firewall=true",
        "--run-router=false",
        "--run-service-proxy=false",
        "--run-loadbalancer=false",
        "--enable-cni=false",
        "--enable-ipv4=true",
        "--enable-ipv6=false",
        "--health-port=0",
        "--metrics-port=0",
        f"--service-cluster-ip-range={SERVICE_RANGE}",
        "--iptables-sync-period=30s",
    ]
    log = logs_dir / "kube-router.log"
    pid = procs.spawn("kube-router", argv, node_dir / "pids", log, env=env)

    def synced() -> bool:
        if not procs.alive(pid):
            raise ClusterError(f"kube-router exited; see {log}")
        return "-j KUBE-ROUTER-FORWARD" in in_netns(netns, "iptables-save", "-t", "filter", check=False).stdout

    poll(synced, 60, f"kube-router's first sync of the pods' firewall (log {log})", interval=0.3)
    return pid


def stop(node_dir: Path) -> None:
    """Stop the kube-router that :func:`start` started for ``node_dir``. Safe when it does not run; its rules
    and sets stay in the pods' namespace until that is removed (:func:`dlcharts.cluster.network.down`)."""
    pid = procs.pids(node_dir / "pids").get("kube-router")
    if pid is not None:
        procs.stop(pid, "kube-router")


def policies_by_pod(netns: Path) -> dict[tuple[str, str], set[str]]:
    """(namespace, pod) -> names of the NetworkPolicies kube-router now applies to that pod's ingress, read from
    the rules in ``netns`` (a pod it firewalls under no policy maps to an empty set)."""
    rules = in_netns(netns, "iptables-save", "-t", "filter").stdout.splitlines()
    chains: dict[str, tuple[str, str]] = {}
    for line in rules:
        if m := _POD_CHAIN.search(line):
            chains[m[3]] = (m[2], m[1])
    found: dict[tuple[str, str], set[str]] = {pod: set() for pod in chains.values()}
    for line in rules:
        if (m := _POLICY_RULE.search(line)) and m[1] in chains:
            found[chains[m[1]]].add(m[2])
    return found
