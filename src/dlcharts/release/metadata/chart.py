"""A chart as the metadata checks read it (Chart.yaml, values.yaml, its default render), and the problems they
find in it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from dlcharts.render import Rendered, Renderer, RenderRequest


@dataclasses.dataclass(frozen=True, order=True)
class MetadataProblem:
    chart: str  # the chart's folder name
    check: str  # chart-schema, yamllint, app-version, artifacthub, changelog
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.chart}: {self.message}"


class ChartUnderCheck:
    """One chart's metadata; the checks add what is wrong to ``problems`` (in the order they find it)."""

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
