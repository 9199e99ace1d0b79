#!/usr/bin/env python3
"""Our charts side by side with the training operators they replace (issue 33), on one embedded cluster whose
add-ons are the operators (dlcharts.cluster.addons.operators: the v1 training-operator, the MPI Operator, JobSet and
Kubeflow Trainer v2, each a process on this machine).

``real``: the same program, image and resources on the real node, one run after another:

- pytorch: PyTorch DDP, 2 workers (``torchrun bench_ddp.py``): pytorch-dist vs PyTorchJob (a Master and a Worker, the
  v1 layout) vs TrainJob on the ``torch-distributed`` ClusterTrainingRuntime (numNodes 2);
- tensorflow: MultiWorkerMirroredStrategy, 4 workers (``bench_tf.py``): tensorflow-dist vs TFJob (4 Workers; the
  operator writes TF_CONFIG). Trainer v2 has no TensorFlow runtime (kubeflow/trainer issue 2443), so no TrainJob;
- horovod: Horovod over MPI, 2 workers: horovod-mpi vs MPIJob v2beta1.

The operators' jobs are made from our chart's own render (helm template with the values ``dlcharts run`` uses):
its main container (image, the program and its arguments, resources, security context, the scripts ConfigMap
mounted) and its pod's node selector, tolerations and security context, with our own wiring taken out (the
peer-wait init container, the rendezvous and TF_CONFIG environment, the cluster ConfigMap) so that each operator
wires the job its own way. Recorded: wall time (from the create to the job's verdict), time to the first training
step (its log line), when the last main container started, the time from the verdict until every pod of the job
had ended, and what the job left in its namespace: objects by kind and their bytes (compact JSON as the API server
serves them, events left out; etcd keeps built-in kinds as protobuf, somewhat smaller).

``scale``: PyTorch DDP at 1,000 and 5,000 workers on kwok's fake GPU nodes, one GPU per pod, as bench/scheduling.py
measures our charts: each system on a fresh cluster of its own (control plane, fake nodes, and only that system's
operator), the job made from pytorch-dist's render (``--set worker=N --set defaults.gpu.count=1``); from the create
(helm install, or the custom resource's POST) until every pod is Running, the control plane's CPU seconds per pod
counting the operator's process, the peak resident memory of the control plane with the operator, and what the job
made: objects by kind, the largest one.

Usage: .venv/bin/python -m bench.operators real [--jobs pytorch,tensorflow,horovod]
           [--systems ours,training-operator,trainer,mpi-operator] [--cluster-name ops]
(the cluster: `dlcharts cluster up --name ops --operator training-operator --operator mpi-operator --operator
trainer`; writes build/bench/operators_real.json and section 16 of bench/results.md)
       .venv/bin/python -m bench.operators scale [--systems ours,training-operator,trainer] [--workers 1000,5000]
           [--timeout 900]
(starts and stops a cluster ops-scale-<system> for each system; writes build/bench/operators_scale.json, section 16
and bench/plots/operators.png)
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import datetime
import json
import math
import re
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench import common, model, real_runs, results
from dlcharts.cluster import ClusterConfig, faults
from dlcharts.cluster.embedded import ClusterHandle, EmbeddedCluster
from dlcharts.cluster.node import RealNode
from dlcharts.helm import find_helm
from dlcharts.install import Kube
from dlcharts.install.namespaces import delete_namespace
from dlcharts.jobs import run

SECTION = "16-operators"
TITLE = "Side by side with the training operators (issue 33)"
SYSTEMS = ("ours", "training-operator", "trainer", "mpi-operator")
#: the environment our charts set that an operator sets its own way (rendezvous, ranks, TF_CONFIG), or that only
#: our wiring reads
OUR_WIRING = re.compile(r"^(DL_(?!COLLECTIVE_TIMEOUT)|PET_|MASTER_|TF_CONFIG|O?MPI_|HOROVOD_|WORLD_SIZE|RANK)")
#: our charts' volumes that carry our own wiring (the peers' host names; the MPI charts' hostfile, SSH setup and
#: passwd entry)
OUR_VOLUMES = ("cluster", "mpi-config", "mpi-home", "mpi-etc", "mpi-ssh-secret")
#: where the MPI Operator mounts the job's SSH key (a Secret) for a root user: with mode 0600, as sshd wants it
MPI_SSH_DIR = "/root/.ssh"
#: the manager of the TrainJob's runtime patch (node selector, tolerations, volumes)
BENCH_MANAGER = "dlcharts.io/bench"


@dataclasses.dataclass(frozen=True)
class Job:
    chart: str
    workers: int
    systems: tuple[str, ...]

    @property
    def step(self) -> str:
        return real_runs.CHARTS[self.chart][1]

    @property
    def helm_args(self) -> tuple[str, ...]:
        return ("--set", f"worker={self.workers}")


JOBS: dict[str, Job] = {
    "pytorch": Job("pytorch-dist", 2, ("ours", "training-operator", "trainer")),
    "tensorflow": Job("tensorflow-dist", 4, ("ours", "training-operator")),
    "horovod": Job("horovod-mpi", 2, ("ours", "mpi-operator")),
}
#: the kind each system runs a job as
KINDS = {
    ("pytorch", "training-operator"): "PyTorchJob",
    ("pytorch", "trainer"): "TrainJob",
    ("tensorflow", "training-operator"): "TFJob",
    ("horovod", "mpi-operator"): "MPIJob",
}


# ------------------------------------------------------------------------------------------ the operators' jobs


def render(chart: str, values: dict[str, Any], helm_args: tuple[str, ...], namespace: str) -> list[dict[str, Any]]:
    """Our chart rendered as ``dlcharts run`` installs it (release ``bench``)."""
    folder = common.WORK / "operators"
    folder.mkdir(parents=True, exist_ok=True)
    values_file = folder / f"{chart}-values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    args = ["template", "bench", str(common.ROOT / "charts" / chart), "-f", str(values_file), *helm_args,
            "--namespace", namespace]  # fmt: skip
    return [d for d in yaml.safe_load_all(find_helm().run(args).stdout) if d]


def _job_of(docs: list[dict[str, Any]], component: str) -> dict[str, Any]:
    for doc in docs:
        labels = doc["metadata"].get("labels") or {}
        if doc["kind"] == "Job" and labels.get("app.kubernetes.io/component") == component:
            return doc
    raise ValueError(f"the render has no Job for component {component!r}")


def program(container: dict[str, Any]) -> list[str]:
    """The program a container of ours runs: its args when its command is our shell wrapper (``/bin/sh -c SCRIPT
    dl-entrypoint``, which composes TF_CONFIG and the like, then runs ``"$@"``), else command and args."""
    command, args = list(container.get("command") or []), list(container.get("args") or [])
    if command[:2] == ["/bin/sh", "-c"] and command[3:4] == ["dl-entrypoint"]:
        return args
    return command + args


def pod_template(docs: list[dict[str, Any]], component: str, name: str) -> dict[str, Any]:
    """The pod template of our ``component`` Job with our wiring taken out, its main container renamed ``name``
    (the container name each operator looks for) and running :func:`program`; labels of its own."""
    spec = copy.deepcopy(_job_of(docs, component)["spec"]["template"]["spec"])
    main = spec["containers"][0]
    main.update(name=name, command=program(main))
    main.pop("args", None)
    main.pop("ports", None)  # each operator sets its own port
    main["env"] = [e for e in main.get("env") or [] if not OUR_WIRING.match(e["name"])]
    main["volumeMounts"] = [m for m in main.get("volumeMounts") or [] if m["name"] not in OUR_VOLUMES]
    spec["volumes"] = [v for v in spec.get("volumes") or [] if v["name"] not in OUR_VOLUMES]
    spec["containers"] = [main]
    for key in ("initContainers", "subdomain", "hostname", "restartPolicy"):
        spec.pop(key, None)
    return {"metadata": {"labels": {"dlcharts.io/bench": "operators"}}, "spec": spec}


def config_maps(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The render's ConfigMaps that the operators' pods mount (the scripts), not our wiring's."""
    return [d for d in docs if d["kind"] == "ConfigMap" and not d["metadata"]["name"].endswith("-cluster")]


def operator_job(job: str, system: str, docs: list[dict[str, Any]], name: str, workers: int) -> dict[str, Any]:
    """The operator's custom resource running what our render runs."""
    kind = KINDS[(job, system)]
    meta = {"name": name}
    if kind == "PyTorchJob":
        template = pod_template(docs, "worker", "pytorch")
        replicas = {"Master": 1, "Worker": workers - 1}
        specs = {r: {"replicas": n, "restartPolicy": "OnFailure", "template": copy.deepcopy(template)}
                 for r, n in replicas.items()}  # fmt: skip
        return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": meta,
                "spec": {"pytorchReplicaSpecs": specs, "runPolicy": {"cleanPodPolicy": "None"}}}  # fmt: skip
    if kind == "TFJob":
        template = pod_template(docs, "worker", "tensorflow")
        specs = {"Worker": {"replicas": workers, "restartPolicy": "OnFailure", "template": template}}
        return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": meta,
                "spec": {"tfReplicaSpecs": specs, "runPolicy": {"cleanPodPolicy": "None"}}}  # fmt: skip
    if kind == "TrainJob":
        template = pod_template(docs, "worker", "node")
        main = template["spec"].pop("containers")[0]
        pod = {key: template["spec"][key] for key in ("nodeSelector", "tolerations", "securityContext", "volumes")
               if key in template["spec"]}  # fmt: skip
        pod["containers"] = [{"name": "node", "volumeMounts": main.get("volumeMounts") or [],
                              "securityContext": main.get("securityContext") or {}}]  # fmt: skip
        patch = {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
            "spec": pod}}}}]}}}  # fmt: skip
        trainer = {"numNodes": workers, "numProcPerNode": 1, "image": main["image"], "command": main["command"],
                   "env": main.get("env") or [], "resourcesPerNode": main.get("resources") or {}}  # fmt: skip
        return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta,
                "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer,
                         "runtimePatches": [{"manager": BENCH_MANAGER, "trainingRuntimeSpec": patch}]}}  # fmt: skip
    if kind == "MPIJob":
        return mpi_job(docs, meta, workers)
    raise ValueError(f"no {kind} yet")


def mpi_job(docs: list[dict[str, Any]], meta: dict[str, Any], workers: int) -> dict[str, Any]:
    """An MPIJob (v2beta1) running our horovod-mpi render's program the MPI Operator's way: the operator writes the
    hostfile and the SSH key; the workers run sshd, the launcher ``mpirun`` with the hostfile's ranks.

    Both run as root, as the operator's own Horovod examples do: ssh and sshd need a passwd entry for their uid,
    which our image has only for root (our chart writes one for uid 1000 in an init container; an MPIJob user
    bakes a user into the image). Root keeps the runtime's default capabilities, which a root sshd needs."""
    specs = {}
    for role, name in (("launcher", "mpi-launcher"), ("worker", "mpi-worker")):
        template = pod_template(docs, role, name)
        template["spec"]["securityContext"] = {"runAsUser": 0, "runAsGroup": 0}  # the image's user is 1000
        main = template["spec"]["containers"][0]
        main.pop("securityContext", None)
        main["env"] = [e for e in main["env"] if e["name"] != "HOME"]
        specs[role] = template
    launch = specs["launcher"]["spec"]["containers"][0]["command"]
    if "python" not in launch:
        raise ValueError(f"no python program in the launcher's {launch}")
    ssh_options = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectionAttempts=10"
    specs["launcher"]["spec"]["containers"][0]["command"] = [
        "mpirun", "--allow-run-as-root", "-np", str(workers), "-bind-to", "none", "-map-by", "slot",
        "--mca", "plm_rsh_args", ssh_options, "--mca", "btl_vader_single_copy_mechanism", "none", "-x", "PATH",
        *launch[launch.index("python"):],
    ]  # fmt: skip
    # a root sshd's privilege separation directory, which an image's init system would make (the operator's base
    # image makes it at build)
    sshd = f"/usr/sbin/sshd -De -o HostKey={MPI_SSH_DIR}/id_rsa -o StrictModes=no -o PidFile=none"
    specs["worker"]["spec"]["containers"][0]["command"] = ["/bin/sh", "-c", f"mkdir -p /run/sshd && exec {sshd}"]
    replicas = {"Launcher": (1, specs["launcher"]), "Worker": (workers, specs["worker"])}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": meta,
        "spec": {
            "slotsPerWorker": 1,
            "sshAuthMountPath": MPI_SSH_DIR,
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {role: {"replicas": n, "template": t} for role, (n, t) in replicas.items()},
        },
    }


# ------------------------------------------------------------------------------------------------- measuring


def _when(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def left_objects(kube: Kube, namespace: str) -> dict[str, Any]:
    """What a job left in ``namespace``: objects by kind and their bytes (compact JSON as served; events and the
    namespace's own kube-root-ca.crt and default ServiceAccount left out)."""
    counts: dict[str, int] = {}
    size = 0
    largest: dict[str, Any] = {"kind": "", "bytes": 0}
    for res in kube.preferred_resources():
        if not res.namespaced or "list" not in res.verbs or res.kind in ("Event", "LocalSubjectAccessReview"):
            continue
        try:
            items = kube.items(res.path(namespace))
        except Exception:  # noqa: BLE001 - a kind that cannot be listed here (a removed API) counts nothing
            continue
        for item in items:
            name = item["metadata"]["name"]
            if (res.kind, name) in (("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")):
                continue
            item["metadata"].pop("managedFields", None)
            nbytes = len(json.dumps(item, separators=(",", ":")))
            counts[res.kind] = counts.get(res.kind, 0) + 1
            size += nbytes
            if nbytes > largest["bytes"]:
                largest = {"kind": res.kind, "bytes": nbytes}
    return {"objects": dict(sorted(counts.items())), "object_count": sum(counts.values()), "bytes": size,
            "largest": largest}  # fmt: skip


def _verdict(doc: dict[str, Any]) -> tuple[str, str] | None:
    """("Succeeded" or "Failed", when) once the custom resource has its verdict (a True condition of that type;
    JobSet-style "Complete" counts as Succeeded)."""
    for cond in (doc.get("status") or {}).get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Succeeded", "Complete", "Failed"):
            kind = "Failed" if cond["type"] == "Failed" else "Succeeded"
            return kind, str(cond.get("lastTransitionTime") or "")
    return None


def jobs_verdict(kube: Kube, namespace: str) -> datetime.datetime | None:
    """When our release's Jobs gave their verdict: the first Job's failure, or else the last one's completion (None
    while one runs)."""
    failed, complete, running = [], [], False
    for job in kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs"):
        ends = {c["type"]: _when(c["lastTransitionTime"]) for c in (job.get("status") or {}).get("conditions") or []
                if c.get("status") == "True" and c["type"] in ("Complete", "Failed")}  # fmt: skip
        failed += [ends["Failed"]] if "Failed" in ends else []
        complete += [ends["Complete"]] if "Complete" in ends else []
        running = running or not ends
    if failed:
        return min(failed)
    return None if running or not complete else max(complete)


def _main_started(pod: dict[str, Any]) -> str | None:
    main = pod["spec"]["containers"][0]["name"]
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        state = status.get("state") or {}
        started = (state.get("terminated") or state.get("running") or {}).get("startedAt")
        if status["name"] == main and started:
            return str(started)
    return None


def _running(pod: dict[str, Any]) -> bool:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return any("running" in (s.get("state") or {}) or "waiting" in (s.get("state") or {})
               for s in (pod.get("status") or {}).get("containerStatuses") or []) or not (pod.get("status") or {}).get(
        "containerStatuses")  # fmt: skip


def pods_created(events: list[dict[str, Any]]) -> int:
    """Pods made, from the ``Created pod`` events: a pod re-made under its own name (the v1 operator's) adds to its
    event's count."""
    return sum(int(e.get("count") or 1) for e in events if "Created pod" in (e.get("message") or ""))


def victim(pods: list[dict[str, Any]]) -> str | None:
    """A worker pod that is not rank 0: PyTorchJob's ``*-worker-0`` (rank 1), else the pod of completion index 1
    (our Jobs, TrainJob's JobSet)."""
    for pod in pods:
        meta = pod["metadata"]
        index = (meta.get("annotations") or {}).get("batch.kubernetes.io/job-completion-index")
        if meta["name"].endswith("-worker-0") or index == "1":
            return str(meta["name"])
    return None


#: a fault injected into a running job: (the API, the job's namespace) -> what it did
Inject = Callable[[Kube, str], dict[str, Any]]


def delete_worker(kube: Kube, namespace: str) -> dict[str, Any]:
    """The fault ``worker-deleted``: delete :func:`victim` at once (grace period 0)."""
    name = victim(kube.items(f"/api/v1/namespaces/{namespace}/pods"))
    if name:
        kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", query={"gracePeriodSeconds": "0"})
    return {"victim": name}


def node_loser(handle: ClusterHandle, lost: list[RealNode]) -> Inject:
    """The fault ``node-lost``: the real node of :func:`victim` is lost (its pods cut off, then every process of
    the node killed: dlcharts.cluster.faults.lose), and appended to ``lost`` for the restore."""

    def lose(kube: Kube, namespace: str) -> dict[str, Any]:
        pods = kube.items(f"/api/v1/namespaces/{namespace}/pods")
        name = victim(pods)
        nodes = {str(p["metadata"]["name"]): (p.get("spec") or {}).get("nodeName") for p in pods}
        node = nodes.get(name or "")
        if not node:
            return {"victim": name, "error": "the victim has no node"}
        lost.append(faults.real_node(handle.state_dir, handle.name, node))
        faults.lose(lost[-1])
        return {"victim": name, "node": node, "pods_on_node": sorted(p for p, n in nodes.items() if n == node)}

    return lose


def missing_image(image: str) -> str:
    return f"{image.rsplit(':', 1)[0]}:bench-missing"


def break_worker_image(resource: dict[str, Any]) -> None:
    """The fault ``image-missing`` in an operator's job: its workers' image (not the PyTorchJob's Master's nor
    the MPIJob's launcher's; a TrainJob's nodes are one role) names a tag the registry does not have."""
    spec = resource["spec"]
    if resource["kind"] == "TrainJob":
        spec["trainer"]["image"] = missing_image(spec["trainer"]["image"])
        return
    replicas = next(v for k, v in spec.items() if k.endswith("ReplicaSpecs"))
    container = replicas["Worker"]["template"]["spec"]["containers"][0]
    container["image"] = missing_image(container["image"])


@dataclasses.dataclass(frozen=True)
class Fault:
    """A failure case: the jobs it runs in; our chart's values for it (also in the render the operators' jobs are
    made from); ``injector``: what makes the fault injected at the first training step, from the cluster and the
    list of nodes to restore after the run (without one, the fault is made into the job from its create, by
    ``breaks`` for an operator's job)."""

    jobs: tuple[str, ...]
    helm_args: dict[str, tuple[str, ...]]
    injector: Callable[[ClusterHandle, list[RealNode]], Inject] | None = None
    breaks: Callable[[dict[str, Any]], None] | None = None
    #: our chart's values for it that the operators' jobs do not take (ours only)
    ours_args: tuple[str, ...] = ()


#: each run must outlast a fault injected at its first step
_LONG: dict[str, tuple[str, ...]] = {
    "pytorch": ("--set", "benchmark.steps=200"),
    "horovod": ("--set", "benchmark.iterations=10"),  # about 70 s on this machine
}
FAULTS: dict[str, Fault] = {
    "worker-deleted": Fault(("pytorch", "horovod"), _LONG, injector=lambda _handle, _lost: delete_worker),
    "node-lost": Fault(("pytorch", "horovod"), _LONG, injector=node_loser),
    # our start watch ends a release whose pod has not started peerWait.timeoutSeconds after its Job (default 900
    # s): 60 s here; the operators have no such bound (a job waits until activeDeadlineSeconds, none by default)
    "image-missing": Fault(("pytorch", "horovod"), {}, breaks=break_worker_image,
                           ours_args=("--set", "roles.worker.image.tag=bench-missing",
                                      "--set", "peerWait.timeoutSeconds=60")),
    # every rank exits 3 at once, so mpirun (horovodrun for ours) fails: the launcher's retries and the verdict
    "launcher-failing": Fault(("horovod",), {"horovod": ("--set-json", 'horovod.command=["python", "-c", '
                                                        '"raise SystemExit(3)"]')}),
}  # fmt: skip


def run_operator(
    kube: Kube, job_name: str, job: Job, system: str, registry: str, cap: float, extra: tuple[str, ...] = (),
    fault: Fault | None = None, inject: Inject | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One job on ``system``; with ``fault``, the times that follow are from the fault: ``inject`` at its first
    training step, or the create for a fault made into the job (``Fault.breaks``)."""
    namespace = f"bench-{system}-{job.chart}-{uuid.uuid4().hex[:6]}"
    run.push_images(job.chart, registry, lambda _line: None)
    docs = render(job.chart, run.cpu_values(job.chart, registry), (*job.helm_args, *extra), namespace)
    name = "bench"
    resource = operator_job(job_name, system, docs, name, job.workers)
    if fault is not None and fault.breaks:
        fault.breaks(resource)
    api = kube.resource_for(resource["apiVersion"], resource["kind"])
    before = common.load()
    # no Pod Security level: the operators' own containers (the PyTorchJob workers' init container) meet none
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    started, started_at = time.monotonic(), datetime.datetime.now(datetime.UTC)
    for doc in config_maps(docs):
        doc["metadata"]["namespace"] = namespace
        kube.apply(doc)
    resource["metadata"]["namespace"] = namespace
    resp = kube.request("POST", api.path(namespace), body=resource)
    if resp.status != 201:
        raise SystemExit(f"{resource['kind']} refused: {resp.doc}")
    first_step: float | None = None
    faulted: dict[str, Any] | None = None if fault is None or inject else {"at": started}
    verdict: tuple[str, str] | None = None
    verdict_at = ended_at = None
    pods: list[Any] = []
    seen: set[str] = set()  # the pods' uids: the MPI Operator makes its workers with no event saying so
    while time.monotonic() - started < cap:
        pods = kube.items(f"/api/v1/namespaces/{namespace}/pods")
        seen.update(str(p["metadata"]["uid"]) for p in pods)
        if first_step is None:
            for pod in pods:
                if _main_started(pod):
                    log = kube.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/log")
                    if isinstance(log.doc, str) and re.search(job.step, log.doc):
                        first_step = time.monotonic() - started
                        if inject is not None:
                            faulted = {**inject(kube, namespace), "at": time.monotonic()}
                        break
        if verdict is None:
            verdict = _verdict(kube.get(api.path(namespace, name)))
            if verdict is not None:
                verdict_at = time.monotonic()
        if verdict is not None and not any(_running(p) for p in pods):
            ended_at = time.monotonic()
            break
        time.sleep(1.0)
    starts = [_when(s) for s in (_main_started(p) for p in pods) if s]
    exits = [_when(str(st["terminated"]["finishedAt"])) for p in pods
             for st in ((c.get("state") or {}) for c in (p.get("status") or {}).get("containerStatuses") or [])
             if "terminated" in st]  # fmt: skip
    after_verdict = None
    if verdict and verdict[1] and exits:
        after_verdict = round(max(0.0, (max(exits) - _when(verdict[1])).total_seconds()), 1)
    left = left_objects(kube, namespace)
    events = kube.items(f"/api/v1/namespaces/{namespace}/events")
    delete_namespace(kube, namespace)
    outcome = {}
    if faulted is not None:
        at = faulted.pop("at")
        outcome = {**faulted, "verdict_after_fault_s": round(verdict_at - at, 1) if verdict_at else None,
                   "ended_after_fault_s": round(ended_at - at, 1) if ended_at else None,
                   "pods_made": max(pods_created(events), len(seen)),
                   "pods_left_running": sum(_running(p) for p in pods),
                   "events": sorted({str(e.get("reason")) for e in events})}  # fmt: skip
    return {
        **outcome,
        "system": system,
        "kind": resource["kind"],
        "ok": bool(verdict and verdict[0] == "Succeeded"),
        "verdict": verdict[0] if verdict else "none (cap)",
        "pods": len(pods),
        "wall_s": round(verdict_at - started, 1) if verdict_at else None,
        "all_started_s": round((max(starts) - started_at).total_seconds(), 1) if starts else None,
        "first_step_s": None if first_step is None else round(first_step, 1),
        "last_exit_after_verdict_s": after_verdict,
        "pods_ended_after_verdict_s": round(ended_at - verdict_at, 1) if ended_at and verdict_at else None,
        "load_before": before,
        "load_after": common.load(),
        **left,
    }


def fault_ours(
    kubeconfig: Path, job: Job, registry: str, extra: tuple[str, ...], cap: float, inject: Inject | None,
    spread: bool = False, api_server: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Our chart with a fault (bench.node_faults' way: ``dlcharts run``'s job, the step from its log): ``inject`` at
    the first training step, or, without it, a fault that ``extra`` made into the release, timed from the install."""
    import threading

    from dlcharts.install import Release

    namespace = f"fault-ours-{uuid.uuid4().hex[:6]}"
    path = common.ROOT / "charts" / job.chart
    run.push_images(job.chart, registry, lambda _line: None)
    found: dict[str, Any] = {}

    def injecting() -> None:
        with Kube.from_kubeconfig(kubeconfig) as kube:
            assert inject is not None
            found.update(inject(kube, namespace), at=time.monotonic(), at_wall=time.time())

    def write(line: str) -> None:
        if inject is not None and "injecting" not in found and re.search(job.step, line):
            found["injecting"] = True
            threading.Thread(target=injecting, daemon=True).start()

    started = time.monotonic()
    with Kube.from_kubeconfig(kubeconfig) as kube:
        run.prepare_namespace(kube, namespace, path, write=lambda _line: None)
        release = Release(find_helm(), kubeconfig, "bench", namespace)
        values = run.cpu_values(job.chart, registry, spread=spread, api_server=api_server)
        if inject is None:
            found.update(at=time.monotonic(), at_wall=time.time())
        result = run.run_job(kube, release, path, values, (*job.helm_args, *extra), timeout=cap, write=write)
        while True:  # until every pod has ended (a failed launcher's workers stop through their watchdog), or the cap
            left_running = sum(_running(p) for p in kube.items(f"/api/v1/namespaces/{namespace}/pods"))
            if not left_running or time.monotonic() - found.get("at", started) > cap:
                break
            time.sleep(1.0)
        ended = time.monotonic()
        verdict_at = jobs_verdict(kube, namespace)  # after the pods: the start watch's Jobs fail a moment after it
        events = kube.items(f"/api/v1/namespaces/{namespace}/events")
        delete_namespace(kube, namespace)
    at, at_wall = found.pop("at", None), found.pop("at_wall", None)
    found.pop("injecting", None)
    return {
        **found,
        "system": "ours",
        "kind": job.chart,
        "ok": result.ok,
        "verdict": "Succeeded" if result.ok else ("Failed" if verdict_at else "none (cap)"),
        "verdict_after_fault_s": round(verdict_at.timestamp() - at_wall, 1) if verdict_at and at_wall else None,
        "ended_after_fault_s": round(ended - at, 1) if at and not left_running else None,
        "pods_made": pods_created(events),
        "pods_left_running": left_running,
        "events": sorted({str(e.get("reason")) for e in events}),
        "problem": result.problem.splitlines()[0] if result.problem else "",
    }


def run_ours(kubeconfig: Path, job: Job, registry: str, nodes: int) -> dict[str, Any]:
    row = real_runs.one(job.chart, kubeconfig, registry, nodes, job.helm_args, measure=left_objects)
    return {
        "system": "ours",
        "kind": job.chart,
        "ok": row["ok"],
        "verdict": "Succeeded" if row["ok"] else "Failed",
        "pods": row["pods"],
        "wall_s": row["verdict_s"] or row["wall_s"],  # to the verdict, as the operators' condition
        "all_started_s": row["all_started_s"],
        "first_step_s": row["first_step_s"],
        "last_exit_after_verdict_s": row["last_exit_after_first_job_s"],
        "pods_ended_after_verdict_s": row["settled_s"],
        "load_before": row["load_before"],
        "load_after": row["load_after"],
        **{key: row[key] for key in ("objects", "object_count", "bytes", "largest")},
    }


# ---------------------------------------------------------------------------------------------------- scale


def scale_one(handle: Any, system: str, workers: int, timeout: float, interval: float = 0.5) -> dict[str, Any]:
    """One PyTorch DDP job of ``workers`` pods on ``system``: times, CPU, memory and objects (bench.scheduling's
    measures)."""
    from bench import scheduling

    api = scheduling.Api(handle.kubeconfig)
    namespace = f"scale-{system}-w{workers}-{uuid.uuid4().hex[:4]}"
    helm_args = ("--set", f"worker={workers}", "--set", "defaults.gpu.count=1")
    with Kube.from_kubeconfig(handle.kubeconfig) as kube:
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        docs = render("pytorch-dist", {}, helm_args, namespace)
        resource = None
        if system != "ours":
            resource = operator_job("pytorch", system, docs, "train", workers)
            resource["metadata"]["namespace"] = namespace
        rss, cpu_before, load = handle.rss_bytes(), scheduling.cpu_seconds(handle), common.load()
        start = time.perf_counter()
        marks: dict[str, float] = {}
        if resource is None:
            done = scheduling.helm("install", "train", str(common.ROOT / "charts" / "pytorch-dist"), "--namespace",
                                   namespace, *helm_args, kubeconfig=handle.kubeconfig)  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"helm install worker={workers} failed: {done.stderr}")
        else:
            for doc in config_maps(docs):
                doc["metadata"]["namespace"] = namespace
                kube.apply(doc)
            path = kube.resource_for(resource["apiVersion"], resource["kind"]).path(namespace)
            resp = kube.request("POST", path, body=resource)
            if resp.status != 201:
                raise SystemExit(f"{resource['kind']} worker={workers} refused: {resp.doc}")
        marks["created_job"] = time.perf_counter() - start
        while time.perf_counter() - start < timeout:
            with contextlib.suppress(Exception):
                pods, bound, running = api.pod_states(namespace)
                now = time.perf_counter() - start
                for mark, count in (("created", pods), ("bound", bound), ("running", running)):
                    if count >= workers and mark not in marks:
                        marks[mark] = round(now, 1)
            rss = scheduling.peak(rss, handle.rss_bytes())
            if "running" in marks:
                break
            time.sleep(interval)
        else:
            marks["timed_out"] = round(time.perf_counter() - start, 1)
        cpu_after = scheduling.cpu_seconds(handle)
        cpu = {name: round(cpu_after[name] - cpu_before.get(name, 0.0), 1) for name in cpu_after}
        left = left_objects(kube, namespace)
    result = {
        "system": system,
        "kind": resource["kind"] if resource else "pytorch-dist",
        "workers": workers,
        "seconds": marks,
        "cpu_seconds": cpu,
        "cpu_ms_per_pod": round(1000 * sum(cpu.values()) / workers, 1),
        "rss_peak": rss,
        "rss_peak_mib": round(sum(rss.values()) / 2**20),
        "load_before": load,
        **left,
    }
    print(f"operators scale: {json.dumps(result)}", flush=True)
    return result


def scale(systems: list[str], sizes: list[int], timeout: float) -> list[dict[str, Any]]:
    from dlcharts.cluster import H100_LABELS, NodePool

    nodes = math.ceil(max(sizes) * 1.05 / 8) + 2
    pool = NodePool(name="gpu", count=nodes, gpus=8, cpu="192", memory="2Ti", labels=dict(H100_LABELS))
    runs = []
    for system in systems:
        addons = () if system == "ours" else (system,)
        config = ClusterConfig(name=f"ops-scale-{system}"[:20], node_pools=(pool,), pod_run_seconds=3600,
                               start_timeout=900, real_node=False, addons=addons)  # fmt: skip
        cluster = EmbeddedCluster(config)
        for workers in sizes:  # a fresh cluster for each size: the GPUs free, the peak memory of that size alone
            cluster.stop()
            try:
                runs.append(scale_one(cluster.start(), system, workers, timeout))
            except Exception as exc:  # noqa: BLE001 - recorded: where a system cannot reach a size
                runs.append({"system": system, "workers": workers, "error": f"{type(exc).__name__}: {exc}"})
            finally:
                cluster.stop()
            report_scale(runs[-1:])  # each size as it ends: a long series stopped halfway keeps what it measured
    return runs


# --------------------------------------------------------------------------------------------------- report

REAL_COLUMNS = [
    model.column("job", align="left"),
    model.column("system", align="left"),
    model.column("ok"),
    model.column("wall s", "{:.0f}"),
    model.column("all started s", "{:.0f}"),
    model.column("first step s", "{:.0f}"),
    model.column("last exit after verdict s", "{}"),
    model.column("objects left", align="left"),
    model.column("bytes (JSON)", "{:,}"),
    model.column("load 1m before → after", "{:.1f} → {:.1f}", align="left"),
]


def real_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            f"{r['job']} ({r['workers']} workers)", f"{r['system']} ({r['kind']})", r["ok"], r["wall_s"],
            r["all_started_s"], r["first_step_s"], r["last_exit_after_verdict_s"],
            ", ".join(f"{k} {v}" for k, v in r["objects"].items()), r["bytes"],
            [r["load_before"]["1m"], r["load_after"]["1m"]],
        ]
        for r in runs
    ]  # fmt: skip


def merged(block_id: str, new: list[list[Any]], key: int) -> list[list[Any]]:
    """The rows of table ``block_id`` in section 16 with ``new`` in place of those with the same first ``key``
    cells (a rerun of some keeps the others; rows of an older layout, of another width, go), sorted by those cells,
    the systems in the order of SYSTEMS."""
    path = model.path_of(SECTION)
    old: list[list[Any]] = []
    if path.is_file():
        old = next((b["rows"] for b in model.load(path)["blocks"] if b.get("id") == block_id), [])
    width = len(new[0]) if new else None
    rows = model.merge_rows([r for r in old if width is None or len(r) == width], new, key=key)
    order = {system: f"~{i}" for i, system in enumerate(SYSTEMS)}  # a system sorts by its place in SYSTEMS
    rows.sort(key=lambda r: [order.get(str(c).split(" ")[0], f"{c:>9}" if isinstance(c, int) else str(c))
                             for c in r[:key]])  # fmt: skip
    return rows


def report_real(runs: list[dict[str, Any]]) -> None:
    caption = (
        "`python -m bench.operators real` on one embedded cluster with 2 real nodes (on one machine: 2 CPU cores, "
        "see the load column), one run after another; the operators' jobs run our chart's program, image "
        "and resources. Trainer v2 has no TensorFlow runtime (kubeflow/trainer issue 2443)."
    )
    block = model.table("real", REAL_COLUMNS, merged("real", real_rows(runs), key=2), caption=caption)
    model.update(SECTION, [block], title=TITLE, by="`python -m bench.operators`")
    results.write()


SCALE_COLUMNS = [
    model.column("system", align="left"),
    model.column("workers", "{:,}"),
    model.column("all Running s", "{}"),
    model.column("control-plane CPU ms per pod", "{}"),
    model.column("peak RSS MiB", "{}"),
    model.column("objects", "{:,}"),
    model.column("largest object", align="left"),
]


def scale_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for r in runs:
        if "error" in r:
            rows.append([r["system"], r["workers"], f"failed: {r['error'][:120]}", None, None, None, ""])
            continue
        running = r["seconds"].get("running", f"not all in {r['seconds'].get('timed_out')} s")
        largest = f"{r['largest']['kind']} {r['largest']['bytes']:,} B"
        rows.append([f"{r['system']} ({r['kind']})", r["workers"], running, r["cpu_ms_per_pod"], r["rss_peak_mib"],
                     r["object_count"], largest])  # fmt: skip
    return rows


def report_scale(runs: list[dict[str, Any]]) -> None:
    caption = (
        "`python -m bench.operators scale`: PyTorch DDP with one GPU per pod on kwok's fake nodes, each system on a "
        "fresh cluster of its own with only its operator; CPU and memory count the API server, etcd, "
        "controller-manager, scheduler, kwok and the operator."
    )
    rows = merged("scale", scale_rows(runs), key=2)
    blocks = [model.table("scale", SCALE_COLUMNS, rows, caption=caption)]
    done = [r for r in rows if isinstance(r[2], (int, float))]  # the table's rows, earlier runs' too
    plt = common.pyplot() if done else None
    if plt is not None:
        fig, (running, cpu) = plt.subplots(1, 2, figsize=(10, 4))
        for system in dict.fromkeys(r[0] for r in done):
            mine = sorted((r for r in done if r[0] == system), key=lambda r: r[1])
            running.plot([r[1] for r in mine], [r[2] for r in mine], marker="o", label=system)
            cpu.plot([r[1] for r in mine], [r[3] for r in mine], marker="o", label=system)
        running.set(xlabel="workers (pods)", ylabel="seconds until every pod Running")
        cpu.set(xlabel="workers (pods)", ylabel="control-plane CPU ms per pod")
        running.legend()
        fig.tight_layout()
        fig.savefig(common.PLOTS / "operators.png", dpi=100)
        blocks.append(model.image("scale-plot", "plots/operators.png", "time to all Running and CPU per pod"))
    model.update(SECTION, blocks, title=TITLE, by="`python -m bench.operators`")
    results.write()


FAULT_COLUMNS = [
    model.column("case", align="left"),
    model.column("job", align="left"),
    model.column("system", align="left"),
    model.column("verdict", align="left"),
    model.column("verdict after fault s", "{}"),
    model.column("every pod ended after fault s", "{}"),
    model.column("pods created", "{}"),
    model.column("pods still running at the end", "{}"),
]


def report_faults(runs: list[dict[str, Any]]) -> None:
    """The fault table of section 16 (rows of the same case, job and system replaced)."""
    rows = [[r["case"], f"{r['job']} ({JOBS[r['job']].workers} workers)", f"{r['system']} ({r['kind']})",
             r["verdict"], r["verdict_after_fault_s"], r["ended_after_fault_s"], r["pods_made"],
             r["pods_left_running"]] for r in runs]  # fmt: skip
    caption = (
        "`python -m bench.operators faults` on 2 real nodes: worker-deleted and node-lost at the first training "
        "step (the pod of rank 1, or the MPIJob's worker-0, deleted with grace period 0, or its node lost); "
        "image-missing (the workers' image tag absent; ours with peerWait.timeoutSeconds=60) and launcher-failing "
        "(every rank exits 3) from the create. Each system's defaults otherwise; times from the fault, a run "
        "capped at `--cap` seconds."
    )
    model.update(SECTION, [model.table("faults", FAULT_COLUMNS, merged("faults", rows, key=3), caption=caption)],
                 title=TITLE, by="`python -m bench.operators`")  # fmt: skip
    results.write()


def faults_main(args: argparse.Namespace) -> int:
    handle = EmbeddedCluster(ClusterConfig(name=args.cluster_name)).start()
    assert handle.images is not None, "the cluster runs without its real node"
    registry, systems = handle.images.registry, args.systems.split(",")
    runs = []
    # our releases with their start watch, as `dlcharts run` installs them (the real nodes' pods reach the API server
    # through this relay)
    assert handle.real_node is not None
    relay = run.api_relay(handle.server, handle.state_dir, str(handle.real_node["ip"]))
    with Kube.from_kubeconfig(handle.kubeconfig) as kube, relay as api_server:
        for case in args.cases.split(","):
            fault = FAULTS[case]
            for job_name in (j for j in fault.jobs if j in args.jobs.split(",")):
                job, extra = JOBS[job_name], fault.helm_args.get(job_name, ())
                for system in (s for s in job.systems if s in systems):
                    print(f"operators: {case}, {job_name} on {system} ...", flush=True)
                    lost: list[RealNode] = []
                    inject = fault.injector(handle, lost) if fault.injector else None
                    try:
                        if system == "ours":
                            row = fault_ours(handle.kubeconfig, job, registry, (*extra, *fault.ours_args), args.cap,
                                             inject, spread=len(handle.real_nodes) > 1,
                                             api_server=api_server)  # fmt: skip
                        else:
                            row = run_operator(kube, job_name, job, system, registry, args.cap, extra, fault, inject)
                    finally:
                        for node in lost:
                            faults.restore(node, handle.kubeconfig, 300)
                    row.update(case=case, job=job_name, workers=job.workers)
                    print(json.dumps(row), flush=True)
                    runs.append(row)
                    report_faults([row])  # each run as it ends: a long series stopped halfway keeps what it measured
    common.save("operators_faults", {"machine": common.machine(), "date": common.now(), "runs": runs})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="part", required=True)
    real = sub.add_parser("real", help="the same real jobs on the real node")
    real.add_argument("--jobs", default=",".join(JOBS), help="of: " + ", ".join(JOBS))
    real.add_argument("--systems", default=",".join(SYSTEMS), help="of: " + ", ".join(SYSTEMS))
    real.add_argument("--cluster-name", default="ops")
    real.add_argument("--cap", type=float, default=900.0, help="seconds a job may take before it counts as failed")
    sized = sub.add_parser("scale", help="PyTorch DDP at 1,000 and 5,000 workers on fake GPU nodes")
    sized.add_argument("--systems", default="ours,training-operator,trainer", help="of: ours, training-operator, "
                       "trainer")  # fmt: skip
    sized.add_argument("--workers", default="1000,5000")
    sized.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for every pod to run")
    fault = sub.add_parser("faults", help="failure cases side by side: " + ", ".join(FAULTS))
    fault.add_argument("--cases", default=",".join(FAULTS), help="of: " + ", ".join(FAULTS))
    fault.add_argument("--jobs", default=",".join(JOBS), help="of: " + ", ".join(JOBS))
    fault.add_argument("--systems", default=",".join(SYSTEMS), help="of: " + ", ".join(SYSTEMS))
    fault.add_argument("--cluster-name", default="ops")
    fault.add_argument("--cap", type=float, default=600.0)
    args = parser.parse_args(argv)
    known: dict[str, Any] = {"cases": FAULTS, "jobs": JOBS, "systems": SYSTEMS}
    unknown = [f"{value} (--{option} of: {', '.join(known[option])})" for option in known
               for value in getattr(args, option, "").split(",") if value and value not in known[option]]  # fmt: skip
    if unknown:
        parser.error(f"unknown {'; '.join(unknown)}")
    if args.part == "faults":
        return faults_main(args)
    if args.part == "scale":
        runs = scale(args.systems.split(","), [int(w) for w in args.workers.split(",")], args.timeout)
        common.save("operators_scale", {"machine": common.machine(), "date": common.now(), "runs": runs})
        return 0 if all("error" not in r and "running" in r["seconds"] for r in runs) else 1
    systems = args.systems.split(",")
    cluster = EmbeddedCluster(ClusterConfig(name=args.cluster_name))
    if not cluster.is_running():
        parser.error(f"cluster {args.cluster_name} does not run; start it with the operators (see --help)")
    handle = cluster.start()
    assert handle.images is not None, "the cluster runs without its real node"
    runs = []
    with Kube.from_kubeconfig(handle.kubeconfig) as kube:
        for job_name in args.jobs.split(","):
            job = JOBS[job_name]
            for system in (s for s in job.systems if s in systems):
                print(f"operators: {job_name} on {system} ...", flush=True)
                if system == "ours":
                    row = run_ours(handle.kubeconfig, job, handle.images.registry, len(handle.real_nodes))
                else:
                    row = run_operator(kube, job_name, job, system, handle.images.registry, args.cap)
                row.update(job=job_name, workers=job.workers)
                print(json.dumps(row), flush=True)
                runs.append(row)
    common.save("operators_real", {"machine": common.machine(), "runs": runs})
    report_real(runs)
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
