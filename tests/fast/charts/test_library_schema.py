"""The shared value definitions of dl-common (charts/dl-common/schema/role.schema.json) are copied into each
chart's values.schema.json by charts/dl-common/schema/build.py: the copies must not drift, and a chart
carries only the shared definitions it refers to."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.support import CHARTS

BUILD = CHARTS / "dl-common" / "schema" / "build.py"


def charts_with_schemas() -> list[str]:
    return sorted(str(p.parent) for p in CHARTS.glob("*/values.schema.json") if p.parent.name != "dl-common")


def test_no_chart_drifted_from_the_shared_definitions():
    proc = subprocess.run([sys.executable, str(BUILD), "--check", *charts_with_schemas()], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\nFix: python charts/dl-common/schema/build.py charts/*"


def test_sync_adds_what_a_chart_refers_to_and_drops_what_it_does_not(tmp_path):
    chart = tmp_path / "tensorflow-dist"
    shutil.copytree(CHARTS / "tensorflow-dist", chart, ignore=shutil.ignore_patterns("charts"))
    path = chart / "values.schema.json"
    schema = json.loads(path.read_text())
    assert "mpi" not in schema["$defs"]
    schema["properties"]["mpi"] = {"$ref": "#/$defs/mpi"}
    schema["$defs"]["stale"] = {"type": "string"}  # chart-local: kept
    path.write_text(json.dumps(schema, indent=2) + "\n")
    assert subprocess.run([sys.executable, str(BUILD), "--check", str(chart)], capture_output=True).returncode == 1
    subprocess.run([sys.executable, str(BUILD), str(chart)], check=True, capture_output=True)
    synced = json.loads(path.read_text())["$defs"]
    assert synced["mpi"]["properties"]["implementation"]["enum"] == ["openmpi", "intel", "mpich"]
    assert "stale" in synced
    schema = json.loads(path.read_text())
    del schema["properties"]["mpi"]
    path.write_text(json.dumps(schema, indent=2) + "\n")
    subprocess.run([sys.executable, str(BUILD), str(chart)], check=True, capture_output=True)
    assert "mpi" not in json.loads(path.read_text())["$defs"]
