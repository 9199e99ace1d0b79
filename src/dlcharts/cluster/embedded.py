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

Like a real node's, the cluster's start is an ordered list of steps (:mod:`dlcharts.cluster.steps`): control-plane,
fake-nodes, real-nodes, add-ons. :class:`EmbeddedCluster` runs them in order, holding the cluster's lock (a
running cluster of the same name is reused: each step then checks or completes what runs), records the state file,
and stops them, then cleans them up, in reverse.

Usage::

    with EmbeddedCluster(ClusterConfig()) as handle:      # reuses a running cluster of the same name
        subprocess.run(["helm", "install", ..., "--kubeconfig", handle.kubeconfig])

    handle = EmbeddedCluster().start()   # `dlcharts cluster up`: leaves it running
    EmbeddedCluster().stop()             # `dlcharts cluster down`

The API server listens on 127.0.0.1 only (random port), with authorization (Node,RBAC) and the
default admission plugins, PodSecurity among them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from dlcharts.cluster import kubeapi
from dlcharts.cluster.cluster_layout import STATE_FILE, ClusterLayout
from dlcharts.cluster.config import ClusterConfig, node_objects
from dlcharts.cluster.handle import ClusterAccess, ClusterHandle
from dlcharts.cluster.kwokctl import COMPONENTS, component_pids, dead, kubectl
from dlcharts.cluster.kwokctl_config import KWOK_POD_PARALLELISM
from dlcharts.cluster.steps import Step, StepContext, addons, control_plane, fake_nodes, real_nodes
from dlcharts.errors import ClusterError
from dlcharts.host import binaries as _bin
from dlcharts.host import procs
from dlcharts.toolchain import cache_root

__all__ = [
    "COMPONENTS",
    "KWOK_POD_PARALLELISM",
    "STATE_FILE",
    "ClusterAccess",
    "ClusterHandle",
    "EmbeddedCluster",
    "component_pids",
]


class EmbeddedCluster:
    """Start, reuse and stop the embedded control plane named ``config.name``."""

    def __init__(self, config: ClusterConfig | None = None, *, keep: bool = False) -> None:
        self.config = config or ClusterConfig()
        self.config.validate()
        self.cache = self.config.cache if self.config.cache is not None else cache_root()
        self.keep = keep  # context manager: leave a cluster we started running
        self.handle: ClusterHandle | None = None
        self.layout = ClusterLayout(self.config.name, self.cache)

    # ----- paths -----------------------------------------------------------------------------------
    @property
    def clusters_dir(self) -> Path:
        return self.layout.clusters_dir

    @property
    def state_dir(self) -> Path:
        return self.layout.state_dir

    @property
    def kubeconfig(self) -> Path:
        return self.layout.kubeconfig

    @property
    def run_dir(self) -> Path:
        """Lock, kwokctl's own log and logs of failed starts: outside clusters/, which kwokctl owns."""
        return self.layout.run_dir

    @property
    def kwokctl_log(self) -> Path:
        return self.layout.kwokctl_log

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
                if kubeapi.get(self.kubeconfig, "/readyz", timeout=3) == "ok":
                    return True
            except Exception:  # noqa: BLE001 - any failure means "not answering (yet)"
                pass
            alive = procs.alive(component_pids(self.state_dir).get("kube-apiserver", 0))
            if not alive or time.monotonic() >= deadline:
                return False
            time.sleep(2)

    def steps(self, ctx: StepContext) -> list[Step]:
        """The cluster's components in the order they start (dlcharts.cluster.steps)."""
        return [
            Step(
                "control-plane",
                lambda: control_plane.start(ctx),
                stop=lambda: control_plane.stop(ctx),
                clean_up=lambda: control_plane.clean_up(ctx),
            ),
            Step("fake-nodes", lambda: fake_nodes.start(ctx)),
            Step("real-nodes", lambda: real_nodes.start(ctx), stop=lambda: real_nodes.stop(ctx)),
            Step("add-ons", lambda: addons.start(ctx), stop=lambda: addons.stop(ctx)),
        ]

    def start(self) -> ClusterHandle:
        """Bring the cluster up (or reuse the running one of the same name) and return its handle."""
        started = time.monotonic()
        paths = self._binaries()
        self.clusters_dir.mkdir(parents=True, exist_ok=True)
        with self.layout.lock():
            reused = self.is_running(patience=self.config.start_timeout)
            if reused:
                self._check_reusable()
            elif self.state_dir.exists():
                self._delete()  # left over from a crash or reboot: start clean
            ctx = StepContext(self.config, self.layout, reused, paths)
            try:
                for step in self.steps(ctx):
                    step.start()
            except BaseException as exc:
                if reused:
                    raise
                # Leave no half-started cluster behind, but keep its logs for the person debugging it.
                kept = self.layout.keep_logs()
                self._delete()
                if isinstance(exc, ClusterError):
                    raise ClusterError(f"{exc}\ncomponent logs kept in {kept}") from exc
                raise
            self._write_state(ctx)
        self.handle = ClusterHandle(
            name=self.config.name,
            kubeconfig=self.kubeconfig,
            server=ctx.server,
            state_dir=self.state_dir,
            reused=reused,
            start_seconds=time.monotonic() - started,
            real_node=ctx.real_nodes[0] if ctx.real_nodes else None,
            real_nodes=ctx.real_nodes,
            addons=ctx.addons,
        )
        return self.handle

    def stop(self) -> None:
        """Stop every process of this cluster and remove its state. A no-op when it does not exist."""
        with self.layout.lock():
            if self.state_dir.exists():
                self._delete()
        self.handle = None

    def __enter__(self) -> ClusterHandle:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None and not self.handle.reused and not self.keep:
            self.stop()

    # ----- internals -------------------------------------------------------------------------------
    def _binaries(self) -> dict[str, Path]:
        """The control plane's binaries by name (and the real node's, which start() checks are built), kubectl."""
        names = _bin.control_plane_binaries(self.config.kubernetes_version)
        names += _bin.REAL_NODE_BINARIES if self.config.real_node else ()
        found = _bin.require_binaries(self.cache, names)
        paths = {name.removesuffix(_bin.OLDEST): path for name, path in found.items()}
        paths["kubectl"] = kubectl()
        return paths

    def _delete(self) -> None:
        """Stop every step, then clean each up, in reverse order: the add-ons and the real nodes first (the nodes'
        pods' mounts and network live under the state directory kwokctl removes), the control plane last."""
        steps = self.steps(StepContext(self.config, self.layout))[::-1]
        for step in steps:
            step.stop()
        for step in steps:
            step.clean_up()

    def _check_reusable(self) -> None:
        dead_parts = sorted(name for name, pid in component_pids(self.state_dir).items() if dead(pid))
        if dead_parts:  # e.g. a controller-manager or scheduler that lost its leader lease on a starved machine exits
            raise ClusterError(
                f"cluster {self.config.name} runs without {', '.join(dead_parts)} (exited; its log: "
                f"{self.state_dir / 'logs'}); start it afresh: `dlcharts cluster down --name {self.config.name}`, "
                f"then run again"
            )
        recorded = self.layout.recorded().get("fingerprint")
        wanted = self.config.control_plane_fingerprint()
        if recorded and recorded != wanted:
            raise ClusterError(
                f"cluster {self.config.name} is running with other pod stages or pod settings "
                f"(fingerprint {recorded}, this config {wanted}); stop it first "
                f"(`dlcharts cluster down --name {self.config.name}`) or use another cluster name"
            )

    def _write_state(self, ctx: StepContext) -> None:
        state = self.layout.state_file
        if ctx.reused and state.is_file():  # the add-ons a reused cluster has now; the rest was recorded at its start
            doc: dict[str, Any] = json.loads(state.read_text())
            doc["addons"] = ctx.addons
            state.write_text(json.dumps(doc, indent=2) + "\n")
            return
        doc = {
            "name": self.config.name,
            "fingerprint": self.config.control_plane_fingerprint(),
            "kubernetes": self.config.kubernetes_version,
            "kwok": _bin.KWOK_VERSION,
            "etcd": _bin.ETCD_VERSION,
            "nodes": [n["metadata"]["name"] for n in node_objects(self.config.node_pools)],
            "real_node": ctx.real_nodes[0] if ctx.real_nodes else None,
            "real_nodes": ctx.real_nodes,
            "addons": ctx.addons,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        state.write_text(json.dumps(doc, indent=2) + "\n")
