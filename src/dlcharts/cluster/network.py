"""The real node's pod network: a network namespace of its own with a bridge, and the CNI config containerd uses.

The pods live in a network namespace of the node's own (``pods.netns``), on a Linux bridge ``dlc-<hash>`` there;
the host end of a veth pair, also named ``dlc-<hash>``, is the bridge's other port and holds the node's address
(the first of ``ClusterConfig.real_node_cidr``), where the kubelet and CoreDNS listen. Pods get addresses from the
same /24 on veths (CNI ``bridge`` + ``host-local`` from Debian's containernetworking-plugins, the bridge plugin
run inside the namespace). Pods get no default route and nothing forwards or masquerades for them: they reach
each other and the node address (kubelet, CoreDNS), and nothing else. The namespace is there so that
NetworkPolicies are enforced on the node by a kube-router of its own, whose iptables rules and ipsets are the
namespace's alone (:mod:`dlcharts.cluster.netpol` says why). The host's iptables are never written (kubelet
``makeIPTablesUtilChains: false``, no ``portmap``, no kube-proxy: nothing here needs ClusterIP Services; pods
find each other through headless Services in DNS).

``up`` makes the namespace, bridge and veth pair and writes the CNI config; ``down`` unmounts the namespace (its
rules, sets and pod veths go with it), deletes the veth pair and the CNI result caches libcni left on the host.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
from pathlib import Path

from dlcharts.cluster import host, netpol
from dlcharts.cluster.node_layout import Network, NodeLayout
from dlcharts.errors import ClusterError

CNI_BIN_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "loopback")
# libcni's result caches, a path it hard-codes (one file per pod, removed on CNI DEL)
CNI_RESULTS = Path("/var/lib/cni/results")


def check_free(network: Network) -> None:
    """Refuse a subnet that overlaps an address on another interface."""
    subnet = ipaddress.ip_network(network.subnet)
    out = host.run(["ip", "-o", "-4", "addr", "show"]).stdout
    for line in out.splitlines():
        fields = line.split()
        dev, addr = fields[1], ipaddress.ip_interface(fields[3])
        if dev != network.bridge and addr.ip in subnet:
            raise ClusterError(
                f"real_node_cidr {network.subnet} overlaps {addr} on {dev}; "
                "pick another range with ClusterConfig(real_node_cidr=...)"
            )


def up(node: NodeLayout) -> None:
    """The pods' namespace with its bridge, the veth pair whose host end holds the node address, and the CNI
    config that puts pods on that bridge."""
    _namespace_up(node)
    _write_cni(node)


def _namespace_up(node: NodeLayout) -> None:
    br, ip, ns = node.network.bridge, node.network.node_ip, node.netns
    prefix = ipaddress.ip_network(node.network.subnet).prefixlen
    if host.run(["ip", "link", "show", br], check=False).returncode == 0:
        host.run(["ip", "link", "del", br])  # left by a crash, or a bridge of the layout before the namespace
    if str(ns) in host.mount_points():
        host.run(["umount", str(ns)])  # a namespace left by a crash: start from a fresh one
    ns.touch()
    host.run(["unshare", f"--net={ns}", "true"])
    netpol.in_netns(ns, "ip", "link", "set", "lo", "up")
    netpol.in_netns(ns, "ip", "link", "add", br, "type", "bridge")
    host.run(["ip", "link", "add", br, "type", "veth", "peer", "name", "node", "netns", str(ns)])
    netpol.in_netns(ns, "ip", "link", "set", "node", "master", br)
    for dev in ("node", br):
        netpol.in_netns(ns, "ip", "link", "set", dev, "up")
    # bridged pod traffic goes through the namespace's iptables (kube-router's rules), and the node address
    # is local there too (so kube-router admits the node's own traffic) but answered for only by the host
    netpol.in_netns(ns, "sh", "-c", "echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables")
    netpol.in_netns(ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/conf/all/arp_ignore")
    netpol.in_netns(ns, "ip", "addr", "add", f"{ip}/32", "dev", "lo")
    host.run(["ip", "addr", "replace", f"{ip}/{prefix}", "dev", br])
    host.run(["ip", "link", "set", br, "up"])


def _write_cni(node: NodeLayout) -> None:
    netd, bindir = node.dir / "cni" / "net.d", node.dir / "cni" / "bin"
    netd.mkdir(parents=True, exist_ok=True)
    bindir.mkdir(parents=True, exist_ok=True)
    # the bridge plugin makes each pod's veth in the namespace it runs in and attaches it to the bridge there
    (bindir / "bridge").write_text(f'#!/bin/sh\nexec nsenter --net={node.netns} {CNI_BIN_DIR / "bridge"} "$@"\n')
    (bindir / "bridge").chmod(0o755)
    for plugin in CNI_PLUGINS[1:]:
        (bindir / plugin).unlink(missing_ok=True)
        (bindir / plugin).symlink_to(CNI_BIN_DIR / plugin)
    conf = {
        "cniVersion": "0.4.0",
        "name": f"dlcharts-{node.cluster}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": node.network.bridge,
                # no gateway: the bridge keeps the node address we gave it, pods get no default route
                # and ip_forward is left alone, so no pod packet can leave the machine
                "isGateway": False,
                "isDefaultGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": node.network.subnet, "gateway": node.network.node_ip}]],
                    "dataDir": str(node.dir / "cni" / "ipam"),
                },
            }
        ],
    }
    (netd / "10-dlcharts.conflist").write_text(json.dumps(conf, indent=2) + "\n")


def down(node: NodeLayout) -> None:
    """Remove the namespace, the veth pair and the node's CNI result caches. Safe when none is there."""
    ns = str(node.netns)
    host.unmount(lambda point: point == ns)
    br = node.network.bridge
    if host.run(["ip", "link", "show", br], check=False).returncode == 0:
        for line in host.run(["ip", "-o", "link", "show", "master", br], check=False).stdout.splitlines():
            dev = line.split(":")[1].strip().split("@")[0]
            host.run(["ip", "link", "del", dev], check=False)
        host.run(["ip", "link", "del", br], check=False)
    for result in CNI_RESULTS.glob(f"dlcharts-{node.cluster}-*"):
        with contextlib.suppress(OSError):
            result.unlink()
    for empty in (CNI_RESULTS, CNI_RESULTS.parent):  # rmdir: only when nothing else is in them
        with contextlib.suppress(OSError):
            empty.rmdir()
