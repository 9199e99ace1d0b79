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

One module a check (``lint``: chart-schema and yamllint; ``images``: app-version; ``artifacthub``; ``changelog``),
each adding what it finds to the :class:`~dlcharts.release.metadata.chart.ChartUnderCheck` it is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dlcharts.errors import DLChartsError
from dlcharts.release.metadata.artifacthub import LICENSE, check_artifacthub
from dlcharts.release.metadata.changelog import CHANGE_KINDS, ChangelogEntry, check_changelog, parse_changelog
from dlcharts.release.metadata.chart import ChartUnderCheck, MetadataProblem
from dlcharts.release.metadata.images import MAIN_IMAGE_PATHS, check_app_version, declared_images, rendered_images
from dlcharts.release.metadata.lint import check_schema, check_yamllint, lint_yaml, yaml_files
from dlcharts.render import Renderer

__all__ = [
    "CHANGE_KINDS",
    "LICENSE",
    "MAIN_IMAGE_PATHS",
    "ChangelogEntry",
    "MetadataProblem",
    "check_metadata",
    "declared_images",
    "lint_yaml",
    "parse_changelog",
    "rendered_images",
    "yaml_files",
]


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
        checked = ChartUnderCheck(chart, renderer)
        check_schema(checked, schema)
        check_yamllint(checked, yamllint_config)
        entries = check_changelog(checked)
        check_app_version(checked)
        check_artifacthub(checked, entries)
        problems += checked.problems
    return problems
