"""Release metadata of every chart (Chart.yaml schema, yamllint, appVersion, artifacthub annotations,
CHANGELOG), and that each check catches what it is for, on broken copies of a real chart."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from dlcharts.release.cli import CONFIG_YAML
from dlcharts.release.metadata import (
    check_metadata,
    declared_images,
    lint_yaml,
    parse_changelog,
    rendered_images,
)
from dlcharts.render import Renderer, RenderRequest
from tests.support import CHARTS, ROOT

SCHEMA = ROOT / "ci" / "chart_schema.yaml"
YAMLLINT = ROOT / ".yamllint"
ALL_CHARTS = sorted(p.parent for p in CHARTS.glob("*/Chart.yaml"))


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    return Renderer()


@pytest.mark.parametrize("chart", ALL_CHARTS, ids=lambda c: c.name)
def test_chart_metadata_is_release_ready(chart, renderer):
    problems = check_metadata([chart], SCHEMA, YAMLLINT, renderer)
    assert not problems, "\n".join(map(str, problems))


def test_the_repository_yaml_config_is_lint_clean():
    found = lint_yaml([ROOT / f for f in CONFIG_YAML], YAMLLINT, ROOT)
    assert not found, "\n".join(m for _, m in found)


@pytest.mark.parametrize("chart", [c for c in ALL_CHARTS if c.name != "dl-common"], ids=lambda c: c.name)
def test_artifacthub_images_are_what_the_chart_runs(chart, renderer):
    """The annotation lists each image values.yaml declares; together they cover the default render."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    listed = {i["image"] for i in yaml.safe_load(meta["annotations"]["artifacthub.io/images"])}
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert listed == {image for _, image in declared_images(values, meta["appVersion"])}
    assert rendered_images(renderer.render(RenderRequest(chart))) <= listed


def test_app_version_is_the_main_image_tag():
    tags = {}
    for chart in ALL_CHARTS:
        meta = yaml.safe_load((chart / "Chart.yaml").read_text())
        if meta.get("type") != "library":
            tags[chart.name] = meta["appVersion"]
    assert tags["gpu-device-plugin"] == "v0.20.0"
    assert tags["tensorflow-dist"] == "2.21.0-gpu"


def test_parse_changelog_reads_keep_a_changelog():
    text = (
        "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- not yet\n\n## [0.2.0] - 2026-12-01\n\n### Fixed\n\n"
        "- a long fix that\n  wraps onto two lines\n\n### Security\n\n- pinned busybox\n\n"
        "## [0.1.0] - 2026-11-21\n\n### Added\n\n- Initial release\n\n[0.2.0]: https://example.invalid/0.2.0\n"
    )
    entries = parse_changelog(text)
    assert [(e.version, e.date) for e in entries] == [("Unreleased", None), ("0.2.0", "2026-12-01"),
                                                      ("0.1.0", "2026-11-21")]  # fmt: skip
    assert entries[1].changes == (("fixed", "a long fix that wraps onto two lines"), ("security", "pinned busybox"))


# -- each check catches what it is for ---------------------------------------------------------------------


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A copy of pytorch-dist (with dl-common beside it) to break one thing at a time."""
    for name in ("pytorch-dist", "dl-common"):
        shutil.copytree(CHARTS / name, tmp_path / name, ignore=shutil.ignore_patterns("charts", "Chart.lock"))
    return tmp_path / "pytorch-dist"


def edit_meta(chart: Path, **changes: object) -> None:
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    for key, value in changes.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    (chart / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))


def problems_of(chart: Path, renderer: Renderer | None = None) -> list[str]:
    return [str(p) for p in check_metadata([chart], SCHEMA, YAMLLINT, renderer)]


def test_the_copy_is_clean(broken):
    assert problems_of(broken) == []


def test_schema_refuses_unknown_keys_and_bad_versions(broken):
    edit_meta(broken, maintainer="someone", version="v0.1.0")
    problems = "\n".join(problems_of(broken))
    assert "[chart-schema] pytorch-dist: Chart.yaml: maintainer: Unexpected element" in problems
    assert "[chart-schema] pytorch-dist: Chart.yaml: version: 'v0.1.0' is not a semver" in problems


def test_yamllint_reports_file_line_and_rule(broken):
    values = broken / "values.yaml"
    values.write_text(values.read_text() + "extra: value   \n")
    (problem,) = problems_of(broken)
    assert problem.startswith("[yamllint] pytorch-dist: pytorch-dist/values.yaml:")
    assert "trailing spaces (trailing-spaces)" in problem


def test_app_version_must_be_the_image_tag(broken, renderer):
    edit_meta(broken, appVersion="2.9.0")
    problems = "\n".join(problems_of(broken, renderer))
    assert "appVersion '2.9.0' differs from defaults.image.tag '2.9.1-cuda12.8-cudnn9-runtime'" in problems
    assert "runs pytorch/pytorch with tag(s) 2.9.1-cuda12.8-cudnn9-runtime, not appVersion '2.9.0'" in problems


def test_artifacthub_images_must_match_values(broken, renderer):
    meta = yaml.safe_load((broken / "Chart.yaml").read_text())
    annotations = dict(meta["annotations"])
    annotations["artifacthub.io/images"] = "- name: pytorch\n  image: pytorch/pytorch:2.9.1-cuda12.8-cudnn9-runtime\n"
    annotations["artifacthub.io/license"] = "MIT"
    edit_meta(broken, annotations=annotations)
    problems = "\n".join(problems_of(broken, renderer))
    assert "artifacthub.io/images misses busybox:1.37.0 (values.yaml peerWait.image); add it" in problems
    assert "the default render runs busybox:1.37.0, which annotations.artifacthub.io/images does not list" in problems
    assert "artifacthub.io/license is 'MIT'; set it to 'Apache-2.0'" in problems


def chart_version(chart: Path) -> str:
    return str(yaml.safe_load((chart / "Chart.yaml").read_text())["version"])


def test_changelog_must_lead_with_the_chart_version(broken):
    major, minor, _ = chart_version(broken).split(".")
    new = f"{major}.{int(minor) + 1}.0"  # a version the copy's CHANGELOG has no entry for yet
    edit_meta(broken, version=new)
    problems = "\n".join(problems_of(broken))
    assert f"[changelog] pytorch-dist: CHANGELOG.md has no `## [{new}] - YYYY-MM-DD` entry" in problems
    changelog = broken / "CHANGELOG.md"
    changelog.write_text(changelog.read_text().replace("## [Unreleased]\n", f"## [Unreleased]\n\n## [{new}]\n"))
    problems = "\n".join(problems_of(broken))
    assert f"entry for {new} has no release date" in problems and f"entry for {new} lists no change" in problems
    assert "artifacthub.io/changes" in problems  # the annotation still describes the previous version


def test_missing_changelog_names_the_fix(broken):
    (broken / "CHANGELOG.md").unlink()
    version = chart_version(broken)
    expected = f"[changelog] pytorch-dist: pytorch-dist/CHANGELOG.md is missing; start it with a `## [{version}]"
    assert expected in "\n".join(problems_of(broken))
