"""Custom resources judged as the API server judges them: a CRD's root admits metadata whether its schema lists it or
not, and the rules a JSON schema cannot say (x-kubernetes-validations CEL rules, x-kubernetes-list-type map and set
keys) are checked by the apiextensions server's own validation linked into native/k8s-validate (dlcharts.apirules)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import yaml

from dlcharts import apirules, checks
from dlcharts.cli import main
from dlcharts.crdschema import compact, convert
from dlcharts.render import K8sObject, ObjectKey
from dlcharts.schemas import use_crd_schemas, validate_objects

# A hand-written CRD: no apiVersion, kind or metadata under properties (the API server allows them all the same).
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: scalers.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Scaler, plural: scalers, singular: scaler}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              description: a property named description stays, descriptions go
              x-kubernetes-validations:
                - rule: self.minReplicas <= self.maxReplicas
                  message: minReplicas must not exceed maxReplicas
              properties:
                minReplicas: {type: integer}
                maxReplicas: {type: integer}
                description: {type: string}
                ports:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [name]
                  items:
                    type: object
                    required: [name]
                    properties:
                      name: {type: string}
                      port: {type: integer}
                tags:
                  type: array
                  x-kubernetes-list-type: set
                  items: {type: string}
"""
SCALER = """\
apiVersion: example.com/v1
kind: Scaler
metadata:
  name: "{{ .Release.Name }}-scaler"
  labels: {app.kubernetes.io/name: scaler}
spec:
  {{- toYaml .Values.spec | nindent 2 }}
"""
FINE = {"minReplicas": 1, "maxReplicas": 2, "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9}],
        "tags": ["a", "b"]}  # fmt: skip


@pytest.fixture(autouse=True)
def no_crds_left_behind():
    yield
    use_crd_schemas([])


@pytest.fixture(scope="module")
def validator() -> apirules.ApiRules:
    checker = apirules.rules()
    assert checker is not None, "native/k8s-validate is not built: run make tools"
    return checker


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    chart = tmp_path / "charts" / "scaler"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: scaler\nversion: 0.1.0\n")
    (chart / "templates" / "scaler.yaml").write_text(SCALER)
    (tmp_path / "crd.yaml").write_text(CRD)
    return chart


def _validate(capsys, chart: Path, spec: dict, crd: Path) -> tuple[int, str]:
    (chart / "values.yaml").write_text(yaml.safe_dump({"spec": spec}))
    code = main(["validate", str(chart.parent), "--crd", str(crd), "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_crd_whose_schema_lists_no_metadata_validates_a_fine_custom_resource(validator, chart, tmp_path, capsys):
    code, out = _validate(capsys, chart, FINE, tmp_path / "crd.yaml")
    assert code == 0, out
    assert "unknown field 'metadata'" not in out


def test_a_cel_rule_of_the_crd_refuses_a_custom_resource_that_breaks_it(validator, chart, tmp_path, capsys):
    code, out = _validate(capsys, chart, {**FINE, "minReplicas": 5, "maxReplicas": 2}, tmp_path / "crd.yaml")
    assert code == 1, out
    line = "Scaler/release-scaler @ spec: Invalid value: "
    assert line in out and "minReplicas must not exceed maxReplicas [api-rules]" in out, out
    assert _validate(capsys, chart, {**FINE, "minReplicas": 1, "maxReplicas": 2}, tmp_path / "crd.yaml")[0] == 0


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ({**FINE, "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]}, "spec.ports[1]"),
        ({**FINE, "tags": ["a", "a"]}, "spec.tags[1]"),
    ],
    ids=["list-type-map", "list-type-set"],
)
def test_list_type_map_keys_and_set_items_must_be_unique(validator, chart, tmp_path, capsys, spec, path):
    code, out = _validate(capsys, chart, spec, tmp_path / "crd.yaml")
    assert code == 1, out
    assert f"Scaler/release-scaler @ {path}: Duplicate value: " in out and "[api-rules]" in out, out


def _scaler(spec: dict, api_version: str = "example.com/v1") -> K8sObject:
    body = {"apiVersion": api_version, "kind": "Scaler", "metadata": {"name": "s"}, "spec": spec}
    return K8sObject(ObjectKey(api_version, "Scaler", None, "s"), body, "scaler/templates/scaler.yaml")


def test_the_schemas_api_gives_each_rule_once_with_its_field(validator, tmp_path):
    (tmp_path / "crd.yaml").write_text(CRD)
    assert use_crd_schemas([tmp_path / "crd.yaml"]) == [("example.com/v1", "Scaler")]
    kube = f"{apirules.MINOR}.0"
    assert validate_objects([_scaler(FINE)], kube) == []
    broken = {**FINE, "minReplicas": 3, "maxReplicas": 1, "tags": ["x", "x"],
              "ports": [{"name": "a"}, {"name": "a"}]}  # fmt: skip
    findings = validate_objects([_scaler(broken)], kube)
    assert {(f.path, f.check) for f in findings} == {
        ("spec", "api-rules"), ("spec.tags[1]", "api-rules"), ("spec.ports[1]", "api-rules")}, findings  # fmt: skip
    (cel,) = [f for f in findings if f.path == "spec"]
    assert cel.message.endswith("minReplicas must not exceed maxReplicas"), cel
    # a type error is the JSON schema's finding alone: the validator is not asked about that object
    (schema,) = validate_objects([_scaler({**FINE, "minReplicas": "three"})], kube)
    assert (schema.path, schema.check) == ("spec.minReplicas", "schema"), schema


def test_a_crd_the_api_server_refuses_is_a_finding_on_its_custom_resources(validator, tmp_path):
    broken = CRD.replace("self.minReplicas <= self.maxReplicas", "self.minReplicas <=")
    (tmp_path / "crd.yaml").write_text(broken)
    use_crd_schemas([tmp_path / "crd.yaml"])
    findings = validate_objects([_scaler(FINE)], f"{apirules.MINOR}.0")
    assert findings and all(f.check == "api-rules" for f in findings), findings
    assert any(
        "the API server refuses its CustomResourceDefinition scalers.example.com" in f.message
        and "x-kubernetes-validations[0].rule" in f.message
        and "compilation failed" in f.message
        for f in findings
    ), findings


def test_the_bundled_crds_rules_are_checked_too(validator):
    """Kueue's ClusterQueue: resources of a flavor are a list-type map keyed by name, and a CEL rule ties them to
    coveredResources (the bundled CRDs travel with their originals, src/dlcharts/crds/originals)."""
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
            {"name": "cpu", "nominalQuota": "1"}, {"name": "cpu", "nominalQuota": "2"}]}]}]},
    }  # fmt: skip
    obj = K8sObject(ObjectKey(body["apiVersion"], "ClusterQueue", None, "cq"), body, "q/templates/cq.yaml")
    findings = validate_objects([obj], f"{apirules.MINOR}.0")
    paths = {f.path: f.message for f in findings if f.check == "api-rules"}
    assert paths.keys() == {"spec.resourceGroups[0].flavors[0].resources[1]", "spec.resourceGroups[0]"}, findings
    assert "flavors must have the same number of resources as the coveredResources" in paths["spec.resourceGroups[0]"]
    del body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]
    assert validate_objects([obj], f"{apirules.MINOR}.0") == []


def test_rules_a_validator_cannot_check_are_recorded_as_not_run(validator, tmp_path, monkeypatch):
    """A k8s-validate built before custom resource support answers no CRD verdicts: the CRD's rules are recorded as not
    checked (the run fails unless allowed), never silently skipped."""
    (tmp_path / "crd.yaml").write_text(CRD)
    use_crd_schemas([tmp_path / "crd.yaml"])
    monkeypatch.setattr(validator, "use_crds", lambda crds: None)
    checks.reset()
    try:
        validate_objects([_scaler(FINE)], f"{apirules.MINOR}.0")
        (entry,) = checks.missing()
    finally:
        checks.reset()
    assert entry.what == "the CEL and list-type rules of CRD scalers.example.com" and entry.minor == apirules.MINOR


def test_the_root_admits_metadata_apiversion_and_kind_and_never_closes_metadata():
    doc = yaml.safe_load(CRD)
    ((_, schema),) = convert(doc, "crd.yaml")
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["properties"]["apiVersion"]["enum"] == ["example.com/v1"]
    root = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    root["properties"]["metadata"] = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 9}}}
    ((_, schema),) = convert(doc, "crd.yaml")
    assert schema["properties"]["metadata"] == {"type": "object", "properties": {"name": {"type": "string",
                                                                                          "maxLength": 9}}}  # fmt: skip
    kept = compact(doc)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "description" not in kept and "description" in kept["properties"] and kept["x-kubernetes-validations"]


def test_the_bundled_originals_convert_to_the_bundled_schemas():
    """src/dlcharts/crds/originals (the CRDs, for the validator) and the converted schemas beside them are one
    regeneration of native/crds/convert_crds.py."""
    folder = resources.files("dlcharts.crds")
    originals = [json.loads(e.read_text()) for e in folder.joinpath("originals").iterdir() if e.name.endswith(".json")]
    assert len(originals) >= 8
    for doc in originals:
        origin = doc.pop("x-dlcharts-origin")
        for name, schema in convert(doc, origin):
            assert json.loads(folder.joinpath(name).read_text()) == schema, name
