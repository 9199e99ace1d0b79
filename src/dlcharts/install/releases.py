"""Helm releases: what to install (:class:`ChartSource`), helm install / upgrade / ``--dry-run=server`` / test /
uninstall / status / get manifest of a :class:`Release` (every helm call an argv list), and the chart version a
user would upgrade from (:func:`previous_chart`)."""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import ClusterError
from dlcharts.helm import Helm
from dlcharts.install.diagnostics import diagnostics
from dlcharts.install.kube import Kube
from dlcharts.install.podsecurity import namespace_level, pod_security_problems
from dlcharts.render import Renderer, is_linked, local_dependencies
from dlcharts.utils.git import GitError, repo_root, resolve_base, show


@dataclasses.dataclass(frozen=True)
class Release:
    """One Helm release: which helm runs it, against which cluster, under which name in which namespace."""

    helm: Helm
    kubeconfig: Path
    name: str
    namespace: str


@dataclasses.dataclass(frozen=True)
class ChartSource:
    """What to install: a chart folder (dependencies built) with values files, ``--set`` and ``--set-json``, then
    ``extra_args``: any other helm arguments as typed (``--set-file script=train.py``), after the rest so they win."""

    chart: Path
    values_files: tuple[Path, ...] = ()
    set_values: tuple[str, ...] = ()
    set_json: tuple[str, ...] = ()
    extra_args: tuple[str, ...] = ()

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
        return out + list(self.extra_args)

    def describe(self) -> str:
        parts = [self.chart.name] + [f"-f {p.name}" for p in self.values_files]
        parts += [f"--set {s}" for s in self.set_values] + [f"--set-json {s}" for s in self.set_json]
        return " ".join(parts + list(self.extra_args))

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


@dataclasses.dataclass(frozen=True)
class PreviousChart:
    chart: Path  # a chart folder ready to install (dependencies built or linked)
    version: str
    description: str  # where it came from, for reports


def previous_chart(helm: Helm, chart: Path, workdir: Path, base: str | None = None) -> PreviousChart:
    """The version of ``chart`` a user would upgrade from.

    Definition: the chart as committed at the release checks' base (``dlcharts.utils.git.resolve_base``:
    the merge-base of HEAD with ``base``, default origin/main, else main) when its ``version`` there differs
    from the working tree's; otherwise (same version, chart new since the base, no git) the chart itself.
    A base chart is exported with ``git archive`` (read-only) together with its ``file://`` dependencies into
    ``workdir``, and gets ``helm dependency build`` there unless every such dependency is a committed link
    (``charts/<dependency> -> ../../<dependency>``; a build would add a packaged copy beside it).
    """
    current = yaml.safe_load((chart / "Chart.yaml").read_text())
    itself = PreviousChart(chart, str(current["version"]), f"{current['name']} {current['version']} (this checkout)")
    try:
        repo = repo_root(chart)
        found = resolve_base(repo, base)
    except GitError:
        return itself
    if found.commit is None:
        return itself
    rel = chart.resolve().relative_to(repo.resolve()).as_posix()
    shown = show(repo, found.commit, f"{rel}/Chart.yaml")
    if shown is None:
        return itself
    old = yaml.safe_load(shown) or {}
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
    if not all(is_linked(old_chart, dependency) for dependency in local_dependencies(old_chart)):
        dep = helm.run(["dependency", "build", str(old_chart), "--skip-refresh"], check=False, timeout=120)
        if dep.returncode != 0:
            raise ClusterError(f"helm dependency build of {rel} at {found.description} failed:\n{dep.stderr.strip()}")
    return PreviousChart(old_chart, str(old["version"]), f"{old.get('name')} {old['version']} at {found.description}")
