"""Strict schema validation: every error reported, with object, field path and source template."""

from __future__ import annotations

import pytest

from dlcharts.errors import SchemaError
from dlcharts.render import parse_manifest
from dlcharts.schemas import crd_kinds, schema_set_for, validate_objects

BROKEN = """\
---
# Source: demo/templates/job.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: broken
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: busybox:1.37.0
          imagePullPolicyy: Always
        - image: busybox:1.37.0
---
# Source: demo/templates/svc.yaml
apiVersion: v1
kind: Service
metadata:
  name: fine
spec:
  clusterIP: None
  selector: {app: x}
"""


@pytest.mark.parametrize("kube_version", ["1.29.0", "1.32.0", "1.35.0"])
def test_typo_and_missing_required_field_are_both_reported(kube_version):
    findings = validate_objects(parse_manifest(BROKEN).values(), kube_version)
    by_path = {f.path: f for f in findings}
    typo = by_path["spec.template.spec.containers[0].imagePullPolicyy"]
    assert "unknown field 'imagePullPolicyy'" in typo.message and "imagePullPolicy" in typo.message
    assert typo.object == "Job/broken" and typo.source == "demo/templates/job.yaml"
    missing = by_path["spec.template.spec.containers[1].name"]
    assert missing.message == "required field is missing"
    assert len(findings) == 2, findings


def test_field_newer_than_the_version_is_an_error():
    job = (
        BROKEN.split("---\n# Source: demo/templates/svc.yaml")[0]
        .replace("imagePullPolicyy: Always\n        - image: busybox:1.37.0\n", "")
        .replace("      restartPolicy: Never\n", "      restartPolicy: Never\n")
        .replace("spec:\n  template:", "spec:\n  managedBy: example.com/controller\n  template:")
    )
    old = validate_objects(parse_manifest(job).values(), "1.29.0")
    new = validate_objects(parse_manifest(job).values(), "1.35.0")
    assert [f.path for f in old] == ["spec.managedBy"]
    assert new == []


def test_unknown_kind_is_reported_not_skipped():
    text = "---\n# Source: x/t.yaml\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
    (finding,) = validate_objects(parse_manifest(text).values(), "1.35.0")
    assert "no schema for example.com/v1 Widget" in finding.message


def test_crd_schemas_are_strict():
    text = """\
---
# Source: x/pg.yaml
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg}
spec: {minMember: 2, queueName: default}
---
# Source: x/sm.yaml
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm}
spec:
  selector: {matchLabels: {a: b}}
  endpoints: [{port: metrics, interval: 30s}]
"""
    findings = validate_objects(parse_manifest(text).values(), "1.35.0")
    assert [(f.object, f.path) for f in findings] == [("PodGroup/pg", "spec.queueName")]
    assert "did you mean 'queue'" in findings[0].message


def test_bundled_crds_cover_the_kinds_our_charts_may_emit():
    kinds = set(crd_kinds())
    for expected in [
        ("scheduling.volcano.sh/v1beta1", "PodGroup"),
        ("scheduling.x-k8s.io/v1alpha1", "PodGroup"),
        ("kueue.x-k8s.io/v1beta1", "LocalQueue"),
        ("jobset.x-k8s.io/v1alpha2", "JobSet"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ]:
        assert expected in kinds


def test_unsupported_version_is_a_clear_error():
    with pytest.raises(SchemaError, match="no strict Kubernetes schemas for 1.12.0"):
        schema_set_for("1.12.0")
    with pytest.raises(SchemaError, match="not of the form"):
        schema_set_for("latest")
