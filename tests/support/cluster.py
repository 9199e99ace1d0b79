"""What the embedded cluster needs beyond its defaults so that every ci/ scenario can really run on it.

Each piece is named here with why it exists, so a reader of a test report knows what was real and what was
provided for the test:

- CRDs for the API versions charts render optionally (ServiceMonitor, Volcano and scheduler-plugins PodGroups,
  Kueue, JobSet): built from the JSON Schemas in src/dlcharts/crds/ (converted from the published CRDs) by
  undoing that conversion (see :func:`crd_from_schemas`). No controller serves them: the API server stores
  and validates the objects, nothing acts on them. They stay installed (see :func:`ensure_crds`).
- A stand-in gang scheduler: a second kube-scheduler process (same pinned binary) with two profiles named
  ``volcano`` and ``scheduler-plugins-scheduler``, so pods asking for those schedulers get bound. It has only
  the default plugins: it does NOT do gang (all-or-nothing) scheduling; what the gang scenarios prove here
  is that the API server accepts the PodGroup and that the pods are schedulable, not co-scheduling.
- Extra fake nodes for scenarios that select GPU models or vGPU profiles the default pools lack (A100,
  V100, vGPU with a shared GPU resource): created for test_charts.py and deleted after it.
- Per-scenario prerequisites: the PriorityClass ``training-high`` (pytorch-dist 02), a bound PVC ``cifar10``
  (cntk-dist 03), and DaemonSets that are expected to match no node here (the MPS daemon, whose nodes GPU
  feature discovery would label; there is no GFD on fake nodes).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from dlcharts import toolchain
from dlcharts.cluster.addons.common import CRD_PATH, wait_established
from dlcharts.cluster.config import NodePool, node_objects
from dlcharts.cluster.node import LABEL_KEY as REAL_NODE_LABEL
from dlcharts.errors import ClusterError
from dlcharts.host import binaries
from dlcharts.install.kube import Kube
from dlcharts.install.podsecurity import DEFAULT_POD_SECURITY, chart_pod_security
from dlcharts.utils.flock import LockTimeout, locked
from dlcharts.waiting import poll
from tests.support import CHARTS, ROOT

# The charts that need a Pod Security level below restricted, with the level and its reason (their Chart.yaml
# annotations dl-charts/pod-security and dl-charts/pod-security-reason).
POD_SECURITY = {
    chart.name: level
    for chart in sorted(CHARTS.iterdir())
    if (chart / "Chart.yaml").is_file() and (level := chart_pod_security(chart)).level != DEFAULT_POD_SECURITY
}
CRD_SCHEMAS = ROOT / "src" / "dlcharts" / "crds"

# ----- CRDs from the converted schemas ---------------------------------------------------------------------


def _openapi(node: Any) -> Any:
    """Undo native/crds/convert_crds.py for one schema node: JSON Schema back to a structural OpenAPI v3 schema.

    - ``additionalProperties: false`` (added to close objects) is dropped: structural schemas reject it next
      to ``properties``, and unknown fields are pruned by the API server anyway;
    - ``anyOf: [integer, string]`` without a type is ``x-kubernetes-int-or-string: true`` again;
    - ``type: [T, "null"]`` is ``type: T`` + ``nullable: true``;
    - an object with neither properties nor additionalProperties gets
      ``x-kubernetes-preserve-unknown-fields: true`` (the converter dropped that marker; without it the API
      server would prune everything under such a field, e.g. a PodGroup's minResources).
    """
    if isinstance(node, list):
        return [_openapi(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$schema",) or key.startswith("x-dlcharts-"):
            continue
        if key == "additionalProperties" and value is False:
            continue
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: _openapi(v) for k, v in value.items()}
        else:
            out[key] = _openapi(value)
    types = out.get("type")
    if isinstance(types, list):
        real = [t for t in types if t != "null"]
        out["type"] = real[0] if len(real) == 1 else real
        if "null" in types:
            out["nullable"] = True
    any_of = out.get("anyOf")
    if "type" not in out and isinstance(any_of, list) and {a.get("type") for a in any_of} == {"integer", "string"}:
        out["x-kubernetes-int-or-string"] = True
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def crd_from_schemas(paths: list[Path]) -> dict[str, Any]:
    """One CustomResourceDefinition (apiextensions.k8s.io/v1) for every version schema of one group/kind."""
    versions = []
    group = kind = scope = None
    for path in sorted(paths):
        schema = json.loads(path.read_text())
        props = schema.get("properties", {})
        api_version = props["apiVersion"]["enum"][0]
        group, version = api_version.split("/")
        kind = props["kind"]["enum"][0]
        scope = schema.get("x-dlcharts-scope", "Namespaced")
        root = _openapi(schema)
        root["properties"]["apiVersion"] = {"type": "string"}
        root["properties"]["kind"] = {"type": "string"}
        root["properties"]["metadata"] = {"type": "object"}
        root["required"] = [r for r in root.get("required", []) if r not in ("apiVersion", "kind", "metadata")]
        if not root["required"]:
            root.pop("required")
        root.pop("additionalProperties", None)
        root.pop("x-kubernetes-preserve-unknown-fields", None)
        entry: dict[str, Any] = {"name": version, "served": True, "storage": False, "schema": {"openAPIV3Schema": root}}
        if "status" in root.get("properties", {}):
            entry["subresources"] = {"status": {}}
        versions.append(entry)
    assert group and kind
    # Storage: the newest version (v1 > v1beta2 > v1beta1 > v1alpha1).
    versions.sort(key=lambda v: _version_rank(v["name"]), reverse=True)
    versions[0]["storage"] = True
    # the published CRD's plural and annotations (a *.k8s.io group's API approval, without which the API server
    # refuses it), where it is bundled whole
    original = _originals().get((group, kind))
    plural = original["spec"]["names"]["plural"] if original else _plural(kind)
    annotations = original["metadata"].get("annotations") if original else None
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "labels": {"app.kubernetes.io/managed-by": "dlcharts-tests"},
            **({"annotations": annotations} if annotations else {}),
        },
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "versions": versions,
        },
    }


def _version_rank(name: str) -> tuple[int, int, int]:
    import re

    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
    if not match:
        return (0, 0, 0)
    stage = {"alpha": 0, "beta": 1, None: 2}[match.group(2)]
    return (int(match.group(1)), stage, int(match.group(3) or 0))


def _plural(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def _originals() -> dict[tuple[str, str], dict[str, Any]]:
    """The bundled CRDs kept whole (src/dlcharts/crds/originals), by (group, kind)."""
    found = {}
    for path in (CRD_SCHEMAS / "originals").glob("*.json"):
        crd = json.loads(path.read_text())
        found[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = crd
    return found


def all_crds() -> list[dict[str, Any]]:
    groups: dict[str, list[Path]] = {}
    for path in CRD_SCHEMAS.glob("*.json"):
        group_kind = "_".join(path.stem.split("_")[:2])
        groups.setdefault(group_kind, []).append(path)
    return [crd_from_schemas(paths) for _, paths in sorted(groups.items())]


def ensure_crds(kube: Kube, crds: list[dict[str, Any]], timeout: float = 60) -> list[str]:
    """Create the CRDs the cluster lacks (or replace ours when their spec changed) and wait until each is
    Established; returns every CRD name.

    They stay installed after the session: removing a CRD leaves kube-controller-manager's resource-quota and
    garbage-collector informers failing to watch it (logged every few seconds for a long time), while an
    unused CRD costs nothing. They are labelled app.kubernetes.io/managed-by=dlcharts-tests.
    """
    names = []
    for crd in crds:
        name = crd["metadata"]["name"]
        names.append(name)
        current = kube.get_or_none(f"{CRD_PATH}/{name}")
        if current is None:
            resp = kube.request("POST", CRD_PATH, body=crd)
        elif current["spec"].get("versions") != crd["spec"]["versions"] and (
            (current["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "dlcharts-tests"
        ):
            body = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
            resp = kube.request("PUT", f"{CRD_PATH}/{name}", body=body)
        else:
            continue
        if resp.status not in (200, 201):
            message = resp.doc.get("message") if isinstance(resp.doc, dict) else resp.doc
            raise ClusterError(f"the API server refused CRD {name}: {message}")

    wait_established(kube, names, timeout)
    return names


def is_kwok_cluster(kube: Kube) -> bool:
    """Whether the cluster's nodes are kwok's fake nodes (the embedded cluster): only there may the tier add
    fake nodes and a stand-in scheduler. The embedded cluster's one real node (label dlcharts.io/node-type=real,
    tainted so that only pods meant for it land there) does not count."""
    nodes = [
        n for n in kube.items("/api/v1/nodes") if (n["metadata"].get("labels") or {}).get(REAL_NODE_LABEL) != "real"
    ]
    return bool(nodes) and all((n["metadata"].get("labels") or {}).get("type") == "kwok" for n in nodes)


@contextlib.contextmanager
def exclusive_use(kubeconfig: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the chart tier's lock for a cluster (keyed by its kubeconfig) for the block.

    Two pytest sessions installing charts on one cluster at the same time starve each other of GPUs (4 x 8
    GPUs fit one 4 x 8-GPU job at a time) and share the extra nodes and the stand-in scheduler, so the second
    session waits here (up to $DLCHARTS_TIER_LOCK_TIMEOUT s, default 1800) and then fails, saying so.
    """
    wait = float(os.environ.get("DLCHARTS_TIER_LOCK_TIMEOUT", "1800")) if timeout is None else timeout
    key = hashlib.sha256(str(Path(kubeconfig).resolve()).encode()).hexdigest()[:12]
    path = toolchain.cache_root() / "run" / f"chart-tier-{key}.lock"
    try:
        with locked(path, timeout=wait) as fh:
            fh.seek(0)
            fh.truncate()
            fh.write(f"pid {os.getpid()}")
            fh.flush()
            yield
    except LockTimeout:
        holder = path.read_text().strip() or "another process"
        raise ClusterError(
            f"another pytest session ({holder}) is installing charts on the cluster of {kubeconfig}; "
            f"waited {wait:.0f}s. Let it finish, or use another cluster "
            "(DLCHARTS_CLUSTER_NAME / --dlcharts-kubeconfig)."
        ) from None


# ----- the stand-in gang scheduler ---------------------------------------------------------------------------

GANG_SCHEDULER_NAMES = ("volcano", "scheduler-plugins-scheduler")


@contextlib.contextmanager
def stand_in_scheduler(kubeconfig: Path, workdir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A kube-scheduler serving the gang schedulers' names with default plugins (no gang semantics)."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": name} for name in GANG_SCHEDULER_NAMES],
    }
    conf = workdir / "stand-in-scheduler.yaml"
    conf.write_text(yaml.safe_dump(config))
    log = workdir / "stand-in-scheduler.log"
    exe = binaries.binary("kube-scheduler").path
    if not exe.is_file():
        raise ClusterError(f"{exe} is missing; build it with `dlcharts cluster build kube-scheduler`")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(exe), "--config", str(conf), "--secure-port=0"],
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        if proc.poll() is not None:
            raise ClusterError(f"the stand-in scheduler exited at once; see {log}")
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


# ----- extra nodes for scenarios that select hardware the default pools lack ---------------------------------

GPU_FEATURE = {"nvidia.com/gpu.present": "true"}
EXTRA_NODE_POOLS = (
    # tensorflow-dist 02: chief + 4 workers x 4 GPUs on A100 nodes.
    NodePool(
        name="a100",
        count=3,
        gpus=8,
        cpu="128",
        memory="1Ti",
        labels={**GPU_FEATURE, "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
    ),
    # cntk-dist 02 (4 x 8 GPUs) and mxnet-dist 02 (4 workers x 2 GPUs) on V100 nodes.
    NodePool(
        name="v100",
        count=4,
        gpus=8,
        cpu="96",
        memory="768Gi",
        labels={**GPU_FEATURE, "nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB"},
    ),
    # pytorch-dist 06: time-sliced GPUs advertised as nvidia.com/gpu.shared on vGPU (v100-4q) nodes.
    NodePool(
        name="vgpu",
        count=2,
        gpus=4,
        gpu_resource="nvidia.com/gpu.shared",
        cpu="32",
        memory="128Gi",
        labels={**GPU_FEATURE, "virtual.gpu.type": "v100-4q-4GB"},
    ),
)


@contextlib.contextmanager
def extra_nodes(kube: Kube, pools: tuple[NodePool, ...] = EXTRA_NODE_POOLS, timeout: float = 60) -> Iterator[list[str]]:
    """Fake nodes (kwok makes them Ready) for the duration of the block, then deleted. Nothing on a cluster
    with real nodes (see :func:`is_kwok_cluster`): its own nodes have to match the scenarios there."""
    if not is_kwok_cluster(kube):
        yield []
        return
    nodes = node_objects(pools)
    names = [n["metadata"]["name"] for n in nodes]
    created = []
    try:
        for node in nodes:
            for label in ("dlcharts.io/test-node",):
                node["metadata"]["labels"][label] = "extra"
            resp = kube.request("POST", "/api/v1/nodes", body=node)
            if resp.status in (200, 201):
                created.append(node["metadata"]["name"])
            elif resp.status != 409:
                raise ClusterError(f"could not create node {node['metadata']['name']}: {resp.doc}")

        def all_ready() -> bool:
            ready = set()
            for n in kube.items("/api/v1/nodes", label_selector="dlcharts.io/test-node=extra"):
                if any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (n.get("status") or {}).get("conditions") or []
                ):
                    ready.add(n["metadata"]["name"])
            return set(names) <= ready

        poll(all_ready, timeout, f"extra fake nodes {', '.join(names)} to be Ready")
        yield names
    finally:
        for name in created:
            kube.request("DELETE", f"/api/v1/nodes/{name}")
        poll(
            lambda: not kube.items("/api/v1/nodes", label_selector="dlcharts.io/test-node=extra"),
            timeout,
            "the extra fake nodes to be deleted",
        )


# ----- per-scenario prerequisites ------------------------------------------------------------------------------

# Cluster-scoped objects scenarios refer to by name, each with who asks for it; (API path, object).
SCENARIO_CLASSES = (
    ("/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "training-high", "labels": {"app.kubernetes.io/managed-by": "dlcharts-tests"}},
        "value": 100000,
        "description": "pytorch-dist ci/02 asks for it",
    }),
    # gpu-device-plugin ci/07 (NVIDIA's chart's values) sets runtimeClassName: nvidia, as GPU clusters with the
    # NVIDIA container toolkit have it; the API server refuses pods that name a RuntimeClass that does not exist.
    ("/apis/node.k8s.io/v1/runtimeclasses", {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "nvidia", "labels": {"app.kubernetes.io/managed-by": "dlcharts-tests"}},
        "handler": "nvidia",
    }),
)  # fmt: skip


@contextlib.contextmanager
def scenario_classes(kube: Kube) -> Iterator[None]:
    """The PriorityClass and RuntimeClass objects of SCENARIO_CLASSES for the session; those it made are removed."""
    created = []
    for path, obj in SCENARIO_CLASSES:
        resp = kube.request("POST", path, body=obj)
        if resp.status in (200, 201):
            created.append(f"{path}/{obj['metadata']['name']}")
        elif resp.status != 409:
            raise ClusterError(f"could not create {obj['kind']} {obj['metadata']['name']}: {resp.doc}")
    try:
        yield
    finally:
        for path in created:
            kube.request("DELETE", path)


def bound_claim(
    kube: Kube,
    namespace: str,
    claim: str,
    timeout: float = 60,
    source: dict[str, Any] | None = None,
    access_modes: tuple[str, ...] = ("ReadOnlyMany",),
) -> str:
    """A PersistentVolumeClaim ``claim`` bound to a pre-bound PersistentVolume of ``source`` (default: an NFS
    source that fake nodes never mount; a hostPath for a real node's pods); returns the PV's name, for
    :func:`delete_volume`."""
    pv_name = f"{namespace}-{claim}"[:63]
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name, "labels": {"app.kubernetes.io/managed-by": "dlcharts-tests"}},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": list(access_modes),
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            **(source or {"nfs": {"server": "192.0.2.1", "path": f"/{claim}"}}),
            "claimRef": {"namespace": namespace, "name": claim},
        },
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim},
        "spec": {
            "accessModes": list(access_modes),
            "storageClassName": "",
            "volumeName": pv_name,
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }
    for path, body in (
        ("/api/v1/persistentvolumes", pv),
        (f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", pvc),
    ):
        resp = kube.request("POST", path, body=body)
        if resp.status not in (200, 201):
            raise ClusterError(f"could not create {body['kind']} {body['metadata']['name']}: {resp.doc}")
    poll(
        lambda: (
            (kube.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}").get("status") or {}).get(
                "phase"
            )
            == "Bound"
        ),
        timeout,
        f"PVC {claim} to be Bound",
    )
    return pv_name


def shared_folder_claim(kube: Kube, namespace: str, claim: str, folder: Path) -> str:
    """A ReadWriteMany claim ``claim`` of ``folder`` (created, writable by any user: the pods run as one of their own),
    a hostPath that every real node of the embedded cluster sees, as pods on several hosts see an NFS share; returns
    the PV's name, for :func:`delete_volume`."""
    folder.mkdir()
    folder.chmod(0o777)
    source = {"hostPath": {"path": str(folder), "type": "Directory"}}
    return bound_claim(kube, namespace, claim, source=source, access_modes=("ReadWriteMany",))


def delete_volume(kube: Kube, pv_name: str) -> None:
    kube.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")


#: the helm args that point a training chart's checkpoint volume at :func:`checkpoint_claim`'s claim
CHECKPOINT_ARGS = ("--set", "checkpoint.volume.persistentVolumeClaim.claimName=ckpt")


@contextlib.contextmanager
def checkpoint_volume(kube: Kube, namespace: str, folder: Path) -> Iterator[None]:
    """The claim "ckpt" (:data:`CHECKPOINT_ARGS`) in ``namespace`` of ``folder`` (made, with its parents), which every
    real node sees; the PersistentVolume is deleted after the block."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    volume = shared_folder_claim(kube, namespace, "ckpt", folder)
    try:
        yield
    finally:
        delete_volume(kube, volume)


@contextlib.contextmanager
def checkpoint_claim(kubeconfig: Path, folder: Path) -> Iterator[Callable[[str], None]]:
    """``before`` for a real run: gives the release's namespace the claim "ckpt" (:data:`CHECKPOINT_ARGS`) of
    ``folder``, which every real node sees, as pods on several hosts see an NFS share; the PersistentVolume is
    deleted after the block."""
    volumes: list[str] = []

    def claim(namespace: str) -> None:
        with Kube.from_kubeconfig(kubeconfig) as kube:
            volumes.append(shared_folder_claim(kube, namespace, "ckpt", folder))

    try:
        yield claim
    finally:
        with Kube.from_kubeconfig(kubeconfig) as kube:
            for volume in volumes:
                delete_volume(kube, volume)


# What each scenario needs from the cluster beyond the defaults, with the reason.
SCENARIO_NEEDS: Mapping[str, Mapping[str, Any]] = {
    "cntk-dist/03-brainscript": {"claims": ["cifar10"]},
    "gpu-device-plugin/03-mps": {
        "allow_no_nodes": {
            "-mps-control-daemon": "the MPS control daemon runs on nodes labelled nvidia.com/mps.capable=true, a "
            "label GPU feature discovery sets from the running plugin's config; fake nodes have no GFD, so no "
            "node matches and zero pods is the correct outcome here",
        }
    },
}


def needs(scenario_id: str) -> Mapping[str, Any]:
    return SCENARIO_NEEDS.get(scenario_id, {})


def changed_values(chart: str) -> tuple[list[str], str]:
    """``--set`` items for the "upgrade with changed values" step of a chart, and how to check they landed:
    training charts change ``defaults.job.activeDeadlineSeconds`` (a Job field Kubernetes lets an upgrade
    change); the device plugin changes its pod annotations (a rolling update of every DaemonSet), with all
    pods of a DaemonSet replaced at once (maxUnavailable 100%) so that the rollout over 13 nodes stays short."""
    if chart == "gpu-device-plugin":
        return [
            "podAnnotations.dlcharts\\.io/upgraded=yes",
            "updateStrategy.rollingUpdate.maxUnavailable=100%",
        ], "daemonset-annotation"
    return ["defaults.job.activeDeadlineSeconds=86399"], "job-deadline"


def copy_obj(obj: Mapping[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(dict(obj))


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The pinned kubectl against ``kubeconfig`` (argv, no shell); never raises on its exit status."""
    cmd = [str(toolchain.binary_path(toolchain.DEFAULT_KUBECTL)), "--kubeconfig", str(kubeconfig), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
