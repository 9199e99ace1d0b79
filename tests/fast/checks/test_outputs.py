"""`dlcharts validate --format json|sarif --output FILE`: a documented JSON structure and SARIF 2.1.0 as kube-linter
writes it (one run, a rule per check id, results at the chart's template files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlcharts.cli import main

TEMPLATES = {
    "cm.yaml": 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "{{ .Release.Name }}-cm"}\nextra: field\n',
    "pod.yaml": 'apiVersion: v1\nkind: Pod\nmetadata: {name: "{{ .Release.Name }}-pod"}\n'
    "spec:\n  containers: [{name: main, image: busybox}]\n",
}


@pytest.fixture
def charts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    chart = tmp_path / "charts" / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    for name, text in TEMPLATES.items():
        (chart / "templates" / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "charts"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["validate", *argv, "--no-cache", "--allow-missing-checks"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_report(charts, capsys, tmp_path):
    code, out, _ = run(capsys, str(charts), "--all-versions", "--format", "json", "--output", str(tmp_path / "r.json"))
    assert code == 1 and "FAIL app/default" in out  # the progress stays on stdout when the report goes to a file
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["version"] == 1 and data["config"] is None and len(data["kube_versions"]) == 7
    assert data["summary"] == {"passed": 0, "failed": 1, "warnings": 3, "exit_code": 1}
    (scenario,) = data["scenarios"]
    assert scenario["name"] == "app/default" and scenario["status"] == "failed" and scenario["problem"] is None
    schema = next(f for f in scenario["findings"] if f["check"] == "schema")
    assert schema == {
        "kind": "error", "level": "error", "check": "schema", "object": "ConfigMap/release-cm", "path": "extra",
        "message": "unknown field 'extra'", "source": "app/templates/cm.yaml", "kube_versions": data["kube_versions"],
    }  # fmt: skip
    policy = next(f for f in scenario["findings"] if f["check"] == "image-tag")
    assert (policy["kind"], policy["level"], policy["kube_versions"]) == ("policy", "warning", [])  # newest only


def test_sarif_report(charts, capsys):
    code, out, err = run(capsys, str(charts), "--format", "sarif")
    assert code == 1 and "FAIL app/default" in err
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    (run_,) = sarif["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "dlcharts"
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert {"schema", "image-tag", "resources", "security-context"} <= set(rules)
    assert all(rule["shortDescription"]["text"] for rule in rules.values())
    by_rule = {result["ruleId"]: result for result in run_["results"]}
    schema = by_rule["schema"]
    assert schema["level"] == "error" and driver["rules"][schema["ruleIndex"]]["id"] == "schema"
    assert schema["message"]["text"] == "ConfigMap/release-cm @ extra: unknown field 'extra' (k8s 1.35.0)"
    location = schema["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "charts/app/templates/cm.yaml"
    assert location["physicalLocation"]["region"] == {"startLine": 4}  # the template's `extra: field`
    assert location["logicalLocations"][0]["name"] == "ConfigMap/release-cm"
    assert by_rule["image-tag"]["level"] == "warning"
    assert run_["invocations"][0]["executionSuccessful"] is True


def test_a_render_failure_is_a_sarif_result_at_the_chart(charts, capsys):
    (charts / "app" / "templates" / "cm.yaml").write_text('{{ fail "no" }}\n')
    code, out, _ = run(capsys, str(charts), "--format", "sarif")
    (result,) = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "render"]
    assert code == 1 and result["level"] == "error" and "helm could not render" in result["message"]["text"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "charts/app/Chart.yaml"


def test_sarif_paths_resolve_from_the_working_folder_and_a_key_written_twice_gets_no_line(charts, capsys, monkeypatch):
    """A chart outside the working folder is reached with ``..`` (not named from its own parent, which resolves
    nowhere); a key the template writes on two lines is not pinned to either: the file alone."""
    pod = charts / "app" / "templates" / "pod.yaml"
    pod.write_text(pod.read_text() + "  # image: the container's image, tagged\n")
    (charts.parent / "work").mkdir()
    monkeypatch.chdir(charts.parent / "work")
    code, out, _ = run(capsys, "../charts", "--format", "sarif")
    results = {r["ruleId"]: r["locations"][0]["physicalLocation"] for r in json.loads(out)["runs"][0]["results"]}
    assert code == 1
    assert results["schema"] == {
        "artifactLocation": {"uri": "../charts/app/templates/cm.yaml"},
        "region": {"startLine": 4},
    }
    assert results["image-tag"] == {"artifactLocation": {"uri": "../charts/app/templates/pod.yaml"}}
