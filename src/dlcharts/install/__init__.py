"""Install a chart on a real cluster with a given Helm, wait for what it promises, and say why when it fails.

Plain functions behind the cluster tier (``tests/cluster/charts/test_charts.py``); every helm call is an argv list::

    from dlcharts.helm import find_helm
    from dlcharts.install import ChartSource, Kube, Release, create_namespace, dry_run_server, install, \
        uninstall, wait_ready, wait_uninstalled, namespace_inventory

    kube = Kube.from_kubeconfig(kubeconfig)
    create_namespace(kube, "ns1", "restricted")
    release = Release(find_helm("helm-v4.3.1"), kubeconfig, "tf", "ns1")
    source = ChartSource(Path("charts/tensorflow-dist"), set_values=("worker=4",))
    dry_run_server(kube, release, source)           # helm --dry-run=server + Pod Security verdict per workload
    before = namespace_inventory(kube, "ns1")
    install(kube, release, source)
    placement = wait_ready(kube, "ns1", "tf")       # Jobs done, DaemonSets on the right nodes, or fail fast
    uninstall(kube, release)
    wait_uninstalled(kube, "ns1", "tf", before)     # nothing of the release left, cluster-scoped included

Waits poll the API server (never fixed sleeps) and end early on what cannot get better: a Job's Failed or
FailureTarget condition, a pod the scheduler calls Unschedulable (its FailedScheduling message is quoted),
a container waiting in ErrImagePull / ImagePullBackOff / CrashLoopBackOff, a controller whose pods the API
server refuses (FailedCreate: forbidden, e.g. by Pod Security), a DaemonSet that matches no node. Every
failure is a :class:`~dlcharts.errors.ClusterError` whose message ends with
:func:`~dlcharts.install.diagnostics.diagnostics`: the release's Jobs (every condition), pods (phase, reason,
node, GPUs, waiting containers), DaemonSets (counts, nodes, expected nodes) and the namespace's events, so it
lands in the pytest report as it is.

Where each part lives (this package re-exports only the names of the example above):

- ``kube``: :class:`~dlcharts.install.kube.Kube`, the small raw-JSON API client, and discovery.
- ``namespaces``: create a namespace at a Pod Security level, ready for pods; delete one.
- ``podsecurity``: the level a chart needs (Chart.yaml annotations), a namespace's level, the API server's
  Pod Security verdicts.
- ``releases``: :class:`~dlcharts.install.releases.Release`, :class:`~dlcharts.install.releases.ChartSource`,
  helm install / upgrade / dry-run / test / uninstall / status / manifest, and the previous chart version.
- ``state``: reading a release's objects: Job outcomes, pod GPUs, conditions, which nodes a DaemonSet belongs on.
- ``waits``: :func:`~dlcharts.install.waits.wait_ready` and, after an uninstall, the inventory, leftovers and wait.
- ``diagnostics``: the state of a release as text.
"""

from dlcharts.install.kube import Kube
from dlcharts.install.namespaces import create_namespace
from dlcharts.install.releases import ChartSource, Release, dry_run_server, install, uninstall
from dlcharts.install.waits import namespace_inventory, wait_ready, wait_uninstalled

__all__ = [
    "ChartSource",
    "Kube",
    "Release",
    "create_namespace",
    "dry_run_server",
    "install",
    "namespace_inventory",
    "uninstall",
    "wait_ready",
    "wait_uninstalled",
]
