"""An exemption that covers nothing fails `dlcharts validate` (with -f/--set values too) and the pytest plugin, as
the README promises: one that no finding needs, an `objects` pattern naming an object that is not there, a chart
that is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts.cli import main
from tests.support.pytest_runs import run_pytest_in

# A node agent with one real policy finding (hostNetwork), so an exemption has something to cover.
AGENT = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: "{{ .Release.Name }}-agent"}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: agent, app.kubernetes.io/instance: "{{ .Release.Name }}"}}
  template:
    metadata: {labels: {app.kubernetes.io/name: agent, app.kubernetes.io/instance: "{{ .Release.Name }}"}}
    spec:
      hostNetwork: true
      securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: main
          image: registry.example.com/agent:1.2.3
          resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {memory: 16Mi}}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
"""
NEEDED = "agent:\n  host-access:\n    reason: a node agent on the node network\n    objects: ['DaemonSet/*-agent']\n"
STALE = {
    "covers-nothing": (NEEDED + "  image-tag: {reason: pinned}\n", "agent.image-tag covers no finding in any scenario"),
    "missing-object": (
        NEEDED + "  resources:\n    reason: big\n    objects: ['Deployment/gone']\n",
        "agent.resources covers no finding in any scenario (default) (objects ['Deployment/gone'] match none",
    ),
    "missing-chart": (NEEDED + "ghost:\n  resources: {reason: gone}\n", "exemptions name chart 'ghost', which is none"),
}


@pytest.fixture
def charts(tmp_path: Path) -> Path:
    chart = tmp_path / "charts" / "agent"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: agent\nversion: 0.1.0\n")
    (chart / "templates" / "ds.yaml").write_text(AGENT)
    return tmp_path / "charts"


@pytest.mark.parametrize("path", ["folder", "chart"])
def test_a_needed_exemption_passes(charts, tmp_path, capsys, path):
    (tmp_path / "ex.yaml").write_text(NEEDED)
    target = charts if path == "folder" else charts / "agent"
    assert main(["validate", str(target), "--exemptions", str(tmp_path / "ex.yaml"), "--no-cache"]) == 0
    assert "PASS policy exemptions" in capsys.readouterr().out


@pytest.mark.parametrize("values", [[], ["--set", "unused=1"]], ids=["scenarios", "set"])
@pytest.mark.parametrize("case", STALE)
def test_a_stale_exemption_fails_the_cli(charts, tmp_path, capsys, case, values):
    """With -f/--set values too: the exemptions are judged on the chart's scenarios, as the plugin judges them
    whatever a test renders."""
    text, expected = STALE[case]
    (tmp_path / "ex.yaml").write_text(text)
    target = charts / "agent" if values else charts
    assert main(["validate", str(target), *values, "--exemptions", str(tmp_path / "ex.yaml"), "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert f"FAIL policy exemptions ({tmp_path / 'ex.yaml'})\n" in out, out
    assert expected in out, out
    assert "1 passed, 1 failed" in out, out


@pytest.mark.parametrize("case", STALE)
def test_a_stale_exemption_fails_the_plugin(charts, tmp_path, case):
    text, expected = STALE[case]
    (tmp_path / "ex.yaml").write_text(text)
    (tmp_path / "pytest.ini").write_text("[pytest]\ndlcharts_charts = charts\ndlcharts_exemptions = ex.yaml\n")
    (tmp_path / "test_agent.py").write_text(
        "def test_scenario(dlcharts_scenario, render, assert_valid):\n    assert_valid(render(dlcharts_scenario))\n"
    )
    proc = run_pytest_in(tmp_path, "--dlcharts-no-cache")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "stale policy exemptions in" in proc.stdout and expected in proc.stdout, proc.stdout


def test_the_default_file_of_other_charts_is_not_judged_but_a_given_one_is(charts, tmp_path, capsys, monkeypatch):
    """`ci/policy-exemptions.yaml` of the working folder is read by default; when it names none of the charts
    validated it is about other charts (this repository's, when its example chart is validated from its root)."""
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "policy-exemptions.yaml").write_text("other:\n  resources: {reason: r}\n" + NEEDED)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(charts), "--no-cache"]) == 1  # it names agent: judged, and `other` is absent
    assert "exemptions name chart 'other'" in capsys.readouterr().out
    (tmp_path / "ci" / "policy-exemptions.yaml").write_text("other:\n  resources: {reason: r}\n")
    (tmp_path / "charts" / "agent" / "templates" / "ds.yaml").write_text(AGENT.replace("hostNetwork: true", ""))
    assert main(["validate", str(charts), "--no-cache"]) == 0
    assert main(["validate", str(charts), "--no-cache", "--exemptions", "ci/policy-exemptions.yaml"]) == 1
    assert "exemptions name chart 'other'" in capsys.readouterr().out
