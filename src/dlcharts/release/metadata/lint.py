"""``chart-schema``: Chart.yaml against the committed yamale schema (``ci/chart_schema.yaml``, the fields
chart-testing's chart schema documents, stricter where we have a rule). ``yamllint``: Chart.yaml, values.yaml and
ci/*.yaml with the committed ``.yamllint`` (never templates)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import DLChartsError
from dlcharts.release.metadata.chart import ChartUnderCheck


def optional_module(module: str) -> Any:
    """yamale and yamllint are test dependencies: imported only when a check needs them."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise DLChartsError(f"the release check needs {module}: pip install 'dlcharts[test]'") from None


def check_schema(chart: ChartUnderCheck, schema_path: Path) -> None:
    yamale = optional_module("yamale")

    schema = yamale.make_schema(str(schema_path))
    data = yamale.make_data(str(chart.chart / "Chart.yaml"))
    try:
        yamale.validate(schema, data, strict=True)
    except yamale.YamaleError as exc:
        for result in exc.results:
            for error in result.errors:
                chart.fail("chart-schema", f"Chart.yaml: {error} (schema: {schema_path.name})")


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
        optional_module("yamllint")
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


def check_yamllint(chart: ChartUnderCheck, config: Path) -> None:
    for _, message in lint_yaml(yaml_files(chart.chart), config, chart.chart.parent):
        chart.fail("yamllint", message)
