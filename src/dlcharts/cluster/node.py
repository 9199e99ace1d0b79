"""The embedded cluster's one real node: containerd + runc + CNI bridge + kubelet on this machine.

Everything it owns lives under ``<cluster>/node/`` (``<cluster>`` is ``$DLCHARTS_CACHE/clusters/<name>``):

    containerd/config.toml, state/, containerd.sock          containerd with its own config, never the
                                                             system's /etc/containerd or /var/lib/containerd;
                                                             its root is the image store below
    containerd/certs.d/127.0.0.1:<port>/hosts.toml           plain HTTP to the cluster's registry
    runc/                      runc's state (the runc shim's ``Root``)
    kubelet/                   kubelet --root-dir (pod volumes are mounted here), config, kubeconfig, cert
    pod-logs/                  container logs (kubelet ``podLogsDir``)
    cni/net.d/, cni/ipam/      the CNI network config and host-local's address leases
    cni/bin/                   the plugins containerd runs: ``bridge`` enters the pods' network namespace first
    pods.netns                 the pods' network namespace (a mount of its nsfs file)
    netpol/bin/                kube-router's iptables and ipset, entering that namespace (dlcharts.cluster.netpol)
    pids/                      containerd.pid, kubelet.pid, coredns.pid, kube-router.pid
and logs in ``<cluster>/logs/{containerd,kubelet,coredns,kube-router}.log`` beside the control plane's.

The node's image store, containerd's root (content, unpacked image snapshots, metadata), is
``$DLCHARTS_CACHE/node-images/<name>``, outside the cluster's folder: it stays when the cluster stops, so the next
node of that name starts with the images it had (pulling and unpacking the five framework images takes 139 s on
an idle machine, 2026-11-25). Containers are removed from it when the node stops; delete the folder to reclaim
the space.

Network: the pods live in a network namespace of the node's own (``pods.netns``), on a Linux bridge
``dlc-<hash>`` there; the host end of a veth pair, also named ``dlc-<hash>``, is the bridge's other port and holds
the node's address (the first of ``ClusterConfig.real_node_cidr``), where the kubelet and CoreDNS listen. Pods
get addresses from the same /24 on veths (CNI ``bridge`` + ``host-local`` from Debian's
containernetworking-plugins, the bridge plugin run inside the namespace). Pods get no default route and nothing
forwards or masquerades for them: they reach each other and the node address (kubelet, CoreDNS), and nothing
else. The namespace is there so that NetworkPolicies are enforced on the node by a kube-router of its own, whose
iptables rules and ipsets are the namespace's alone (:mod:`dlcharts.cluster.netpol` says why). The host's
iptables are never written (kubelet ``makeIPTablesUtilChains: false``, no ``portmap``, no kube-proxy: nothing here
needs ClusterIP Services; pods find each other through headless Services in DNS).

Scheduling: the node is labelled ``dlcharts.io/node-type=real`` and tainted
``dlcharts.io/node-type=real:NoSchedule``, so only pods that tolerate the taint (and should select the
label) land on it; the fake GPU nodes keep every other pod (see :data:`TOLERATION`, :data:`NODE_SELECTOR`).

Images: the node has none of its own. ``start()`` starts the cluster's registry on 127.0.0.1, builds the helper
image ``busybox:1.37.0`` (cached by content), pushes it and derives the pause image from it with crane (see
:mod:`dlcharts.cluster.node_registry`); containerd's ``sandbox_image`` is ``127.0.0.1:<port>/pause:busybox-1.37.0``
and the kubelet pulls ``127.0.0.1:<port>/busybox:1.37.0`` for the pods that name it (the default pull policy:
once per image store). ``ClusterHandle.images`` and the
state file's ``real_node.images`` give the references and digests.

``stop()`` leaves no process (the registry included), mount, network namespace (with the rules and sets in it),
veth, bridge, cgroup or pid file behind; it works from what is on disk, so it also cleans up after a crash. The
registry's storage stays for the next start.

Timings (``dlcharts cluster up`` as root, 2 cores shared with other jobs, binaries built), measured 2026-11-23:

    images cached, registry storage kept       12.2-16.2 s in all; about 1 s of it is the images (registry
                                               start, digest checks of the cached layout, crane push, mutate
                                               and digest with nothing new to upload)
    empty image cache and registry storage     69.7 s in all: about 57 s more, building busybox:1.37.0
                                               (.debs from the Debian mirror, mmdebstrap, umoci) and pushing it
    first pod on a new node                    its sandbox runs after about 8 s (containerd pulls and unpacks
                                               the pause image: 70 MB compressed, 167 MB unpacked); busybox
                                               shares those layers and is then pulled in about 55 ms
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import ipaddress
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from dlcharts.cluster import binaries as _bin
from dlcharts.cluster import dns, netpol, node_registry, pki, procs
from dlcharts.errors import ClusterError
from dlcharts.waiting import poll

NODE_NAME = "real-0"
LABEL_KEY = "dlcharts.io/node-type"
LABEL_VALUE = "real"
#: what a pod adds to run on the real node
NODE_SELECTOR: dict[str, str] = {LABEL_KEY: LABEL_VALUE}
TOLERATION: dict[str, str] = {"key": LABEL_KEY, "operator": "Equal", "value": LABEL_VALUE, "effect": "NoSchedule"}
CNI_BIN_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "loopback")
HOST_TOOLS = {
    "containerd": "containerd",
    "containerd-shim-runc-v2": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "ip": "iproute2",
    "nsenter": "util-linux",
    "unshare": "util-linux",
    # kube-router's firewall (dlcharts.cluster.netpol)
    "iptables": "iptables",
    "ipset": "ipset",
    "openssl": "openssl",
    "mount": "mount",
    # the helper image is built on the host (dlcharts.images): even a cached build checks their versions
    "mmdebstrap": "mmdebstrap",
    "umoci": "umoci",
}
SHIM = "containerd-shim-runc-v2"
# Paths outside the cluster folder that kubelet and libcni hard-code: the device-plugin socket and checkpoint
# (kubelet has no setting for them) and CNI result caches (one file per pod, removed on CNI DEL).
KUBELET_DEVICE_PLUGINS = Path("/var/lib/kubelet/device-plugins")
CNI_RESULTS = Path("/var/lib/cni/results")
# Directories kubelet and containerd create on first use (container log links, shim sockets): removed by
# stop() when the node made them and they are empty again.
HOST_DIRS = (Path("/var/log/containers"), Path("/run/containerd/s"), Path("/run/containerd"))
STATE_FILE = "node.json"
# Unix sockets take at most 107 bytes; containerd adds ".ttrpc" to its socket path.
_MAX_SOCKET = 100


def default_cidr(cluster: str) -> str:
    """A /24 per cluster name, out of 10.250.0.0/16 (two clusters on one machine rarely share one; start()
    refuses a range already on an interface)."""
    return f"10.250.{hashlib.sha256(cluster.encode()).digest()[0]}.0/24"


@dataclasses.dataclass(frozen=True)
class Network:
    bridge: str
    subnet: str

    @property
    def node_ip(self) -> str:
        return str(next(ipaddress.ip_network(self.subnet).hosts()))

    @classmethod
    def for_cluster(cls, cluster: str, cidr: str) -> Network:
        bridge = "dlc-" + hashlib.sha256(cluster.encode()).hexdigest()[:10]  # at most 15 characters
        return cls(bridge=bridge, subnet=cidr or default_cidr(cluster))


class RealNode:
    """containerd, kubelet and CoreDNS of the cluster whose state directory is ``state_dir``."""

    def __init__(self, state_dir: Path, cluster: str, cidr: str = "", cache: Path | None = None) -> None:
        self.state_dir = state_dir
        self.cluster = cluster
        self.cache = cache if cache is not None else _bin.cache_dir()
        self.dir = state_dir / "node"
        self.network = self._recorded_network() or Network.for_cluster(cluster, cidr)

    # ----- paths -----------------------------------------------------------------------------------
    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def pid_dir(self) -> Path:
        return self.dir / "pids"

    @property
    def socket(self) -> Path:
        return self.dir / "containerd" / "containerd.sock"

    @property
    def netns(self) -> Path:
        """The pods' network namespace (a mounted nsfs file)."""
        return self.dir / "pods.netns"

    @property
    def cgroup_name(self) -> str:
        return f"dlcharts-{self.cluster}"

    def pids(self) -> dict[str, int]:
        return procs.pids(self.pid_dir)

    def _recorded_network(self) -> Network | None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            doc = json.loads((self.dir / STATE_FILE).read_text())
            return Network(bridge=doc["bridge"], subnet=doc["subnet"])
        return None

    # ----- start -----------------------------------------------------------------------------------
    def start(self, kubeconfig: Path, timeout: float) -> dict[str, Any]:
        """Start everything and wait until the node is Ready; return what was started (for the state file)."""
        self._preflight()
        self.dir.mkdir(parents=True, exist_ok=True)
        versions = self._versions()
        record = {
            "bridge": self.network.bridge,
            "subnet": self.network.subnet,
            # whether stop() may remove kubelet's hard-coded device-plugin directory
            "made_device_plugins_dir": not KUBELET_DEVICE_PLUGINS.exists(),
            "made_dirs": [str(d) for d in HOST_DIRS if not d.exists()],
            **versions,
        }
        (self.dir / STATE_FILE).write_text(json.dumps(record, indent=2) + "\n")
        self._network_up()
        self._cgroups_up()
        images = node_registry.ensure(self.cluster, self.cache)
        self._write_cni()
        self._start_containerd(images)
        admin = yaml.safe_load(kubeconfig.read_text())
        dns.start(self.dir, self.logs_dir, self.network.node_ip, kubeconfig, self.cache)
        self._start_kubelet(admin, kubeconfig)
        self._wait_ready(kubeconfig, timeout)
        netpol.start(self.dir, self.logs_dir, self.netns, NODE_NAME, kubeconfig, self.cache)
        return {
            "name": NODE_NAME,
            "ip": self.network.node_ip,
            "bridge": self.network.bridge,
            "subnet": self.network.subnet,
            "images": images.as_dict(),
            **versions,
        }

    def _preflight(self) -> None:
        if os.geteuid() != 0:
            raise ClusterError(
                "the real node (containerd + kubelet) needs root; run as root or start the cluster without it "
                "(`dlcharts cluster up --no-real-node`, or ClusterConfig(real_node=False))"
            )
        missing = sorted({pkg for tool, pkg in HOST_TOOLS.items() if shutil.which(tool) is None})
        missing += sorted({"containernetworking-plugins" for p in CNI_PLUGINS if not (CNI_BIN_DIR / p).is_file()})
        if missing:
            raise ClusterError(
                f"the real node needs the Debian packages {', '.join(missing)}; install them with "
                f"`apt-get install {' '.join(missing)}` (or start without it: `dlcharts cluster up --no-real-node`)"
            )
        for name in _bin.REAL_NODE_BINARIES:
            if not _bin.binary(name, self.cache).present:
                raise ClusterError(f"the real node needs {name}; build it with {_bin.build_command()} {name}")
        if len(str(self.socket)) + len(".ttrpc") > _MAX_SOCKET:
            raise ClusterError(
                f"containerd's socket path {self.socket} is too long for a Unix socket; "
                "set DLCHARTS_CACHE to a shorter directory"
            )
        subnet = ipaddress.ip_network(self.network.subnet)
        out = _run(["ip", "-o", "-4", "addr", "show"]).stdout
        for line in out.splitlines():
            fields = line.split()
            dev, addr = fields[1], ipaddress.ip_interface(fields[3])
            if dev != self.network.bridge and addr.ip in subnet:
                raise ClusterError(
                    f"real_node_cidr {self.network.subnet} overlaps {addr} on {dev}; "
                    "pick another range with ClusterConfig(real_node_cidr=...)"
                )

    def _versions(self) -> dict[str, str]:
        def first_line(cmd: list[str]) -> str:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            return (proc.stdout or proc.stderr).strip().splitlines()[0] if (proc.stdout or proc.stderr).strip() else "?"

        return {
            "containerd": first_line(["containerd", "--version"]),
            "runc": first_line(["runc", "--version"]),
            "kubelet": _bin.KUBERNETES_VERSION,
            "coredns": _bin.COREDNS_VERSION,
            "kube-router": _bin.KUBE_ROUTER_VERSION,
        }

    def _network_up(self) -> None:
        """The pods' namespace with its bridge, and the veth pair whose host end holds the node address."""
        br, ip, ns = self.network.bridge, self.network.node_ip, self.netns
        prefix = ipaddress.ip_network(self.network.subnet).prefixlen
        if _run(["ip", "link", "show", br], check=False).returncode == 0:
            _run(["ip", "link", "del", br])  # left by a crash, or a bridge of the layout before the namespace
        if str(ns) in mount_points():
            _run(["umount", str(ns)])  # a namespace left by a crash: start from a fresh one
        ns.touch()
        _run(["unshare", f"--net={ns}", "true"])
        netpol.in_netns(ns, "ip", "link", "set", "lo", "up")
        netpol.in_netns(ns, "ip", "link", "add", br, "type", "bridge")
        _run(["ip", "link", "add", br, "type", "veth", "peer", "name", "node", "netns", str(ns)])
        netpol.in_netns(ns, "ip", "link", "set", "node", "master", br)
        for dev in ("node", br):
            netpol.in_netns(ns, "ip", "link", "set", dev, "up")
        # bridged pod traffic goes through the namespace's iptables (kube-router's rules), and the node address
        # is local there too (so kube-router admits the node's own traffic) but answered for only by the host
        netpol.in_netns(ns, "sh", "-c", "echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables")
        netpol.in_netns(ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/conf/all/arp_ignore")
        netpol.in_netns(ns, "ip", "addr", "add", f"{ip}/32", "dev", "lo")
        _run(["ip", "addr", "replace", f"{ip}/{prefix}", "dev", br])
        _run(["ip", "link", "set", br, "up"])

    def _cgroup_mounts(self) -> list[Path]:
        mounts = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            pre, _, post = line.partition(" - ")
            if post.split()[0] in ("cgroup", "cgroup2"):
                mounts.append(Path(pre.split()[4]))
        return mounts

    def _cgroups_up(self) -> None:
        """kubelet's cgroupRoot /dlcharts-<name> must exist in every hierarchy (cgroup v1 here)."""
        for mount in self._cgroup_mounts():
            path = mount / self.cgroup_name
            path.mkdir(exist_ok=True)
            for name in ("cpuset.cpus", "cpuset.mems"):  # an empty cpuset takes no task
                if (path / name).is_file() and not (path / name).read_text().strip():
                    (path / name).write_text((mount / name).read_text())

    def _write_cni(self) -> None:
        netd, bindir = self.dir / "cni" / "net.d", self.dir / "cni" / "bin"
        netd.mkdir(parents=True, exist_ok=True)
        bindir.mkdir(parents=True, exist_ok=True)
        # the bridge plugin makes each pod's veth in the namespace it runs in and attaches it to the bridge there
        (bindir / "bridge").write_text(f'#!/bin/sh\nexec nsenter --net={self.netns} {CNI_BIN_DIR / "bridge"} "$@"\n')
        (bindir / "bridge").chmod(0o755)
        for plugin in CNI_PLUGINS[1:]:
            (bindir / plugin).unlink(missing_ok=True)
            (bindir / plugin).symlink_to(CNI_BIN_DIR / plugin)
        conf = {
            "cniVersion": "0.4.0",
            "name": f"dlcharts-{self.cluster}",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.network.bridge,
                    # no gateway: the bridge keeps the node address we gave it, pods get no default route
                    # and ip_forward is left alone, so no pod packet can leave the machine
                    "isGateway": False,
                    "isDefaultGateway": False,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": self.network.subnet, "gateway": self.network.node_ip}]],
                        "dataDir": str(self.dir / "cni" / "ipam"),
                    },
                }
            ],
        }
        (netd / "10-dlcharts.conflist").write_text(json.dumps(conf, indent=2) + "\n")

    def _start_containerd(self, images: node_registry.NodeImages) -> None:
        root = self.dir / "containerd"
        # pulls from the cluster's registry go over plain HTTP (only this host; nothing else is configured)
        hosts = root / "certs.d" / images.registry
        hosts.mkdir(parents=True, exist_ok=True)
        (hosts / "hosts.toml").write_text(
            f'server = "http://{images.registry}"\n\n'
            f'[host."http://{images.registry}"]\n  capabilities = ["pull", "resolve"]\n'
        )
        config = f"""# Written by dlcharts.cluster.node: this cluster's own containerd.
version = 2
root = "{self.image_store}"
state = "{root / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{self.socket}"

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
        Root = "{self.dir / "runc"}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{self.dir / "cni" / "bin"}"
    conf_dir = "{self.dir / "cni" / "net.d"}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{root / "certs.d"}"
"""
        root.mkdir(parents=True, exist_ok=True)
        (root / "config.toml").write_text(config)
        self._spawn_containerd(root / "config.toml")
        if self._containers():  # left in the image store by a node that did not stop cleanly
            self._remove_containers()
            procs.stop(self.pids()["containerd"], "containerd")  # so that its CRI plugin forgets them too
            self._spawn_containerd(root / "config.toml")

    @property
    def image_store(self) -> Path:
        """containerd's root, kept when the cluster stops (see the module's docstring)."""
        return self.cache / "node-images" / self.cluster

    def _spawn_containerd(self, config: Path) -> None:
        procs.spawn(
            "containerd", ["containerd", "--config", str(config)], self.pid_dir, self.logs_dir / "containerd.log"
        )
        poll(
            lambda: (
                self.socket.is_socket()
                and _run(["ctr", "--address", str(self.socket), "version"], check=False).returncode == 0
            ),
            60,
            f"containerd to serve {self.socket} (log {self.logs_dir / 'containerd.log'})",
            interval=0.2,
        )

    def _credentials(self) -> tuple[Path, Path, Path]:
        """A client + serving certificate for the kubelet (system:node:<name>, group system:nodes, with the
        node address as SAN), signed by the cluster's CA; returns (ca, cert, key)."""
        out = self.dir / "kubelet" / "pki"
        cert, key = out / "kubelet.crt", out / "kubelet.key"
        ca = pki.sign(self.state_dir, cert, key, f"/O=system:nodes/CN=system:node:{NODE_NAME}",
                      [f"IP:{self.network.node_ip}", f"DNS:{NODE_NAME}"], usages="clientAuth,serverAuth")  # fmt: skip
        return ca, cert, key

    def _start_kubelet(self, admin: dict[str, Any], kubeconfig: Path) -> None:
        kdir = self.dir / "kubelet"
        kdir.mkdir(parents=True, exist_ok=True)
        ca, cert, key = self._credentials()
        server = admin["clusters"][0]["cluster"]["server"]
        kube = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": self.cluster, "cluster": {"server": server, "certificate-authority": str(ca)}}],
            "users": [{"name": NODE_NAME, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
            "contexts": [{"name": "kubelet", "context": {"cluster": self.cluster, "user": NODE_NAME}}],
            "current-context": "kubelet",
        }
        (kdir / "kubeconfig.yaml").write_text(yaml.safe_dump(kube, sort_keys=False))
        resolv = kdir / "resolv.conf"  # the host's search domains stay out of pods
        resolv.write_text(f"nameserver {self.network.node_ip}\n")
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            # cgroup v1 hierarchy on this machine kind; kubelet 1.35 refuses v1 unless told
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": f"/{self.cgroup_name}",
            "address": self.network.node_ip,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": self.network.node_ip,
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
            "clusterDNS": [self.network.node_ip],
            "resolvConf": str(resolv),
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "podLogsDir": str(self.dir / "pod-logs"),
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
        (kdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        procs.spawn(
            "kubelet",
            [
                str(_bin.binary("kubelet", self.cache).path),
                f"--config={kdir / 'config.yaml'}",
                f"--kubeconfig={kdir / 'kubeconfig.yaml'}",
                f"--root-dir={kdir / 'root'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={self.network.node_ip}",
                f"--node-labels={LABEL_KEY}={LABEL_VALUE},dlcharts.io/node-pool={LABEL_VALUE}",
            ],
            self.pid_dir,
            self.logs_dir / "kubelet.log",
        )

    def _wait_ready(self, kubeconfig: Path, timeout: float) -> None:
        from kubernetes import client
        from kubernetes import config as kconfig

        api = kconfig.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
        with contextlib.closing(api):
            core: Any = client.CoreV1Api(api)

            def ready() -> bool:
                pid = self.pids().get("kubelet")
                if pid is None or not procs.alive(pid):
                    raise ClusterError(f"kubelet exited; see {self.logs_dir / 'kubelet.log'}")
                node = core.read_node(NODE_NAME)
                return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])

            poll(ready, timeout, f"the real node {NODE_NAME} to be Ready (log {self.logs_dir / 'kubelet.log'})")

    # ----- stop ------------------------------------------------------------------------------------
    def stop(self, kubeconfig: Path | None = None) -> None:
        """Stop and remove everything the node made on the host. Safe to call when nothing runs."""
        if kubeconfig is not None and kubeconfig.is_file() and self.pids().get("kubelet"):
            with contextlib.suppress(Exception):
                self._drain(kubeconfig)
        running = self.pids()
        for name in ("kubelet", "coredns", "kube-router"):
            if name in running:
                procs.stop(running[name], name)
        if self.socket.is_socket() and "containerd" in running and procs.alive(running["containerd"]):
            self._kill_tasks()
            self._remove_containers()
        if "containerd" in running:
            procs.stop(running["containerd"], "containerd")
        shims = {p for p in procs.all_pids() if self._is_our_shim(p)}
        procs.kill(procs.children(shims) | shims)
        self._unmount()
        self._bridge_down()
        self._cgroups_down()
        self._container_log_links_down()
        self._hard_coded_paths_down()
        node_registry.stop(self.cluster, self.cache)
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.pid_dir)

    def _drain(self, kubeconfig: Path) -> None:
        """Delete the node's pods through the API and give the kubelet a moment to stop their sandboxes
        (that releases their addresses and network namespaces the normal way)."""
        from kubernetes import client
        from kubernetes import config as kconfig

        api = kconfig.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
        with contextlib.closing(api):
            core: Any = client.CoreV1Api(api)
            pods = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={NODE_NAME}").items
            for pod in pods:
                with contextlib.suppress(Exception):
                    core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
        if pods:
            deadline = time.monotonic() + 20
            while self._tasks() and time.monotonic() < deadline:
                time.sleep(0.5)

    def _ctr(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _run(["ctr", "--address", str(self.socket), "-n", "k8s.io", *args], check=False, timeout=30)

    def _tasks(self) -> list[str]:
        return [t for t in self._ctr("tasks", "ls", "-q").stdout.split() if t]

    def _containers(self) -> list[str]:
        return [c for c in self._ctr("containers", "ls", "-q").stdout.split() if c]

    def _remove_containers(self) -> None:
        """Remove every container's record (their tasks are gone): the image store keeps images only."""
        if ids := self._containers():
            self._ctr("containers", "rm", *ids)

    def _kill_tasks(self) -> None:
        for task in self._tasks():
            self._ctr("tasks", "kill", "--all", "--signal", "SIGKILL", task)
        deadline = time.monotonic() + 10
        for task in self._tasks():
            while self._ctr("tasks", "delete", task).returncode != 0 and time.monotonic() < deadline:
                time.sleep(0.2)

    def _is_our_shim(self, pid: int) -> bool:
        argv = procs.cmdline(pid)
        return bool(argv) and Path(argv[0]).name == SHIM and str(self.socket) in argv

    def _unmount(self) -> None:
        """Unmount everything mounted under the cluster's folder, deepest first (container rootfs, netns,
        /dev/shm, pod volumes)."""
        prefix = str(self.state_dir) + "/"
        for _ in range(5):
            targets = [m for m in mount_points() if m.startswith(prefix)]
            if not targets:
                return
            for target in sorted(targets, key=len, reverse=True):
                if _run(["umount", target], check=False).returncode != 0:
                    _run(["umount", "-l", target], check=False)
        left = [m for m in mount_points() if m.startswith(prefix)]
        if left:
            raise ClusterError(f"could not unmount {', '.join(left)}")

    def _bridge_down(self) -> None:
        br = self.network.bridge
        if _run(["ip", "link", "show", br], check=False).returncode != 0:
            return
        for line in _run(["ip", "-o", "link", "show", "master", br], check=False).stdout.splitlines():
            dev = line.split(":")[1].strip().split("@")[0]
            _run(["ip", "link", "del", dev], check=False)
        _run(["ip", "link", "del", br], check=False)

    def _cgroups_down(self) -> None:
        for mount in self._cgroup_mounts():
            top = mount / self.cgroup_name
            if not top.is_dir():
                continue
            dirs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
            for d in [*dirs, top]:
                with contextlib.suppress(OSError):
                    d.rmdir()

    def _container_log_links_down(self) -> None:
        """kubelet links each container log into /var/log/containers; drop links into our pod-logs."""
        links = Path("/var/log/containers")
        if not links.is_dir():
            return
        ours = str(self.dir / "pod-logs")
        for link in links.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(ours):
                    link.unlink()

    def _hard_coded_paths_down(self) -> None:
        for result in CNI_RESULTS.glob(f"dlcharts-{self.cluster}-*"):
            with contextlib.suppress(OSError):
                result.unlink()
        for empty in (CNI_RESULTS, CNI_RESULTS.parent):  # rmdir: only when nothing else is in them
            with contextlib.suppress(OSError):
                empty.rmdir()
        with contextlib.suppress(OSError, ValueError):
            for made_dir in json.loads((self.dir / STATE_FILE).read_text()).get("made_dirs", []):
                with contextlib.suppress(OSError):
                    Path(made_dir).rmdir()
        with contextlib.suppress(OSError, ValueError):
            made = json.loads((self.dir / STATE_FILE).read_text()).get("made_device_plugins_dir")
            kubelets = [p for p in procs.all_pids() if Path((procs.cmdline(p) or [""])[0]).name == "kubelet"]
            if made and not [p for p in kubelets if procs.alive(p)]:
                shutil.rmtree(KUBELET_DEVICE_PLUGINS, ignore_errors=True)
                with contextlib.suppress(OSError):
                    KUBELET_DEVICE_PLUGINS.parent.rmdir()  # /var/lib/kubelet, when nothing else is in it


def mount_points() -> list[str]:
    """Mount points of this mount namespace (from /proc/self/mountinfo, octal escapes undone)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        raw = line.split()[4]
        points.append(raw.encode().decode("unicode_escape"))
    return points


def bridge_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def _run(cmd: list[str], check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    if check and proc.returncode != 0:
        raise ClusterError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc
