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
import copy
import dataclasses
import datetime
import select
import socket
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts import suite
from dlcharts.cluster import node
from dlcharts.cluster.config import ClusterConfig
from dlcharts.errors import ClusterError, DLChartsError
from dlcharts.helm import Helm
from dlcharts.images.definitions import IMAGES, ImageDef
from dlcharts.install import ChartSource, Kube, Release, install, namespace_inventory, uninstall, wait_uninstalled
from dlcharts.install.kube import status_message
from dlcharts.install.namespaces import ENFORCE, MANAGED_BY, MANAGER, create_namespace, set_pod_security
from dlcharts.install.podsecurity import POD_SECURITY_LEVELS, chart_pod_security
from dlcharts.install.releases import manifest_objects, run_helm
from dlcharts.install.state import INSTANCE_LABEL, is_hook, job_outcome, owner_of
from dlcharts.install.waits import Readiness, wait_ready

COMPONENT_LABEL = "app.kubernetes.io/component"

#: pod settings of every role on a CPU-only machine (the dl-common values layout every training chart shares)
CPU_DEFAULTS: dict[str, Any] = {
    "gpu": {"count": 0},
    "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "3Gi"}},
    "shm": {"sizeLimit": "512Mi"},
}
# The program cntk-dist's ranks run on CPU. The local cntk-dist image has Open MPI and mpi4py but no CNTK (it has
# no wheel for any current Python; `dlcharts images build --list`), so the default program, which imports cntk,
# would fail there: every rank allreduces instead (argv: steps, seconds between steps), through the chart's
# launcher, mpirun and the workers' sshd, and checks the sum.
MPI4PY_ALLREDUCE = """
import sys, time
from mpi4py import MPI
c = MPI.COMM_WORLD
steps, pause = int(sys.argv[1]), float(sys.argv[2])
print(f"mpi4py: rank {c.rank}/{c.size} on {MPI.Get_processor_name()}", flush=True)
for step in range(1, steps + 1):
    total = c.allreduce(c.rank + step)
    if c.rank == 0:
        print(f"mpi4py: step {step}/{steps} allreduce {total}", flush=True)
    time.sleep(pause)
assert total == sum(r + steps for r in range(c.size)), total
print(f"mpi4py: rank {c.rank} done, allreduce {total}", flush=True)
""".strip()


def mpi4py_program(steps: int = 5, pause: float = 0.2) -> list[str]:
    """:data:`MPI4PY_ALLREDUCE` as a program value (``cntk.python.command``, ``horovod.command``)."""
    return ["python3", "-c", MPI4PY_ALLREDUCE, str(steps), str(pause)]


#: what each chart runs on a few CPU cores: its built-in benchmark sized for about a minute instead of GPU-sized
#: batches, or (cntk-dist, whose local image has no CNTK) an MPI program the local image can run
SMALL_BENCHMARK: dict[str, dict[str, Any]] = {
    "tensorflow-dist": {"benchmark": {"steps": 20, "warmupSteps": 2, "batchSize": 8, "imageSize": 32}},
    "pytorch-dist": {"benchmark": {"steps": 20, "warmupSteps": 2, "batchSize": 8, "imageSize": 32}},
    "mxnet-dist": {"benchmark": {"steps": 20, "warmupSteps": 2, "batchSize": 8, "imageSize": 32}},
    "horovod-mpi": {
        "benchmark": {
            "model": "resnet18",
            "batchSize": 8,
            "imageSize": 32,
            "warmupBatches": 2,
            "batchesPerIter": 5,
            "iterations": 4,
        },
    },
    "cntk-dist": {"cntk": {"activate": "", "python": {"command": mpi4py_program()}}},
    "jax-dist": {"benchmark": {"steps": 50, "warmupSteps": 2}},
    "deepspeed-dist": {"benchmark": {"hidden": 256, "layers": 4, "warmupSteps": 2, "steps": 30}},
}  # fmt: skip

Write = Callable[[str], None]


def local_images(chart: str) -> list[tuple[ImageDef, str]]:
    """The local images standing for image values of ``chart``: (image, values path such as ``defaults.image``)."""
    found = []
    for image in IMAGES.values():
        for entry in image.values:
            name, _, path = entry.partition(":")
            if name == chart:
                found.append((image, path))
    return found


#: each role's pods on as many nodes as there are (the charts default a constraint's labelSelector to the role's pods);
#: a node that is tainted (down, unreachable) no longer counts, so a replacement pod is not held for it
SPREAD_OVER_NODES: dict[str, Any] = {
    "maxSkew": 1,
    "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "DoNotSchedule",
    "nodeTaintsPolicy": "Honor",
}


def cpu_values(
    chart: str,
    registry: str | None = None,
    real_node: bool = True,
    api_server: str | None = None,
    spread: bool = False,
) -> dict[str, Any]:
    """Values that run ``chart`` on CPU: :data:`CPU_DEFAULTS` and :data:`SMALL_BENCHMARK`; with ``registry``
    every image from there (``global.imageRegistry``) with the local images' tags, pulled Always; with ``real_node`` the
    embedded cluster's real nodes' selector and toleration, and the start watch at ``api_server`` (an
    :func:`api_relay`'s URL: the real nodes' pods have no route to the API server), or without the start watch
    when there is none; with ``spread`` :data:`SPREAD_OVER_NODES`."""
    values: dict[str, Any] = {"defaults": copy.deepcopy(CPU_DEFAULTS), **copy.deepcopy(SMALL_BENCHMARK.get(chart, {}))}
    if registry:
        values["global"] = {"imageRegistry": registry}
        for image, path in local_images(chart):
            target = values
            for key in path.split("."):
                target = target.setdefault(key, {})
            # Always: a rebuilt image keeps its tag, and a node holding the old one would run it with IfNotPresent
            target.update(tag=image.tag, pullPolicy="Always")
    if real_node:
        values["defaults"]["nodeSelector"] = dict(node.NODE_SELECTOR)
        values["defaults"]["tolerations"] = [dict(node.TOLERATION)]
        values["startWatch"] = {"apiServer": api_server} if api_server else {"enabled": False}
    if spread:
        values["defaults"]["topologySpreadConstraints"] = [dict(SPREAD_OVER_NODES)]
    return values


@contextlib.contextmanager
def api_relay(server: str, state_dir: Path, address: str) -> Iterator[str]:
    """The route to the API server that every real cluster gives its pods (the ``kubernetes`` Service) and the
    embedded cluster's real node does not (its pods reach each other, the kubelet and CoreDNS on the node's address,
    nothing else; the API server listens on 127.0.0.1): a TLS relay on the node's ``address`` for the start watch
    (``startWatch.apiServer``). It serves a certificate for that address signed by the cluster CA (the one in the
    pods' service account ``ca.crt``), and passes each connection, TLS again, to ``server``; the pod's own token
    authenticates it there. Yields the relay's URL; it stops with the block."""
    from dlcharts.host import pki

    certs = state_dir / "api-relay"
    ca = pki.sign(state_dir, certs / "tls.crt", certs / "tls.key", "/CN=dlcharts-api-relay", [f"IP:{address}"])
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(certs / "tls.crt", certs / "tls.key")
    upstream = ssl.create_default_context(cafile=str(ca))
    target = urllib.parse.urlsplit(server)
    host, port = target.hostname or "127.0.0.1", target.port or 443
    listener = socket.create_server((address, 0))
    listener.settimeout(0.5)
    stop = threading.Event()

    def relay(conn: socket.socket) -> None:
        with contextlib.ExitStack() as stack:
            stack.callback(conn.close)
            try:
                conn.settimeout(30)
                pod = stack.enter_context(serving.wrap_socket(conn, server_side=True))
                api = stack.enter_context(
                    upstream.wrap_socket(socket.create_connection((host, port), timeout=30), server_hostname=host)
                )
                ends = (pod, api)
                for end in ends:  # a TLS record without data (a TLS 1.3 session ticket) must not block a read
                    end.setblocking(False)
                while not stop.is_set():
                    ready = [s for s in ends if s.pending()] or select.select(ends, [], [], 60)[0]
                    if not ready:
                        return
                    for end in ready:
                        try:
                            data = end.recv(65536)
                        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                            continue
                        if not data:
                            return
                        other = api if end is pod else pod
                        other.settimeout(30)
                        other.sendall(data)
                        other.setblocking(False)
            except (OSError, ValueError):
                return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=relay, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"https://{address}:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()


@dataclasses.dataclass
class PodOutcome:
    name: str
    node: str
    phase: str
    exit_code: int | None  # of the main container (None: it never ended)
    seconds: float | None  # main container from start to end
    owner: str  # Job/<name>

    @classmethod
    def of(cls, pod: dict[str, Any]) -> PodOutcome:
        status = pod.get("status") or {}
        main = pod["spec"]["containers"][0]["name"]
        exit_code = seconds = None
        for container in status.get("containerStatuses") or []:
            ended = (container.get("state") or {}).get("terminated")
            if container["name"] == main and ended:
                exit_code = int(ended.get("exitCode", -1))
                if ended.get("startedAt") and ended.get("finishedAt"):
                    seconds = (parse_time(ended["finishedAt"]) - parse_time(ended["startedAt"])).total_seconds()
        return cls(
            pod["metadata"]["name"],
            pod["spec"].get("nodeName") or "-",
            str(status.get("phase")),
            exit_code,
            seconds,
            "/".join(owner_of(pod) or ()) or "-",
        )


@dataclasses.dataclass
class RunResult:
    ok: bool
    seconds: float
    pods: list[PodOutcome]
    jobs: dict[str, str]  # job -> its final condition (Complete, SuccessCriteriaMet, Failed) or "running"
    problem: str = ""  # why it failed (with the release's diagnostics)
    #: seconds from the Jobs' end until no pod of the release was Pending or Running (None: some still were
    #: after :data:`SETTLE_SECONDS`, or the job failed)
    settled_seconds: float | None = None
    #: after a failure: the start watch's verdict and how the release's pods ended (lines of the summary)
    aftermath: list[str] = dataclasses.field(default_factory=list)


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


class LogStream:
    """Follows the log of every container of a release's pods once it has started (init containers too),
    from its first line, and writes each line as ``[pod/container] line``. A retried pod is a new pod.
    ``seen`` keeps the last state of every pod it saw, so that a pod deleted before the end still counts."""

    def __init__(self, kubeconfig: Path, namespace: str, release: str, write: Write) -> None:
        self._kubeconfig, self._namespace, self._release, self._write = kubeconfig, namespace, release, write
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._followed: set[tuple[str, str]] = set()
        self.seen: dict[str, dict[str, Any]] = {}
        self._followers: list[threading.Thread] = []
        self._watcher = threading.Thread(target=self._watch, name="log-watcher", daemon=True)

    def __enter__(self) -> LogStream:
        self._watcher.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, flush_seconds: float = 10) -> None:
        """Stop looking for new containers; give the ones followed ``flush_seconds`` to deliver their last lines."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._watcher.join(timeout=5)
        deadline = time.monotonic() + flush_seconds
        for thread in self._followers:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def _emit(self, prefix: str, line: str) -> None:
        with self._lock:
            self._write(f"[{prefix}] {line}")

    def _watch(self) -> None:
        from kubernetes import client

        with Kube.from_kubeconfig(self._kubeconfig) as kube:
            core: Any = client.CoreV1Api(kube.api)
            while True:
                last_round = self._stop.is_set()  # one more look after the job ended: containers that just ran
                with contextlib.suppress(Exception):  # a failed poll is retried on the next one
                    for pod in kube.items(
                        f"/api/v1/namespaces/{self._namespace}/pods", label_selector=f"{INSTANCE_LABEL}={self._release}"
                    ):
                        self.seen[pod["metadata"]["name"]] = pod
                        status = pod.get("status") or {}
                        for container in (status.get("initContainerStatuses") or []) + (
                            status.get("containerStatuses") or []
                        ):
                            state = container.get("state") or {}
                            key = (pod["metadata"]["name"], container["name"])
                            if key not in self._followed and ("running" in state or "terminated" in state):
                                self._followed.add(key)
                                thread = threading.Thread(target=self._follow, args=(core, *key), daemon=True)
                                self._followers.append(thread)
                                thread.start()
                if last_round:
                    return
                self._stop.wait(1.0)

    def _follow(self, core: Any, pod: str, container: str) -> None:
        prefix = f"{pod}/{container}"
        try:
            resp = core.read_namespaced_pod_log(
                pod, self._namespace, container=container, follow=True, _preload_content=False
            )
            pending = b""
            for chunk in resp.stream(4096):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._emit(prefix, line.decode(errors="replace"))
            if pending:
                self._emit(prefix, pending.decode(errors="replace"))
        except Exception as exc:  # noqa: BLE001 - a log that cannot be read is reported, the run goes on
            self._emit(prefix, f"(log not readable: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")


#: the phase shown for a pod that was deleted before the run ended: a Job whose success policy is met (e.g.
#: tensorflow-dist's worker 0) deletes its other pods that have not ended yet, including those whose main
#: container has just exited
DELETED = "Deleted"


def release_pods(
    kube: Kube, namespace: str, release: str, seen: Mapping[str, dict[str, Any]] | None = None
) -> list[PodOutcome]:
    """The release's pods, and those of ``seen`` (name -> last state) that are gone, in phase Deleted."""
    pods = kube.items(f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{INSTANCE_LABEL}={release}")
    outcomes = [PodOutcome.of(p) for p in pods if not is_hook(p) and not is_start_watch(p)]
    present = {pod.name for pod in outcomes}
    for name, pod in (seen or {}).items():
        if name not in present and not is_hook(pod) and not is_start_watch(pod):
            outcomes.append(dataclasses.replace(PodOutcome.of(pod), phase=DELETED))
    return sorted(outcomes, key=lambda p: (p.owner, p.name))


def is_start_watch(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` (a Job or pod) is the release's start watch (dl-common's ``startWatch``), which watches the
    training pods and is no part of the training: the summary's pods and Jobs leave it out."""
    return ((obj.get("metadata") or {}).get("labels") or {}).get(COMPONENT_LABEL) == "start-watch"


def job_verdicts(kube: Kube, namespace: str, release: str) -> dict[str, str]:
    """Each training Job's deciding condition (Complete, SuccessCriteriaMet, Failed, FailureTarget) or "running"
    (the start watch's Job left out)."""
    out = {}
    for job in kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs", label_selector=f"{INSTANCE_LABEL}={release}"):
        if is_start_watch(job):
            continue
        outcome = job_outcome(job)
        out[job["metadata"]["name"]] = outcome[1].split(":")[0] if outcome else "running"
    return out


def summary(result: RunResult) -> str:
    """A table of the pods (node, phase, exit code, duration), the Jobs' ends and the verdict."""
    row = "{:<36} {:<12} {:<10} {:>4} {:>9}"
    lines = [row.format("POD", "NODE", "PHASE", "EXIT", "DURATION")]
    for pod in result.pods:
        code = "-" if pod.exit_code is None else str(pod.exit_code)
        took = "-" if pod.seconds is None else f"{pod.seconds:.0f}s"
        lines.append(row.format(pod.name, pod.node, pod.phase, code, took))
    if any(pod.phase == DELETED for pod in result.pods):
        lines.append(
            f"{DELETED}: removed by its Job before it ended (success policy met, or failed); EXIT as last seen"
        )
    lines.append("jobs: " + ", ".join(f"{job} {state}" for job, state in sorted(result.jobs.items())))
    if result.ok:
        running = sum(1 for pod in result.pods if pod.phase in ("Pending", "Running"))
        lines.append(
            f"every pod ended {result.settled_seconds:.0f}s after the job completed"
            if result.settled_seconds is not None
            else f"{running} pod(s) still Pending or Running {SETTLE_SECONDS:.0f}s after the job completed"
        )
    lines.extend(result.aftermath)
    verdict = "succeeded" if result.ok else "FAILED"
    lines.append(f"job {verdict} in {result.seconds:.0f}s")
    return "\n".join(lines)


def replace_release(kube: Kube, release: Release) -> None:
    """Uninstall an earlier release of the same name and wait until its pods are gone."""
    if run_helm(release, ["status", release.name], 60).returncode != 0:
        return
    before = namespace_inventory(kube, release.namespace)
    uninstall(kube, release)
    wait_uninstalled(kube, release.namespace, release.name, before, timeout=120)


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


@contextlib.contextmanager
def _values_file(values: dict[str, Any]) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="dlcharts-run-") as tmp:
        path = Path(tmp) / "cpu-values.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False))
        yield path


def run_job(
    kube: Kube,
    release: Release,
    chart: Path,
    values: dict[str, Any],
    helm_args: Sequence[str] = (),
    *,
    timeout: float = 900,
    write: Write = print,
) -> RunResult:
    """Install ``chart`` as ``release`` with ``values`` then ``helm_args``, stream its logs through ``write``,
    wait for its Jobs; the outcome (never raises for a job that fails: ``RunResult.problem`` says why)."""
    started = time.monotonic()
    replace_release(kube, release)
    readiness: Readiness | None = None
    problem = ""
    logs = LogStream(release.kubeconfig, release.namespace, release.name, write)
    with _values_file(values) as path, logs:
        install(kube, release, ChartSource(chart, values_files=(path,), extra_args=tuple(helm_args)))
        try:
            readiness = wait_ready(kube, release.namespace, release.name, timeout=timeout, interval=1.0)
        except ClusterError as exc:
            problem = str(exc)
        settled = _settle(kube, release) if readiness is not None else None
        aftermath = [] if readiness is not None else _aftermath(kube, release, started, write)
    jobs = job_verdicts(kube, release.namespace, release.name)
    ok = readiness is not None and bool(jobs) and all(s in ("Complete", "SuccessCriteriaMet") for s in jobs.values())
    if readiness is not None and not jobs:
        problem = f"release {release.name} has no Job: nothing ran to completion (is {chart} a training chart?)"
    pods = release_pods(kube, release.namespace, release.name, logs.seen)
    return RunResult(ok, time.monotonic() - started, pods, jobs, problem, settled, aftermath)


#: how long after the Jobs' end :func:`run_job` waits for the release's other pods (watched roles, workers a
#: success policy no longer needs) to end, so that the summary shows how they ended
SETTLE_SECONDS = 120.0


def _settle(kube: Kube, release: Release) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < SETTLE_SECONDS:
        if not any(p.phase in ("Pending", "Running") for p in release_pods(kube, release.namespace, release.name)):
            return time.monotonic() - started
        time.sleep(1.0)
    return None


#: what the start watch may take beyond peerWait.timeoutSeconds + intervalSeconds to end every pod: its own
#: round trip, the Job controller's deletions, and the pods' termination grace (30 s by default)
START_WATCH_MARGIN = 60.0
#: the Job annotation in which the start watch says why it failed the release (dl-common.startWatch.annotation)
START_FAILURE = "dl-charts.io/start-failure"


def _aftermath(kube: Kube, release: Release, started: float, write: Write) -> list[str]:
    """After a failure: when the release has a start watch (dl-common's ``startWatch``), wait until every pod of
    the release has ended, up to the watch's bound (peerWait.timeoutSeconds after the Jobs started, plus
    intervalSeconds and :data:`START_WATCH_MARGIN`), so that the run shows the chart freeing what it held; then
    the watch's verdict and how long the pods took to end (from the install)."""
    ns, name = release.namespace, release.name
    jobs = kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", label_selector=f"{INSTANCE_LABEL}={name}")
    watch = [j for j in jobs if is_start_watch(j)]
    if not watch:
        return []
    spec = watch[0]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in spec.get("env") or []}
    bound = int(env.get("DL_START_TIMEOUT") or 0) + int(env.get("DL_START_INTERVAL") or 0) + START_WATCH_MARGIN
    begun = [parse_time(j["status"]["startTime"]).timestamp() for j in jobs if (j.get("status") or {}).get("startTime")]
    deadline = time.monotonic() + max(0.0, (max(begun) if begun else time.time()) + bound - time.time())
    write(f"waiting up to {deadline - time.monotonic():.0f}s for the release's start watch to end every pod")
    live: list[dict[str, Any]] = []
    while True:
        pods = kube.items(f"/api/v1/namespaces/{ns}/pods", label_selector=f"{INSTANCE_LABEL}={name}")
        live = [p for p in pods if not is_hook(p) and (p.get("status") or {}).get("phase") in ("Pending", "Running")]
        if not live or time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    lines = []
    for job in kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", label_selector=f"{INSTANCE_LABEL}={name}"):
        said = (job["metadata"].get("annotations") or {}).get(START_FAILURE)
        if said:
            lines.append(f"start watch: {said}")
            break
    lines.append(
        f"{len(live)} pod(s) still Pending or Running; `helm uninstall {name} -n {ns}` frees them"
        if live
        else f"every pod of the release ended {time.monotonic() - started:.0f}s after the install began"
    )
    return lines


#: what a release's start watch adds that a training release needs no right for otherwise: (API group, resource,
#: kind). Kubernetes' ``admin`` ClusterRole may create both in a namespace, ``edit`` may not.
START_WATCH_RIGHTS = (
    ("rbac.authorization.k8s.io", "roles", "Role"),
    ("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
)


def may_create(kube: Kube, namespace: str, group: str, resource: str) -> bool:
    """Whether the caller may create ``resource`` (of API ``group``) in ``namespace``: the API server's answer to a
    SelfSubjectAccessReview, which every authenticated user may ask."""
    attributes = {"namespace": namespace, "verb": "create", "group": group, "resource": resource}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": attributes}}  # fmt: skip
    resp = kube.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review)
    if resp.status not in (200, 201) or not isinstance(resp.doc, dict):
        raise ClusterError(
            f"the API server did not say whether you may create {resource} in namespace {namespace} "
            f"(SelfSubjectAccessReview answered {resp.status}: {status_message(resp.doc)})"
        )
    return bool((resp.doc.get("status") or {}).get("allowed"))


def check_start_watch_rights(
    kube: Kube, release: Release, chart: Path, values: dict[str, Any], helm_args: Sequence[str] = ()
) -> None:
    """Before anything is installed: when the release as these values and ``helm_args`` render it has a start watch
    (``startWatch.enabled``, on by default), refuse, naming ``--set startWatch.enabled=false``, if the caller may not
    create its Role and RoleBinding in the namespace. Helm would otherwise create the release's first objects and
    stop at the Role, leaving a failed release behind. A render that fails is left to the install to report."""
    with _values_file(values) as path:
        source = ChartSource(chart, values_files=(path,), extra_args=tuple(helm_args))
        proc = run_helm(release, ["template", release.name, *source.args(release.helm)], 120)
    if proc.returncode != 0:
        return
    kinds = {obj["kind"] for obj in manifest_objects(proc.stdout) if is_start_watch(obj)}
    ns = release.namespace
    refused = [f"{resource}.{group}" for group, resource, kind in START_WATCH_RIGHTS
               if kind in kinds and not may_create(kube, ns, group, resource)]  # fmt: skip
    if refused:
        raise DLChartsError(
            f"namespace {ns}: you may not create {' or '.join(refused)} there, and {chart.name}'s start watch needs "
            f"a Role and a RoleBinding for its pod (it fails the whole job when a pod never starts its main "
            f"container within peerWait.timeoutSeconds). Kubernetes' 'admin' ClusterRole has that right in a "
            f"namespace, 'edit' has not. Ask for it, or run without the start watch: --set startWatch.enabled=false "
            f"(a pod that never starts then holds the job's nodes until job.activeDeadlineSeconds). Nothing was "
            f"installed."
        )


def chart_name(chart: Path) -> str:
    """The name in ``chart``'s Chart.yaml; a usage error when ``chart`` is no chart folder."""
    if not (chart / "Chart.yaml").is_file():
        raise DLChartsError(f"{chart} is not a chart folder (no Chart.yaml): name one, such as charts/tensorflow-dist")
    return suite.chart_name(chart)


def push_images(chart: str, registry: str, write: Write) -> None:
    """Build (cached) and push every local image that stands for one of ``chart``'s image values."""
    from dlcharts.images.build import Builder

    builder = Builder()
    for image, path in local_images(chart):
        started = time.monotonic()
        digest = builder.push(builder.build(image), registry)
        took = time.monotonic() - started
        write(f"    {path}: {registry}/{image.reference} ({digest.rsplit('@', 1)[-1][:19]}, {took:.0f}s)")


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

    def release(self, name: str) -> Release:
        return Release(self.helm, self.kubeconfig, name, self.namespace)

    def end(self, release: Release, write: Write = print) -> None:
        """What a release needs once its run is over: its start watch suspended when it reaches the API server only
        through this session's relay, which ends with the session."""
        if self.api_server:
            for job in suspend_start_watch(self.kube, release):
                write(f"start watch: Job {job} suspended (it needs this run's relay to the API server)")


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
            push_images(name, registry, write)
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


def suspend_start_watch(kube: Kube, release: Release) -> list[str]:
    """Suspend the release's start watch Jobs whose pod still runs (the Job controller ends it): for a watch that
    reaches the API server through :func:`api_relay`, which ends with ``dlcharts run``. Without it the watch would
    retry against a closed port until its Job's backoffLimit. A watch that has acted (its verdict is on the Jobs)
    or whose pod has ended is left to finish as it did. Returns the Jobs suspended."""
    ns, name = release.namespace, release.name
    jobs = kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", label_selector=f"{INSTANCE_LABEL}={name}")
    pods = kube.items(f"/api/v1/namespaces/{ns}/pods", label_selector=f"{COMPONENT_LABEL}=start-watch")
    live = {
        owner[1]
        for pod in pods
        if (owner := owner_of(pod)) and (pod.get("status") or {}).get("phase") in ("Pending", "Running")
    }
    if any((job["metadata"].get("annotations") or {}).get(START_FAILURE) for job in jobs):
        return []  # the watch has acted: it exits right after (its pod may not have said so yet)
    suspended = []
    for job in jobs:
        running = job_outcome(job) is None and job["metadata"]["name"] in live
        if is_start_watch(job) and running and not job["spec"].get("suspend"):
            path = f"/apis/batch/v1/namespaces/{ns}/jobs/{job['metadata']['name']}"
            resp = kube.request("PATCH", path, body={"spec": {"suspend": True}},
                                content_type="application/merge-patch+json")  # fmt: skip
            if resp.status == 200:
                suspended.append(job["metadata"]["name"])
    return suspended
