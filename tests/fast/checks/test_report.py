"""A finding is reported once: the same schema finding on seven Kubernetes versions is one line naming them; one
label value refused in several fields of an object, by the API server's rules and by dns-names, is one line too."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts import apirules
from dlcharts.cli import main
from dlcharts.findings import Finding, distinct, merged, report
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


LONG = "t" * 70
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "{{ .Release.Name }}-web"
  labels: {team: "{{ .Values.team }}"}
spec:
  selector:
    matchLabels: {app.kubernetes.io/name: web, team: "{{ .Values.team }}"}
  template:
    metadata:
      labels: {app.kubernetes.io/name: web, team: "{{ .Values.team }}"}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
"""
# a name that fits with the release name `release`, not with a 40-character one
SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: "{{ .Release.Name }}-a-service-name-of-25-chars"}
spec:
  clusterIP: None
  selector: {app.kubernetes.io/name: web}
"""


@pytest.mark.parametrize("versions", [[], ["--all-versions"]], ids=["newest", "all-versions"])
def test_an_over_long_label_value_is_reported_once(tmp_path, capsys, monkeypatch, versions):
    """The value is on the Deployment's metadata, selector and pod template: dns-names finds it in each (and again
    with the long release name), the API server's rules on the metadata and the selector, naming the maps, and then
    refuse the selector; one line remains, at the first label's key, naming the other fields. What only the long
    release name breaks is still reported."""
    chart = tmp_path / "web"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: web\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(f"team: {LONG}\n")
    (chart / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    (chart / "templates" / "service.yaml").write_text(SERVICE)
    monkeypatch.chdir(tmp_path)
    assert apirules.rules() is not None, "native/k8s-validate is not built: run make tools"
    assert main(["validate", str(chart), "--no-cache", "--policies", "off", *versions]) == 1
    out = capsys.readouterr().out
    assert out.count(LONG) == 1, out
    assert "2 finding(s):" in out, out
    service = (
        "Service/a-forty-character-release-name-for-tests-a-service-name-of-25-chars @ metadata.name: Service name"
    )
    assert out.count(service) == 1 and "(release a-forty-character-release-name-for-tests) [dns-names]" in out, out
    assert (
        f"Deployment/release-web @ metadata.labels.team: label value '{LONG}' is not a valid label value (<= 63 "
        "characters, alphanumeric at both ends); also at spec.selector.matchLabels.team, "
        "spec.template.metadata.labels.team [dns-names]"
    ) in out, out


def test_what_another_finding_says_better_goes():
    def api(path, message, version="1.35.0"):
        return Finding("c/d.yaml", "Deployment/w", path, message, "api-rules", version)

    named = Finding("c/d.yaml", "Deployment/w", "metadata.labels.team", "label value 'x_' ...", "dns-names")
    value = 'Invalid value: "x_": a valid label must be an empty string or consist of ...'
    same_field = api("metadata.labels.team", value)
    key = api("metadata.labels", 'Invalid value: "Foo_": name part must consist of ...')  # no key dns-names judges
    inside = api("spec.selector.matchLabels", 'Invalid value: "Foo_": name part must consist of ...')
    sequel = api("spec.selector", 'Invalid value: {"matchLabels":{"Foo_":"a"}}: invalid label selector')
    alone = api("spec.selector", 'Invalid value: {"matchExpressions":[]}: invalid label selector', "1.29.0")
    assert distinct([named, same_field, key, inside, sequel, alone]) == [named, key, inside, alone]


def test_one_problem_in_several_fields_is_one_line():
    def at(path, version=None, message="label value 'x_' is not a valid label value"):
        return Finding("c/d.yaml", "Deployment/w", path, message, "dns-names", version)

    (line,) = merged([at("metadata.labels.a"), at("spec.template.metadata.labels.a"), at("metadata.labels.a")])
    assert (line.path, line.message) == (
        "metadata.labels.a", "label value 'x_' is not a valid label value; also at spec.template.metadata.labels.a"
    )  # fmt: skip
    # found on other versions, or another problem: lines of their own
    assert len(merged([at("metadata.labels.a", "1.35.0"), at("spec.selector.a", "1.29.0")])) == 2
    assert len(merged([at("metadata.labels.a"), at("metadata.labels.b", message="label value 'y_' ...")])) == 2


def test_a_label_value_error_of_the_api_server_names_the_label():
    body = {
        "metadata": {"labels": {"a": "x_", "b": "x_", "c": "y"}},
        "spec": {"template": {"metadata": {"labels": {"d": "x_"}}}},
    }
    value = 'Invalid value: "x_": a valid label must be an empty string or consist of ...'
    assert apirules.label_value_fields(body, "metadata.labels", value) == ["metadata.labels.a", "metadata.labels.b"]
    assert apirules.label_value_fields(body, "spec.template.labels", value) == ["spec.template.metadata.labels.d"]
    too_long = f'Invalid value: "{LONG}": must be no more than 63 characters'  # Kubernetes 1.29's words; 1.35: bytes
    assert apirules.label_value_fields({"metadata": {"labels": {"t": LONG}}}, "metadata.labels", too_long) == [
        "metadata.labels.t"
    ]
    key = 'Invalid value: "x_": name part must consist of ...'  # a key's error stays at the map
    assert apirules.label_value_fields(body, "metadata.labels", key) == []
