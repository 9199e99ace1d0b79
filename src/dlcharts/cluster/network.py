"""A real node's pod network: a network namespace of its own with a bridge, the CNI config containerd uses, and the
routes to the cluster's other real nodes.

The pods live in a network namespace of the node's own (``pods.netns``), on a Linux bridge ``dlc-<hash>`` there;
the host end of a veth pair, also named ``dlc-<hash>``, is the bridge's other port and holds the node's address
(the first of its part of the cluster's range, :mod:`dlcharts.cluster.node_layout`), where the kubelet and CoreDNS
listen. Pods get addresses from the node's part on veths (CNI ``bridge`` + ``host-local`` from Debian's
containernetworking-plugins, the bridge plugin run inside the namespace), and one route: the cluster's range
through the node address. The namespace is there so that NetworkPolicies are enforced on the node by a kube-router
of its own, whose iptables rules and ipsets are the namespace's alone (:mod:`dlcharts.cluster.netpol` says why).

Between nodes, this machine is the router, as the links between hosts would be: the host forwards what arrives on a
node's veth (``net.ipv4.conf.<veth>.forwarding``, that interface only; the machine-wide ``ip_forward`` stays as it
is) to the other nodes' parts of the range, on their connected routes. Two policy rules per node keep it at that:
from the node's veth, only the cluster's range is looked up (without the default route), and anything else is
refused (``prohibit``), so no pod packet is forwarded off the machine, nothing masquerades, and pods reach each
other, the node addresses (kubelet, CoreDNS), and nothing else. A packet from a pod on ``real-0`` to one on
``real-1`` leaves through ``real-0``'s namespace (its egress policies), crosses the host, and enters
``real-1``'s namespace (its ingress policies), where it would cross two hosts' firewalls in a real cluster.
The host's iptables are never written (kubelet ``makeIPTablesUtilChains: false``, no ``portmap``, no kube-proxy:
nothing here needs ClusterIP Services; pods find each other through headless Services in DNS).

``up`` makes the namespace, bridge and veth pair, the forwarding and the rules, and writes the CNI config; ``down``
unmounts the namespace (its rules, sets and pod veths go with it), deletes the veth pair and the node's policy
rules, and the CNI result caches libcni left on the host. :func:`isolate` and :func:`rejoin` take a node's pods
off the network between nodes and put them back (a node dropping off the network, for the fault tests).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
from pathlib import Path

from dlcharts.cluster import netpol
from dlcharts.cluster.node_layout import Network, NodeLayout
from dlcharts.errors import ClusterError
from dlcharts.host import system

CNI_BIN_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "loopback")
# libcni's result caches, a path it hard-codes (one file per pod, removed on CNI DEL)
CNI_RESULTS = Path("/var/lib/cni/results")


def check_free(network: Network) -> None:
    """Refuse a subnet that overlaps an address on another interface."""
    subnet = ipaddress.ip_network(network.subnet)
    out = system.run(["ip", "-o", "-4", "addr", "show"]).stdout
    for line in out.splitlines():
        fields = line.split()
        dev, addr = fields[1], ipaddress.ip_interface(fields[3])
        if dev != network.bridge and addr.ip in subnet:
            raise ClusterError(
                f"real_node_cidr {network.subnet} overlaps {addr} on {dev}; "
                "pick another range with ClusterConfig(real_node_cidr=...)"
            )


#: the priority of the policy rules of every node's veth (below the ``local`` table's 0, above ``main``'s 32766)
RULE_PRIORITY = 3200


def _rules(network: Network) -> list[list[str]]:
    """The node's policy rules, as ``ip rule`` arguments: its pods' packets are routed to the cluster's range
    only (the main table without its default route), and refused anywhere else."""
    iif = ["iif", network.bridge]
    return [
        ["pref", str(RULE_PRIORITY), *iif, "to", network.cluster_range, "lookup", "main", "suppress_prefixlength", "0"],
        ["pref", str(RULE_PRIORITY + 1), *iif, "prohibit"],
    ]


def up(node: NodeLayout) -> None:
    """The pods' namespace with its bridge, the veth pair whose host end holds the node address, the forwarding
    to the other nodes, and the CNI config that puts pods on that bridge."""
    _namespace_up(node)
    _route_between_nodes(node.network)
    _write_cni(node)


def _route_between_nodes(network: Network) -> None:
    _delete_rules(network)  # left by a crash
    for rule in _rules(network):
        system.run(["ip", "-4", "rule", "add", *rule])
    Path(f"/proc/sys/net/ipv4/conf/{network.bridge}/forwarding").write_text("1\n")


def _delete_rules(network: Network) -> None:
    _delete(_rules(network))


def _delete(rules: list[list[str]]) -> None:
    """Delete every copy of each of ``rules`` (``ip rule`` arguments); none there is fine."""
    for rule in rules:
        while system.run(["ip", "-4", "rule", "del", *rule], check=False).returncode == 0:
            pass


def _isolation_rules(network: Network) -> list[list[str]]:
    below = str(RULE_PRIORITY - 2)
    return [
        ["pref", below, "iif", network.bridge, "blackhole"],  # from its pods to other nodes
        ["pref", below, "iif", "lo", "to", network.subnet, "lookup", "main"],  # its own kubelet and CoreDNS
        ["pref", str(RULE_PRIORITY - 1), "to", network.subnet, "blackhole"],  # from other nodes to its pods
    ]


def isolate(network: Network) -> None:
    """Drop every packet between this node's pods and the other nodes' (the pods still reach their own node, and
    its kubelet keeps reporting: a node whose pod network failed while its control link did not)."""
    for rule in _isolation_rules(network):
        system.run(["ip", "-4", "rule", "add", *rule])


def rejoin(network: Network) -> None:
    """Undo :func:`isolate`. Safe when the node is not isolated."""
    _delete(_isolation_rules(network))


def _namespace_up(node: NodeLayout) -> None:
    br, ip, ns = node.network.bridge, node.network.node_ip, node.netns
    prefix = ipaddress.ip_network(node.network.subnet).prefixlen
    if system.run(["ip", "link", "show", br], check=False).returncode == 0:
        system.run(["ip", "link", "del", br])  # left by a crash, or a bridge of the layout before the namespace
    if str(ns) in system.mount_points():
        system.run(["umount", str(ns)])  # a namespace left by a crash: start from a fresh one
    ns.touch()
    system.run(["unshare", f"--net={ns}", "true"])
    netpol.in_netns(ns, "ip", "link", "set", "lo", "up")
    netpol.in_netns(ns, "ip", "link", "add", br, "type", "bridge")
    system.run(["ip", "link", "add", br, "type", "veth", "peer", "name", "node", "netns", str(ns)])
    netpol.in_netns(ns, "ip", "link", "set", "node", "master", br)
    for dev in ("node", br):
        netpol.in_netns(ns, "ip", "link", "set", dev, "up")
    # bridged pod traffic goes through the namespace's iptables (kube-router's rules), and the node address
    # is local there too (so kube-router admits the node's own traffic) but answered for only by the host
    netpol.in_netns(ns, "sh", "-c", "echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables")
    netpol.in_netns(ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/conf/all/arp_ignore")
    netpol.in_netns(ns, "ip", "addr", "add", f"{ip}/32", "dev", "lo")
    system.run(["ip", "addr", "replace", f"{ip}/{prefix}", "dev", br])
    system.run(["ip", "link", "set", br, "up"])


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
                # no gateway: the bridge keeps the node address we gave it and pods get no default route
                # (only the cluster's range, below), so no pod packet can leave the machine
                "isGateway": False,
                "isDefaultGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": node.network.subnet, "gateway": node.network.node_ip}]],
                    # the other real nodes' pods, through this node (the host routes between nodes)
                    "routes": [{"dst": node.network.cluster_range, "gw": node.network.node_ip}],
                    "dataDir": str(node.dir / "cni" / "ipam"),
                },
            }
        ],
    }
    (netd / "10-dlcharts.conflist").write_text(json.dumps(conf, indent=2) + "\n")


def down(node: NodeLayout) -> None:
    """Remove the namespace, the veth pair, the node's policy rules and its CNI result caches. Safe when none is
    there."""
    _delete_rules(node.network)
    rejoin(node.network)
    ns = str(node.netns)
    system.unmount(lambda point: point == ns)
    br = node.network.bridge
    if system.run(["ip", "link", "show", br], check=False).returncode == 0:
        for line in system.run(["ip", "-o", "link", "show", "master", br], check=False).stdout.splitlines():
            dev = line.split(":")[1].strip().split("@")[0]
            system.run(["ip", "link", "del", dev], check=False)
        system.run(["ip", "link", "del", br], check=False)
    for result in CNI_RESULTS.glob(f"dlcharts-{node.cluster}-*"):
        with contextlib.suppress(OSError):
            result.unlink()
    for empty in (CNI_RESULTS, CNI_RESULTS.parent):  # rmdir: only when nothing else is in them
        with contextlib.suppress(OSError):
            empty.rmdir()
