"""Cluster DNS for the real node: CoreDNS as a host process, serving cluster.local from the API server.

CoreDNS (built by dlcharts cluster build from the Go module proxy) binds port 53 on the node's bridge
address only, which every pod on the real node reaches over the bridge; the kubelet's ``clusterDNS`` points
there. It answers for ``cluster.local`` and the reverse zones with the ``kubernetes`` plugin (Services,
headless-Service records ``<hostname>.<subdomain>.<ns>.svc.cluster.local`` of pods that set ``hostname``
and ``subdomain``, as Indexed Job pods do) and forwards nothing: a name outside the cluster gets no answer
from upstream, so no DNS query leaves the machine.
"""

from __future__ import annotations

import random
import socket
import struct
from pathlib import Path

from dlcharts.host import binaries as _bin
from dlcharts.host import procs
from dlcharts.waiting import poll

DOMAIN = "cluster.local"


def corefile(bind_ip: str, kubeconfig: Path) -> str:
    return f"""# Written by dlcharts.cluster.dns: the real node's cluster DNS. Nothing is forwarded off the machine.
{DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {bind_ip}
    errors
    kubernetes {DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        ttl 5
    }}
    loadbalance
}}
# Any other name (a search-path try such as <svc>.default., or the internet): NXDOMAIN, answered here.
.:53 {{
    bind {bind_ip}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def start(node_dir: Path, logs_dir: Path, bind_ip: str, kubeconfig: Path, cache: Path) -> int:
    """Start CoreDNS for the cluster whose admin kubeconfig is ``kubeconfig``; wait until it answers."""
    conf = node_dir / "coredns" / "Corefile"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(corefile(bind_ip, kubeconfig))
    binary = _bin.binary("coredns", cache).path
    pid = procs.spawn(
        "coredns", [str(binary), "-conf", str(conf)], node_dir / "pids", logs_dir / "coredns.log", cwd=conf.parent
    )
    poll(
        lambda: query(bind_ip, f"kubernetes.default.svc.{DOMAIN}") is not None,
        60,
        f"CoreDNS on {bind_ip}:53 to answer for kubernetes.default.svc.{DOMAIN} (log {logs_dir / 'coredns.log'})",
        interval=0.3,
    )
    return pid


def stop(node_dir: Path) -> None:
    """Stop the CoreDNS that :func:`start` started for ``node_dir``. Safe when it does not run."""
    pid = procs.pids(node_dir / "pids").get("coredns")
    if pid is not None:
        procs.stop(pid, "coredns")


def query(server: str, name: str, timeout: float = 1.0) -> list[str] | None:
    """The A records CoreDNS at ``server``:53 gives for ``name`` (an empty list for NXDOMAIN); None when it
    does not answer. Enough of DNS for a readiness check, nothing more."""
    ident = random.randrange(1 << 16)
    packet = struct.pack(">HHHHHH", ident, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        packet += bytes([len(label)]) + label.encode()
    packet += b"\x00" + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.sendto(packet, (server, 53))
            data, _ = sock.recvfrom(4096)
        except OSError:
            return None
    if len(data) < 12 or struct.unpack(">H", data[:2])[0] != ident:
        return None
    flags, _, answers = struct.unpack(">HHH", data[2:8])
    if flags & 0xF not in (0, 3):  # NOERROR or NXDOMAIN: CoreDNS is serving the zone
        return None
    pos = len(packet)  # the answer section follows the echoed question, which is ours byte for byte
    found = []
    for _ in range(answers):
        pos = _skip_name(data, pos)
        rtype, _, _, length = struct.unpack(">HHIH", data[pos : pos + 10])
        pos += 10
        if rtype == 1 and length == 4:
            found.append(".".join(str(b) for b in data[pos : pos + 4]))
        pos += length
    return found


def _skip_name(data: bytes, pos: int) -> int:
    while True:
        length = data[pos]
        if length == 0:
            return pos + 1
        if length & 0xC0 == 0xC0:
            return pos + 2
        pos += 1 + length
