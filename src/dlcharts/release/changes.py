"""Which charts changed against a base git ref, and whether each one's ``version`` went up.

This is chart-testing's version-increment check, done in Python with plain ``git``:

- The base is the merge-base of HEAD and the ref (``--base``; by default ``origin/main``, else the local
  ``main``), as ``ct lint`` computes it against its target branch. With neither (a fresh ``git init``, a
  repository with no remote on another branch) the base is HEAD, so only uncommitted changes count; in a
  repository with no commit yet every chart is new.
- A chart changed when any file under its directory differs from the base (tracked changes, and, unless
  ``committed_only``, uncommitted and untracked files that git does not ignore). Vendored ``charts/`` and
  ``Chart.lock`` are gitignored and so never count.
- A changed chart must have a ``version`` strictly greater (SemVer precedence) than the base's. A chart that
  is new at the base, or deleted, needs nothing.
- A chart that others depend on through ``file://`` (dl-common) is vendored into each dependent's package,
  so when it changes every dependent must be bumped too, and each dependent's exact version constraint on
  it must name its current version.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from dlcharts.release.semver import InvalidVersion, Version
from dlcharts.utils.git import Base, changed_files, repo_root, resolve_base, show


@dataclasses.dataclass(frozen=True)
class VersionProblem:
    chart: str  # path relative to the repository root: "charts/pytorch-dist"
    message: str

    def __str__(self) -> str:
        return f"{self.chart}: {self.message}"


@dataclasses.dataclass
class VersionReport:
    base: Base
    compared: str  # "the working tree" or "HEAD"
    changed: dict[str, list[str]]  # chart path -> changed files (relative to the chart), plus dependents
    problems: list[VersionProblem]
    notes: list[str]
    via: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # chart path -> changed file:// deps

    @property
    def ok(self) -> bool:
        return not self.problems

    def render(self) -> str:
        lines = [f"comparing {self.compared} with {self.base.description}"]
        if not self.changed:
            lines.append("no chart changed")
        for chart, files in sorted(self.changed.items()):
            shown = [*files[:6], *([f"... ({len(files)} files)"] if len(files) > 6 else [])]
            shown += [f"vendors {dep}" for dep in self.via.get(chart, [])]
            lines.append(f"changed: {chart} ({', '.join(shown)})")
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"FAIL {p}" for p in self.problems]
        lines.append("version check: " + ("ok" if self.ok else f"{len(self.problems)} problem(s)"))
        return "\n".join(lines)


def _load(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    data = yaml.safe_load(text)
    return data if isinstance(data, dict) else {}


def check_version_bumps(charts_dir: Path, base: str | None = None, committed_only: bool = False) -> VersionReport:
    """Every chart under ``charts_dir`` whose files changed against the base must have a higher version."""
    charts_dir = charts_dir.resolve()
    repo = repo_root(charts_dir)
    rel_root = PurePosixPath(charts_dir.relative_to(repo).as_posix()) if charts_dir != repo else PurePosixPath(".")
    resolved = resolve_base(repo, base)
    compared = "HEAD" if committed_only else "the working tree"
    notes: list[str] = []
    problems: list[VersionProblem] = []

    heads = {d.name: _load((d / "Chart.yaml").read_text()) for d in sorted(charts_dir.iterdir())
             if (d / "Chart.yaml").is_file()}  # fmt: skip
    files = changed_files(repo, resolved, [str(rel_root)], committed_only)
    changed: dict[str, list[str]] = {}
    for path in files:
        parts = PurePosixPath(path).parts[len(rel_root.parts) :]
        if len(parts) < 2:
            continue  # a file directly under charts/, not part of a chart
        changed.setdefault(parts[0], []).append("/".join(parts[1:]))

    # Dependents through file:// are changed too: their packages vendor the dependency.
    dependents = _file_dependents(charts_dir, heads)
    because: dict[str, list[str]] = {}
    queue = list(changed)
    while queue:
        dep = queue.pop()
        for user in dependents.get(dep, []):
            because.setdefault(user, []).append(dep)
            if user not in changed:
                changed[user] = []
                queue.append(user)

    for name, rel_files in sorted(changed.items()):
        chart = str(rel_root / name)
        head_meta = heads.get(name)
        base_meta = _load(show(repo, resolved.commit, f"{chart}/Chart.yaml")) if resolved.commit else None
        if head_meta is None:
            notes.append(f"{chart} was removed (or has no Chart.yaml); nothing to bump")
            continue
        if base_meta is None:
            notes.append(f"{chart} is new since the base; its first version is {head_meta.get('version')}")
            continue
        try:
            new = Version.parse(str(head_meta.get("version")))
        except InvalidVersion as exc:
            problems.append(VersionProblem(chart, f"Chart.yaml version: {exc}"))
            continue
        try:
            old = Version.parse(str(base_meta.get("version")))
        except InvalidVersion:
            notes.append(f"{chart}: the base's version {base_meta.get('version')!r} is not semver; not compared")
            continue
        if new > old:
            continue
        why = []
        if rel_files:
            shown = ", ".join(rel_files[:5]) + (f" and {len(rel_files) - 5} more" if len(rel_files) > 5 else "")
            why.append(f"its files changed since {resolved.description.split(',')[0]} ({shown})")
        for dep in sorted(because.get(name, [])):
            why.append(f"it vendors {dep} (file://), which changed")
        state = f"went down from {old} to {new}" if new < old else f"is still {new}, as at the base"
        hint = old.next_patch() if not old.prerelease else Version(old.major, old.minor, old.patch)
        problems.append(VersionProblem(chart, (
            f"{' and '.join(why)}, but its version {state}. Fix: raise `version` in {chart}/Chart.yaml "
            f"(e.g. {hint} for a fix, {old.next_minor()} for a feature), add a `## [{hint}]` entry to "
            f"{chart}/CHANGELOG.md and update its artifacthub.io/changes annotation"
        )))  # fmt: skip

    problems += _dependency_constraints(charts_dir, rel_root, heads)
    by_path = {str(rel_root / name): files for name, files in changed.items()}
    via = {str(rel_root / name): sorted(deps) for name, deps in because.items()}
    return VersionReport(resolved, compared, by_path, problems, notes, via)


def _file_dependents(charts_dir: Path, heads: dict[str, dict[str, Any] | None]) -> dict[str, list[str]]:
    """chart name (its folder) -> folders of the charts that depend on it through ``file://``."""
    out: dict[str, list[str]] = {}
    for name, meta in heads.items():
        for dep in (meta or {}).get("dependencies") or []:
            repo = str(dep.get("repository") or "")
            if repo.startswith("file://"):
                target = (charts_dir / name / repo[len("file://") :]).resolve()
                if target.parent == charts_dir:
                    out.setdefault(target.name, []).append(name)
    return out


def _dependency_constraints(
    charts_dir: Path, rel_root: PurePosixPath, heads: dict[str, dict[str, Any] | None]
) -> list[VersionProblem]:
    """An exact ``version`` on a ``file://`` dependency must be that chart's current version."""
    problems = []
    for name, meta in sorted(heads.items()):
        for i, dep in enumerate((meta or {}).get("dependencies") or []):
            repo = str(dep.get("repository") or "")
            if not repo.startswith("file://"):
                continue
            target = (charts_dir / name / repo[len("file://") :]).resolve()
            target_meta = heads.get(target.name) if target.parent == charts_dir else None
            if target_meta is None:
                continue
            wanted, actual = str(dep.get("version") or ""), str(target_meta.get("version"))
            try:
                exact = Version.parse(wanted)
            except InvalidVersion:
                continue  # a range (^0.1.0, >=0.1.0 <0.2.0): helm checks it when it builds dependencies
            if exact != Version.parse(actual):
                problems.append(VersionProblem(str(rel_root / name), (
                    f"Chart.yaml dependencies[{i}] ({dep.get('name')}, {repo}) asks for version {wanted}, but "
                    f"{target.name} is {actual}; set it to {actual} (helm dependency build refuses the mismatch)"
                )))  # fmt: skip
    return problems
