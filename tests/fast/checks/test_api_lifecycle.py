"""Deprecated and removed built-in APIs: a removed-api error naming the release and the replacement, a deprecated-api
warning beside the schema findings, from Kubernetes' own generated lifecycle facts (native/api-lifecycle)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dlcharts import apilifecycle, schemas
from dlcharts.cli import main
from dlcharts.render import parse_manifest
from dlcharts.schemas import available_versions, validate_objects
from tests.support import ROOT

PDB = """\
---
# Source: demo/templates/pdb.yaml
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: workers
spec:
  minAvailable: 1
  selector: {matchLabels: {app: x}}
"""
CRONJOB = """\
---
# Source: demo/templates/cron.yaml
apiVersion: batch/v1beta1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: main, image: "busybox:1.37.0"}]
"""
FLOW_SCHEMA = """\
---
# Source: demo/templates/flow.yaml
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata:
  name: training
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 1000
  rules:
    - subjects: [{kind: ServiceAccount, serviceAccount: {name: trainer, namespace: default}}]
      resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
"""
DEPLOYMENT = """\
---
# Source: demo/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: main, image: "busybox:1.37.0"}]
"""


def _findings(manifest: str, kube_version: str):
    return validate_objects(parse_manifest(manifest).values(), kube_version)


def test_a_removed_api_is_one_error_naming_the_release_and_the_replacement():
    findings = _findings(PDB, "1.35.0")
    assert [(f.check, f.object, f.source) for f in findings] == [
        ("removed-api", "PodDisruptionBudget/workers", "demo/templates/pdb.yaml")
    ], findings
    assert findings[0].message == (
        "policy/v1beta1 PodDisruptionBudget was removed in Kubernetes 1.25: use policy/v1 PodDisruptionBudget"
    )
    assert "--crd" not in findings[0].message and findings[0].kube_version == "1.35.0"


def test_a_removed_cronjob_is_removed_api_not_no_schema():
    findings = _findings(CRONJOB, "1.35.0")
    assert [f.check for f in findings] == ["removed-api"], findings
    assert findings[0].message == "batch/v1beta1 CronJob was removed in Kubernetes 1.25: use batch/v1 CronJob"


def test_deprecated_and_still_served_is_a_warning_beside_the_schema_check_then_removed():
    assert {(1, 29), (1, 32)} <= set(available_versions())
    deprecated = _findings(FLOW_SCHEMA, "1.29.0")
    assert [f.check for f in deprecated] == ["deprecated-api"], deprecated
    assert deprecated[0].message == (
        "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is deprecated since 1.29 and removed in 1.32: "
        "use flowcontrol.apiserver.k8s.io/v1 FlowSchema"
    )
    # the object is still validated against its schema: a typo is reported beside the warning
    typo = _findings(FLOW_SCHEMA.replace("matchingPrecedence", "matchingPrecedense"), "1.29.0")
    assert sorted((f.check, f.path) for f in typo) == [
        ("deprecated-api", ""),
        ("schema", "spec.matchingPrecedense"),
    ], typo
    removed = _findings(FLOW_SCHEMA, "1.32.0")
    assert [f.check for f in removed] == ["removed-api"], removed
    assert removed[0].message == (
        "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema was removed in Kubernetes 1.32: "
        "use flowcontrol.apiserver.k8s.io/v1 FlowSchema"
    )


def test_a_deprecation_warning_alone_still_goes_to_the_api_server_rules(monkeypatch):
    judged: list[str] = []

    def rules(objects, kube_version):
        judged.extend(obj.ref() for obj in objects)
        return []

    monkeypatch.setattr(schemas, "api_rule_findings", rules)
    validate_objects(parse_manifest(FLOW_SCHEMA + PDB).values(), "1.29.0")
    assert judged == ["FlowSchema/training"]  # the removed PDB is not judged further


def test_a_current_api_has_no_lifecycle_finding():
    assert _findings(DEPLOYMENT, "1.35.0") == []
    assert apilifecycle.verdict("apps/v1", "Deployment", "1.35.0") is None
    assert apilifecycle.verdict("example.com/v1", "Widget", "1.35.0") is None


def test_an_api_not_yet_deprecated_at_the_target_has_no_verdict():
    assert apilifecycle.verdict("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "1.28.0") is None
    assert apilifecycle.verdict("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "v1.31.4").check == (
        "deprecated-api"
    )


# (apiVersion kind, deprecated, removed, the replacement's apiVersion when its kind is the same, or None)
KNOWN = [
    ("extensions/v1beta1 Ingress", "1.14", "1.22", "networking.k8s.io/v1"),
    ("extensions/v1beta1 Deployment", "1.8", "1.16", "apps/v1"),
    ("extensions/v1beta1 DaemonSet", "1.8", "1.16", "apps/v1"),
    ("extensions/v1beta1 ReplicaSet", "1.8", "1.16", "apps/v1"),
    ("extensions/v1beta1 NetworkPolicy", "1.9", "1.16", "networking.k8s.io/v1"),
    ("extensions/v1beta1 PodSecurityPolicy", "1.11", "1.16", "policy/v1beta1"),
    ("apps/v1beta1 Deployment", "1.8", "1.16", "apps/v1"),
    ("apps/v1beta2 ReplicaSet", "1.9", "1.16", "apps/v1"),
    ("networking.k8s.io/v1beta1 Ingress", "1.19", "1.22", "networking.k8s.io/v1"),
    ("networking.k8s.io/v1beta1 IngressClass", "1.19", "1.22", "networking.k8s.io/v1"),
    ("rbac.authorization.k8s.io/v1beta1 ClusterRole", "1.17", "1.22", "rbac.authorization.k8s.io/v1"),
    ("apiextensions.k8s.io/v1beta1 CustomResourceDefinition", "1.16", "1.22", "apiextensions.k8s.io/v1"),
    ("apiregistration.k8s.io/v1beta1 APIService", "1.19", "1.22", "apiregistration.k8s.io/v1"),
    (
        "admissionregistration.k8s.io/v1beta1 MutatingWebhookConfiguration",
        "1.16",
        "1.22",
        "admissionregistration.k8s.io/v1",
    ),
    ("storage.k8s.io/v1beta1 CSIStorageCapacity", "1.24", "1.27", "storage.k8s.io/v1"),
    ("scheduling.k8s.io/v1beta1 PriorityClass", "1.14", "1.22", "scheduling.k8s.io/v1"),
    ("coordination.k8s.io/v1beta1 Lease", "1.19", "1.22", "coordination.k8s.io/v1"),
    ("certificates.k8s.io/v1beta1 CertificateSigningRequest", "1.19", "1.22", "certificates.k8s.io/v1"),
    ("policy/v1beta1 PodDisruptionBudget", "1.21", "1.25", "policy/v1"),
    ("policy/v1beta1 PodSecurityPolicy", "1.21", "1.25", None),
    ("batch/v1beta1 CronJob", "1.21", "1.25", "batch/v1"),
    ("discovery.k8s.io/v1beta1 EndpointSlice", "1.21", "1.25", "discovery.k8s.io/v1"),
    ("events.k8s.io/v1beta1 Event", "1.22", "1.25", None),
    ("autoscaling/v2beta1 HorizontalPodAutoscaler", "1.22", "1.25", "autoscaling/v2"),
    ("autoscaling/v2beta2 HorizontalPodAutoscaler", "1.23", "1.26", "autoscaling/v2"),
    ("flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema", "1.23", "1.26", "flowcontrol.apiserver.k8s.io/v1beta3"),
    ("flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema", "1.26", "1.29", "flowcontrol.apiserver.k8s.io/v1beta3"),
    (
        "flowcontrol.apiserver.k8s.io/v1beta3 PriorityLevelConfiguration",
        "1.29",
        "1.32",
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    ("node.k8s.io/v1beta1 RuntimeClass", "1.22", "1.25", None),
]


@pytest.mark.parametrize(("api", "deprecated", "removed", "replacement"), KNOWN, ids=[k[0] for k in KNOWN])
def test_the_generated_facts_cover_the_apis_deprecated_and_removed_since_1_16(api, deprecated, removed, replacement):
    api_version, kind = api.split()
    facts = apilifecycle.lifecycles()[(api_version, kind)]
    assert (facts.deprecated, facts.removed) == (_release(deprecated), _release(removed)), facts
    assert facts.replacement == (None if replacement is None else (replacement, kind)), facts
    assert facts.source.startswith(("k8s.io/api@", "k8s.io/apiextensions-apiserver@", "k8s.io/kube-aggregator@"))


def _release(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def test_the_data_says_where_its_facts_come_from_and_is_sorted():
    data = apilifecycle.data()
    assert "zz_generated.prerelease-lifecycle.go" in data["source"], data["source"]
    assert "native/api-lifecycle/generate.py" in data["source"], data["source"]
    keys = [(e["apiVersion"], e["kind"]) for e in data["apis"]]
    assert keys == sorted(set(keys)) and not any(kind.endswith("List") for _, kind in keys)
    assert all(e["module"] in data["modules"] for e in data["apis"])


def test_the_committed_json_is_what_the_generator_makes():
    """Drift: the generator regenerates into memory (Go, the module cache or the module proxy) and compares."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    assert Path(go).is_file(), "the Go toolchain is needed to regenerate the API lifecycle facts"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "native" / "api-lifecycle" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    chart = tmp_path / "charts" / "budget"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: budget\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("{}\n")
    return chart


def _validate(capsys, *argv: str) -> tuple[int, str]:
    code = main(["validate", *argv, "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_validate_fails_a_chart_with_a_removed_api(chart, capsys):
    body = PDB.split("\n", 2)[2].replace("name: workers", 'name: "{{ .Release.Name }}-workers"')
    (chart / "templates" / "pdb.yaml").write_text(body)
    code, out = _validate(capsys, str(chart.parent))
    assert code == 1, out
    assert (
        "PodDisruptionBudget/release-workers: policy/v1beta1 PodDisruptionBudget was removed in Kubernetes 1.25: "
        "use policy/v1 PodDisruptionBudget [removed-api]"
    ) in out, out
    assert "no schema" not in out and "--crd" not in out, out


def test_a_deprecated_api_can_be_exempted_and_the_exemption_goes_stale(chart, tmp_path, capsys):
    (chart / "templates" / "flow.yaml").write_text(FLOW_SCHEMA.split("\n", 2)[2])
    code, out = _validate(capsys, str(chart.parent), "--kube-version", "1.30.0")
    assert "FlowSchema/training: flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is deprecated since 1.29" in out, out
    assert "[deprecated-api]" in out, out  # a warning: whether it fails the run is the level's business
    exemptions = tmp_path / "ex.yaml"
    exemptions.write_text(
        "budget:\n  deprecated-api:\n    reason: clusters still on 1.30\n    objects: ['FlowSchema/*']\n"
    )
    code, out = _validate(capsys, str(chart.parent), "--kube-version", "1.30.0", "--exemptions", str(exemptions))
    assert code == 0 and "deprecated-api" not in out, out
    (chart / "templates" / "flow.yaml").write_text(
        FLOW_SCHEMA.split("\n", 2)[2].replace("flowcontrol.apiserver.k8s.io/v1beta3", "flowcontrol.apiserver.k8s.io/v1")
    )
    code, out = _validate(capsys, str(chart.parent), "--kube-version", "1.30.0", "--exemptions", str(exemptions))
    assert code == 1 and "budget.deprecated-api covers no finding in any scenario" in out, out


def test_the_json_is_package_data():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"data/*.json"' in pyproject
    assert json.loads((ROOT / "src" / "dlcharts" / "data" / "api-lifecycle.json").read_text()) == apilifecycle.data()
