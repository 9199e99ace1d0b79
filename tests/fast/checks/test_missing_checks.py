"""A check that cannot run is never a silent pass: where the API server's rules cannot be checked in this install,
`dlcharts validate` names it in its summary line and exits 1 unless the author allows it, and the pytest plugin's
assert_valid fails with the reason (or warns, as configured); minors no validator exists for are information."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlcharts import apirules, checks, native
from dlcharts.cli import main
from dlcharts.errors import ToolchainError
from tests.support.pytest_runs import run_pytest_in

CONFIGMAP = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "{{ .Release.Name }}-cm"}\ndata: {a: b}\n'
# in an author's conftest.py: this install has no validator (as the pure-Python wheel on a machine without Go)
NO_VALIDATOR = """\
from dlcharts import apirules, native
from dlcharts.errors import ToolchainError

def _locate(names, build):
    if any(name.startswith(native.VALIDATOR) for name in names):
        raise ToolchainError(native.missing_reason(names[0]))
    return _real(names, build)

_real, native.locate = native.locate, _locate
"""
REASON = "this is the pure-Python dlcharts wheel, which carries no k8s-validate: install a platform wheel"


@pytest.fixture
def no_validator(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This install as the pure-Python wheel: no k8s-validate. What it records as not checked is forgotten after the
    test (the record is per process: a later test on the same worker would otherwise fail as NOT CHECKED)."""
    real = native.locate

    def locate(names: list[str], build: bool) -> dict[str, Path]:
        if any(name.startswith(native.VALIDATOR) for name in names):
            raise ToolchainError(native.missing_reason(names[0]))
        return real(names, build)

    monkeypatch.setattr(native, "locate", locate)
    monkeypatch.setattr(apirules, "_rules", {})
    monkeypatch.setattr(apirules, "_missing", {})
    yield
    checks.reset()


@pytest.fixture
def chart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    chart = tmp_path / "cm"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: cm\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text(CONFIGMAP)
    monkeypatch.chdir(tmp_path)
    return chart


def test_a_missing_validator_fails_the_run_and_says_what_to_do(chart, capsys, no_validator):
    code = main(["validate", str(chart), "--no-cache"])
    captured = capsys.readouterr()
    last = captured.out.strip().splitlines()[-1]
    assert code == 1, captured.out
    assert last.startswith(
        "1 passed, 0 failed, 0 warnings; NOT CHECKED: the API server's rules at 1.35 (k8s-validate: "
    )
    assert REASON in last and "dlcharts" not in captured.err, captured


def test_allowing_missing_checks_passes_but_still_names_them(chart, capsys, no_validator):
    assert main(["validate", str(chart), "--no-cache", "--allow-missing-checks"]) == 0
    assert "; not checked (allowed): the API server's rules at 1.35" in capsys.readouterr().out
    (chart / ".dlcharts.yaml").write_text("missing-checks: warning\n")
    assert main(["validate", str(chart), "--no-cache"]) == 0
    assert "not checked (allowed)" in capsys.readouterr().out


def test_minors_without_a_validator_are_information(chart, capsys):
    assert main(["validate", str(chart), "--no-cache", "--kube-version", "1.36.0", "--allow-missing-checks"]) == 0
    out = capsys.readouterr().out
    assert "schemas only at 1.36 (no validator of the API server's rules exists for that minor)" in out, out
    assert "NOT CHECKED" not in out


def test_a_minor_between_the_validators_needs_both(chart, capsys, no_validator):
    """1.31 is judged by the validators of 1.29 and 1.35: without them it is not checked, and the run says so at
    1.31, the minor asked for."""
    assert main(["validate", str(chart), "--no-cache", "--kube-version", "1.31.0"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "NOT CHECKED: the API server's rules at 1.31 (k8s-validate: " in last, last
    assert "; the API server's rules at 1.31 (k8s-validate@oldest: " in last, last
    assert "schemas only" not in last


def test_the_json_and_sarif_reports_name_what_was_not_checked(chart, capsys, no_validator):
    assert main(["validate", str(chart), "--no-cache", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    (entry,) = data["not_checked"]
    assert entry["minor"] == "1.35" and entry["tool"] == "k8s-validate" and REASON in entry["reason"]
    assert data["summary"]["exit_code"] == 1
    assert main(["validate", str(chart), "--no-cache", "--format", "sarif"]) == 1
    invocation = json.loads(capsys.readouterr().out)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert (
        "NOT CHECKED: the API server's rules at 1.35" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    )


def test_the_record_is_per_minor_and_resettable():
    checks.reset()
    checks.not_run("the API server's rules", "1.35", "k8s-validate", "why")
    checks.schemas_only("1.30")
    assert [e.minor for e in checks.missing("1.35")] == ["1.35"] and checks.missing("1.29") == []
    assert checks.summary(allowed=False).startswith("; NOT CHECKED: the API server's rules at 1.35 (k8s-validate: why)")
    checks.reset()
    assert checks.summary(allowed=False) == ""


@pytest.mark.parametrize(
    "configured", ["", "[tool.dlcharts]\nmissing-checks = 'warning'\n"], ids=["default", "warning"]
)
def test_assert_valid_fails_with_the_reason_or_warns_as_configured(chart, configured):
    project = chart.parent
    (project / "conftest.py").write_text(NO_VALIDATOR)
    (project / "pyproject.toml").write_text(configured)
    (project / "test_cm.py").write_text("def test_cm(render, assert_valid):\n    assert_valid(render('cm'))\n")
    proc = run_pytest_in(project)
    text = proc.stdout + proc.stderr
    assert "NOT CHECKED" in text and REASON in text, text
    if configured:
        assert proc.returncode == 0 and "1 passed" in proc.stdout and "NOT CHECKED (allowed)" in proc.stdout, text
    else:
        assert proc.returncode == 1 and "1 failed" in proc.stdout, text
        assert 'missing-checks = "warning"' in proc.stdout, text


def test_the_plugin_judges_a_minor_between_the_validators_by_both(chart):
    """An author testing at 1.31 gets the failure both validators make, and a warning where only one refuses."""
    project = chart.parent
    pod = (
        'apiVersion: v1\nkind: Pod\nmetadata: {name: "{{ .Release.Name }}-p"}\nspec:\n  containers:\n'
        "    - {name: main, image: 'busybox:1.36', ports: [{containerPort: 70000}], env: [{name: 1FOO, value: x}]}\n"
    )
    (chart / "templates" / "cm.yaml").write_text(pod)
    test = "def test_cm(render, assert_valid):\n    assert_valid(render('cm', kube_version='1.31.0'))\n"
    (project / "test_cm.py").write_text(test)
    proc = run_pytest_in(project)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "1 failed" in proc.stdout, text
    assert "containerPort: Invalid value: 70000" in text and "[api-rules]" in text, text
    assert "the API server's rules of 1.29 refuse this" in text, text
