"""dlcharts.apirules: the API server's create validation (native/k8s-validate, linked from the pinned Kubernetes) as the
offline second pass after the schema; tests/cluster/api_parity compares it with the API server itself."""

from __future__ import annotations

import copy

import pytest

from dlcharts import apirules, findings, native
from dlcharts.render import K8sObject, ObjectKey
from dlcharts.schemas import validate_object

JOB = {
    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
    "spec": {"completionMode": "Indexed", "completions": 2, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.37.0"}]}}},
}  # fmt: skip


@pytest.fixture(scope="module")
def rules() -> apirules.ApiRules:
    checker = apirules.rules()
    assert checker is not None, "native/k8s-validate is not built: run make tools"
    return checker


def mutated(change) -> dict:
    body = copy.deepcopy(JOB)
    change(body)
    return body


def container(body: dict) -> dict:
    return body["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda b: container(b).update(resources={"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}),
         "spec.template.spec.containers[0].resources.requests", "must be less than or equal to cpu limit of 2"),
        (lambda b: container(b).update(resources={"limits": {"memory": "16 GB"}}), "", "quantities must match"),
        (lambda b: b["spec"]["template"]["spec"].update(nodeSelector={"bad key!": "x"}),
         "spec.template.spec.nodeSelector", "name part must consist of alphanumeric characters"),
        (lambda b: container(b).update(name="Main"), "spec.template.spec.containers[0].name", "RFC 1123 label"),
        (lambda b: container(b).update(ports=[{"containerPort": 70000}]),
         "spec.template.spec.containers[0].ports[0].containerPort", "must be between 1 and 65535"),
        (lambda b: container(b).update(readinessProbe={}), "spec.template.spec.containers[0].readinessProbe",
         "must specify a handler type"),
        (lambda b: b["metadata"].update(name="train.v2"), "metadata.name", "invalid DNS label: train.v2-1"),
        (lambda b: container(b).pop("image"), "spec.template.spec.containers[0].image", "Required value"),
    ],
    ids=["request-above-limit", "quantity", "label-key", "container-name", "port", "probe", "indexed-name", "image"],
)  # fmt: skip
def test_the_api_servers_own_rules_refuse_what_schemas_let_through(rules, change, field, message):
    problems = rules.problems(mutated(change))
    assert problems and any(f == field and message in m for f, m in problems), problems


def test_a_valid_object_passes_and_a_fine_unknown_kind_gives_none(rules):
    assert rules.problems(JOB) == []
    assert rules.problems({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}) is None


def test_headless_and_cluster_ip_services_pass_as_the_api_server_allocates_them(rules):
    for spec in ({"clusterIP": "None", "selector": {"a": "b"}}, {"ports": [{"port": 80}], "type": "NodePort"}):
        assert rules.problems({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec}) == []


def test_schema_validation_adds_the_api_rules_of_the_validators_minors_and_of_those_between():
    body = mutated(lambda b: container(b).update(name="Main"))
    obj = K8sObject(ObjectKey("batch/v1", "Job", None, "train"), body, "c/templates/job.yaml")
    (finding,) = validate_object(obj, f"{apirules.MINOR}.0")
    assert finding.check == "api-rules" and finding.path == "spec.template.spec.containers[0].name"
    assert set(apirules.VALIDATORS) == {apirules.MINOR, "1.29"}
    # a minor between them: both refuse the name, so its API server does too
    (between,) = validate_object(obj, "1.32.0")
    assert (between.check, between.path, between.kube_version) == ("api-rules", finding.path, "1.32.0")
    assert [apirules.bounds(m) for m in ("1.29", "1.30", "1.34", "1.35", "1.36")] == [
        None, ("1.29", apirules.MINOR), ("1.29", apirules.MINOR), None, None]  # fmt: skip
    assert validate_object(obj, "1.36.0") == []  # a minor outside them: the schema pass only


def test_the_oldest_minors_validator_holds_that_minors_rules():
    """k8s-validate@oldest links Kubernetes 1.29, whose environment variable names are C-like identifiers; 1.32
    relaxed that (RelaxedEnvironmentVariableValidation), so the pinned validator takes what 1.29 refuses."""
    native.locate([apirules.VALIDATORS["1.29"]], build=True)  # cached; dlcharts cluster build oldest
    body = mutated(lambda b: container(b).update(env=[{"name": "1 epoch", "value": "x"}]))
    obj = K8sObject(ObjectKey("batch/v1", "Job", None, "train"), body, "c/templates/job.yaml")
    (finding,) = validate_object(obj, "1.29.0")
    assert finding.check == "api-rules" and finding.path == "spec.template.spec.containers[0].env[0].name"
    assert "valid environment variable name" in finding.message
    assert validate_object(obj, f"{apirules.MINOR}.0") == []
    # between them, the one that refuses is a warning that says which does and what to do
    (between,) = validate_object(obj, "1.31.0")
    assert (between.check, between.path, findings.error_level(between.check)) == (
        apirules.BETWEEN, finding.path, findings.WARNING)  # fmt: skip
    assert between.message == (
        f"{finding.message} (the API server's rules of 1.29 refuse this, those of {apirules.MINOR} take it; 1.31's own "
        "are not linked here: try it on a 1.31 cluster)"
    )


def test_a_custom_resource_gets_the_metadata_rules_of_the_apiextensions_server(rules):
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"}
    # None, or [] once the bundled CRDs are in force in this process (dlcharts.schemas registers them on first use)
    assert not rules.problems({**group, "metadata": {"name": "gang", "labels": {"team": "a"}}})
    problems = rules.problems({**group, "metadata": {"name": "Gang_1", "labels": {"bad key!": "x"}}})
    assert problems and {field for field, _ in problems} == {"metadata.name", "metadata.labels"}, problems


def test_an_external_name_service_keeps_the_cluster_ip_it_names_and_is_refused_for_it(rules):
    spec = {"type": "ExternalName", "externalName": "example.com", "clusterIP": "None"}
    problems = rules.problems({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec})
    assert problems and problems[0][0] == "spec.clusterIPs", problems  # found by tests/cluster/api_parity


def test_an_update_is_judged_from_the_stored_object(rules):
    stored = mutated(lambda b: b["metadata"].update(namespace="ns", uid="u1", resourceVersion="7",
                                                    creationTimestamp="2026-01-01T00:00:00Z"))  # fmt: skip
    stored["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}
    labels = {
        "batch.kubernetes.io/controller-uid": "u1",
        "batch.kubernetes.io/job-name": "train",
        "controller-uid": "u1",
        "job-name": "train",
    }  # what the API server writes into a Job's template
    stored["spec"]["template"]["metadata"] = {"labels": labels}
    unconditional = copy.deepcopy(stored)
    del unconditional["metadata"]["resourceVersion"]  # the store takes the stored version, as the API server's
    assert rules.update_problems(stored, unconditional) == []
    deadline = {**unconditional, "spec": {**unconditional["spec"], "activeDeadlineSeconds": 60}}
    assert rules.update_problems(stored, deadline) == []
    image = copy.deepcopy(unconditional)
    container(image)["image"] = "busybox:1.36.1"
    problems = rules.update_problems(stored, image)
    assert problems and problems[0][0] == "spec.template" and "field is immutable" in problems[0][1], problems
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}
    assert rules.update_problems(thing, thing) is None
