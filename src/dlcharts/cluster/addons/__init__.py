"""The embedded cluster's add-ons, each a real controller: Kueue (quota and queueing of Jobs and pod groups) and a
second kube-scheduler with scheduler-plugins' coscheduling plugin (gang scheduling of PodGroups).

    EmbeddedCluster(ClusterConfig(addons=("kueue", "coscheduling")))      dlcharts cluster up --kueue --coscheduling

Both are built from their Go modules at the versions pinned in versions.env (``dlcharts cluster build addons``),
and installed from the manifests their modules ship, which the build copies into ``manifests/`` beside each
binary:

- **kueue**: Kueue's own Helm chart (``charts/kueue``), rendered by the pinned helm. Its CRDs and webhook
  configurations are applied; its manager runs with the chart's own manager configuration, changed only where a
  process on this machine differs from a pod: the webhook serves on 127.0.0.1 with a certificate from the
  cluster's CA (the webhook configurations and the CRDs' conversion webhooks call it by URL, with that CA), no
  leader election, no metrics or visibility server (ports two clusters on one machine would share), and the
  integrations our charts use (batch/job; pod, for ``kueue.podGroup``).
- **coscheduling**: kube-scheduler from ``sigs.k8s.io/scheduler-plugins`` as a second scheduler with its
  controller, the project's documented second-scheduler install: ``manifests/coscheduling`` (the PodGroup CRD, and
  the scheduler configuration with its profile renamed to :data:`COSCHEDULER_NAME`, the scheduler our charts'
  ``gang.scheduler=scheduler-plugins`` names) and the ElasticQuota CRD the controller watches too. The controller
  keeps PodGroup status. A gang the scheduler turned down is retried on a new pod or a PodGroup change (not when
  other pods free GPUs), or after ``--pod-max-in-unschedulable-pods-duration``: 20 s here instead of 5 minutes.

Why processes on this machine and not pods: the API server calls a webhook Service at its ClusterIP, and the
embedded cluster has no kube-proxy (its real node gives pods no route off their own network namespace, and a
cluster may have no real node at all), so a Kueue pod's webhook could not be reached. Kueue's webhooks are not
optional: they suspend each Job before its pods exist.

Each add-on's process, configuration, certificates and pid live under ``<cluster>/addons/``, its log in
``<cluster>/logs/<addon>.log``; they start after the nodes and stop before the control plane.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlcharts.cluster.addons import coscheduling, kueue, operators
from dlcharts.cluster.addons.common import Workspace
from dlcharts.errors import ClusterError
from dlcharts.host import binaries, procs
from dlcharts.install.kube import Kube

ADDONS: tuple[str, ...] = ("kueue", "coscheduling")
#: every add-on a cluster can start: ADDONS, and the training operators for benchmarks
#: (dlcharts.cluster.addons.operators; ``dlcharts cluster up --operator NAME``), in the order they start
ALL: tuple[str, ...] = (*ADDONS, *operators.OPERATORS)
#: process (named after its add-on, or <add-on>-controller) -> its binary (dlcharts.host.binaries)
PROCESSES = {
    "kueue": "kueue",
    "coscheduling": "scheduler-plugins",
    "coscheduling-controller": "scheduler-plugins-controller",
    **{name: name for name in operators.OPERATORS},
}
Starter = Callable[[Workspace, Kube, Path, dict[str, Path], float], None]
#: how each add-on installs and starts, given its binaries by name
STARTERS: dict[str, Starter] = {"kueue": kueue.start, "coscheduling": coscheduling.start, **operators.STARTERS}


class Addons(Workspace):
    """Start, find and stop the add-ons of the embedded cluster whose folder is ``state_dir``."""

    def running(self) -> list[str]:
        """The add-ons whose processes run."""
        alive = {name for name, pid in procs.pids(self.pid_dir).items() if procs.alive(pid)}
        return [addon for addon in ALL if {p for p in PROCESSES if addon_of(p) == addon} <= alive]

    def start(self, names: tuple[str, ...], kubeconfig: Path, timeout: float) -> dict[str, dict[str, Any]]:
        """Install and start each add-on of ``names`` that does not run yet; returns what runs, per add-on."""
        unknown = sorted(set(names) - set(ALL))
        if unknown:
            raise ClusterError(f"unknown add-on {', '.join(unknown)}; the embedded cluster has: {', '.join(ALL)}")
        names = operators.with_needs(names)
        missing = [name for name in ALL if name in names and name not in self.running()]
        if missing:
            wanted = tuple(b for p, b in PROCESSES.items() if addon_of(p) in missing)
            exes = binaries.require_binaries(self.cache, wanted)
            with Kube.from_kubeconfig(kubeconfig) as kube:
                for name in missing:
                    self.stop(name)  # what is left of an add-on half running
                    STARTERS[name](self, kube, kubeconfig, exes, timeout)
        pids = procs.pids(self.pid_dir)
        return {
            name: {"version": binaries.binary(PROCESSES[name], self.cache).version, "pid": pids[name],
                   "log": str(self.logs_dir / f"{name}.log")}
            for name in self.running()
        }  # fmt: skip

    def stop(self, addon: str | None = None) -> None:
        """Stop the processes of ``addon`` (default: every add-on); what they installed goes with the cluster."""
        for name, pid in procs.pids(self.pid_dir).items():
            if addon is None or addon_of(name) == addon:
                procs.stop(pid, PROCESSES.get(name, name))
                (self.pid_dir / f"{name}.pid").unlink(missing_ok=True)


def addon_of(process: str) -> str:
    """The add-on a process belongs to: ``coscheduling-controller`` -> ``coscheduling``."""
    return process.removesuffix("-controller") if process not in ALL else process
