"""Messages an outside author reads: no words of this repository's charts in a generic check, a finding made alike
on several versions once, a quantity that does not parse at its field, a chart that refuses `default` pointed at
--namespace and the scenario directive."""

from __future__ import annotations

import pytest
import yaml

from dlcharts import apirules
from dlcharts.cli import main
from dlcharts.policies import run_policies
from dlcharts.render import K8sObject, ObjectKey, parse_manifest
from dlcharts.schemas import validate_object
from dlcharts.suite import KUBE_VERSIONS

LISTENING = """\
---
# Source: c/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]}
"""


def test_a_generic_check_names_nothing_of_this_repository():
    (finding,) = run_policies(list(parse_manifest(LISTENING).values()), checks=["network-policy"])
    assert "no NetworkPolicy of the release selects them" in finding.message
    assert "training charts" not in finding.message and "networkPolicy.enabled" not in finding.message


def test_no_schema_on_every_version_is_one_finding(tmp_path, capsys, monkeypatch):
    chart = tmp_path / "w"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: w\nversion: 0.1.0\n")
    (chart / "templates" / "w.yaml").write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(chart), "--all-versions", "--no-cache", "--allow-missing-checks"]) == 1
    out = capsys.readouterr().out
    assert out.count("no schema for example.com/v1 Widget") == 1, out
    assert f"[no-schema] (k8s {', '.join(KUBE_VERSIONS)})" in out and "1 finding(s):" in out, out


JOB = {
    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "busybox:1.37.0",
         "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "16 GB"}}}],
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1 G"}}]}}},
}  # fmt: skip


def test_the_quantities_that_do_not_parse_are_found_in_python():
    assert apirules.unparsed_quantities(JOB) == [
        "spec.template.spec.containers[0].resources.limits.memory",
        "spec.template.spec.volumes[0].emptyDir.sizeLimit",
    ]
    assert apirules.unparsed_quantities({"spec": {"resources": {"limits": {"cpu": 2, "memory": "1.5e3Mi"}}}}) == [
        "spec.resources.limits.memory"  # an exponent and a binary suffix do not go together
    ]
    fine = {"limits": {"cpu": "+.5", "memory": "128974848", "a": "129e6", "b": "129M", "c": "123Mi", "d": "1k"}}
    assert apirules.unparsed_quantities({"spec": fine}) == []


def test_a_bad_quantity_is_reported_at_its_field():
    if apirules.rules() is None:
        pytest.fail("native/k8s-validate is not built: run make tools")
    obj = K8sObject(ObjectKey("batch/v1", "Job", None, "train"), JOB, "c/templates/job.yaml")
    found = validate_object(obj, f"{apirules.MINOR}.0")
    assert {f.path for f in found if f.check == "api-rules"} == {
        "spec.template.spec.containers[0].resources.limits.memory",
        "spec.template.spec.volumes[0].emptyDir.sizeLimit",
    }, found
    assert all("quantities must match" in f.message for f in found), found


def test_a_chart_that_refuses_default_gets_the_namespace_hint(tmp_path, capsys, monkeypatch):
    chart = tmp_path / "agent"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: agent\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text(
        '{{- if eq .Release.Namespace "default" }}{{ fail "use a namespace of its own" }}{{ end }}\n'
        + yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    )
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(chart), "--no-cache", "--allow-missing-checks"]) == 1
    out = capsys.readouterr().out
    assert "hint: the chart seems to refuse the namespace `default`; give one with --namespace NAME" in out, out
    assert "`# @dlcharts namespace: NAME`" in out
    assert main(["validate", str(chart), "--no-cache", "--allow-missing-checks", "--namespace", "agents"]) == 0
    assert "hint:" not in capsys.readouterr().out


class _NoFieldValidator:
    """What k8s-validate answers for an object whose quantity does not parse: the object does not decode, so the
    error names no field."""

    def problems_of(self, bodies):
        return [[("", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
                for _ in bodies]  # fmt: skip


def test_a_field_less_quantity_error_names_the_fields(monkeypatch):
    monkeypatch.setattr(apirules, "rules", lambda kube_version=None: _NoFieldValidator())
    obj = K8sObject(ObjectKey("batch/v1", "Job", None, "train"), JOB, "c/templates/job.yaml")
    found = validate_object(obj, "1.35.0")
    assert [f.path for f in found] == [
        "spec.template.spec.containers[0].resources.limits.memory",
        "spec.template.spec.volumes[0].emptyDir.sizeLimit",
    ], found
