"""A finding is reported once: the same schema finding on seven Kubernetes versions is one line naming them."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts.cli import main
from dlcharts.findings import Finding, report
from dlcharts.suite import KUBE_VERSIONS

# An unknown field (a schema finding on every version) and a `latest` image (a policy finding).
TEMPLATES = {
    "cm.yaml": 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "{{ .Release.Name }}-cm"}\nextra: field\n',
    "pod.yaml": """\
apiVersion: v1
kind: Pod
metadata: {name: "{{ .Release.Name }}-pod"}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: main
      image: "{{ .Values.image }}"
      resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {memory: 16Mi}}
      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
""",
}


def test_the_same_finding_on_several_versions_is_one_line():
    found = [Finding("c/t.yaml", "ConfigMap/x", "extra", "unknown field 'extra'", "schema", v) for v in KUBE_VERSIONS]
    found.append(Finding("c/t.yaml", "ConfigMap/x", "other", "unknown field 'other'", "schema", "1.30.0"))
    text = report(list(reversed(found)))
    assert text.splitlines()[0] == "2 finding(s):"
    assert f"ConfigMap/x @ extra: unknown field 'extra' [schema] (k8s {', '.join(KUBE_VERSIONS)})" in text
    assert "ConfigMap/x @ other: unknown field 'other' [schema] (k8s 1.30.0)" in text


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    chart = tmp_path / "cm"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: cm\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("image: busybox:1.37.0\n")
    for name, text in TEMPLATES.items():
        (chart / "templates" / name).write_text(text)
    return chart


@pytest.mark.parametrize("custom", [[], ["--set", "image=busybox:latest"]], ids=["scenarios", "custom-values"])
def test_all_versions_reports_each_finding_once(chart, capsys, custom, monkeypatch):
    monkeypatch.chdir(chart.parent)
    assert main(["validate", str(chart), "--all-versions", "--no-cache", *custom]) == 1
    out = capsys.readouterr().out
    assert out.count("unknown field 'extra'") == 1, out
    assert f"[schema] (k8s {', '.join(KUBE_VERSIONS)})" in out, out
    assert out.count("is latest") == (1 if custom else 0), out  # a policy: a warning without a configuration
    assert out.count("1 finding(s):") == (2 if custom else 1), out
    assert ("WARN cm (custom values)" in out) == bool(custom), out
