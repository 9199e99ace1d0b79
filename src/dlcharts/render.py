"""Rendering a chart with the real helm into parsed, indexed Kubernetes objects, cached by content."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import ManifestError, RenderError
from dlcharts.helm import Helm, find_helm

# libyaml is ~10x faster; fall back to the pure-Python loader where it is missing.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

DEFAULT_KUBE_VERSION = "1.35.0"
# Kinds that live outside namespaces; every other kind is indexed under the release namespace when it names none.
CLUSTER_SCOPED = frozenset(
    {
        "APIService", "CSIDriver", "CSINode", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
        "DeviceClass", "IngressClass", "MutatingWebhookConfiguration", "Namespace", "Node", "PersistentVolume",
        "PriorityClass", "RuntimeClass", "StorageClass", "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration", "VolumeAttachment",
        "ClusterQueue", "ResourceFlavor", "Queue",
    }
)  # fmt: skip
_SOURCE_RE = re.compile(r"^# Source: (.+)$", re.MULTILINE)
_DOC_SPLIT_RE = re.compile(r"^---[ \t]*$", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class RenderRequest:
    """Everything that decides what a render produces."""

    chart: Path
    values_files: tuple[Path, ...] = ()
    set_values: tuple[str, ...] = ()
    release: str = "release"
    namespace: str = "default"
    kube_version: str = DEFAULT_KUBE_VERSION
    api_versions: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = [f"release={self.release}", f"namespace={self.namespace}", f"kube={self.kube_version}"]
        parts += [f"-f {p}" for p in self.values_files]
        parts += [f"--set {s}" for s in self.set_values]
        parts += [f"--api-versions {a}" for a in self.api_versions]
        return " ".join(parts)

    def helm_args(self) -> list[str]:
        args = ["template", self.release, str(self.chart), "--namespace", self.namespace]
        args += ["--kube-version", self.kube_version]
        for path in self.values_files:
            args += ["--values", str(path)]
        for pair in self.set_values:
            args += ["--set", pair]
        for api in self.api_versions:
            args += ["--api-versions", api]
        return args


@dataclasses.dataclass(frozen=True)
class ObjectKey:
    api_version: str
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name} ({self.api_version})"


@dataclasses.dataclass
class K8sObject:
    """One rendered object, with the template it came from."""

    key: ObjectKey
    body: dict[str, Any]
    source: str

    @property
    def kind(self) -> str:
        return self.key.kind

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def is_hook(self) -> bool:
        return "helm.sh/hook" in (self.body.get("metadata", {}).get("annotations") or {})

    def ref(self) -> str:
        return f"{self.key.kind}/{self.key.name}"


@dataclasses.dataclass
class Rendered:
    """The parsed output of one render, indexed by (apiVersion, kind, namespace, name)."""

    request: RenderRequest
    text: str
    objects: dict[ObjectKey, K8sObject]

    def __iter__(self) -> Iterator[K8sObject]:
        return iter(self.objects.values())

    def __len__(self) -> int:
        return len(self.objects)

    def of_kind(self, kind: str) -> list[K8sObject]:
        return [o for o in self.objects.values() if o.kind == kind]

    def get(self, kind: str, name: str) -> K8sObject:
        for obj in self.objects.values():
            if obj.kind == kind and obj.name == name:
                return obj
        have = ", ".join(sorted(o.ref() for o in self.objects.values()))
        raise KeyError(f"no {kind}/{name} in the render of {self.request.chart}; it has: {have}")

    def kinds_and_names(self) -> set[tuple[str, str]]:
        return {(k.kind, k.name) for k in self.objects}


def parse_manifest(text: str, namespace: str = "default") -> dict[ObjectKey, K8sObject]:
    """Split a `helm template` stream into objects, keeping each one's ``# Source:`` template path."""
    objects: dict[ObjectKey, K8sObject] = {}
    for chunk in _DOC_SPLIT_RE.split(text):
        if not chunk.strip():
            continue
        source_match = _SOURCE_RE.search(chunk)
        source = source_match.group(1).strip() if source_match else "<unknown>"
        try:
            body = yaml.load(chunk, Loader=_Loader)  # noqa: S506 - CSafeLoader/SafeLoader only
        except yaml.YAMLError as exc:
            raise ManifestError(f"{source} rendered invalid YAML: {exc}") from None
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ManifestError(f"{source} rendered a {type(body).__name__}, not a Kubernetes object")
        meta = body.get("metadata") or {}
        kind = str(body.get("kind", ""))
        name = meta.get("name") if isinstance(meta, dict) else None
        if not kind or not body.get("apiVersion") or not name:
            raise ManifestError(f"{source} rendered an object without apiVersion, kind or metadata.name: {chunk[:200]}")
        ns = None if kind in CLUSTER_SCOPED else (meta.get("namespace") or namespace)
        key = ObjectKey(str(body["apiVersion"]), kind, ns, str(name))
        if key in objects:
            raise ManifestError(f"{key} is rendered twice: by {objects[key].source} and by {source}")
        objects[key] = K8sObject(key, body, source)
    return objects


class Renderer:
    """Renders charts with one helm binary; renders are cached by a hash of the chart's content and inputs.

    The cache lives in memory and, when ``cache_dir`` is given, on disk, so a matrix of scenarios (and a
    second test run) re-renders only what changed.
    """

    def __init__(self, helm: Helm | None = None, cache_dir: Path | None = None) -> None:
        self.helm = helm or find_helm()
        self.cache_dir = cache_dir
        self._memory: dict[str, Rendered] = {}
        self._deps_done: dict[Path, str] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def render(self, request: RenderRequest) -> Rendered:
        request = dataclasses.replace(
            request,
            chart=request.chart.resolve(),
            values_files=tuple(p.resolve() for p in request.values_files),
        )
        digest = self.cache_key(request)
        with self._lock:
            cached = self._memory.get(digest)
        if cached is not None:
            self.hits += 1
            return cached
        text = self._read_disk(digest)
        if text is None:
            self.misses += 1
            text = self._run_helm(request)
            self._write_disk(digest, text)
        else:
            self.hits += 1
        rendered = Rendered(request, text, parse_manifest(text, request.namespace))
        with self._lock:
            self._memory[digest] = rendered
        return rendered

    def cache_key(self, request: RenderRequest) -> str:
        h = hashlib.sha256()
        h.update(f"{self.helm.path}\0{self.helm.version}\0".encode())
        h.update(chart_digest(request.chart).encode())
        for path in request.values_files:
            h.update(b"\0values\0" + path.read_bytes())
        h.update(repr((request.set_values, request.release, request.namespace)).encode())
        h.update(repr((request.kube_version, request.api_versions)).encode())
        return h.hexdigest()

    def _run_helm(self, request: RenderRequest) -> str:
        self.ensure_dependencies(request.chart)
        proc = self.helm.run(request.helm_args(), check=False)
        if proc.returncode != 0:
            raise RenderError(str(request.chart), request.describe(), proc.stderr)
        return proc.stdout

    def ensure_dependencies(self, chart: Path) -> None:
        """Vendor ``file://`` dependencies into ``<chart>/charts`` when they changed since the last build."""
        local = local_dependencies(chart)
        if not local:
            return
        stamp = "".join(chart_digest(dep) for dep in local)
        if self._deps_done.get(chart) == stamp and (chart / "charts").is_dir():
            return
        for dep in local:
            self.ensure_dependencies(dep)
        proc = self.helm.run(["dependency", "build", str(chart), "--skip-refresh"], check=False)
        if proc.returncode != 0:
            raise RenderError(str(chart), "helm dependency build", proc.stderr)
        self._deps_done[chart] = stamp

    def _read_disk(self, digest: str) -> str | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{digest}.yaml"
        return path.read_text() if path.is_file() else None

    def _write_disk(self, digest: str, text: str) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_dir / f".{digest}.{os.getpid()}.tmp"
        tmp.write_text(text)
        tmp.replace(self.cache_dir / f"{digest}.yaml")


def local_dependencies(chart: Path) -> list[Path]:
    """Chart directories named by ``file://`` dependencies in Chart.yaml."""
    meta = yaml.load((chart / "Chart.yaml").read_text(), Loader=_Loader) or {}  # noqa: S506
    deps = []
    for dep in meta.get("dependencies") or []:
        repo = str(dep.get("repository") or "")
        if repo.startswith("file://"):
            deps.append((chart / repo[len("file://") :]).resolve())
    return deps


def chart_digest(chart: Path) -> str:
    """A hash of every file of a chart (and of its ``file://`` dependencies), ignoring vendored ``charts/``."""
    h = hashlib.sha256()
    for path in sorted(chart.rglob("*")):
        rel = path.relative_to(chart)
        if rel.parts[0] in ("charts", "Chart.lock") or not path.is_file():
            continue
        h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    for dep in local_dependencies(chart):
        h.update(chart_digest(dep).encode())
    return h.hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("DLCHARTS_CACHE") or os.path.join(Path.home(), ".cache", "dlcharts")
    return Path(base) / "renders"
