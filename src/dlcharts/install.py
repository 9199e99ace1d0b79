"""Install a chart on a real cluster with a given Helm, wait for what it promises, and say why when it fails.

Plain functions behind the cluster tier (``tests/cluster/test_charts.py``); every helm call is an argv list::

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
failure is a :class:`~dlcharts.errors.ClusterError` whose message ends with :func:`diagnostics`: the
release's Jobs (every condition), pods (phase, reason, node, GPUs, waiting containers), DaemonSets (counts,
nodes, expected nodes) and the namespace's events, so it lands in the pytest report as it is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import subprocess
import tarfile
import time
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import yaml

from dlcharts.errors import ClusterError
from dlcharts.helm import Helm
from dlcharts.policies import is_gpu_resource
from dlcharts.render import Renderer
from dlcharts.waiting import poll

INSTANCE_LABEL = "app.kubernetes.io/instance"
POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
DEFAULT_POD_SECURITY = "restricted"
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
WORKLOAD_KINDS = frozenset({"Pod", "Job", "CronJob", "DaemonSet", "Deployment", "StatefulSet", "ReplicaSet"})
# Namespaced kinds that are never "objects of the release": they come and go with what the cluster does.
_TRANSIENT = frozenset({"Event", "events.k8s.io/Event"})
_NODE_TAINTS_TOLERATED_BY_DAEMONSETS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/network-unavailable",
    }
)


# ----- Pod Security levels per chart (ci/pod-security.yaml) ------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PodSecurity:
    level: str
    reason: str = ""


def load_pod_security(path: Path) -> dict[str, PodSecurity]:
    """``chart -> PodSecurity`` from a file like ci/pod-security.yaml; a missing file means "all restricted".

    Format: ``<chart>: {level: privileged|baseline|restricted, reason: "why the chart needs it"}``.
    """
    if not path.is_file():
        return {}
    doc = yaml.safe_load(path.read_text()) or {}
    if not isinstance(doc, dict):
        raise ClusterError(f"{path}: expected a mapping chart -> {{level, reason}}, found {type(doc).__name__}")
    table: dict[str, PodSecurity] = {}
    for chart, entry in doc.items():
        where = f"{path}: {chart}"
        if not isinstance(entry, dict) or set(entry) - {"level", "reason"}:
            raise ClusterError(f"{where}: expected {{level: ..., reason: ...}} and nothing else, found {entry!r}")
        level, reason = entry.get("level"), str(entry.get("reason") or "").strip()
        if level not in POD_SECURITY_LEVELS:
            raise ClusterError(f"{where}.level: {level!r} is not one of {', '.join(POD_SECURITY_LEVELS)}")
        if level != DEFAULT_POD_SECURITY and not reason:
            raise ClusterError(f"{where}.reason: a chart that needs {level!r} must say why (reason: ...)")
        table[str(chart)] = PodSecurity(level, reason)
    return table


def pod_security_for(chart: str, table: Mapping[str, PodSecurity]) -> PodSecurity:
    return table.get(chart, PodSecurity(DEFAULT_POD_SECURITY))


def stricter_level(level: str) -> str | None:
    """The next stricter Pod Security level (None for restricted)."""
    i = POD_SECURITY_LEVELS.index(level)
    return POD_SECURITY_LEVELS[i + 1] if i + 1 < len(POD_SECURITY_LEVELS) else None


# ----- a small raw-JSON client ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ApiResource:
    group_version: str  # "v1", "batch/v1"
    kind: str
    name: str  # plural
    namespaced: bool
    verbs: tuple[str, ...]

    @property
    def key(self) -> str:
        """``Kind`` for the core group, else ``group/Kind`` (stable across versions of a group)."""
        group = self.group_version.rpartition("/")[0]
        return f"{group}/{self.kind}" if group else self.kind

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace)}"
        base += f"/{self.name}"
        return f"{base}/{quote(name)}" if name else base


@dataclasses.dataclass
class Response:
    status: int
    doc: Any
    warnings: list[str]


class Kube:
    """Raw JSON requests to the API server over a ``kubernetes.client.ApiClient`` (its TLS and credentials).

    Much faster than the generated models for the polling the waits do, and it returns what the API server
    said, warnings (e.g. Pod Security) included.
    """

    def __init__(self, api_client: Any) -> None:
        self.api = api_client
        self._resources: list[ApiResource] | None = None

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path | str) -> Kube:
        from kubernetes import config

        kconfig: Any = config
        return cls(kconfig.new_client_from_config(config_file=str(kubeconfig)))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.api.close()

    def __enter__(self) -> Kube:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Response:
        from kubernetes.client.exceptions import ApiException

        url = path + ("?" + urlencode(dict(query)) if query else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        method_, full_url, header_params, _, _ = self.api.param_serialize(
            method, url, header_params=headers, auth_settings=["BearerToken"]
        )
        try:  # the REST layer serializes a dict/list body as JSON
            resp = self.api.call_api(
                method_, full_url, header_params=header_params, body=body, _request_timeout=timeout
            )
            resp.read()
            status, raw, headers_out = resp.status, resp.data, resp.getheaders()
        except ApiException as exc:
            status, raw, headers_out = exc.status or 0, (exc.body or b""), exc.headers or {}
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw or "")
        try:
            doc = json.loads(text) if text else None
        except json.JSONDecodeError:
            doc = text
        warnings = []
        if headers_out:
            getall = getattr(headers_out, "getlist", None) or getattr(headers_out, "get_all", None)
            values = getall("Warning") if getall else [headers_out.get("Warning")]
            for value in values or []:
                if value:
                    warnings.append(_warning_text(str(value)))
        return Response(status, doc, warnings)

    def get(self, path: str, **query: str) -> Any:
        resp = self.request("GET", path, query=query or None)
        if resp.status != 200:
            raise ClusterError(f"GET {path} answered {resp.status}: {_status_message(resp.doc)}")
        return resp.doc

    def get_or_none(self, path: str) -> Any:
        resp = self.request("GET", path)
        if resp.status == 404:
            return None
        if resp.status != 200:
            raise ClusterError(f"GET {path} answered {resp.status}: {_status_message(resp.doc)}")
        return resp.doc

    def items(self, path: str, label_selector: str | None = None, field_selector: str | None = None) -> list[Any]:
        query = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        return list(self.get(path, **query).get("items") or [])

    def resources(self, refresh: bool = False) -> list[ApiResource]:
        """Every listable resource type the API server serves (all versions), from discovery; cached."""
        if self._resources is not None and not refresh:
            return self._resources
        found: list[ApiResource] = []
        group_versions = ["v1"]
        for group in self.get("/apis").get("groups", []):
            group_versions += [v["groupVersion"] for v in group.get("versions", [])]
        for gv in group_versions:
            path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
            resp = self.request("GET", path)
            if resp.status != 200:  # an aggregated API that is down: not ours to judge here
                continue
            for res in resp.doc.get("resources", []):
                if "/" in res["name"] or "list" not in res.get("verbs", []):
                    continue
                found.append(ApiResource(gv, res["kind"], res["name"], bool(res["namespaced"]), tuple(res["verbs"])))
        self._resources = found
        return found

    def resource_for(self, api_version: str, kind: str) -> ApiResource:
        for refresh in (False, True):
            for res in self.resources(refresh=refresh):
                if res.group_version == api_version and res.kind == kind:
                    return res
        raise ClusterError(f"the cluster serves no {kind} in {api_version} (is its CRD installed?)")

    def preferred_resources(self) -> list[ApiResource]:
        """One version per group and kind (the first listed, i.e. the preferred one): for inventories."""
        seen: set[str] = set()
        out = []
        for res in self.resources():
            if res.key not in seen:
                seen.add(res.key)
                out.append(res)
        return out


def _warning_text(header: str) -> str:
    # RFC 7234 warning: 299 - "text"
    parts = header.split(" ", 2)
    text = parts[2] if len(parts) == 3 else header
    return text.strip().strip('"')


def _status_message(doc: Any) -> str:
    if isinstance(doc, dict):
        return str(doc.get("message") or doc)
    return str(doc)


# ----- namespaces ------------------------------------------------------------------------------------------


# What kube-controller-manager puts into every new namespace (the serviceaccount controller and the
# root-ca-cert-publisher). Pods need both, and a namespace inventory taken before they appear would later count
# them as objects a release left behind.
NAMESPACE_DEFAULTS = (("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt"))


def create_namespace(kube: Kube, name: str, level: str = DEFAULT_POD_SECURITY, timeout: float = 60) -> None:
    """A namespace enforcing (and warning at) Pod Security ``level``, ready for pods: its
    :data:`NAMESPACE_DEFAULTS` exist."""
    if level not in POD_SECURITY_LEVELS:
        raise ClusterError(f"Pod Security level {level!r} is not one of {', '.join(POD_SECURITY_LEVELS)}")
    labels = {
        "pod-security.kubernetes.io/enforce": level,
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/warn": level,
        "pod-security.kubernetes.io/warn-version": "latest",
    }
    resp = kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name, "labels": labels}})
    if resp.status not in (200, 201):
        raise ClusterError(f"could not create namespace {name}: {_status_message(resp.doc)}")
    for kind, obj in NAMESPACE_DEFAULTS:
        poll(
            functools.partial(kube.get_or_none, f"/api/v1/namespaces/{name}/{kind}/{obj}"),
            timeout,
            f"{kind}/{obj} in namespace {name} (kube-controller-manager adds it to every namespace)",
        )


def delete_namespace(kube: Kube, name: str) -> None:
    """Delete a namespace without waiting (its objects are the garbage collector's from here on)."""
    kube.request("DELETE", f"/api/v1/namespaces/{quote(name)}")


# ----- helm --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Release:
    """One Helm release: which helm runs it, against which cluster, under which name in which namespace."""

    helm: Helm
    kubeconfig: Path
    name: str
    namespace: str


@dataclasses.dataclass(frozen=True)
class ChartSource:
    """What to install: a chart folder (dependencies built) with values files, ``--set`` and ``--set-json``."""

    chart: Path
    values_files: tuple[Path, ...] = ()
    set_values: tuple[str, ...] = ()
    set_json: tuple[str, ...] = ()

    def args(self, helm: Helm | None = None) -> list[str]:
        """helm's chart arguments; with ``helm``, a chart folder's ``file://`` dependencies are built first (a
        fresh clone has none vendored)."""
        if helm is not None and self.chart.is_dir():
            _dependency_builder(helm).ensure_dependencies(self.chart)
        out = [str(self.chart)]
        for path in self.values_files:
            out += ["-f", str(path)]
        for item in self.set_values:
            out += ["--set", item]
        for item in self.set_json:
            out += ["--set-json", item]
        return out

    def describe(self) -> str:
        parts = [self.chart.name] + [f"-f {p.name}" for p in self.values_files]
        parts += [f"--set {s}" for s in self.set_values] + [f"--set-json {s}" for s in self.set_json]
        return " ".join(parts)

    def with_values(self, *set_values: str, set_json: Iterable[str] = ()) -> ChartSource:
        return dataclasses.replace(
            self, set_values=self.set_values + tuple(set_values), set_json=self.set_json + tuple(set_json)
        )


@functools.cache
def _dependency_builder(helm: Helm) -> Renderer:
    """One Renderer per helm, for its memo of dependency builds (it renders nothing here)."""
    return Renderer(helm)


def run_helm(release: Release, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``helm ARGS --namespace NS --kubeconfig KC`` (argv, no shell); the completed process, never raises on exit."""
    full = [*args, "--namespace", release.namespace, "--kubeconfig", str(release.kubeconfig)]
    try:
        return release.helm.run(full, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ClusterError(
            f"helm {' '.join(args[:2])} ({release.helm.version}) did not return within {timeout:.0f}s"
        ) from None


def _helm_failed(
    kube: Kube | None, release: Release, what: str, proc: subprocess.CompletedProcess[str]
) -> ClusterError:
    detail = (proc.stderr or proc.stdout).strip()
    message = (
        f"helm {what} of release {release.name} ({release.helm.version}) failed (exit {proc.returncode}):\n{detail}"
    )
    if kube is not None:
        message += "\n" + diagnostics(kube, release.namespace, release.name)
    return ClusterError(message)


def manifest_objects(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind")]


def dry_run_server(kube: Kube, release: Release, source: ChartSource, timeout: float = 120) -> list[dict[str, Any]]:
    """``helm install --dry-run=server`` (the API server validates and admits every object without storing
    it), then the Pod Security verdict Helm does not show: each workload object (and hook pod) is sent again
    with ``dryRun=All`` and the API server's "would violate PodSecurity" warnings (or refusals) are errors.

    Returns the objects of the release (manifest and hooks) as the API server would store them.
    """
    args = ["install", release.name, *source.args(release.helm), "--dry-run=server", "--output", "json"]
    proc = run_helm(release, args, timeout)
    if proc.returncode != 0:
        raise _helm_failed(None, release, f"install --dry-run=server ({source.describe()})", proc)
    doc = json.loads(proc.stdout)
    objects = manifest_objects(doc.get("manifest") or "")
    for hook in doc.get("hooks") or []:
        objects += manifest_objects(hook.get("manifest") or "")
    problems = pod_security_problems(kube, release.namespace, objects)
    if problems:
        raise ClusterError(
            f"helm install --dry-run=server of {source.describe()} in namespace {release.namespace} "
            f"({namespace_level(kube, release.namespace)}): the API server says its pods would be refused:\n"
            + "\n".join(f"  {p}" for p in problems)
        )
    return objects


def namespace_level(kube: Kube, namespace: str) -> str:
    ns = kube.get_or_none(f"/api/v1/namespaces/{quote(namespace)}") or {}
    level = (ns.get("metadata", {}).get("labels") or {}).get("pod-security.kubernetes.io/enforce", "none")
    return f"Pod Security enforce={level}"


def pod_security_problems(kube: Kube, namespace: str, objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """For every workload object: the API server's Pod Security warnings on a ``dryRun=All`` create (and its
    refusal of bare Pods). Empty when all pods would be admitted in ``namespace``."""
    problems = []
    for obj in objects:
        if obj.get("kind") not in WORKLOAD_KINDS:
            continue
        res = kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
        body = json.loads(json.dumps(obj))
        body.setdefault("metadata", {})["namespace"] = namespace
        resp = kube.request("POST", res.path(namespace), query={"dryRun": "All", "fieldManager": "dlcharts"}, body=body)
        name = f"{obj['kind']}/{obj.get('metadata', {}).get('name')}"
        if resp.status not in (200, 201):
            problems.append(f"{name}: refused ({resp.status}): {_status_message(resp.doc)}")
        problems += [f"{name}: {w}" for w in resp.warnings if "PodSecurity" in w]
    return problems


def install(kube: Kube, release: Release, source: ChartSource, timeout: float = 120) -> None:
    """``helm install`` (no --wait: :func:`wait_ready` judges the result); ClusterError with diagnostics."""
    args = ["install", release.name, *source.args(release.helm), "--timeout", f"{int(timeout)}s"]
    proc = run_helm(release, args, timeout + 30)
    if proc.returncode != 0:
        raise _helm_failed(kube, release, f"install ({source.describe()})", proc)


def upgrade(kube: Kube, release: Release, source: ChartSource, timeout: float = 120) -> list[dict[str, Any]]:
    """``helm upgrade`` to ``source``; the new revision's manifest objects. ClusterError with helm's message
    (e.g. an immutable Job template) and the diagnostics when Helm fails."""
    proc = try_upgrade(release, source, timeout)
    if proc.returncode != 0:
        raise _helm_failed(kube, release, f"upgrade ({source.describe()})", proc)
    return manifest_objects(json.loads(proc.stdout).get("manifest") or "")


def try_upgrade(release: Release, source: ChartSource, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``helm upgrade --output json``, returning the process whatever happened (for upgrades expected to be
    refused)."""
    args = ["upgrade", release.name, *source.args(release.helm), "--timeout", f"{int(timeout)}s", "--output", "json"]
    return run_helm(release, args, timeout + 30)


def helm_test(kube: Kube, release: Release, timeout: float = 120) -> str:
    """``helm test``: Helm creates the chart's test hook pods and waits for them to succeed."""
    proc = run_helm(release, ["test", release.name, "--timeout", f"{int(timeout)}s"], timeout + 30)
    if proc.returncode != 0:
        raise _helm_failed(kube, release, "test", proc)
    return proc.stdout


def uninstall(kube: Kube, release: Release, timeout: float = 120) -> None:
    proc = run_helm(release, ["uninstall", release.name, "--timeout", f"{int(timeout)}s"], timeout + 30)
    if proc.returncode != 0:
        raise _helm_failed(kube, release, "uninstall", proc)


def release_status(release: Release) -> dict[str, Any]:
    """``helm status -o json`` (name, version = revision, info.status, ...)."""
    proc = run_helm(release, ["status", release.name, "--output", "json"], 60)
    if proc.returncode != 0:
        raise _helm_failed(None, release, "status", proc)
    return dict(json.loads(proc.stdout))


def release_manifest(release: Release) -> list[dict[str, Any]]:
    proc = run_helm(release, ["get", "manifest", release.name], 60)
    if proc.returncode != 0:
        raise _helm_failed(None, release, "get manifest", proc)
    return manifest_objects(proc.stdout)


# ----- the previous version of a chart ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PreviousChart:
    chart: Path  # a chart folder ready to install (dependencies built)
    version: str
    description: str  # where it came from, for reports


def previous_chart(helm: Helm, chart: Path, workdir: Path, base: str | None = None) -> PreviousChart:
    """The version of ``chart`` a user would upgrade from.

    Definition: the chart as committed at the release checks' base (``dlcharts.release.changes.resolve_base``:
    the merge-base of HEAD with ``base``, default origin/main, else main) when its ``version`` there differs
    from the working tree's; otherwise (same version, chart new since the base, no git) the chart itself.
    A base chart is exported with ``git archive`` (read-only) together with its ``file://`` dependencies and
    gets ``helm dependency build`` in ``workdir``.
    """
    from dlcharts.release import changes

    current = yaml.safe_load((chart / "Chart.yaml").read_text())
    itself = PreviousChart(chart, str(current["version"]), f"{current['name']} {current['version']} (this checkout)")
    try:
        repo = changes.repo_root(chart)
        found = changes.resolve_base(repo, base)
    except changes.GitError:
        return itself
    if found.commit is None:
        return itself
    rel = chart.resolve().relative_to(repo.resolve()).as_posix()
    shown = subprocess.run(
        ["git", "-C", str(repo), "show", f"{found.commit}:{rel}/Chart.yaml"],
        capture_output=True,
        text=True,
        check=False,
    )
    if shown.returncode != 0:
        return itself
    old = yaml.safe_load(shown.stdout) or {}
    if str(old.get("version")) == str(current["version"]):
        return itself
    paths = [rel] + [
        (Path(rel) / dep["repository"][len("file://") :]).as_posix()
        for dep in old.get("dependencies") or []
        if str(dep.get("repository", "")).startswith("file://")
    ]
    paths = [str(Path(p)).replace("\\", "/") for p in paths]
    normalized = []
    for p in paths:  # resolve "charts/x/../dl-common" to "charts/dl-common"
        parts: list[str] = []
        for part in p.split("/"):
            if part == "..":
                parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        normalized.append("/".join(parts))
    archive = workdir / "previous.tar"
    with archive.open("wb") as fh:
        proc = subprocess.run(
            ["git", "-C", str(repo), "archive", "--format=tar", found.commit, *normalized],
            stdout=fh,
            stderr=subprocess.PIPE,
            check=False,
        )
    if proc.returncode != 0:
        raise ClusterError(f"git archive of {rel} at {found.description} failed: {proc.stderr.decode().strip()}")
    with tarfile.open(archive) as tar:
        tar.extractall(workdir, filter="data")
    old_chart = workdir / rel
    dep = helm.run(["dependency", "build", str(old_chart), "--skip-refresh"], check=False, timeout=120)
    if dep.returncode != 0:
        raise ClusterError(f"helm dependency build of {rel} at {found.description} failed:\n{dep.stderr.strip()}")
    return PreviousChart(old_chart, str(old["version"]), f"{old.get('name')} {old['version']} at {found.description}")


# ----- reading the cluster -------------------------------------------------------------------------------------


def _conditions(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every condition of an object by type (all of them, not only the first)."""
    return {c.get("type", ""): c for c in (obj.get("status") or {}).get("conditions") or []}


def _true(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    cond = _conditions(obj).get(kind)
    return cond if cond and cond.get("status") == "True" else None


def job_outcome(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """("succeeded" | "failed", detail) once a Job is decided, from all its conditions; None while running.

    Success: Complete or SuccessCriteriaMet (a successPolicy was met; Complete follows). Failure: Failed or
    FailureTarget (the controller has decided to fail the Job and is cleaning up).
    """
    for kind in ("Failed", "FailureTarget"):
        cond = _true(job, kind)
        if cond:
            return "failed", f"{kind}: {cond.get('reason', '')}: {cond.get('message', '')}".rstrip(": ")
    for kind in ("Complete", "SuccessCriteriaMet"):
        cond = _true(job, kind)
        if cond:
            return "succeeded", kind
    return None


def pod_gpus(pod: Mapping[str, Any]) -> dict[str, int]:
    """GPU-like extended resources (``*/gpu*``, ``nvidia.com/*``, ``amd.com/*``) in the pod's container limits."""
    total: dict[str, int] = {}
    spec = pod.get("spec") or {}
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for name, value in ((container.get("resources") or {}).get("limits") or {}).items():
            if is_gpu_resource(name):
                with contextlib.suppress(ValueError):
                    total[name] = total.get(name, 0) + int(str(value))
    return total


def _owner(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("kind")), str(ref.get("name"))
    return None


def _waiting(pod: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(container, reason, message) for every container (init ones included) waiting."""
    status = pod.get("status") or {}
    out = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting:
            out.append((str(cs.get("name")), str(waiting.get("reason", "")), str(waiting.get("message", ""))))
    return out


def _is_hook(obj: Mapping[str, Any]) -> bool:
    return "helm.sh/hook" in ((obj.get("metadata") or {}).get("annotations") or {})


def _terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _ready(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and bool(_true(pod, "Ready"))


# ----- which nodes a DaemonSet belongs on ------------------------------------------------------------------


def _match_expression(expr: Mapping[str, Any], value: str | None) -> bool:
    op, values = expr.get("operator"), [str(v) for v in expr.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    return False


def node_matches(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether a pod (template) spec may run on ``node`` as a DaemonSet pod: nodeSelector, required node
    affinity (terms ORed, expressions ANDed; matchFields on metadata.name) and NoSchedule/NoExecute taints
    against the tolerations (plus those the DaemonSet controller adds to every DaemonSet pod)."""
    meta = node.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        fields = {"metadata.name": str(meta.get("name"))}

        def term_ok(term: Mapping[str, Any]) -> bool:
            exprs = term.get("matchExpressions") or []
            field_exprs = term.get("matchFields") or []
            if not exprs and not field_exprs:
                return False  # an empty term matches no node
            return all(_match_expression(e, labels.get(str(e.get("key")))) for e in exprs) and all(
                _match_expression(e, fields.get(str(e.get("key")))) for e in field_exprs
            )

        if not any(term_ok(t) for t in terms):
            return False
    tolerations = pod_spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if taint.get("key") in _NODE_TAINTS_TOLERATED_BY_DAEMONSETS:
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return False
    return True


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return toleration.get("key") == taint.get("key") and str(toleration.get("value") or "") == str(
        taint.get("value") or ""
    )


def daemonset_nodes(daemonset: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> set[str]:
    """Names of the nodes a DaemonSet should run on, computed from its pod template and the nodes' labels."""
    spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    return {str(n["metadata"]["name"]) for n in nodes if node_matches(spec, n)}


# ----- the wait ----------------------------------------------------------------------------------------------


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

    pods: dict[str, PodPlacement]
    jobs: dict[str, str]  # job -> "Complete" / "SuccessCriteriaMet"
    daemonsets: dict[str, set[str]]  # daemonset -> nodes its ready pods run on
    seconds: float

    def nodes_of(self, owner: str) -> list[str | None]:
        """Nodes of the pods of one owner (``Job/tf-worker``), by completion index when it has them."""
        pods = [p for p in self.pods.values() if p.owner == owner]
        pods.sort(key=lambda p: (int(p.index) if p.index and p.index.isdigit() else -1, p.name))
        return [p.node for p in pods]


@dataclasses.dataclass
class _State:
    jobs: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    daemonsets: list[dict[str, Any]]
    deployments: list[dict[str, Any]]
    statefulsets: list[dict[str, Any]]
    events: list[dict[str, Any]]
    nodes: list[dict[str, Any]]


def _observe(kube: Kube, namespace: str, release: str, nodes: list[dict[str, Any]] | None = None) -> _State:
    sel = f"{INSTANCE_LABEL}={release}"
    ns = quote(namespace)
    return _State(
        jobs=kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", sel),
        pods=kube.items(f"/api/v1/namespaces/{ns}/pods", sel),
        daemonsets=kube.items(f"/apis/apps/v1/namespaces/{ns}/daemonsets", sel),
        deployments=kube.items(f"/apis/apps/v1/namespaces/{ns}/deployments", sel),
        statefulsets=kube.items(f"/apis/apps/v1/namespaces/{ns}/statefulsets", sel),
        events=kube.items(f"/api/v1/namespaces/{ns}/events"),
        nodes=nodes if nodes is not None else kube.items("/api/v1/nodes"),
    )


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _fatal(
    state: _State,
    expected: Mapping[str, set[str]],
    allow_no_nodes: Collection[str],
    unschedulable_since: dict[str, float],
    unschedulable_grace: float,
) -> list[str]:
    problems = []
    for job in state.jobs:
        outcome = job_outcome(job)
        if outcome and outcome[0] == "failed":
            problems.append(f"Job {_name(job)} failed ({outcome[1]})")
    now = time.monotonic()
    for pod in state.pods:
        name = _name(pod)
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        sched = _conditions(pod).get("PodScheduled")
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
        for container, reason, message in _waiting(pod):
            if reason in FATAL_WAITING:
                problems.append(f"pod {name} container {container} is waiting in {reason}: {message}".rstrip(": "))
    controllers = {("Job", _name(o)) for o in state.jobs} | {("DaemonSet", _name(o)) for o in state.daemonsets}
    controllers |= {("Deployment", _name(o)) for o in state.deployments}
    controllers |= {("StatefulSet", _name(o)) for o in state.statefulsets}
    for event in state.events:
        involved = event.get("involvedObject") or {}
        key = (str(involved.get("kind")), str(involved.get("name")))
        if event.get("reason") == "FailedCreate" and key in controllers:
            message = str(event.get("message", ""))
            if "forbidden" in message or "is invalid" in message or "violates PodSecurity" in message:
                problems.append(f"{key[0]} {key[1]} cannot create its pods: {message}")
    for ds in state.daemonsets:
        name = _name(ds)
        status = ds.get("status") or {}
        if status.get("observedGeneration", 0) < (ds.get("metadata") or {}).get("generation", 0):
            continue
        want = expected.get(name, set())
        if not want and name not in allow_no_nodes:
            problems.append(
                f"DaemonSet {name} matches no node (desiredNumberScheduled {status.get('desiredNumberScheduled', 0)}"
                f"); its nodeSelector/affinity/tolerations select none of: "
                + ", ".join(sorted(_name(n) for n in state.nodes))
            )
        stray = {
            p.get("spec", {}).get("nodeName")
            for p in state.pods
            if _owner(p) == ("DaemonSet", name) and p.get("spec", {}).get("nodeName")
        } - want
        if stray:
            problems.append(f"DaemonSet {name} has pods on nodes it should not run on: {', '.join(sorted(stray))}")
    return problems


def _pending(state: _State, expected: Mapping[str, set[str]]) -> list[str]:
    waiting = []
    for job in state.jobs:
        if job_outcome(job) is None:
            st = job.get("status") or {}
            suspended = " (suspended)" if (job.get("spec") or {}).get("suspend") else ""
            waiting.append(
                f"Job {_name(job)}{suspended}: {st.get('succeeded', 0)}/"
                f"{(job.get('spec') or {}).get('completions')} succeeded, {st.get('active', 0)} active"
            )
    for ds in state.daemonsets:
        name, st = _name(ds), ds.get("status") or {}
        want = expected.get(name, set())
        nodes = {
            p["spec"].get("nodeName")
            for p in state.pods
            if _owner(p) == ("DaemonSet", name) and _ready(p) and not p["metadata"].get("deletionTimestamp")
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
            waiting.append(f"Deployment {_name(dep)}: {st.get('availableReplicas', 0)}/{replicas} available")
    for sts in state.statefulsets:
        st, replicas = sts.get("status") or {}, (sts.get("spec") or {}).get("replicas", 1)
        if not (st.get("readyReplicas", 0) == replicas and st.get("currentRevision") == st.get("updateRevision")):
            waiting.append(f"StatefulSet {_name(sts)}: {st.get('readyReplicas', 0)}/{replicas} ready")
    for pod in state.pods:
        if _owner(pod) is None and not _is_hook(pod) and not (_terminal(pod) or _ready(pod)):
            waiting.append(f"pod {_name(pod)}: {(pod.get('status') or {}).get('phase')}")
    return waiting


def _gpu_overcommit(kube: Kube, state: _State) -> list[str]:
    """Nodes of the release's GPU pods where the running/pending pods (of any namespace) ask for more GPUs than
    the node has."""
    nodes = {
        p["spec"].get("nodeName") for p in state.pods if p["spec"].get("nodeName") and not _terminal(p) and pod_gpus(p)
    }
    problems = []
    for node in sorted(n for n in nodes if n):
        alloc = next((n.get("status", {}).get("allocatable") or {} for n in state.nodes if _name(n) == node), {})
        used: dict[str, int] = {}
        for pod in kube.items("/api/v1/pods", field_selector=f"spec.nodeName={node}"):
            if _terminal(pod):
                continue
            for res, count in pod_gpus(pod).items():
                used[res] = used.get(res, 0) + count
        for res, count in used.items():
            have = int(str(alloc.get(res, "0")))
            if count > have:
                problems.append(f"node {node}: pods ask for {count} {res}, it has {have}")
    return problems


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
    while True:
        state = _observe(kube, namespace, release, nodes)
        expected: dict[str, set[str]] = {}
        for ds in state.daemonsets:
            name = _name(ds)
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
        unbound = [_name(p) for p in state.pods if not _terminal(p) and not p["spec"].get("nodeName")]
        if not waiting and not unbound:
            return Readiness(
                pods={
                    _name(p): PodPlacement(
                        _name(p),
                        p["spec"].get("nodeName"),
                        str((p.get("status") or {}).get("phase")),
                        pod_gpus(p),
                        "/".join(_owner(p) or ()) or None,
                        (p["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index"),
                    )
                    for p in state.pods
                    if not _is_hook(p)
                },
                jobs={_name(j): (job_outcome(j) or ("", ""))[1] for j in state.jobs},
                daemonsets={
                    _name(ds): {p["spec"].get("nodeName") for p in state.pods if _owner(p) == ("DaemonSet", _name(ds))}
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


# ----- after uninstall ----------------------------------------------------------------------------------------


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
            found.add(f"{res.key}/{_name(item)}")
    return found


def release_leftovers(kube: Kube, namespace: str, release: str, before: Collection[str] = ()) -> list[str]:
    """What of the release is still there: every object in the namespace that was not there before the
    install (``before`` from :func:`namespace_inventory`), every object anywhere (cluster-scoped ones
    included, e.g. ClusterRole) labelled ``app.kubernetes.io/instance=<release>``, and Helm's release
    records (Secrets ``owner=helm,name=<release>``)."""
    left = []
    selector = f"{INSTANCE_LABEL}={release}"
    for res in kube.preferred_resources():
        if res.key in _TRANSIENT:
            continue
        if res.namespaced:
            resp = kube.request("GET", res.path(namespace))
        else:
            resp = kube.request("GET", res.path(), query={"labelSelector": selector})
        if resp.status != 200:
            continue
        for item in resp.doc.get("items") or []:
            key = f"{res.key}/{_name(item)}"
            labels = (item.get("metadata") or {}).get("labels") or {}
            if not res.namespaced:
                left.append(f"{key} (cluster-scoped, labelled {selector})")
            elif labels.get(INSTANCE_LABEL) == release:
                left.append(f"{key} (labelled {selector})")
            elif labels.get("owner") == "helm" and labels.get("name") == release:
                left.append(f"{key} (Helm's record of the release)")
            elif key not in before:
                left.append(f"{key} (not in the namespace before the install)")
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


# ----- diagnostics ---------------------------------------------------------------------------------------------


def _event_time(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def diagnostics(kube: Kube, namespace: str, release: str, max_events: int = 60) -> str:
    """The state of a release as text: Jobs (every condition), pods (phase, reason, node, GPUs, scheduling
    and waiting containers), DaemonSets (counts, nodes, expected nodes) and the namespace's latest events."""
    try:
        state = _observe(kube, namespace, release)
    except Exception as exc:  # noqa: BLE001 - diagnostics must never hide the original error
        return f"--- could not read the state of release {release} in {namespace}: {exc} ---"
    lines = [f"--- state of release {release} in namespace {namespace} ---", "Jobs:"]
    for job in state.jobs:
        st, spec = job.get("status") or {}, job.get("spec") or {}
        conds = (
            ", ".join(
                f"{c.get('type')}={c.get('status')}"
                + (
                    f" ({c.get('reason')}: {c.get('message')})"
                    if c.get("status") == "True" and c.get("message")
                    else ""
                )
                for c in st.get("conditions") or []
            )
            or "none"
        )
        lines.append(
            f"  {_name(job)}: completions {st.get('succeeded', 0)}/{spec.get('completions')} "
            f"active {st.get('active', 0)} failed {st.get('failed', 0)}"
            + (f" failedIndexes {st['failedIndexes']}" if st.get("failedIndexes") else "")
            + (" suspended" if spec.get("suspend") else "")
            + f"; conditions: {conds}"
        )
    if not state.jobs:
        lines.append("  (none)")
    lines.append("Pods:")
    for pod in sorted(state.pods, key=_name):
        st = pod.get("status") or {}
        gpus = ",".join(f"{k}={v}" for k, v in pod_gpus(pod).items()) or "no GPU"
        line = (
            f"  {_name(pod)}: {st.get('phase')}{' (' + st['reason'] + ')' if st.get('reason') else ''} "
            f"node {pod['spec'].get('nodeName') or '-'} {gpus}"
        )
        if pod["spec"].get("schedulerName", "default-scheduler") != "default-scheduler":
            line += f" scheduler {pod['spec']['schedulerName']}"
        if pod["metadata"].get("deletionTimestamp"):
            line += " (terminating)"
        lines.append(line)
        sched = _conditions(pod).get("PodScheduled")
        if sched and sched.get("status") == "False":
            lines.append(f"      PodScheduled=False {sched.get('reason')}: {sched.get('message')}")
        for container, reason, message in _waiting(pod):
            lines.append(f"      container {container} waiting: {reason} {message}".rstrip())
    if not state.pods:
        lines.append("  (none)")
    if state.daemonsets:
        lines.append("DaemonSets:")
        for ds in state.daemonsets:
            st = ds.get("status") or {}
            nodes = sorted(
                p["spec"].get("nodeName") or "-" for p in state.pods if _owner(p) == ("DaemonSet", _name(ds))
            )
            lines.append(
                f"  {_name(ds)}: desired {st.get('desiredNumberScheduled', 0)} current "
                f"{st.get('currentNumberScheduled', 0)} updated {st.get('updatedNumberScheduled', 0)} ready "
                f"{st.get('numberReady', 0)} misscheduled {st.get('numberMisscheduled', 0)}; pods on {nodes}; "
                f"selector matches {sorted(daemonset_nodes(ds, state.nodes))}"
            )
    events = sorted(state.events, key=_event_time)[-max_events:]
    lines.append(f"Events in {namespace} (last {len(events)}):")
    for ev in events:
        obj = ev.get("involvedObject") or {}
        count = f" x{ev['count']}" if (ev.get("count") or 1) > 1 else ""
        lines.append(
            f"  {_event_time(ev)} {ev.get('type')} {ev.get('reason')} {obj.get('kind')}/{obj.get('name')}"
            f"{count}: {str(ev.get('message', '')).strip()}"
        )
    nodes = []
    for node in state.nodes:
        alloc = node.get("status", {}).get("allocatable") or {}
        gpu = ",".join(f"{k}={v}" for k, v in alloc.items() if is_gpu_resource(k))
        nodes.append(f"{_name(node)}({gpu or 'no GPU'})")
    lines.append("Nodes: " + " ".join(nodes))
    return "\n".join(lines)
