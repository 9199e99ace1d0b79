"""Each chart README's parameter table is what the generator makes of values.yaml today (no drift)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support import CHARTS, ROOT

GENERATOR = ROOT / "ci" / "docs" / "node_modules" / ".bin" / "readme-generator"
DOCUMENTED = sorted(p.parent for p in CHARTS.glob("*/values.yaml") if "@param" in p.read_text())


def test_generator_is_installed():
    assert GENERATOR.is_file(), "run `make setup` (npm ci --prefix ci/docs) to install the README generator"


@pytest.mark.parametrize("chart", DOCUMENTED, ids=lambda c: c.name)
def test_parameter_table_matches_values(chart, tmp_path):
    shutil.copy(chart / "values.yaml", tmp_path / "values.yaml")
    shutil.copy(chart / "README.md", tmp_path / "README.md")
    proc = subprocess.run(
        [str(GENERATOR), "--values", str(tmp_path / "values.yaml"), "--readme", str(tmp_path / "README.md")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "README.md").read_text() == (chart / "README.md").read_text(), (
        f"{chart.name}/README.md is out of date with values.yaml: run `make docs` and commit the result"
    )


def test_every_chart_documents_its_values():
    charts = {p.parent for p in CHARTS.glob("*/Chart.yaml")} - {CHARTS / "dl-common"}
    assert charts <= set(DOCUMENTED), f"values.yaml without @param annotations: {sorted(charts - set(DOCUMENTED))}"
