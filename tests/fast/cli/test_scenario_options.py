"""`--release` and `--namespace` apply to scenarios too, a scenario file can name its own, and a ci/ YAML file
that is not a scenario is reported instead of skipped without a word. Whatever the release, names are also checked
with a 40-character one, and a scenario, `-f` and `--set` values and the plugin's helpers give the same verdict."""

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


def _chart(folder: Path, name: str, template: str, values: str, scenarios: dict[str, str]) -> Path:
    """``<folder>/charts/<name>``: one template, its values and ``ci/<scenario>-values.yaml`` files."""
    chart = folder / "charts" / name
    (chart / "templates").mkdir(parents=True)
    (chart / "ci").mkdir()
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(values)
    (chart / "templates" / "objects.yaml").write_text(template)
    for scenario, text in scenarios.items():
        (chart / "ci" / f"{scenario}-values.yaml").write_text(text)
    return chart


@pytest.fixture
def charts(tmp_path: Path) -> Path:
    return _chart(
        tmp_path, "picky", TEMPLATE, "extra: false\n", {"01-plain": "extra: false\n", "02-extra": "extra: true\n"}
    ).parent


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


# 36 characters after the release: 43 with "release", 76 with a 40-character release (a Service takes 63)
LONG_NAME_SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: "{{ .Release.Name }}-metrics-endpoint-for-the-dashboards"}
spec:
  clusterIP: None
  selector: {app.kubernetes.io/name: long}
  ports: [{name: http, port: {{ .Values.port }}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: "{{ .Release.Name }}-job"}
spec:
  template:
    metadata: {labels: {app.kubernetes.io/name: long}}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: "busybox:1.37.0", command: ["true"]}]
"""
LONG_NAME_FINDING = (
    "Service/a-forty-character-release-name-for-tests-metrics-endpoint-for-the-dashboards @ metadata.name: Service "
    "name 'a-forty-character-release-name-for-tests-metrics-endpoint-for-the-dashboards' must be a DNS-1035 label"
)


@pytest.fixture
def long_name_chart(tmp_path: Path) -> Path:
    (tmp_path / "port.yaml").write_text("port: 8080\n")
    return _chart(tmp_path, "long", LONG_NAME_SERVICE, "port: 80\n", {"01-port": "port: 8080\n"})


@pytest.mark.parametrize(
    "values", [[], ["-f", "port.yaml"], ["--set", "port=8080"]], ids=["scenario", "values-file", "set"]
)
def test_a_name_too_long_with_a_long_release_fails_whichever_way_the_values_come(
    long_name_chart, values, capsys, monkeypatch
):
    monkeypatch.chdir(long_name_chart.parents[1])
    assert main(["validate", "charts/long", *values, "--errors-only", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert LONG_NAME_FINDING in out and "(release a-forty-character-release-name-for-tests) [dns-names]" in out, out
    assert "0 passed, 1 failed" in out, out
    assert main(["validate", "charts/long", *values, "--errors-only", "--release", "r" * 40, "--no-cache"]) == 1
    out = capsys.readouterr().out  # with any release the render uses; once, as the render's own release breaks it too
    assert f"Service/{'r' * 40}-metrics-endpoint-for-the-dashboards @ metadata.name: Service name" in out, out
    assert "a-forty-character-release-name-for-tests" not in out and "0 passed, 1 failed" in out, out


def test_a_chart_that_refuses_a_long_release_fails_with_a_hint(long_name_chart, capsys, monkeypatch):
    service = long_name_chart / "templates" / "objects.yaml"
    service.write_text(
        '{{ if gt (len .Release.Name) 20 }}{{ fail "at most 20 characters" }}{{ end }}\n' + LONG_NAME_SERVICE
    )
    monkeypatch.chdir(long_name_chart.parents[1])
    assert main(["validate", "charts/long", "--set", "port=8080", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "(release=a-forty-character-release-name-for-tests namespace=default" in out, out
    assert "at most 20 characters" in out and "hint: names are also checked on a render with the release name" in out


def test_the_plugin_fails_a_name_too_long_with_a_long_release_as_the_cli_does(long_name_chart):
    (long_name_chart.parents[1] / "test_long.py").write_text(
        "import pytest\n"
        "from dlcharts import scenarios_in\n\n"
        "@pytest.mark.parametrize('how', [{'values': {'port': 8080}}, {'values_files': ['port.yaml']},\n"
        "                                 {'set': ['port=8080']}], ids=['values', 'values-file', 'set'])\n"
        "def test_values(render, assert_valid, how):\n"
        "    assert_valid(render('charts/long', **how))\n\n"
        "@pytest.mark.parametrize('scenario', scenarios_in('charts'), ids=str)\n"
        "def test_scenario(render, assert_valid, scenario):\n"
        "    assert_valid(render(scenario))\n\n"
        "def test_find_problems(render, find_problems):\n"
        "    found = find_problems(render('charts/long', set=['port=8080']))\n"
        "    errors = [(f.check, f.object) for f in found if f.is_error]\n"
        f"    assert errors == [('dns-names', {LONG_NAME_FINDING.split(' @ ')[0]!r})], errors\n"
    )
    proc = run_pytest_in(long_name_chart.parents[1], "--dlcharts-no-cache", "-W", "ignore::pytest.PytestWarning")
    out = proc.stdout
    assert "4 failed, 1 passed" in out, out + proc.stderr
    for test in ("test_values[values]", "test_values[values-file]", "test_values[set]", "test_scenario[long/01-port]"):
        failure = out.split(f"_ {test} _", 1)[1].split("\n_", 1)[0]
        assert LONG_NAME_FINDING in failure, failure
        assert "(release a-forty-character-release-name-for-tests) [dns-names]" in failure, failure
