"""Waiting on a release: :func:`wait_ready` until its workloads did what they exist for (or fail fast with the
reason), and after an uninstall :func:`wait_uninstalled` until nothing of it is left."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Mapping
from typing import Any

from dlcharts.errors import ClusterError
from dlcharts.install.diagnostics import diagnostics
from dlcharts.install.kube import Kube, kind_key
from dlcharts.install.state import (
    INSTANCE_LABEL,
    ReleaseState,
    conditions_by_type,
    daemonset_nodes,
    is_hook,
    is_ready,
    is_terminal,
    job_outcome,
    object_name,
    observe_release,
    owner_of,
    pod_gpus,
    waiting_containers,
)

# Waiting reasons a kubelet reports for a container that will not start without someone changing something.
FATAL_WAITING = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
# Namespaced kinds that are never "objects of the release": they come and go with what the cluster does.
_TRANSIENT = frozenset({"Event", "events.k8s.io/Event"})


@dataclasses.dataclass
class PodPlacement:
    name: str
    node: str | None
    phase: str
    gpus: dict[str, int]
    owner: str | None  # "Job/tf-worker"
    index: str | None  # Indexed Job completion index


@dataclasses.dataclass
class Readiness:
    """What :func:`wait_ready` saw when the release was ready."""

    pods: dict[str, PodPlacement]  # also those bound during the wait and gone by its end, as last seen
    jobs: dict[str, str]  # job -> "Complete" / "SuccessCriteriaMet"
    daemonsets: dict[str, set[str]]  # daemonset -> nodes its ready pods run on
    seconds: float

    def nodes_of(self, owner: str) -> list[str | None]:
        """Nodes of the pods of one owner (``Job/tf-worker``), by completion index when it has them."""
        pods = [p for p in self.pods.values() if p.owner == owner]
        pods.sort(key=lambda p: (int(p.index) if p.index and p.index.isdigit() else -1, p.name))
        return [p.node for p in pods]


def _fatal(
    state: ReleaseState,
    expected: Mapping[str, set[str]],
    allow_no_nodes: Collection[str],
    unschedulable_since: dict[str, float],
    unschedulable_grace: float,
) -> list[str]:
    problems = []
    for job in state.jobs:
        outcome = job_outcome(job)
        if outcome and outcome[0] == "failed":
            problems.append(f"Job {object_name(job)} failed ({outcome[1]})")
    now = time.monotonic()
    for pod in state.pods:
        name = object_name(pod)
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        sched = conditions_by_type(pod).get("PodScheduled")
        if (
            (pod.get("status") or {}).get("phase") == "Pending"
            and sched
            and sched.get("status") == "False"
            and sched.get("reason") == "Unschedulable"
        ):
            first = unschedulable_since.setdefault(name, now)
            if now - first >= unschedulable_grace:
                problems.append(f"pod {name} is unschedulable: {sched.get('message', '').strip()}")
        else:
            unschedulable_since.pop(name, None)
        for container, reason, message in waiting_containers(pod):
            if reason in FATAL_WAITING:
                problems.append(f"pod {name} container {container} is waiting in {reason}: {message}".rstrip(": "))
    controllers = {("Job", object_name(o)) for o in state.jobs} | {
        ("DaemonSet", object_name(o)) for o in state.daemonsets
    }
    controllers |= {("Deployment", object_name(o)) for o in state.deployments}
    controllers |= {("StatefulSet", object_name(o)) for o in state.statefulsets}
    for event in state.events:
        involved = event.get("involvedObject") or {}
        key = (str(involved.get("kind")), str(involved.get("name")))
        if event.get("reason") == "FailedCreate" and key in controllers:
            message = str(event.get("message", ""))
            if "forbidden" in message or "is invalid" in message or "violates PodSecurity" in message:
                problems.append(f"{key[0]} {key[1]} cannot create its pods: {message}")
    for ds in state.daemonsets:
        name = object_name(ds)
        status = ds.get("status") or {}
        if status.get("observedGeneration", 0) < (ds.get("metadata") or {}).get("generation", 0):
            continue
        want = expected.get(name, set())
        if not want and name not in allow_no_nodes:
            problems.append(
                f"DaemonSet {name} matches no node (desiredNumberScheduled {status.get('desiredNumberScheduled', 0)}"
                f"); its nodeSelector/affinity/tolerations select none of: "
                + ", ".join(sorted(object_name(n) for n in state.nodes))
            )
        stray = {
            p.get("spec", {}).get("nodeName")
            for p in state.pods
            if owner_of(p) == ("DaemonSet", name) and p.get("spec", {}).get("nodeName")
        } - want
        if stray:
            problems.append(f"DaemonSet {name} has pods on nodes it should not run on: {', '.join(sorted(stray))}")
    return problems


def _pending(state: ReleaseState, expected: Mapping[str, set[str]]) -> list[str]:
    waiting = []
    for job in state.jobs:
        if job_outcome(job) is None:
            st = job.get("status") or {}
            suspended = " (suspended)" if (job.get("spec") or {}).get("suspend") else ""
            waiting.append(
                f"Job {object_name(job)}{suspended}: {st.get('succeeded', 0)}/"
                f"{(job.get('spec') or {}).get('completions')} succeeded, {st.get('active', 0)} active"
            )
    for ds in state.daemonsets:
        name, st = object_name(ds), ds.get("status") or {}
        want = expected.get(name, set())
        nodes = {
            p["spec"].get("nodeName")
            for p in state.pods
            if owner_of(p) == ("DaemonSet", name) and is_ready(p) and not p["metadata"].get("deletionTimestamp")
        }
        gen_ok = st.get("observedGeneration", 0) >= (ds.get("metadata") or {}).get("generation", 0)
        counts = [
            st.get(k, 0)
            for k in (
                "desiredNumberScheduled",
                "currentNumberScheduled",
                "updatedNumberScheduled",
                "numberReady",
                "numberAvailable",
            )
        ]
        if not (
            gen_ok and all(c == len(want) for c in counts) and st.get("numberMisscheduled", 0) == 0 and nodes == want
        ):
            waiting.append(
                f"DaemonSet {name}: desired/current/updated/ready/available {counts}, ready on "
                f"{sorted(n for n in nodes if n)}, expected on {sorted(want)}"
            )
    for dep in state.deployments:
        st, replicas = dep.get("status") or {}, (dep.get("spec") or {}).get("replicas", 1)
        if not (
            st.get("observedGeneration", 0) >= dep["metadata"].get("generation", 0)
            and st.get("updatedReplicas", 0) == replicas
            and st.get("availableReplicas", 0) == replicas
        ):
            waiting.append(f"Deployment {object_name(dep)}: {st.get('availableReplicas', 0)}/{replicas} available")
    for sts in state.statefulsets:
        st, replicas = sts.get("status") or {}, (sts.get("spec") or {}).get("replicas", 1)
        if not (st.get("readyReplicas", 0) == replicas and st.get("currentRevision") == st.get("updateRevision")):
            waiting.append(f"StatefulSet {object_name(sts)}: {st.get('readyReplicas', 0)}/{replicas} ready")
    for pod in state.pods:
        if owner_of(pod) is None and not is_hook(pod) and not (is_terminal(pod) or is_ready(pod)):
            waiting.append(f"pod {object_name(pod)}: {(pod.get('status') or {}).get('phase')}")
    return waiting


def _gpu_overcommit(kube: Kube, state: ReleaseState) -> list[str]:
    """Nodes of the release's GPU pods where the running/pending pods (of any namespace) ask for more GPUs than
    the node has."""
    nodes = {
        p["spec"].get("nodeName")
        for p in state.pods
        if p["spec"].get("nodeName") and not is_terminal(p) and pod_gpus(p)
    }
    problems = []
    for node in sorted(n for n in nodes if n):
        alloc = next((n.get("status", {}).get("allocatable") or {} for n in state.nodes if object_name(n) == node), {})
        used: dict[str, int] = {}
        for pod in kube.items("/api/v1/pods", field_selector=f"spec.nodeName={node}"):
            if is_terminal(pod):
                continue
            for res, count in pod_gpus(pod).items():
                used[res] = used.get(res, 0) + count
        for res, count in used.items():
            have = int(str(alloc.get(res, "0")))
            if count > have:
                problems.append(f"node {node}: pods ask for {count} {res}, it has {have}")
    return problems


def _placement(pod: dict[str, Any]) -> PodPlacement:
    return PodPlacement(
        object_name(pod),
        pod["spec"].get("nodeName"),
        str((pod.get("status") or {}).get("phase")),
        pod_gpus(pod),
        "/".join(owner_of(pod) or ()) or None,
        (pod["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index"),
    )


def wait_ready(
    kube: Kube,
    namespace: str,
    release: str,
    *,
    timeout: float = 120,
    expect_nodes: Mapping[str, Collection[str]] | None = None,
    allow_no_nodes: Collection[str] = (),
    unschedulable_grace: float = 0.0,
    interval: float = 0.25,
) -> Readiness:
    """Wait until the release's workloads did what they exist for, or fail fast with the reason.

    Done when every Job of the release has Complete or SuccessCriteriaMet; every DaemonSet runs one ready,
    updated pod on exactly its expected nodes (``expect_nodes[name]`` if given, else the nodes its
    nodeSelector / required node affinity / tolerations select), with desiredNumberScheduled equal to that
    count; Deployments and StatefulSets are fully available; bare pods run or have finished. Every
    non-terminal pod is bound to a node, and no node is asked for more GPUs than it has.

    Fails at once (ClusterError + :func:`diagnostics`) on: a Job Failed / FailureTarget; a pod the scheduler
    reports Unschedulable (for ``unschedulable_grace`` s; message quoted, e.g. "0/6 nodes are available:
    4 Insufficient nvidia.com/gpu"); a container waiting in ErrImagePull, ImagePullBackOff, CrashLoopBackOff
    and the like; FailedCreate events saying the API server refused a controller's pods; a DaemonSet that
    matches no node, unless its name is in ``allow_no_nodes``; DaemonSet pods on other nodes.
    """
    started = time.monotonic()
    deadline = started + timeout
    nodes = kube.items("/api/v1/nodes")
    unschedulable_since: dict[str, float] = {}
    # every pod seen bound, as last seen: a Job that meets its success policy deletes the pods still running (kwok
    # ends one in seconds), so the poll that sees the Job done may no longer see the pods that had run beside it
    placed: dict[str, PodPlacement] = {}
    while True:
        state = observe_release(kube, namespace, release, nodes)
        placed.update(
            (object_name(p), _placement(p)) for p in state.pods if not is_hook(p) and p["spec"].get("nodeName")
        )
        expected: dict[str, set[str]] = {}
        for ds in state.daemonsets:
            name = object_name(ds)
            expected[name] = (
                set(expect_nodes[name]) if expect_nodes and name in expect_nodes else daemonset_nodes(ds, nodes)
            )
        problems = _fatal(state, expected, allow_no_nodes, unschedulable_since, unschedulable_grace)
        if not problems:
            problems = _gpu_overcommit(kube, state)
        if problems:
            raise ClusterError(
                f"release {release} in namespace {namespace} failed:\n"
                + "\n".join(f"  - {p}" for p in problems)
                + "\n"
                + diagnostics(kube, namespace, release)
            )
        waiting = _pending(state, expected)
        unbound = [object_name(p) for p in state.pods if not is_terminal(p) and not p["spec"].get("nodeName")]
        if not waiting and not unbound:
            return Readiness(
                pods=placed | {object_name(p): _placement(p) for p in state.pods if not is_hook(p)},
                jobs={object_name(j): (job_outcome(j) or ("", ""))[1] for j in state.jobs},
                daemonsets={
                    object_name(ds): {
                        p["spec"].get("nodeName") for p in state.pods if owner_of(p) == ("DaemonSet", object_name(ds))
                    }
                    for ds in state.daemonsets
                },
                seconds=time.monotonic() - started,
            )
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"release {release} in namespace {namespace} not ready after {timeout:.0f}s; still waiting for:\n"
                + "\n".join(f"  - {w}" for w in waiting + [f"pod {u} to be bound to a node" for u in unbound])
                + "\n"
                + diagnostics(kube, namespace, release)
            )
        time.sleep(interval)


def namespace_inventory(kube: Kube, namespace: str) -> set[str]:
    """``Kind/name`` (``group/Kind/name`` outside the core group) of every object in the namespace, events
    excepted: take it before an install, compare after the uninstall."""
    found = set()
    for res in kube.preferred_resources():
        if not res.namespaced or res.key in _TRANSIENT:
            continue
        resp = kube.request("GET", res.path(namespace))
        if resp.status != 200:
            continue
        for item in resp.doc.get("items") or []:
            found.add(f"{res.key}/{object_name(item)}")
    return found


def release_leftovers(kube: Kube, namespace: str, release: str, before: Collection[str] = ()) -> list[str]:
    """What of the release is still there: every object in the namespace that was not there before the
    install (``before`` from :func:`namespace_inventory`), every object anywhere (cluster-scoped ones
    included, e.g. ClusterRole) labelled ``app.kubernetes.io/instance=<release>``, Helm's release
    records (Secrets ``owner=helm,name=<release>``), and every object in the namespace whose owners are all
    gone: the garbage collector has yet to delete it, whatever ``before`` says (an inventory taken while the
    release ran names its pods; a pod without the instance label, such as dl-common's start watch, is the
    release's all the same)."""
    left = []
    selector = f"{INSTANCE_LABEL}={release}"
    namespaced: list[tuple[str, dict[str, Any]]] = []
    namespaced_kinds: set[str] = set()  # the kinds listed: their objects' uids are all known
    for res in kube.preferred_resources():
        if res.key in _TRANSIENT:
            continue
        if res.namespaced:
            resp = kube.request("GET", res.path(namespace))
        else:
            resp = kube.request("GET", res.path(), query={"labelSelector": selector})
        if resp.status != 200:
            continue
        if res.namespaced:
            namespaced_kinds.add(res.key)
        for item in resp.doc.get("items") or []:
            key = f"{res.key}/{object_name(item)}"
            if res.namespaced:
                namespaced.append((key, item))
            else:
                left.append(f"{key} (cluster-scoped, labelled {selector})")
    present = {(item.get("metadata") or {}).get("uid") for _key, item in namespaced}
    for key, item in namespaced:
        meta = item.get("metadata") or {}
        labels = meta.get("labels") or {}
        # only owners in the namespace can be looked up here (a cluster-scoped one would always seem gone)
        owners = [
            ref
            for ref in meta.get("ownerReferences") or []
            if kind_key(str(ref.get("apiVersion", "")), str(ref.get("kind"))) in namespaced_kinds
        ]
        if labels.get(INSTANCE_LABEL) == release:
            left.append(f"{key} (labelled {selector})")
        elif labels.get("owner") == "helm" and labels.get("name") == release:
            left.append(f"{key} (Helm's record of the release)")
        elif key not in before:
            left.append(f"{key} (not in the namespace before the install)")
        elif owners and not any(ref.get("uid") in present for ref in owners):
            gone = ", ".join(f"{ref.get('kind')}/{ref.get('name')}" for ref in owners)
            left.append(f"{key} (its owner {gone} is gone)")
    return sorted(left)


def wait_uninstalled(
    kube: Kube, namespace: str, release: str, before: Collection[str] = (), timeout: float = 60
) -> None:
    """Poll until :func:`release_leftovers` is empty (Helm deletes in the background: pods, EndpointSlices
    and ControllerRevisions go with the garbage collector); ClusterError listing what stayed."""
    deadline = time.monotonic() + timeout
    while True:
        left = release_leftovers(kube, namespace, release, before)
        if not left:
            return
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"release {release} uninstalled, but {len(left)} object(s) stayed for {timeout:.0f}s:\n"
                + "\n".join(f"  - {item}" for item in left)
            )
        time.sleep(0.5)
