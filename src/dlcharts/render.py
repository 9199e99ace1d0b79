"""Rendering a chart with the real helm into parsed, indexed Kubernetes objects, cached by content."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import stat
import subprocess
import tempfile
import threading
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts import render_server
from dlcharts.errors import DLChartsError, ManifestError, RenderError, ToolchainError, read_yaml
from dlcharts.helm import Helm, find_helm, without_link_notices
from dlcharts.toolchain import cache_root
from dlcharts.utils.flock import locked

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
    # helm --set-file: "key=path" pairs; helm reads the file's text into the value (e.g. script=train.py)
    set_files: tuple[str, ...] = ()
    set_json: tuple[str, ...] = ()  # helm --set-json: key=<JSON>
    set_string: tuple[str, ...] = ()  # helm --set-string: key=value, the value always a string
    include_crds: bool = False  # helm --include-crds: the chart's crds/ folder too

    def _flags(self) -> list[tuple[str, str]]:
        return (
            [("--values", str(p)) for p in self.values_files] + [("--set", s) for s in self.set_values]
            + [("--set-json", s) for s in self.set_json] + [("--set-string", s) for s in self.set_string]
            + [("--set-file", s) for s in self.set_files] + [("--api-versions", a) for a in self.api_versions]
        )  # fmt: skip

    def describe(self) -> str:
        parts = [f"release={self.release}", f"namespace={self.namespace}", f"kube={self.kube_version}"]
        parts += [f"{'-f' if flag == '--values' else flag} {value}" for flag, value in self._flags()]
        return " ".join(parts + (["--include-crds"] if self.include_crds else []))

    def helm_args(self) -> list[str]:
        args = ["template", self.release, str(self.chart), "--namespace", self.namespace]
        args += ["--kube-version", self.kube_version]
        for flag, value in self._flags():
            args += [flag, value]
        return args + (["--include-crds"] if self.include_crds else [])


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


def _resolved_pair(pair: str) -> str:
    """A --set-file "key=path" pair with the path made absolute (helm and the cache key read the same file)."""
    key, sep, path = pair.partition("=")
    return f"{key}{sep}{Path(path).resolve()}" if sep else pair


def parse_manifest(
    text: str, namespace: str = "default", decoded: Sequence[Any] | None = None, fallback: Collection[int] = ()
) -> dict[ObjectKey, K8sObject]:
    """Split a `helm template` stream into objects, keeping each one's ``# Source:`` template path.

    ``decoded`` is the render server's decoding of each piece (dlcharts.render_server): used as it is, except for
    the pieces in ``fallback``, which PyYAML decodes here (as it does every piece without ``decoded``)."""
    objects: dict[ObjectKey, K8sObject] = {}
    chunks = _DOC_SPLIT_RE.split(text)
    if decoded is not None and len(decoded) != len(chunks):
        decoded = None  # not this stream's pieces: decode them all here
    for index, chunk in enumerate(chunks):
        if not chunk.strip():
            continue
        source_match = _SOURCE_RE.search(chunk)
        source = source_match.group(1).strip() if source_match else "<unknown>"
        if decoded is not None and index not in fallback:
            body = decoded[index]
        else:
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
    """Renders charts with one pinned helm; renders are cached by a hash of the chart's content and inputs.

    A render goes to the in-process renderer linked to that helm (dlcharts.render_server), which prints what the
    binary prints; the helm binary renders what the server cannot, or everything where the server is not built
    or ``DLCHARTS_RENDERER=binary``. The cache lives in memory and, when ``cache_dir`` is given, on disk, so a
    matrix of scenarios (and a second test run) re-renders only what changed.

    With ``compare``, each render also runs the helm binary, whose render is the one returned, and a render the
    server printed or decoded differently raises RendererMismatch (render_server.COMPARED counts them).
    """

    def __init__(self, helm: Helm | None = None, cache_dir: Path | None = None, compare: bool = False) -> None:
        self.helm = helm or find_helm()
        self.cache_dir = cache_dir
        self.compare = compare
        self._memory: dict[str, Rendered | _Refusal] = {}
        self._deps_done: dict[Path, str] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def render(self, request: RenderRequest) -> Rendered:
        """Render ``request``, or raise RenderError. Failures are cached like renders: helm's verdict on the
        same chart, inputs and helm binary does not change, and property tests draw many rejected values."""
        request = dataclasses.replace(
            request,
            chart=request.chart.resolve(),
            values_files=tuple(p.resolve() for p in request.values_files),
            set_files=tuple(_resolved_pair(pair) for pair in request.set_files),
        )
        self.ensure_dependencies(request.chart)  # first: what it vendors into charts/ is part of the key
        digest = self.cache_key(request)
        with self._lock:
            outcome = self._memory.get(digest)
        if outcome is None:
            outcome = self._read_disk(request, digest)
        if outcome is None:
            self.misses += 1
            outcome, reply = self._run_helm(request)
            self._write_disk(digest, outcome, reply)
        else:
            self.hits += 1
        with self._lock:
            self._memory[digest] = outcome
        if isinstance(outcome, _Refusal):
            raise RenderError(str(request.chart), request.describe(), outcome.stderr)
        return outcome

    def cache_key(self, request: RenderRequest) -> str:
        h = hashlib.sha256()
        h.update(f"{self.helm.path}\0{self.helm.version}\0{render_server.renderer_mode()}\0".encode())
        h.update(chart_digest(request.chart).encode())
        for path in request.values_files:
            h.update(b"\0values\0" + path.read_bytes())
        h.update(repr((request.set_values, request.set_json, request.set_string, request.include_crds)).encode())
        h.update(repr((request.release, request.namespace)).encode())
        for pair in request.set_files:  # the files' content decides the render (a missing file: helm says so)
            key, _, file = pair.partition("=")
            content = Path(file).read_bytes() if Path(file).is_file() else b"\0missing\0" + file.encode()
            h.update(b"\0set-file\0" + key.encode() + b"\0" + content)
        h.update(repr((request.kube_version, request.api_versions)).encode())
        return h.hexdigest()

    def _run_helm(self, request: RenderRequest) -> tuple[Rendered | _Refusal, render_server.Reply | None]:
        """The render, by the server where it can (with its reply), else by the helm binary."""
        server = render_server.server_for(self.helm)
        reply = None
        if server is not None:
            try:
                reply = server.template(request.helm_args())
            except ToolchainError as exc:
                render_server.retire(self.helm, str(exc))
                reply = None
            if reply is not None and not self.compare:
                return _from_reply(request, reply), reply
        elif self.compare:
            binary = render_server.renderer_mode() == "binary"
            why = f"{render_server.RENDERER_ENV}=binary" if binary else "see the notice above"
            raise ToolchainError(f"cannot compare renderers: no in-process renderer for {self.helm.path} ({why})")
        proc = self.helm.run(request.helm_args(), check=False)
        outcome = (
            _Refusal(proc.stderr) if proc.returncode != 0
            else Rendered(request, proc.stdout, parse_manifest(proc.stdout, request.namespace))
        )  # fmt: skip
        if self.compare and reply is not None:
            render_server.COMPARED["renders"] += 1
            problem = difference(reply, proc)
            if problem:
                raise RendererMismatch(f"{request.chart} ({request.describe()}): the in-process renderer {problem}")
            render_server.COMPARED["identical"] += 1
        return outcome, None

    def ensure_dependencies(self, chart: Path) -> None:
        """Vendor ``file://`` dependencies into ``<chart>/charts`` when they changed since the last build.

        A dependency already linked into ``charts/`` (as dl-common is in this repository) needs nothing: helm
        follows the link, and a build would add a second, stale copy next to it.
        Safe across processes (pytest-xdist workers, parallel CLI runs): one builds under a lock and records
        what it built outside the chart, the others find the record and leave ``charts/`` alone, so no
        ``helm template`` reads a half-rewritten dependency."""
        local = local_dependencies(chart)
        if not local or all(is_linked(chart, dep) for dep in local):
            return
        stamp = "".join(chart_digest(dep) for dep in local)
        if self._deps_done.get(chart) == stamp and (chart / "charts").is_dir():
            return
        for dep in local:
            self.ensure_dependencies(dep)
        record = _dependency_record(chart)
        with locked(record.with_suffix(".lock")):
            if not (record.is_file() and record.read_text() == stamp + _vendored(chart)):
                proc = self.helm.run(["dependency", "build", str(chart), "--skip-refresh"], check=False)
                if proc.returncode != 0:
                    raise RenderError(str(chart), "helm dependency build", proc.stderr)
                record.write_text(stamp + _vendored(chart))
        self._deps_done[chart] = stamp

    def _read_disk(self, request: RenderRequest, digest: str) -> Rendered | _Refusal | None:
        if self.cache_dir is None:
            return None
        rendered, refused = self.cache_dir / f"{digest}.yaml", self.cache_dir / f"{digest}.refused"
        reply = self.cache_dir / f"{digest}.json"
        if reply.is_file():
            return _from_reply(request, render_server.Reply.parse(reply.read_bytes()))
        if rendered.is_file():
            text = rendered.read_text()
            return Rendered(request, text, parse_manifest(text, request.namespace))
        if refused.is_file():
            return _Refusal(refused.read_text())
        return None

    def _write_disk(self, digest: str, outcome: Rendered | _Refusal, reply: render_server.Reply | None) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        # a server's reply keeps the objects it decoded, so a later read decodes JSON, not YAML
        suffix, data = (
            (".refused", outcome.stderr.encode()) if isinstance(outcome, _Refusal)
            else (".json", reply.line) if reply is not None
            else (".yaml", outcome.text.encode())
        )  # fmt: skip
        tmp = self.cache_dir / f".{digest}.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_bytes(data)
        tmp.replace(self.cache_dir / f"{digest}{suffix}")


class RendererMismatch(DLChartsError):
    """The in-process renderer printed, failed or decoded a render otherwise than the helm binary and PyYAML."""


def difference(reply: render_server.Reply, binary: subprocess.CompletedProcess[str]) -> str | None:
    """How the server's reply differs from the binary's run (helm's stderr without its link notices on both
    sides), or None: the same exit status, the same error text, the same bytes on stdout apart from Secret
    data (generated keys are random by design), and each piece decoded as PyYAML decodes it."""
    if (reply.status != 0) != (binary.returncode != 0):
        return f"exited {reply.status}, the binary {binary.returncode}:\n{reply.stderr or binary.stderr}"
    if reply.status != 0:
        ours, theirs = without_link_notices(reply.stderr), binary.stderr
        same = ours == theirs or _error_items(ours) == _error_items(theirs)
        return None if same else f"failed with other text:\n{ours}\nthe binary:\n{theirs}"
    ours_docs, theirs_docs = _without_secret_data(reply.stdout), _without_secret_data(binary.stdout)
    if ours_docs != theirs_docs:
        if len(ours_docs) != len(theirs_docs):
            return f"printed {len(ours_docs)} documents, the binary {len(theirs_docs)}"
        index = next(i for i, (a, b) in enumerate(zip(ours_docs, theirs_docs, strict=True)) if a != b)
        line = next(
            (
                pair
                for pair in zip(ours_docs[index].splitlines(), theirs_docs[index].splitlines(), strict=False)
                if pair[0] != pair[1]
            ),
            ("(shorter)", "(longer)"),
        )
        return f"printed document {index} otherwise: {line[0]!r}, the binary {line[1]!r}"
    decoded = parse_manifest(reply.stdout, "default", reply.objects, reply.fallback)
    for key, obj in parse_manifest(reply.stdout).items():
        if key not in decoded or not same_data(decoded[key].body, obj.body):
            return f"decoded {key} otherwise than PyYAML"
    return None


def _error_items(stderr: str) -> list[str]:
    """helm's error text as its items (a line with the more indented lines under it), sorted at every depth: helm
    lists a values file's schema errors in Go map order, which differs from one run of the binary to the next, at
    the top and (Helm 4: ``- at '/defaults': validation failed`` over the failures inside it) within an item."""

    def depth(line: str) -> int:
        return len(line) - len(line.lstrip(" \t"))

    def items(lines: list[str]) -> list[str]:
        out, i = [], 0
        while i < len(lines):
            end = i + 1
            while end < len(lines) and depth(lines[end]) > depth(lines[i]):
                end += 1
            out.append("\n".join([lines[i], *items(lines[i + 1 : end])]))
            i = end
        return sorted(out)

    return items(stderr.splitlines())


def same_data(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (True is not 1, 1 is not 1.0) and keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_data(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_data(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _without_secret_data(text: str) -> list[str]:
    """The documents of a stream, each Secret's data values replaced by a placeholder."""
    docs = []
    for doc in _DOC_SPLIT_RE.split(text):
        if "\nkind: Secret\n" in f"\n{doc}\n":
            lines, in_data = [], False
            for line in doc.split("\n"):
                if in_data and line.startswith("  ") and ":" in line:
                    line = line.split(":", 1)[0] + ": <random by design>"
                else:
                    in_data = line in ("data:", "stringData:")
                lines.append(line)
            doc = "\n".join(lines)
        docs.append(doc)
    return docs


@dataclasses.dataclass(frozen=True)
class _Refusal:
    """helm's refusal to render a request (its stderr), kept in the cache like a render."""

    stderr: str


def _from_reply(request: RenderRequest, reply: render_server.Reply) -> Rendered | _Refusal:
    if reply.status != 0:
        return _Refusal(without_link_notices(reply.stderr))
    objects = parse_manifest(reply.stdout, request.namespace, reply.objects, reply.fallback)
    return Rendered(request, reply.stdout, objects)


def _dependency_record(chart: Path) -> Path:
    """Where the last dependency build of ``chart`` is recorded (outside the chart: helm would package it)."""
    folder = Path(tempfile.gettempdir()) / f"dlcharts-deps-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    return folder / hashlib.sha256(str(chart.resolve()).encode()).hexdigest()[:32]


def _vendored(chart: Path) -> str:
    """What ``<chart>/charts`` holds now (names, sizes, modification times), to notice a hand-made change."""
    folder = chart / "charts"
    if not folder.is_dir():
        return "\0none"
    return "".join(f"\0{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in sorted(folder.iterdir()))


def local_dependencies(chart: Path) -> list[Path]:
    """Chart directories named by ``file://`` dependencies in Chart.yaml."""
    known = chart_yaml(chart)
    if known.local_dependencies is None:
        meta = known.meta if isinstance(known.meta, dict) else {}
        deps = []
        for dep in meta.get("dependencies") or []:
            repo = str(dep.get("repository") or "")
            if repo.startswith("file://"):
                deps.append((chart / repo[len("file://") :]).resolve())
        known.local_dependencies = tuple(deps)
    return list(known.local_dependencies)


@dataclasses.dataclass
class ChartYaml:
    """A chart's Chart.yaml as parsed (``meta``: shared, never to be changed), with what was derived from it."""

    stamp: tuple[int, ...]
    meta: Any
    local_dependencies: tuple[Path, ...] | None = None


def chart_yaml(chart: Path) -> ChartYaml:
    """``chart``'s Chart.yaml, parsed again only when the file changed (a test session renders and names each chart
    hundreds of times); a file that is not YAML is a one-line error naming it."""
    path = chart / "Chart.yaml"
    stamp = _stamp(path)
    known = _CHART_YAMLS.get(path)
    if known is None or known.stamp != stamp:
        known = _CHART_YAMLS[path] = ChartYaml(stamp, read_yaml(path))
    return known


def is_linked(chart: Path, dependency: Path) -> bool:
    """Whether ``<chart>/charts/`` holds a symbolic link to the ``file://`` dependency folder itself."""
    link = chart / "charts" / dependency.name
    return link.is_symlink() and link.resolve() == dependency.resolve()


def chart_digest(chart: Path) -> str:
    """A hash of every file of a chart, its ``file://`` dependencies and what it vendors.

    ``charts/`` (vendored ``.tgz`` archives, unpacked charts and the links to them) and ``Chart.lock`` are part of
    it: a change to a vendored or OCI dependency changes the render, so it must change the cache key."""
    files = list(_chart_files(chart))
    stamp = (
        tuple((rel, stamp) for rel, _, stamp in files),
        tuple(chart_digest(d) for d in local_dependencies(chart)),
    )
    known = _DIGESTS.get(chart)
    if known is not None and known[0] == stamp:
        return known[1]
    h = hashlib.sha256()
    for rel, path, _ in files:
        with open(path, "rb") as f:
            h.update(rel.encode() + b"\0" + f.read() + b"\0")
    for digest in stamp[1]:
        h.update(digest.encode())
    _DIGESTS[chart] = (stamp, h.hexdigest())
    return h.hexdigest()


# What hashing a chart found, by folder, with the stamp of every file it read: a render hashes its chart again
# only when a file changed (a test session renders each chart hundreds of times).
_DIGESTS: dict[Path, tuple[object, str]] = {}
_CHART_YAMLS: dict[Path, ChartYaml] = {}


def _stamp(path: Path | str) -> tuple[int, ...]:
    """What changes when a file is written: its size, modification and change times, inode (a replaced file)."""
    return _stamp_of(os.stat(path))


def _stamp_of(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def _chart_files(chart: Path) -> Iterator[tuple[str, str, tuple[int, ...]]]:
    """Every file under ``chart`` in a stable order (path relative to the chart, path, stamp), following links to
    folders (``charts/dl-common`` is one), each folder once: the content helm reads, whatever the layout. One
    stat a file and no pathlib: every render stamps its whole chart."""
    seen: set[tuple[int, int]] = set()
    top = str(chart)
    for folder, dirs, files in os.walk(top, followlinks=True):
        st = os.stat(folder)
        if (st.st_dev, st.st_ino) in seen:  # a link back up the tree, or a second link to the same folder
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs.sort()
        prefix = folder[len(top) + 1 :] + os.sep if folder != top else ""
        for name in sorted(files):
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except OSError:  # a dangling link: helm does not read it either
                continue
            if stat.S_ISREG(st.st_mode):
                yield prefix + name, path, _stamp_of(st)


def default_cache_dir() -> Path:
    return cache_root() / "renders"
