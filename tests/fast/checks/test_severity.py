"""Errors and policies: every finding is an error (the API server or kubelet refuses it, or it breaks the workload)
or a policy (an opinion) whose level the chart author configures; a new user sees errors fail and opinions reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlcharts import config, findings
from dlcharts.cli import main
from dlcharts.findings import ERROR, OFF, POLICY, WARNING, Finding
from dlcharts.policies import CHECKS
from tests.support.pytest_runs import run_pytest_in

# A Deployment the API server takes, with policy findings only: no resources, no securityContext, no NetworkPolicy
# for its port, an untagged image.
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: "{{ .Release.Name }}-web"}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: "{{ .Values.image }}"
          ports: [{containerPort: 8080}]
"""
ERRORS = {"gpu-limits", "duplicate-env", "selector-labels", "service-selects", "named-ports", "dns-names"}
POLICIES = {"resources", "image-tag", "security-context", "host-access", "network-policy"}


@pytest.fixture
def chart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    chart = tmp_path / "repo" / "charts" / "web"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: web\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("image: nginx\n")
    (chart / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    (tmp_path / "repo" / ".git").mkdir()  # the author's repository: the configuration search stops here
    monkeypatch.chdir(tmp_path / "repo")
    return chart


def validate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["validate", *argv, "--no-cache", "--allow-missing-checks"])
    captured = capsys.readouterr()
    return code, captured.out


def summary(out: str) -> str:
    return next(line for line in out.splitlines() if " passed, " in line)


def test_every_check_is_an_error_or_a_policy_honestly():
    assert {c for c in CHECKS if findings.kind_of(c) == ERROR} == ERRORS
    assert {c for c in CHECKS if findings.kind_of(c) == POLICY} == POLICIES
    for check_id in ("schema", "no-schema", "api-rules", "api-server", "removed-api", "deprecated-api", "new-check"):
        assert findings.kind_of(check_id) == ERROR, check_id
    assert findings.error_level("deprecated-api") == WARNING and findings.error_level("api-rules") == ERROR


def test_a_finding_built_positionally_gets_its_kind_and_level():
    schema = Finding("c/t.yaml", "ConfigMap/x", "extra", "unknown field", "schema", "1.35.0")
    assert (schema.kind, schema.level, schema.kube_version) == (ERROR, ERROR, "1.35.0")
    policy = Finding("c/t.yaml", "Pod/x", "", "untagged", "image-tag")
    assert (policy.kind, policy.level) == (POLICY, ERROR)  # unconfigured: as strict as before
    assert Finding("c/t.yaml", "Pod/x", "", "old", "deprecated-api").level == WARNING
    assert sorted([policy, schema]) == [schema, policy]  # still ordered
    with pytest.raises(AttributeError):
        schema.level = WARNING  # type: ignore[misc]  # still frozen


def test_policy_findings_alone_warn_without_configuration(chart, capsys):
    code, out = validate(capsys, str(chart))
    assert code == 0, out
    assert "config: none (errors fail, policies warn)" in out.splitlines()[0], out
    assert "PASS web/default (4 warnings)" in out and "FAIL" not in out, out
    assert "warnings (reported, not failing" in out and "WARN web/default" in out, out
    assert summary(out).startswith("1 passed, 0 failed, 4 warnings"), out
    for check_id in ("resources", "image-tag", "security-context", "network-policy"):
        assert f"[{check_id}]" in out, check_id


def test_the_nearest_configuration_makes_policies_errors(chart, capsys):
    (chart.parents[1] / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.dlcharts]\npolicies = "error"\n')
    code, out = validate(capsys, str(chart))
    assert code == 1 and "FAIL web/default" in out, out
    assert f"config: {chart.parents[1] / 'pyproject.toml'} [tool.dlcharts]" in out.splitlines()[0], out
    assert summary(out).startswith("0 passed, 1 failed, 0 warnings"), out
    # a nearer .dlcharts.yaml wins; YAML's bare `off` is the level off
    (chart / ".dlcharts.yaml").write_text("policies: warning\npolicy:\n  image-tag: error\n  network-policy: off\n")
    code, out = validate(capsys, str(chart))
    assert code == 1 and "[image-tag]" in out and "[network-policy]" not in out, out
    assert summary(out).startswith("0 passed, 1 failed, 2 warnings"), out


def test_command_line_levels_beat_the_file(chart, capsys):
    (chart.parents[1] / ".dlcharts.yaml").write_text("policies: error\ncharts:\n  web:\n    policy: {resources: off}\n")
    code, out = validate(capsys, str(chart))
    assert code == 1 and "[resources]" not in out, out
    code, out = validate(capsys, str(chart), "--errors-only")
    assert code == 0 and summary(out).startswith("1 passed, 0 failed, 0 warnings"), out
    code, out = validate(capsys, str(chart), "--policies", "warning", "--policy", "image-tag=error")
    assert code == 1 and "[resources]" in out and summary(out).startswith("0 passed, 1 failed, 3 warnings"), out


def test_errors_always_fail_whatever_the_policies(chart, capsys):
    (chart / "templates" / "deployment.yaml").write_text(
        DEPLOYMENT.replace("{app: web}}\n  template", "{app: x}}\n  template")
    )
    code, out = validate(capsys, str(chart), "--errors-only")
    assert code == 1 and "[selector-labels]" in out and "FAIL web/default" in out, out


BAD = [
    ('[tool.dlcharts]\npolicy = "error"\n', "tool.dlcharts.policy: expected a table of policy ids and levels"),
    ('[tool.dlcharts]\npolicies = "fatal"\n', "tool.dlcharts.policies: 'fatal' is not a level; choose 'error', 'warning', 'off'"),  # noqa: E501
    ('[tool.dlcharts]\npolicie = "error"\n', "tool.dlcharts.policie: unknown key; known keys: policies, policy, charts"),  # noqa: E501
    ('[tool.dlcharts.policy]\npod-security = "off"\n', "tool.dlcharts.policy.pod-security: unknown policy id 'pod-security'; policies: resources, image-tag, security-context"),  # noqa: E501
    ('[tool.dlcharts.policy]\ndns-names = "off"\n', "dns-names finds what the API server or kubelet refuses"),
    ('[tool.dlcharts]\nmissing-checks = "off"\n', "tool.dlcharts.missing-checks: 'off' is not a level; choose 'error', 'warning'"),  # noqa: E501
    ('[tool.dlcharts.charts.web]\npolicies = "warning"\nlevel = 1\n', "tool.dlcharts.charts.web.level: unknown key; known keys: policies, policy"),  # noqa: E501
    ('[tool.dlcharts\n', "not valid TOML"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD, ids=[b[1][:40] for b in BAD])
def test_a_mistake_in_the_configuration_is_a_usage_error_naming_the_file(chart, capsys, text, message):
    path = chart.parents[1] / "pyproject.toml"
    path.write_text(text)
    assert main(["validate", str(chart), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: {path}") and message in err, err


def test_bad_command_line_levels_and_two_files_in_one_folder(chart, capsys):
    assert main(["validate", str(chart), "--policy", "nope=off"]) == 2
    assert "--policy nope=off: unknown policy id 'nope'" in capsys.readouterr().err
    assert main(["validate", str(chart), "--policy", "resources"]) == 2
    assert "--policy 'resources': expected ID=LEVEL" in capsys.readouterr().err
    (chart / ".dlcharts.yaml").write_text("policies: off\n")
    (chart / "pyproject.toml").write_text("[tool.dlcharts]\npolicies = 'off'\n")
    assert main(["validate", str(chart)]) == 2
    assert (
        "both .dlcharts.yaml and pyproject.toml [tool.dlcharts] configure dlcharts; keep one" in capsys.readouterr().err
    )


def test_a_pyproject_without_the_section_is_passed_over_and_the_search_stops_at_the_repository(tmp_path):
    (tmp_path / ".dlcharts.yaml").write_text("policies: error\n")  # above the repository: not its configuration
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert config.find(repo / "charts") is None and config.discover(repo).levels().default == WARNING
    (repo / ".dlcharts.yaml").write_text("exemptions: ci/ex.yaml\ncharts:\n  web: {policies: off}\n")
    found = config.discover(repo / "charts" / "web")
    assert found.path == repo / ".dlcharts.yaml" and found.exemptions == repo / "ci" / "ex.yaml"
    assert found.levels("web").of("resources") == OFF and found.levels("other").of("resources") == WARNING
    assert found.levels("web").of("dns-names") == ERROR  # errors have no level to set


def test_the_configured_exemptions_file_is_used(chart, capsys):
    (chart.parents[1] / ".dlcharts.yaml").write_text("policies: error\nexemptions: ex.yaml\n")
    reasons = "".join(f"  {check_id}: {{reason: r}}\n" for check_id in ("image-tag", "resources", "security-context",
                                                                         "network-policy"))  # fmt: skip
    (chart.parents[1] / "ex.yaml").write_text("web:\n" + reasons)
    code, out = validate(capsys, str(chart))
    assert code == 0 and f"policy exemptions: {chart.parents[1] / 'ex.yaml'}" in out, out
    (chart.parents[1] / ".dlcharts.yaml").write_text("exemptions: nope.yaml\n")
    assert main(["validate", str(chart)]) == 2
    assert "exemptions = " in capsys.readouterr().err


def test_this_repositorys_charts_keep_every_policy_an_error():
    from tests.support import CHARTS

    found = config.discover(CHARTS / "pytorch-dist")
    assert found.path is not None and found.path.name == "pyproject.toml"
    assert found.levels("pytorch-dist").of("network-policy") == ERROR


def test_the_plugin_applies_the_levels_too(chart):
    """assert_valid passes a render with policy findings at level warning (each a pytest warning, shown) and fails
    it when the configuration makes them errors."""
    repo = chart.parents[1]
    (repo / "test_chart.py").write_text("def test_web(render, assert_valid):\n    assert_valid(render('charts/web'))\n")
    (repo / "pyproject.toml").write_text("[tool.dlcharts]\nmissing-checks = 'warning'\n")  # see test_missing_checks
    proc = run_pytest_in(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[network-policy]" in proc.stdout and "(warning)" in proc.stdout, proc.stdout  # in the warnings summary
    (repo / "pyproject.toml").write_text("[tool.dlcharts]\npolicies = 'error'\nmissing-checks = 'warning'\n")
    proc = run_pytest_in(repo)
    assert proc.returncode == 1 and "[network-policy]" in proc.stdout, proc.stdout


def test_the_plugins_policy_warnings_are_one_block_per_chart(chart):
    """Two renders of a chart with 4 policy warnings each (other names: 8 distinct) pass, and the summary gives one
    block for the chart: the count, the renders, the count by check and the first 5, every one on request."""
    repo = chart.parents[1]
    (repo / "test_chart.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('release', ['one', 'two'])\n"
        "def test_web(render, assert_valid, release):\n    assert_valid(render('charts/web', release=release))\n"
    )
    (repo / "pyproject.toml").write_text("[tool.dlcharts]\nmissing-checks = 'warning'\n")
    proc = run_pytest_in(repo, "-W", "ignore::pytest.PytestWarning")
    out = proc.stdout
    assert proc.returncode == 0 and "2 passed" in out, out + proc.stderr
    assert "dlcharts: policy warnings (reported, not failing; the first 5 of each chart" in out, out
    block = out.split("dlcharts: policy warnings", 1)[1].splitlines()
    assert block[1].startswith("  web: 8 warning(s) in 2 render(s) (image-tag 2, network-policy 2, resources 2,"), out
    assert sum(line.endswith("(warning)") for line in block) == 5 and "    ... and 3 more" in block, out
    proc = run_pytest_in(repo, "-W", "ignore::pytest.PytestWarning", "--dlcharts-all-warnings")
    block = proc.stdout.split("dlcharts: policy warnings", 1)[1].splitlines()
    assert sum(line.endswith("(warning)") for line in block) == 8 and "more" not in proc.stdout, proc.stdout


def test_json_summary_counts_warnings(chart, capsys):
    code = main(["validate", str(chart), "--no-cache", "--allow-missing-checks", "--format", "json"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert code == 0 and data["summary"]["warnings"] == 4 and data["summary"]["exit_code"] == 0, captured
    assert "PASS web/default" in captured.err  # progress beside a document on stdout goes to stderr
