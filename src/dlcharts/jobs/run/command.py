"""`dlcharts run CHART [helm args]`: a training chart's job, for real and on CPU, before GPU hours are spent.

1. the cluster: the embedded one with its real node (started or reused), or any cluster by ``--kubeconfig``; when
   the release would have a start watch, :func:`check_start_watch_rights` asks the API server whether the caller
   may create its Role and RoleBinding there, and refuses before anything is created if not;
2. the images: every local image (:mod:`dlcharts.images`) standing for an image value of the chart is built
   (cached by content) and pushed to the cluster's registry, or to ``--registry``;
3. ``helm install`` with :func:`cpu_values` first and the user's helm arguments after them (so they win):
   no GPUs, small requests, the local registry through ``global.imageRegistry``, the real nodes' selector, and
   on a cluster with several real nodes a topology spread over them (each role's pods on different nodes);
4. every container's log, streamed as it is written, each line prefixed ``[pod/container]``;
5. :func:`~dlcharts.install.wait_ready` until every role's Job is Complete, or its reason for failing (at once: e.g.
   an image that cannot be pulled); after a failure, while the chart's start watch may still act, until every pod
   of the release has ended (at most peerWait.timeoutSeconds after the Jobs started, plus a margin), then the
   watch's verdict: a failed run shows that the release freed what it held, or says what is still there;
6. a line per pod (node, exit code, duration) and the wall time. Exit 0 only if the job succeeded.

A release of the same name in the namespace is uninstalled first (a finished Job cannot run again); the new
one is left installed so that its logs and objects can be read afterwards. On the embedded cluster the start watch
reaches the API server through this process (:func:`api_relay`), so a watch still running when the run ends is
suspended (:func:`suspend_start_watch`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts import suite
from dlcharts.cluster.config import ClusterConfig
from dlcharts.errors import ClusterError, DLChartsError
from dlcharts.helm import Helm
from dlcharts.install import Kube, Release
from dlcharts.install.namespaces import ENFORCE, MANAGED_BY, MANAGER, create_namespace, set_pod_security
from dlcharts.install.podsecurity import POD_SECURITY_LEVELS, chart_pod_security
from dlcharts.jobs.run.job import run_job
from dlcharts.jobs.run.logs import Write
from dlcharts.jobs.run.outcome import RunResult
from dlcharts.jobs.run.relay import api_relay
from dlcharts.jobs.run.rights import check_start_watch_rights
from dlcharts.jobs.run.values import cpu_values, local_images
from dlcharts.jobs.run.watch import suspend_start_watch


def chart_name(chart: Path) -> str:
    """The name in ``chart``'s Chart.yaml; a usage error when ``chart`` is no chart folder."""
    if not (chart / "Chart.yaml").is_file():
        raise DLChartsError(f"{chart} is not a chart folder (no Chart.yaml): name one, such as charts/tensorflow-dist")
    return suite.chart_name(chart)


def push_images(chart: str, registry: str, write: Write) -> Callable[[], None]:
    """Build (cached) and push every local image that stands for one of ``chart``'s image values; return what
    hard-links the copies of their blobs the nodes pull (:meth:`dlcharts.images.build.Builder.link_blobs`)."""
    from dlcharts.images.build import Builder

    builder = Builder()
    results = []
    for image, path in local_images(chart):
        started = time.monotonic()
        result = builder.build(image)
        digest = builder.push(result, registry)
        results.append(result)
        took = time.monotonic() - started
        write(f"    {path}: {registry}/{image.reference} ({digest.rsplit('@', 1)[-1][:19]}, {took:.0f}s)")

    def link_pulled() -> None:
        for result in results:
            builder.link_blobs(result)

    return link_pulled


def prepare_namespace(kube: Kube, namespace: str, chart: Path, write: Write = print) -> None:
    """Make ``namespace`` admit ``chart``'s pods before anything is installed: created at the chart's Pod Security
    level when missing; brought to that level when dlcharts created it (charts run one after another there);
    otherwise refused, naming the level and the way out, when it enforces a stricter level than the chart needs."""
    need = chart_pod_security(chart)
    found = kube.get_or_none(f"/api/v1/namespaces/{namespace}")
    if found is None:
        create_namespace(kube, namespace, need.level)
        return
    labels = found.get("metadata", {}).get("labels") or {}
    enforced = labels.get(ENFORCE, "privileged")  # no label: the API server admits every pod
    why = f" ({need.reason})" if need.reason else ""
    if labels.get(MANAGED_BY) == MANAGER:
        if enforced != need.level:
            set_pod_security(kube, namespace, need.level)
            write(f"namespace {namespace}: Pod Security {enforced} -> {need.level}, the level {chart.name} needs{why}")
        return
    if enforced in POD_SECURITY_LEVELS and POD_SECURITY_LEVELS.index(enforced) > POD_SECURITY_LEVELS.index(need.level):
        raise DLChartsError(
            f"namespace {namespace} enforces Pod Security {enforced!r}, and {chart} needs {need.level!r}{why}; "
            f"its pods would be refused. Run it in a namespace dlcharts creates at that level (-n/--namespace NAME), "
            f"or relabel this one: kubectl label namespace {namespace} {ENFORCE}={need.level} --overwrite"
        )


@dataclasses.dataclass
class Session:
    """A cluster made ready for ``chart``'s releases (:func:`session`): the CPU values every release installs first."""

    kube: Kube
    helm: Helm
    kubeconfig: Path
    namespace: str
    chart: Path
    values: dict[str, Any]
    #: the start watch's way to the API server on the embedded cluster (None: the cluster's own, or no watch)
    api_server: str | None
    #: hard-links the nodes' copies of the pushed images' blobs to the other stores' (nothing pushed: a no-op)
    link_pulled: Callable[[], None] = lambda: None

    def release(self, name: str) -> Release:
        return Release(self.helm, self.kubeconfig, name, self.namespace)

    def end(self, release: Release, write: Write = print) -> None:
        """What a release needs once its run is over: its start watch suspended when it reaches the API server only
        through this session's relay, which ends with the session; the images its nodes pulled for it linked to
        the copies the registry and the image cache keep (a copy already linked is not read again)."""
        if self.api_server:
            for job in suspend_start_watch(self.kube, release):
                write(f"start watch: Job {job} suspended (it needs this run's relay to the API server)")
        self.link_pulled()


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """Where and how :func:`run` (and a :func:`session`) runs a chart's release: `dlcharts run`'s options."""

    helm: Helm
    #: the release :func:`run` installs; a session checks the start watch's rights with this name
    release_name: str
    namespace: str
    #: the cluster (None: the embedded one, started or reused, with its real nodes)
    kubeconfig: Path | None = None
    #: where the local images are pushed and pulled from (None: the embedded cluster's registry; with ``kubeconfig``,
    #: the chart's own images)
    registry: str | None = None
    #: the embedded cluster's name (without ``kubeconfig``)
    cluster_name: str = ClusterConfig.name
    #: seconds the job may take (:func:`run`; a session alone waits for no job)
    timeout: float = 900


@contextlib.contextmanager
def session(chart: Path, helm_args: Sequence[str], options: RunOptions, write: Write = print) -> Iterator[Session]:
    """Steps 1 and 2 of the module's docstring, and the namespace: the cluster (the embedded one started or reused,
    or ``options.kubeconfig``'s), the start watch's rights checked with ``options.release_name``, the namespace
    admitting the chart's pods, the local images pushed. `dlcharts run` installs one release in it, `dlcharts sweep`
    one per trial."""
    name = chart_name(chart)
    kubeconfig, registry, namespace = options.kubeconfig, options.registry, options.namespace
    real_node, spread = kubeconfig is None, False
    relay: contextlib.AbstractContextManager[str | None] = contextlib.nullcontext()
    if kubeconfig is None:
        from dlcharts.cluster.embedded import EmbeddedCluster

        cluster_name = options.cluster_name
        write(f"cluster: embedded {cluster_name!r} with its real node ...")
        handle = EmbeddedCluster(ClusterConfig(name=cluster_name)).start()
        if handle.images is None or handle.real_node is None:
            raise ClusterError(
                f"cluster {cluster_name} runs without its real node; `dlcharts cluster down` and run again as root"
            )
        kubeconfig, registry = handle.kubeconfig, registry or handle.images.registry
        spread = len(handle.real_nodes) > 1
        write(f"    real nodes: {', '.join(n['name'] for n in handle.real_nodes)}" + (" (spread)" if spread else ""))
        write(f"    {'reused' if handle.reused else 'started'} in {handle.start_seconds:.1f}s; KUBECONFIG={kubeconfig}")
        relay = api_relay(handle.server, handle.state_dir, str(handle.real_node["ip"]))
    with Kube.from_kubeconfig(kubeconfig) as kube, relay as api_server:
        values = cpu_values(name, registry, real_node=real_node, api_server=api_server, spread=spread)
        ready = Session(kube, options.helm, kubeconfig, namespace, chart, values, api_server)
        check_start_watch_rights(kube, ready.release(options.release_name), chart, values, helm_args)  # before anything
        prepare_namespace(kube, namespace, chart, write)  # a namespace that would refuse the pods: before the images
        if registry:
            write(f"images: local images of {name}, pushed to {registry}")
            ready.link_pulled = push_images(name, registry, write)
        if api_server:
            write(f"start watch: reaches the API server through {api_server} (the real node's pods have no route)")
        yield ready


def run(chart: Path, helm_args: Sequence[str], options: RunOptions, write: Write = print) -> RunResult:
    """`dlcharts run`: see the module's docstring."""
    with session(chart, helm_args, options, write) as ready:
        shown = " ".join(helm_args)
        write(f"helm install {options.release_name} {chart} -n {options.namespace} -f <cpu values> {shown}".rstrip())
        for line in yaml.safe_dump(ready.values, sort_keys=False, default_flow_style=None, width=100).splitlines():
            write(f"    {line}")
        release = ready.release(options.release_name)
        result = run_job(ready.kube, release, chart, ready.values, helm_args, timeout=options.timeout, write=write)
        ready.end(release, write)  # the watch reaches the API server only through this process's relay
        return result
