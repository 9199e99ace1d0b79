"""Release metadata of each chart, checked the way a chart repository's users rely on it.

- ``chart-schema``: Chart.yaml against the committed yamale schema (``ci/chart_schema.yaml``, the fields
  chart-testing's chart schema documents, stricter where we have a rule).
- ``yamllint``: Chart.yaml, values.yaml and ci/*.yaml with the committed ``.yamllint`` (never templates).
- ``app-version``: an application chart's ``appVersion`` is the tag of its main image (``image`` or
  ``defaults.image`` in values.yaml; an empty tag means appVersion), as declared and as rendered by default.
- ``artifacthub``: ``artifacthub.io/license``; ``artifacthub.io/images`` lists exactly the images values.yaml
  declares, with their pinned tags, and covers every image the default render runs;
  ``artifacthub.io/changes`` is this version's CHANGELOG entry.
- ``changelog``: CHANGELOG.md (Keep a Changelog) whose newest released entry is the chart's version, dated,
  with at least one change.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import DLChartsError
from dlcharts.release.semver import InvalidVersion, Version
from dlcharts.render import Rendered, Renderer, RenderRequest

LICENSE = "Apache-2.0"
# Where a chart's main image lives in values.yaml, first match wins.
MAIN_IMAGE_PATHS = ("image", "defaults.image")
CHANGE_KINDS = ("added", "changed", "deprecated", "removed", "fixed", "security")
_VERSION_HEADING = re.compile(r"^##\s+\[(?P<version>[^\]]+)\](?:\s+-\s+(?P<date>\S+))?\s*$")
_KIND_HEADING = re.compile(r"^###\s+(?P<kind>\w+)\s*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclasses.dataclass(frozen=True, order=True)
class MetadataProblem:
    chart: str  # the chart's folder name
    check: str  # chart-schema, yamllint, app-version, artifacthub, changelog
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.chart}: {self.message}"


@dataclasses.dataclass(frozen=True)
class ChangelogEntry:
    version: str
    date: str | None
    changes: tuple[tuple[str, str], ...]  # (kind, description), kinds lower-case as artifacthub spells them


def parse_changelog(text: str) -> list[ChangelogEntry]:
    """``## [x.y.z] - date`` sections with ``### Added``-style groups of ``- item`` lines, newest first."""
    entries: list[ChangelogEntry] = []
    version: str | None = None
    date: str | None = None
    kind: str | None = None
    changes: list[tuple[str, str]] = []

    def close() -> None:
        if version is not None:
            entries.append(ChangelogEntry(version, date, tuple(changes)))

    for raw in text.splitlines():
        line = raw.rstrip()
        heading = _VERSION_HEADING.match(line)
        if heading:
            close()
            version, date, kind, changes = heading.group("version"), heading.group("date"), None, []
            continue
        sub = _KIND_HEADING.match(line)
        if sub and version is not None:
            kind = sub.group("kind").lower()
            continue
        if line.startswith("## ") or line.startswith("# "):
            close()
            version, kind = None, None
            continue
        if version is None or kind is None:
            continue
        if line.startswith("- ") or line.startswith("* "):
            changes.append((kind, line[2:].strip()))
        elif line.startswith("  ") and line.strip() and changes:  # a wrapped item
            last_kind, last = changes[-1]
            changes[-1] = (last_kind, f"{last} {line.strip()}")
    close()
    return entries


def _lookup(values: dict[str, Any], dotted: str) -> Any:
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def declared_images(values: Any, app_version: str | None, path: str = "") -> Iterator[tuple[str, str]]:
    """``(values path, "repository:tag")`` for every ``{repository, tag}`` block in values.yaml."""
    if isinstance(values, dict):
        repo, tag = values.get("repository"), values.get("tag")
        if isinstance(repo, str) and isinstance(tag, str | int | float):
            registry = values.get("registry")
            full = f"{registry}/{repo}" if isinstance(registry, str) and registry else repo
            yield path, f"{full}:{tag or app_version}"
            return
        for key, value in values.items():
            yield from declared_images(value, app_version, f"{path}.{key}" if path else str(key))
    elif isinstance(values, list):
        for i, value in enumerate(values):
            yield from declared_images(value, app_version, f"{path}[{i}]")


def rendered_images(rendered: Rendered) -> set[str]:
    """Every container, init container and ephemeral container image of a render (hooks included)."""
    found: set[str] = set()
    stack: list[Any] = [obj.body for obj in rendered]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for field in ("containers", "initContainers", "ephemeralContainers"):
                for container in node.get(field) or []:
                    if isinstance(container, dict) and isinstance(container.get("image"), str):
                        found.add(container["image"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _split_image(image: str) -> tuple[str, str]:
    """``"nvcr.io/nvidia/x:v1"`` -> (``"nvcr.io/nvidia/x"``, ``"v1"``); a port in the registry is not a tag."""
    name, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return image, ""
    return name, tag


class _Checker:
    def __init__(self, chart: Path, renderer: Renderer | None) -> None:
        self.chart = chart
        self.name = chart.name
        self.renderer = renderer
        self.problems: list[MetadataProblem] = []
        self.meta: dict[str, Any] = yaml.safe_load((chart / "Chart.yaml").read_text()) or {}
        values_path = chart / "values.yaml"
        self.values: dict[str, Any] = (yaml.safe_load(values_path.read_text()) or {}) if values_path.is_file() else {}
        self.annotations: dict[str, Any] = self.meta.get("annotations") or {}
        self.is_library = self.meta.get("type") == "library"
        self._render: Rendered | None = None

    def fail(self, check: str, message: str) -> None:
        self.problems.append(MetadataProblem(self.name, check, message))

    def default_render(self) -> Rendered | None:
        if self._render is None and self.renderer is not None and not self.is_library:
            self._render = self.renderer.render(RenderRequest(self.chart))
        return self._render

    # -- checks ------------------------------------------------------------------------------------------
    def schema(self, schema_path: Path) -> None:
        yamale = _optional("yamale")

        schema = yamale.make_schema(str(schema_path))
        data = yamale.make_data(str(self.chart / "Chart.yaml"))
        try:
            yamale.validate(schema, data, strict=True)
        except yamale.YamaleError as exc:
            for result in exc.results:
                for error in result.errors:
                    self.fail("chart-schema", f"Chart.yaml: {error} (schema: {schema_path.name})")

    def app_version(self) -> None:
        if self.is_library:
            return
        app_version = self.meta.get("appVersion")
        if not isinstance(app_version, str) or not app_version:
            self.fail("app-version", "Chart.yaml has no appVersion; set it to the main image's default tag")
            return
        for path in MAIN_IMAGE_PATHS:
            image = _lookup(self.values, path)
            if isinstance(image, dict) and "repository" in image:
                break
        else:
            self.fail("app-version", f"values.yaml has no main image at {' or '.join(MAIN_IMAGE_PATHS)}")
            return
        tag = str(image.get("tag") or "")
        if tag and tag != app_version:
            self.fail("app-version", (
                f"appVersion {app_version!r} differs from {path}.tag {tag!r} in values.yaml; set appVersion in "
                f"Chart.yaml to {tag!r} (or the tag to {app_version!r}) so they name the same release"
            ))  # fmt: skip
        rendered = self.default_render()
        if rendered is None:
            return
        repo = str(image["repository"])
        tags = sorted({_split_image(i)[1] for i in rendered_images(rendered) if _split_image(i)[0] == repo})
        if not tags:
            self.fail("app-version", f"the default render runs no container of the main image {repo} ({path})")
        elif tags != [app_version]:
            self.fail("app-version", (
                f"the default render runs {repo} with tag(s) {', '.join(tags)}, not appVersion {app_version!r}"
            ))  # fmt: skip

    def artifacthub(self, changelog: list[ChangelogEntry] | None) -> None:
        license_ = self.annotations.get("artifacthub.io/license")
        if license_ != LICENSE:
            self.fail("artifacthub", f"annotations.artifacthub.io/license is {license_!r}; set it to {LICENSE!r}")
        self._changes(changelog)
        self._images()

    def _parse_annotation(self, key: str) -> Any:
        text = self.annotations.get(key)
        if text is None:
            return None
        try:
            return yaml.safe_load(str(text))
        except yaml.YAMLError as exc:
            self.fail("artifacthub", f"annotations.{key} is not YAML: {exc}")
            return None

    def _changes(self, changelog: list[ChangelogEntry] | None) -> None:
        key = "artifacthub.io/changes"
        changes = self._parse_annotation(key)
        if changes is None:
            self.fail("artifacthub", f"annotations.{key} is missing; list this version's CHANGELOG entries "
                      "as `- kind: added` / `description: ...` items")  # fmt: skip
            return
        if not isinstance(changes, list) or not changes:
            self.fail("artifacthub", f"annotations.{key} must be a non-empty YAML list")
            return
        have = []
        for i, item in enumerate(changes):
            if (
                not isinstance(item, dict)
                or set(item) - {"kind", "description", "links"}
                or item.get("kind") not in CHANGE_KINDS
                or not isinstance(item.get("description"), str)
            ):
                self.fail("artifacthub", f"annotations.{key}[{i}] must be {{kind: one of {', '.join(CHANGE_KINDS)}, "
                          f"description: text}}, got {item!r}")  # fmt: skip
                continue
            have.append((item["kind"], " ".join(item["description"].split())))
        entry = _entry_for(changelog, str(self.meta.get("version")))
        if entry is not None:
            want = [(k, " ".join(d.split())) for k, d in entry.changes]
            if sorted(have) != sorted(want):
                self.fail("artifacthub", (
                    f"annotations.{key} {have} differs from CHANGELOG.md's entry for {entry.version} {want}; "
                    "make the annotation list exactly that entry's changes"
                ))  # fmt: skip

    def _images(self) -> None:
        key = "artifacthub.io/images"
        listed = self._parse_annotation(key)
        if self.is_library:
            if listed:
                self.fail("artifacthub", f"annotations.{key}: a library chart runs no image; remove it")
            return
        if not isinstance(listed, list) or not listed:
            self.fail("artifacthub", f"annotations.{key} is missing; list every image as `- name: ...` / "
                      "`image: repository:tag`")  # fmt: skip
            return
        images: set[str] = set()
        for i, item in enumerate(listed):
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("name"), str)
                or not isinstance(item.get("image"), str)
            ):
                self.fail("artifacthub", f"annotations.{key}[{i}] must be {{name: ..., image: repository:tag}}")
                continue
            images.add(item["image"])
        declared = dict((image, path) for path, image in declared_images(self.values, self.meta.get("appVersion")))
        for image in sorted(images - set(declared)):
            self.fail("artifacthub", (
                f"annotations.{key} lists {image}, which values.yaml does not declare; remove it or fix its tag"
            ))  # fmt: skip
        for image in sorted(set(declared) - images):
            self.fail("artifacthub", f"annotations.{key} misses {image} (values.yaml {declared[image]}); add it")
        for image in sorted(images):
            if not _split_image(image)[1] or _split_image(image)[1] == "latest":
                self.fail("artifacthub", f"annotations.{key} image {image} has no pinned tag")
        rendered = self.default_render()
        if rendered is not None:
            for image in sorted(rendered_images(rendered) - images):
                self.fail("artifacthub", f"the default render runs {image}, which annotations.{key} does not list")

    def changelog(self) -> list[ChangelogEntry] | None:
        path = self.chart / "CHANGELOG.md"
        if not path.is_file():
            version = self.meta.get("version")
            self.fail("changelog", f"{self.name}/CHANGELOG.md is missing; start it with a `## [{version}] - YYYY-MM-DD`"
                      " entry (Keep a Changelog)")  # fmt: skip
            return None
        entries = parse_changelog(path.read_text())
        version = str(self.meta.get("version"))
        released = [e for e in entries if e.version.lower() != "unreleased"]
        entry = _entry_for(entries, version)
        if entry is None:
            self.fail("changelog", f"CHANGELOG.md has no `## [{version}] - YYYY-MM-DD` entry for the chart's version")
            return entries
        if released and released[0] is not entry:
            self.fail("changelog", f"CHANGELOG.md's newest entry is {released[0].version}, not the chart's {version}; "
                      "newest first")  # fmt: skip
        if not entry.date or not _DATE.match(entry.date):
            self.fail("changelog", f"CHANGELOG.md's entry for {version} has no release date (`- YYYY-MM-DD`)")
        if not entry.changes:
            self.fail("changelog", f"CHANGELOG.md's entry for {version} lists no change under an `### Added`-style "
                      "heading")  # fmt: skip
        for kind, _ in entry.changes:
            if kind not in CHANGE_KINDS:
                self.fail("changelog", f"CHANGELOG.md heading `### {kind.title()}` is not one of Keep a Changelog's "
                          f"{', '.join(k.title() for k in CHANGE_KINDS)}")  # fmt: skip
        seen: list[Version] = []
        for e in released:
            try:
                seen.append(Version.parse(e.version))
            except InvalidVersion as exc:
                self.fail("changelog", f"CHANGELOG.md heading [{e.version}]: {exc}")
        if seen != sorted(seen, reverse=True):
            self.fail("changelog", "CHANGELOG.md entries must go newest first")
        return entries


def _optional(module: str) -> Any:
    """yamale and yamllint are test dependencies: imported only when a check needs them."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise DLChartsError(f"the release check needs {module}: pip install 'dlcharts[test]'") from None


def _entry_for(entries: list[ChangelogEntry] | None, version: str) -> ChangelogEntry | None:
    for entry in entries or []:
        if entry.version == version:
            return entry
    return None


def yaml_files(chart: Path) -> list[Path]:
    """The chart's files that are YAML (not templates): Chart.yaml, values.yaml, ci/*.yaml."""
    files = [chart / "Chart.yaml", chart / "values.yaml"]
    files += sorted((chart / "ci").glob("*.yaml")) + sorted((chart / "ci").glob("*.yml"))
    return [f for f in files if f.is_file()]


def _yamllint() -> tuple[Any, Any]:
    """yamllint's ``linter`` and ``YamlLintConfig``. Importing yamllint adds a YAML 1.2 integer pattern to PyYAML's
    shared Resolver (its quoted-strings rule), after which every loader in the process reads ``0o17`` as 15: the
    harness would then read renders differently after a release check than before it. The table is put back."""
    resolver = yaml.resolver.Resolver
    saved = {first: list(entries) for first, entries in resolver.yaml_implicit_resolvers.items()}
    try:
        _optional("yamllint")
        from yamllint import linter
        from yamllint.config import YamlLintConfig
    finally:
        resolver.yaml_implicit_resolvers = saved
    return linter, YamlLintConfig


def lint_yaml(files: Iterable[Path], config: Path, relative_to: Path | None = None) -> list[tuple[Path, str]]:
    """yamllint problems (warnings and errors alike) as ``(file, "line:col message (rule)")``."""
    linter, YamlLintConfig = _yamllint()  # noqa: N806 - the class, by its own name

    conf = YamlLintConfig(file=str(config))
    found = []
    for path in files:
        shown = path.relative_to(relative_to) if relative_to else path
        for problem in linter.run(path.read_text(), conf, str(shown)):
            found.append((path, f"{shown}:{problem.line}:{problem.column} {problem.desc} ({problem.rule})"))
    return found


def check_metadata(
    charts: Iterable[Path],
    schema: Path,
    yamllint_config: Path,
    renderer: Renderer | None = None,
) -> list[MetadataProblem]:
    """Every metadata problem of every chart. Without a ``renderer`` the checks against the default render
    are skipped (the rest needs no helm)."""
    problems: list[MetadataProblem] = []
    for chart in charts:
        if not (chart / "Chart.yaml").is_file():
            raise DLChartsError(f"{chart} has no Chart.yaml")
        checker = _Checker(chart, renderer)
        checker.schema(schema)
        for _, message in lint_yaml(yaml_files(chart), yamllint_config, chart.parent):
            checker.fail("yamllint", message)
        entries = checker.changelog()
        checker.app_version()
        checker.artifacthub(entries)
        problems += checker.problems
    return problems
