"""`--release` and `--namespace` apply to scenarios too, a scenario file can name its own, and a ci/ YAML file
that is not a scenario is reported instead of skipped without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts.cli import main
from dlcharts.suite import scenarios
from tests.support.pytest_runs import run_pytest_in

# Like NVIDIA's chart: refuses the default namespace. The ConfigMap's unknown field is a finding naming the release.
TEMPLATE = """\
{{- if eq .Release.Namespace "default" }}{{ fail "install into a namespace of its own, not default" }}{{ end }}
apiVersion: v1
kind: ConfigMap
metadata: {name: "{{ .Release.Name }}-cm"}
{{- if .Values.extra }}
extra: field
{{- end }}
"""


@pytest.fixture
def charts(tmp_path: Path) -> Path:
    chart = tmp_path / "charts" / "picky"
    (chart / "templates").mkdir(parents=True)
    (chart / "ci").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: picky\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("extra: false\n")
    (chart / "templates" / "cm.yaml").write_text(TEMPLATE)
    (chart / "ci" / "01-plain-values.yaml").write_text("extra: false\n")
    (chart / "ci" / "02-extra-values.yaml").write_text("extra: true\n")
    return tmp_path / "charts"


@pytest.mark.parametrize("target", ["folder", "chart"])
def test_namespace_and_release_apply_to_every_scenario(charts, capsys, target):
    path = charts if target == "folder" else charts / "picky"
    assert main(["validate", str(path), "--namespace", "gpu", "--release", "nine", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "PASS picky/01-plain\n" in out and "FAIL picky/02-extra\n" in out, out
    assert "ConfigMap/nine-cm @ extra: unknown field 'extra'" in out, out
    assert main(["validate", str(path), "--no-cache"]) == 1
    assert "install into a namespace of its own, not default" in capsys.readouterr().out


def test_a_scenario_file_names_its_namespace_and_release(charts, capsys):
    for f in (charts / "picky" / "ci").glob("*.yaml"):
        f.write_text("# @dlcharts namespace: gpu\n# @dlcharts release: own\n" + f.read_text())
    found = scenarios(charts / "picky")
    assert [(s.release, s.namespace) for s in found] == [("own", "gpu"), ("own", "gpu")]
    assert found[0].request().namespace == "gpu" and found[0].request(namespace="other").namespace == "other"
    assert main(["validate", str(charts), "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "PASS picky/01-plain\n" in out and "ConfigMap/own-cm @ extra" in out, out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("# @dlcharts namepsace: gpu", "01-plain-values.yaml:1: unknown directive `@dlcharts namepsace`; known:"),
        ("# @dlcharts namespace: a, b", "01-plain-values.yaml:1: `@dlcharts namespace:` takes one name, got 2"),
    ],
)
def test_a_wrong_directive_is_a_usage_error(charts, capsys, line, message):
    plain = charts / "picky" / "ci" / "01-plain-values.yaml"
    plain.write_text(line + "\n" + plain.read_text())
    assert main(["validate", str(charts), "--no-cache"]) == 2
    assert message in capsys.readouterr().err


def test_a_ci_file_that_is_not_a_scenario_is_reported(charts, capsys):
    (charts / "picky" / "ci" / "03-extra.yaml").write_text("extra: true\n")
    assert main(["validate", str(charts), "--namespace", "gpu", "--no-cache"]) == 1
    captured = capsys.readouterr()
    ci = charts / "picky" / "ci"
    assert (
        f"warning: {ci / '03-extra.yaml'} is not a scenario, so it is not checked: only ci/*-values.yaml are "
        "(ct's convention); rename it to 03-extra-values.yaml to check it"
    ) in captured.err
    assert "picky/03-extra" not in captured.out


def test_the_plugin_renders_a_scenario_in_its_namespace_and_warns_about_other_ci_files(charts, tmp_path):
    plain = charts / "picky" / "ci" / "01-plain-values.yaml"
    plain.write_text("# @dlcharts namespace: gpu\n" + plain.read_text())
    (charts / "picky" / "ci" / "02-extra-values.yaml").unlink()
    (charts / "picky" / "ci" / "03-extra.yaml").write_text("extra: true\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ndlcharts_charts = charts\n")
    (tmp_path / "test_picky.py").write_text(
        "def test_scenario(dlcharts_scenario, render, assert_valid):\n"
        "    rendered = render(dlcharts_scenario)\n"
        "    assert rendered.request.namespace == 'gpu'\n"
        "    assert_valid(rendered)\n"
    )
    proc = run_pytest_in(tmp_path, "--dlcharts-no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout and "03-extra.yaml is not a scenario, so it is not checked" in proc.stdout
