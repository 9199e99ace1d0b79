"""The training charts' NetworkPolicy, enforced for real on the real nodes (kube-router, dlcharts.cluster.netpol).

One real job per training chart, through the same path as `dlcharts run` (the chart's own wiring, run as the
chart's `script`, or for MPI its program value): its ranks all-reduce through the framework's collective (gloo,
TensorFlow's gRPC collectives, ps-lite, Open MPI) until the test's probes are done. On a cluster with several real
nodes the job's pods are spread over them. While it runs, these sources connect to its training ports (the pods'
IPs), each probe a TCP connect with a bound:

- ``same release``: from a pod of the release itself (kubectl exec into it);
- ``other release``: from a pod of another release of the same chart in the same namespace, one on each real node;
- ``other namespace``: from a pod in another namespace carrying the release's very labels, one on each real node;
- ``node``: from the host, with the target's own node address as source (where its kubelet's probes come from);
- ``other node``: from the host, with another real node's address as source (traffic from another host).

Each row says which node the source and the target are on, so the table shows probes within a node and across
nodes (where the policy is enforced as the traffic enters the target's node). With the chart's policy (the
default) the release's own pod and the target's node connect and the others are refused; then
``helm upgrade --reuse-values --set networkPolicy.enabled=false`` removes it, and the same outside probes connect
(so the refusals were the policy's doing, and the test can fail), as does the release's pod again (the ports were
listening all along). The job completes either way. Before each round the test waits until kube-router's rules
on the nodes show the policy applied to (or gone from) every target pod. Each test prints its table and records
it in the JUnit report (the test suite's property ``probes <chart>``).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import re
import subprocess
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dlcharts.cluster import ClusterHandle, netpol, poll
from dlcharts.cluster.node import RealNode
from dlcharts.helm import find_helm
from dlcharts.install import Kube, Release
from dlcharts.install.namespaces import delete_namespace
from dlcharts.install.releases import run_helm
from tests.support import CHARTS
from tests.support import cluster as cluster_env
from tests.support.real_node import real_pod_spec

pytestmark = pytest.mark.cluster

# seconds. kube-router REJECTs a denied SYN, but its ICMP answer has no route out of the node's namespace (no
# address there on the pods' bridge), so a denied probe ends here as "timeout" (a port nobody listens on: "refused").
CONNECT_TIMEOUT = 3.0

# Run by python3 in a source pod (every image here has it), or on the host: connect to each host:port given, all at
# once, from the source address argv[2] (empty: the system's choice).
PROBE = """
import concurrent.futures, json, socket, sys
def probe(target):
    host, port = target.rsplit(":", 1)
    source = (sys.argv[2], 0) if sys.argv[2] else None
    try:
        socket.create_connection((host, int(port)), timeout=float(sys.argv[1]), source_address=source).close()
        return target, "connected"
    except ConnectionRefusedError:
        return target, "refused"
    except TimeoutError:
        return target, "timeout"
    except OSError as exc:
        return target, f"error {exc.errno}"
with concurrent.futures.ThreadPoolExecutor(16) as pool:
    print(json.dumps(dict(pool.map(probe, sys.argv[3:]))))
""".strip()


# The job every chart runs: its ranks all-reduce (their rank + the step) and a flag every half second, through the
# framework's own collective, until the flag is up: /tmp/probed exists in a rank's pod (the test creates it when its
# probes are done). So the job lasts as long as the probes need, whatever the load, and ends cleanly (at most 600
# steps: then it fails). Each framework's part defines RANK and allreduce(a, b) -> the two sums over the ranks.
LOOP = """
step = 0
while True:
    step += 1
    total, done = allreduce(RANK + step, float(os.path.exists("/tmp/probed")))
    if RANK == 0:
        print(f"allreduce: step {step} sum {total:g}", flush=True)
    if done:
        break
    if step == 600:
        sys.exit("allreduce: /tmp/probed never appeared")
    time.sleep(0.5)
print(f"allreduce: rank {RANK} done after {step} steps", flush=True)
globals().get("finish", sys.exit)()
"""
TORCH = """
import os, sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
def finish():  # together, then out at once: tearing gloo down at exit can abort or hang this torch build
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)
RANK = dist.get_rank()
def allreduce(a, b):
    t = torch.tensor([a, b], dtype=torch.float64)
    dist.all_reduce(t)
    return t[0].item(), t[1].item()
"""
TENSORFLOW = """
import os, sys, time
import tensorflow as tf
strategy = tf.distribute.MultiWorkerMirroredStrategy()
RANK = strategy.cluster_resolver.task_id
@tf.function(input_signature=[tf.TensorSpec([2], tf.float64)])
def _sum(x):
    return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(tf.identity, args=(x,)), axis=None)
def allreduce(a, b):
    a, b = _sum(tf.constant([a, b], tf.float64)).numpy()
    return float(a), float(b)
"""
MXNET = """
import os, sys, time
import mxnet as mx  # the scheduler and the servers serve ps-lite from here until the workers are done
kv = mx.kv.create("dist_sync")
RANK = kv.rank
kv.init(0, mx.nd.zeros(2))
out = mx.nd.zeros(2)
def allreduce(a, b):
    kv.push(0, mx.nd.array([a, b]))
    kv.pull(0, out=out)
    a, b = out.asnumpy()
    return float(a), float(b)
"""
MPI4PY = """
import os, sys, time
from mpi4py import MPI
c = MPI.COMM_WORLD
RANK = c.rank
def allreduce(a, b):
    return c.allreduce(a), c.allreduce(b)
"""


@dataclasses.dataclass(frozen=True)
class Job:
    program: str  # the framework's part of the job, before LOOP
    values: list[str]  # helm arguments; the program goes in `script`, or, for MPI, in this program value
    role: str  # the pods that listen on `port`: this role's, those of `indexes` (None: all)
    indexes: list[int] | None
    port: int
    source: tuple[str, int]  # the release's own probe runs in this role's pod of this index
    ranks: str = "worker"  # the role whose pods run the ranks (where /tmp/probed goes)
    mpi_command: str = ""


JOBS = {
    # every worker's gRPC server
    "tensorflow-dist": Job(TENSORFLOW, ["--set", "worker=2"], "worker", None, 2222, ("worker", 0)),
    # the c10d TCPStore on worker 0
    "pytorch-dist": Job(TORCH, ["--set", "worker=2"], "worker", [0], 29500, ("worker", 1)),
    # the ps-lite scheduler
    "mxnet-dist": Job(MXNET, ["--set", "worker=2", "--set", "server=1"], "scheduler", [0], 9091, ("worker", 0)),
    # every worker's sshd, which mpirun reaches from the launcher
    "horovod-mpi": Job(MPI4PY, ["--set", "worker=2", "--set", "horovod.launcher=mpirun"], "worker", None, 2222,
                       ("launcher", 0), mpi_command="horovod.command"),
    "cntk-dist": Job(MPI4PY, ["--set", "worker=2", "--set", "cntk.activate="], "worker", None, 2222, ("launcher", 0),
                     mpi_command="cntk.python.command"),
}  # fmt: skip
TRIGGER = re.compile(r"allreduce: step 1 sum")


def _helm_args(job: Job, tmp_path: Path) -> list[str]:
    program = job.program.strip() + "\n" + LOOP.strip() + "\n"
    if job.mpi_command:
        return [*job.values, "--set-json", f"{job.mpi_command}={json.dumps(['python3', '-c', program])}"]
    (tmp_path / "job.py").write_text(program)
    return [*job.values, "--set-file", f"script={tmp_path / 'job.py'}"]


def _pods(kube: Kube, namespace: str, release: str) -> list[dict[str, Any]]:
    return [
        p
        for p in kube.items(f"/api/v1/namespaces/{namespace}/pods", f"app.kubernetes.io/instance={release}")
        if (p.get("status") or {}).get("phase") == "Running" and (p.get("status") or {}).get("podIP")
    ]


def _role_index(pod: dict[str, Any]) -> tuple[str, int]:
    labels = pod["metadata"]["labels"]
    return labels["app.kubernetes.io/component"], int(labels["batch.kubernetes.io/job-completion-index"])


@dataclasses.dataclass(frozen=True)
class Source:
    name: str  # the row's source: same release, other release, other namespace, node, other node
    node: str  # the real node it is on (or whose address it uses)
    namespace: str | None  # None: on the host
    pod: str = ""
    container: str = "main"
    address: str = ""  # on the host: the source address


def _probe(cluster: ClusterHandle, source: Source, targets: list[str]) -> dict[str, str]:
    """PROBE run from ``source`` (in its pod, or on the host from its address)."""
    namespace, pod, container = source.namespace, source.pod, source.container
    args = ["python3", "-c", PROBE, str(CONNECT_TIMEOUT), source.address, *targets]
    if namespace is None:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    else:
        proc = cluster_env.kubectl(cluster.kubeconfig, "exec", "-n", namespace, pod, "-c", container, "--", *args)
    assert proc.returncode == 0, f"probe from {namespace}/{pod} failed: {proc.stderr}"
    result: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _probe_pod(cluster: ClusterHandle, namespace: str, name: str, labels: dict[str, str], node: str) -> dict[str, Any]:
    assert cluster.images is not None
    spec = real_pod_spec(cluster.images.busybox, "sleep 900", nodeName=node)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec}  # fmt: skip


@pytest.mark.parametrize("chart", sorted(JOBS))
def test_training_ports_admit_only_the_release(
    chart: str,
    real_run: Any,
    embedded_cluster: ClusterHandle,
    record_testsuite_property: Callable[[str, object], None],
    tmp_path: Path,
) -> None:
    job = JOBS[chart]
    release = f"np-{chart.split('-')[0][:5]}"
    own = {"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": release}
    outside = f"np-out-{uuid.uuid4().hex[:6]}"
    node_ips = {n["name"]: n["ip"] for n in embedded_cluster.real_nodes}
    netns = [RealNode(embedded_cluster.state_dir, embedded_cluster.name, index=i).netns for i in range(len(node_ips))]
    rows: list[tuple[str, str, str, str, str]] = []  # (policy, source, source node -> target node, target, result)
    done = threading.Event()
    errors: list[BaseException] = []

    def start_probe_pods(namespace: str) -> None:
        embedded_cluster.create_namespace(outside, "restricted")
        with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
            other = {**own, "app.kubernetes.io/instance": f"{release}-other"}
            for node in node_ips:
                for ns, name, labels in ((namespace, f"probe-other-release-{node}", other),
                                         (outside, f"probe-same-labels-{node}", own)):  # fmt: skip
                    body = _probe_pod(embedded_cluster, ns, name, labels, node)
                    resp = kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body=body)
                    assert resp.status == 201, resp.doc

    def probe_round(policy: str, namespace: str, kube: Kube) -> None:
        for node in node_ips:
            for path in (f"/api/v1/namespaces/{namespace}/pods/probe-other-release-{node}",
                         f"/api/v1/namespaces/{outside}/pods/probe-same-labels-{node}"):  # fmt: skip
                poll(lambda p=path: kube.get(p)["status"].get("phase") == "Running", 120, f"{path} to run",
                     interval=0.5)  # fmt: skip
        pods = _pods(kube, namespace, release)
        listening = [
            p
            for p in pods
            if _role_index(p)[0] == job.role and (job.indexes is None or _role_index(p)[1] in job.indexes)
        ]
        targets = {p["metadata"]["name"]: f"{p['status']['podIP']}:{job.port}" for p in listening}
        target_node = {f"{p['status']['podIP']}:{job.port}": p["spec"]["nodeName"] for p in listening}
        own_pod = next(p for p in pods if _role_index(p) == job.source)
        want = {"on": {release}, "off": set()}[policy]

        def applied() -> bool:
            found: dict[tuple[str, str], set[str]] = {}
            for ns in netns:
                found.update(netpol.policies_by_pod(ns))
            return all((found.get((namespace, pod)) or set()) == want for pod in targets)

        poll(applied, 60, f"kube-router to apply {want or 'no policy'} to {sorted(targets)}", interval=0.5)
        everyone = list(targets.values())
        others = [t for name, t in targets.items() if name != own_pod["metadata"]["name"]]
        own = Source("same release", own_pod["spec"]["nodeName"], namespace, own_pod["metadata"]["name"], job.source[0])
        probes: list[tuple[Source, list[str]]] = [(own, others)]
        for node, ip in node_ips.items():
            probes += [
                (Source("other release", node, namespace, f"probe-other-release-{node}"), everyone),
                (Source("other namespace", node, outside, f"probe-same-labels-{node}"), everyone),
                # the kubelet's probes come from there: node-local traffic is admitted, as on any kube-router node
                (Source("node", node, None, address=ip), [t for t in everyone if target_node[t] == node]),
                # another host's address: no exception for it
                (Source("other node", node, None, address=ip), [t for t in everyone if target_node[t] != node]),
            ]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = [(src, pool.submit(_probe, embedded_cluster, src, tgts)) for src, tgts in probes if tgts]
            names = {t: n for n, t in targets.items()}
            for src, future in results:
                for target, outcome in future.result().items():
                    path = f"{src.node} -> {target_node[target]}"
                    rows.append((policy, src.name, path, f"{names[target]}:{job.port}", outcome))

    def on_line(line: str) -> None:
        if not done.is_set() and TRIGGER.search(line):
            done.set()
            threading.Thread(target=probes, args=(real_run.namespace,), daemon=True).start()

    finished = threading.Event()

    def probes(namespace: str) -> None:
        with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
            try:
                probe_round("on", namespace, kube)
                off = run_helm(
                    Release(find_helm(), embedded_cluster.kubeconfig, release, namespace),
                    ["upgrade", release, str(CHARTS / chart), "--reuse-values",
                     "--set", "networkPolicy.enabled=false"],
                    120,
                )  # fmt: skip
                assert off.returncode == 0, off.stderr
                probe_round("off", namespace, kube)
            except BaseException as exc:  # reported by the test, not lost in the thread
                errors.append(exc)
            finally:  # the job may end now
                for pod in _pods(kube, namespace, release):
                    if _role_index(pod)[0] == job.ranks:
                        touch = ["exec", "-n", namespace, pod["metadata"]["name"], "-c", job.ranks, "--"]
                        cluster_env.kubectl(embedded_cluster.kubeconfig, *touch, "touch", "/tmp/probed")
                finished.set()

    try:
        result, _ = real_run(chart, release, *_helm_args(job, tmp_path), on_line=on_line, before=start_probe_pods)
        assert done.is_set(), f"no log line matched {TRIGGER.pattern!r}"
        assert finished.wait(120), "the probes did not finish"
    finally:
        with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
            delete_namespace(kube, outside)
    table = "\n".join(f"{chart:16} policy {p:3}  {s:15}  {n:16}  {t:30} {o}" for p, s, n, t, o in sorted(rows))
    print(table)
    record_testsuite_property(f"probes {chart}", table)
    if errors:
        raise errors[0]
    assert result.ok, result.problem
    outcome = {(p, s): {o for pp, ss, _, _, o in rows if (pp, ss) == (p, s)} for p, s, _, _, _ in rows}
    assert outcome[("on", "same release")] == outcome[("on", "node")] == {"connected"}, table
    refused = ["other release", "other namespace"] + (["other node"] if len(node_ips) > 1 else [])
    for source in refused:
        assert outcome[("on", source)] <= {"refused", "timeout"}, table
    for source in ("same release", "node", *refused):
        assert outcome[("off", source)] == {"connected"}, table
    if len(node_ips) > 1:  # the refusals and the admissions both crossed nodes
        crossed = {(p, s) for p, s, n, _, _ in rows if len(set(n.split(" -> "))) == 2}
        assert {(p, s) for p in ("on", "off") for s in ("other release", "other namespace", "other node")} <= crossed
        assert ("on", "same release") in crossed or job.indexes is not None, table
