"""Differential test: the offline verdict of the harness against the real API server's, on generated objects.

Every object of every chart x scenario (rendered for the cluster's Kubernetes version) is sent as it is, then again
with one field mutated; on two clusters: the pinned version's (embedded_cluster) and the oldest minor the charts
support (oldest_cluster, its own kube-apiserver), each against the offline validator of its own minor. Hypothesis
draws the mutations: which class of rule, which object, which field and which value (valid values, near misses and
noise). Each object gets two verdicts:

- the API server's: a create with ``dryRun=All`` in a throwaway namespace (validated and admitted, never stored);
- ours, offline, as ``dlcharts validate`` gives it: the object's schema, then the API server's own create
  validation linked into native/k8s-validate (``dlcharts.apirules``), and the checks ``API_CHECKS``.

A false accept is an object we pass and the API server refuses (a green run that ``helm install`` then fails);
a false reject one we refuse and the API server takes. Both must be 0 in every class. The table per class goes to
reports/api-parity-<minor>.json and to the JUnit report's properties; bench/results.md section 11 keeps a run's,
before (schemas and checks only) and after the validator.
"""

from __future__ import annotations

import collections
import copy
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlcharts import apirules
from dlcharts.cluster import ClusterHandle
from dlcharts.errors import RenderError
from dlcharts.install import Kube
from dlcharts.install.dryrun import dry_run_create, served
from dlcharts.install.kube import status_message
from dlcharts.policies import run_policies
from dlcharts.render import K8sObject, ObjectKey
from dlcharts.schemas import schema_findings, use_crd_schemas, validate_object
from dlcharts.suite import all_scenarios, discover_charts
from dlcharts.utils.kubeversion import minor_text
from tests.support import CHARTS
from tests.support.charts import without_reference_checks
from tests.support.cluster import ensure_crds
from tests.support.values import CROSS_REFERENCES, cross_referenced_values

pytestmark = pytest.mark.cluster

#: the policy checks that stand for API-server rules (names and label syntax, workload selectors); the others are
#: the harness's opinions (security context, resources, image tags, ...), which the API server does not hold
API_CHECKS = ("dns-names", "selector-labels")
#: mutated objects per run (DLCHARTS_PARITY_EXAMPLES overrides; the issue asks for at least 5,000)
EXAMPLES = int(os.environ.get("DLCHARTS_PARITY_EXAMPLES", "5000"))
#: values per chart (on average) the API server judges, drawn as the property tier draws (DLCHARTS_VALUE_SAMPLES)
VALUE_SAMPLES = int(os.environ.get("DLCHARTS_VALUE_SAMPLES", "40"))
#: the share of each count the oldest minor's cluster runs (DLCHARTS_PARITY_OLDEST_SHARE overrides): what differs
#: there is which fields exist, which the samples reach long before the pinned version's full counts; CI's time
#: goes where the pinned version's rules are judged
OLDEST_SHARE = float(os.environ.get("DLCHARTS_PARITY_OLDEST_SHARE", "0.4"))

# --- values: valid ones, near misses and noise -------------------------------------------------------------------

NOISE = st.text(alphabet=st.sampled_from("aZz09-_.:/ @+eE!"), max_size=14)
QUANTITY = st.one_of(
    st.from_regex(r"\A[0-9]{1,4}(\.[0-9]{1,3})?(m|k|M|G|Ki|Mi|Gi|e[0-9])?\Z"),
    st.integers(-3, 10**6),
    NOISE,
)
VALID_QUANTITY = st.from_regex(r"\A[1-9][0-9]{0,3}(m|Mi|Gi)?\Z")
DNS_LABEL = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")
NAME = st.one_of(
    DNS_LABEL,
    st.builds(lambda a, b: f"{a}.{b}", DNS_LABEL, DNS_LABEL),
    st.builds(lambda n: "n" * n, st.integers(50, 260)),
    NOISE,
)
LABEL_KEY = st.one_of(
    st.builds(lambda p, n: f"{p}/{n}", NAME, NAME),
    NAME,
    st.from_regex(r"\A[A-Za-z0-9][-A-Za-z0-9_.]{0,70}\Z"),
)
LABEL_VALUE = st.one_of(st.from_regex(r"\A([A-Za-z0-9][-A-Za-z0-9_.]{0,70})?\Z"), NOISE)
ENUMS = {
    "imagePullPolicy": ["Always", "IfNotPresent", "Never"],
    "protocol": ["TCP", "UDP", "SCTP"],
    "restartPolicy": ["Always", "OnFailure", "Never"],
    "dnsPolicy": ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"],
    "type": ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"],
}

# --- where a mutation lands -------------------------------------------------------------------------------------


def pod_spec(body: dict[str, Any]) -> dict[str, Any] | None:
    spec = body.get("spec") or {}
    if body.get("kind") == "Pod":
        return spec
    template = spec.get("template") or (spec.get("jobTemplate") or {}).get("spec", {}).get("template")
    return (template or {}).get("spec")


def container(body: dict[str, Any]) -> dict[str, Any] | None:
    spec = pod_spec(body)
    return spec["containers"][0] if spec and spec.get("containers") else None


Mutation = Callable[[dict[str, Any], st.DataObject], str | None]  # mutates the body; the field it set, or None
MUTATIONS: dict[str, Mutation] = {}


def mutation(name: str) -> Callable[[Mutation], Mutation]:
    def register(fn: Mutation) -> Mutation:
        MUTATIONS[name] = fn
        return fn

    return register


@mutation("quantity")
def _quantity(body: dict[str, Any], data: st.DataObject) -> str | None:
    if (c := container(body)) is None:
        return None
    resource = data.draw(st.sampled_from(["cpu", "memory", "ephemeral-storage"]))
    value = data.draw(QUANTITY)
    c["resources"] = {"requests": {resource: value}, "limits": {resource: value}}  # equal: only the grammar counts
    return f"resources.{{requests,limits}}.{resource}={value!r}"


@mutation("requests-vs-limits")
def _requests_vs_limits(body: dict[str, Any], data: st.DataObject) -> str | None:
    if (c := container(body)) is None:
        return None
    resource = data.draw(st.sampled_from(["cpu", "memory"]))
    request, limit = data.draw(VALID_QUANTITY), data.draw(VALID_QUANTITY)
    c["resources"] = {"requests": {resource: request}, "limits": {resource: limit}}
    return f"resources.requests.{resource}={request!r} limits.{resource}={limit!r}"


def metadata_key(field: str) -> Mutation:
    """A mutation that adds a drawn key to metadata.<field> (labels or annotations)."""

    def mutate(body: dict[str, Any], data: st.DataObject) -> str | None:
        key = data.draw(LABEL_KEY)
        body["metadata"].setdefault(field, {})[key] = "x"
        return f"metadata.{field} key {key!r}"

    return mutate


MUTATIONS["label-key"] = metadata_key("labels")
MUTATIONS["annotation-key"] = metadata_key("annotations")


@mutation("label-value")
def _label_value(body: dict[str, Any], data: st.DataObject) -> str | None:
    value = data.draw(LABEL_VALUE)
    body["metadata"].setdefault("labels", {})["dlcharts.io/probe"] = value
    return f"metadata.labels value {value!r}"


@mutation("object-name")
def _object_name(body: dict[str, Any], data: st.DataObject) -> str | None:
    body["metadata"]["name"] = name = data.draw(NAME)
    return f"metadata.name={name!r}"


@mutation("container-name")
def _container_name(body: dict[str, Any], data: st.DataObject) -> str | None:
    if (c := container(body)) is None:
        return None
    c["name"] = name = data.draw(NAME)
    return f"containers[0].name={name!r}"


@mutation("port")
def _port(body: dict[str, Any], data: st.DataObject) -> str | None:
    number = data.draw(st.one_of(st.integers(-2, 3), st.integers(65530, 65540), st.integers(1, 65535)))
    if body.get("kind") == "Service" and (body.get("spec") or {}).get("ports"):
        body["spec"]["ports"][0]["port"] = number
        return f"spec.ports[0].port={number}"
    if (c := container(body)) is None:
        return None
    c["ports"] = [{"containerPort": number}]
    return f"containers[0].ports[0].containerPort={number}"


@mutation("port-name")
def _port_name(body: dict[str, Any], data: st.DataObject) -> str | None:
    if (c := container(body)) is None:
        return None
    name = data.draw(st.one_of(st.from_regex(r"\A[a-z0-9-]{1,17}\Z"), NOISE))
    c["ports"] = [{"containerPort": 4321, "name": name}]
    return f"containers[0].ports[0].name={name!r}"


@mutation("env-name")
def _env_name(body: dict[str, Any], data: st.DataObject) -> str | None:
    if (c := container(body)) is None:
        return None
    name = data.draw(st.one_of(st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,10}\Z"), NOISE, st.just("A=B")))
    c["env"] = [*(e for e in c.get("env") or [] if e.get("name") != name), {"name": name, "value": "1"}]
    return f"containers[0].env name {name!r}"


@mutation("enum")
def _enum(body: dict[str, Any], data: st.DataObject) -> str | None:
    c, spec = container(body), pod_spec(body)
    fields = (
        ["type"] if body.get("kind") == "Service" else ["dnsPolicy", "imagePullPolicy", "protocol", "restartPolicy"]
    )
    field = data.draw(st.sampled_from(fields))
    value = data.draw(st.one_of(st.sampled_from(ENUMS[field]), NOISE))
    if field == "type" and body.get("kind") == "Service":
        body["spec"]["type"] = value
        if value == "ExternalName":
            body["spec"]["externalName"] = "example.com"
    elif field in ("restartPolicy", "dnsPolicy") and spec is not None:
        spec[field] = value
    elif field == "imagePullPolicy" and c is not None:
        c[field] = value
    elif field == "protocol" and c is not None:
        c["ports"] = [{"containerPort": 4321, "protocol": value}]
    else:
        return None
    return f"{field}={value!r}"


@mutation("required")
def _required(body: dict[str, Any], data: st.DataObject) -> str | None:
    c = container(body)
    choices = [("metadata", "name")]
    if c is not None:
        choices += [("container", "image"), ("container", "name")]
    if body.get("kind") == "Service" and (body.get("spec") or {}).get("ports"):
        choices.append(("service-port", "port"))
    where, field = data.draw(st.sampled_from(choices))
    target = body["metadata"] if where == "metadata" else c if where == "container" else body["spec"]["ports"][0]
    assert target is not None
    target.pop(field, None)
    return f"{where}.{field} removed"


@mutation("volume-mount")
def _volume_mount(body: dict[str, Any], data: st.DataObject) -> str | None:
    if (c := container(body)) is None or (spec := pod_spec(body)) is None:
        return None
    names = [v["name"] for v in spec.get("volumes") or []]
    name = data.draw(st.one_of(st.sampled_from(names), DNS_LABEL) if names else DNS_LABEL)
    c["volumeMounts"] = [*(c.get("volumeMounts") or []), {"name": name, "mountPath": "/dlcharts-probe"}]
    return f"volumeMounts name {name!r}"


@mutation("selector")
def _selector(body: dict[str, Any], data: st.DataObject) -> str | None:
    selector = ((body.get("spec") or {}).get("selector") or {}).get("matchLabels")
    labels = (((body.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")
    if not selector or not labels or body.get("kind") == "Job":
        return None
    key = data.draw(st.sampled_from(sorted(selector)))
    labels[key] = value = data.draw(st.sampled_from([str(selector[key]), "other"]))
    return f"template label {key}={value!r} under selector {selector}"


@mutation("probe")
def _probe(body: dict[str, Any], data: st.DataObject) -> str | None:
    if (c := container(body)) is None:
        return None
    probe: dict[str, Any] = {"exec": {"command": ["true"]}} if data.draw(st.booleans()) else {}
    for field in ("periodSeconds", "timeoutSeconds", "failureThreshold", "successThreshold"):
        if data.draw(st.booleans()):
            probe[field] = data.draw(st.integers(-1, 3))
    c["readinessProbe"] = probe
    return f"readinessProbe={probe}"


def applies(klass: str, body: dict[str, Any]) -> bool:
    """Whether mutation ``klass`` has a field to set in ``body`` (each class draws among these objects only)."""
    spec = body.get("spec") or {}
    if klass == "selector":
        template = (spec.get("template") or {}).get("metadata") or {}
        return body.get("kind") != "Job" and bool(
            (spec.get("selector") or {}).get("matchLabels") and template.get("labels")
        )
    if klass in ("label-key", "label-value", "annotation-key", "object-name", "required"):
        return True
    if klass in ("port", "enum"):
        return container(body) is not None or (body.get("kind") == "Service" and bool(spec.get("ports")))
    return container(body) is not None


# --- verdicts ---------------------------------------------------------------------------------------------------


def offline_verdict(body: dict[str, Any], kube_version: str) -> list[str]:
    """What ``dlcharts validate`` says of the object: schema errors and the API-rule checks' findings."""
    metadata = body.get("metadata") or {}
    key = ObjectKey(str(body.get("apiVersion")), str(body.get("kind")), None, str(metadata.get("name", "")))
    obj = K8sObject(key, body, "parity")
    findings = [*validate_object(obj, kube_version), *run_policies([obj], checks=API_CHECKS)]
    return [f"{f.path}: {f.message}" for f in findings]


class Server:
    """The API server's verdict: a ``dryRun=All`` create into one namespace; ``kube_version`` is what it runs, as
    the charts are rendered for it ("1.35.0")."""

    def __init__(self, kube: Kube, namespace: str, kube_version: str, share: float = 1.0) -> None:
        self.kube, self.namespace, self.kube_version, self.share = kube, namespace, kube_version, share

    def count(self, full: int) -> int:
        """How many of ``full`` examples this cluster runs."""
        return max(1, round(full * self.share))

    def verdict(self, body: dict[str, Any]) -> tuple[int, str]:
        status, doc = dry_run_create(self.kube, body, self.namespace)
        return status, "" if status in (200, 201) else status_message(doc)


def base_objects(server: Server, render: Callable[..., Any]) -> list[dict[str, Any]]:
    """Every namespaced object the cluster serves of every chart x scenario, rendered for its version, once per
    (kind, body)."""
    seen: dict[str, dict[str, Any]] = {}
    for scenario in all_scenarios(CHARTS):
        for obj in render(scenario, kube_version=server.kube_version):
            if creatable(server.kube, obj) and not obj.is_hook:
                seen.setdefault(json.dumps(obj.body, sort_keys=True), obj.body)
    return list(seen.values())


def creatable(kube: Kube, obj: K8sObject) -> bool:
    """Whether the cluster serves the object's kind, namespaced and with create (not a CRD it lacks: PodGroup,
    ServiceMonitor, ...)."""
    return served(kube, obj) and kube.resource_for(obj.key.api_version, obj.kind).namespaced


@pytest.fixture(scope="module", params=["embedded_cluster", "oldest_cluster"])
def parity(request: pytest.FixtureRequest, render: Callable[..., Any]) -> Iterator[tuple[Server, list[Any]]]:
    cluster: ClusterHandle = request.getfixturevalue(request.param)
    name = f"parity-{uuid.uuid4().hex[:6]}"
    with Kube.from_kubeconfig(cluster.kubeconfig) as kube:
        version = str(kube.get("/version")["gitVersion"]).lstrip("v")
        cluster.create_namespace(name, "privileged")  # Pod Security is test_policy_parity's subject
        try:
            share = OLDEST_SHARE if request.param == "oldest_cluster" else 1.0
            server = Server(kube, name, f"{minor_text(version)}.0", share)
            yield server, base_objects(server, render)
        finally:
            cluster.delete_namespace(name, wait=False)


def test_every_rendered_object_passes_both_validators(parity):
    server, objects = parity
    assert len(objects) > 50, f"only {len(objects)} distinct objects rendered"
    problems = []
    for body in objects:
        status, message = server.verdict(body)
        offline = offline_verdict(body, server.kube_version)
        if status not in (200, 201) or offline:
            problems.append(f"{body['kind']}/{body['metadata']['name']}: server {status} {message}; offline {offline}")
    assert problems == []


class Tally:
    """Outcomes per class of rule, and up to three examples of each disagreement."""

    def __init__(self) -> None:
        self.counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.examples: dict[str, list[dict[str, str]]] = collections.defaultdict(list)

    def record(self, klass: str, field: str, body: dict[str, Any], server: tuple[int, str], offline: list[str]) -> None:
        status, message = server
        counts = self.counts[klass]
        if status not in (200, 201, 400, 422):  # not a verdict on the object (conflict, server error): counted apart
            counts["no verdict"] += 1
            return
        refused, flagged = status in (400, 422), bool(offline)
        outcome = {(True, True): "both refuse", (False, False): "both accept",
                   (True, False): "false accept", (False, True): "false reject"}[(refused, flagged)]  # fmt: skip
        counts[outcome] += 1
        counts["tried"] += 1
        if outcome.startswith("false") and len(self.examples[klass]) < 3:
            self.examples[klass].append({
                "outcome": outcome, "object": f"{body['kind']}/{body['metadata'].get('name')}", "field": field,
                "server": message[:300], "offline": "; ".join(offline)[:300],
            })  # fmt: skip


def test_generated_mutations_get_the_same_verdict_offline_and_from_the_api_server(parity, record_testsuite_property):
    server, objects = parity
    assert apirules.rules(server.kube_version) is not None, f"no validator of Kubernetes {server.kube_version} built"
    tally = Tally()
    pools = {klass: [body for body in objects if applies(klass, body)] for klass in MUTATIONS}
    assert all(pools.values()), {klass: len(pool) for klass, pool in pools.items()}

    @settings(max_examples=server.count(EXAMPLES), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.data())
    def one(data: st.DataObject) -> None:
        klass = data.draw(st.sampled_from(sorted(pools)), label="class")
        body = copy.deepcopy(data.draw(st.sampled_from(pools[klass]), label="object"))
        field = MUTATIONS[klass](body, data)
        assert field is not None, f"{klass} does not apply to {body['kind']}"
        tally.record(klass, field, body, server.verdict(body), offline_verdict(body, server.kube_version))

    one()
    minor = minor_text(server.kube_version)
    table = {klass: dict(counts) for klass, counts in sorted(tally.counts.items())}
    report = Path(f"reports/api-parity-{minor}.json")
    report.parent.mkdir(exist_ok=True)
    doc = {"kube": server.kube_version, "classes": table, "examples": tally.examples}
    report.write_text(json.dumps(doc, indent=1) + "\n")
    for klass, counts in table.items():
        record_testsuite_property(f"api-parity {minor} {klass}", json.dumps(counts, sort_keys=True))
    tried = sum(counts.get("tried", 0) for counts in table.values())
    print(f"\napi parity: {tried} mutated objects, Kubernetes {server.kube_version}")
    for klass, counts in table.items():
        print(f"  {klass:20} {json.dumps(counts, sort_keys=True)}")
    assert tried >= server.count(EXAMPLES) * 0.95, table  # the rest: answers that are no verdict on the object
    false_rejects = {k: tally.examples[k] for k, c in table.items() if c.get("false reject")}
    assert not false_rejects, json.dumps(false_rejects, indent=1)
    missed = {k: tally.examples[k] for k, c in table.items() if c.get("false accept")}
    assert not missed, json.dumps(missed, indent=1)


#: updates per run and cluster (DLCHARTS_PARITY_UPDATES overrides)
UPDATES = int(os.environ.get("DLCHARTS_PARITY_UPDATES", "1000"))
#: the kinds the update test stores and then changes: what the charts render that `helm upgrade` changes in place and
#: that starts no pod of its own (its Jobs are stored suspended)
UPDATE_KINDS = ("Job", "Service", "ConfigMap", "Secret", "ServiceAccount", "NetworkPolicy", "PodDisruptionBudget",
                "Role", "RoleBinding")  # fmt: skip


def _immutable(body: dict[str, Any], data: st.DataObject) -> str | None:
    """A field the API server lets no update change, or a neighbour it does (a Job's deadline, a Service's port)."""
    spec = body.get("spec") or {}
    if body.get("kind") == "Job":
        choice = data.draw(st.sampled_from(["image", "selector", "completionMode", "completions", "deadline"]))
        if choice == "image":
            spec["template"]["spec"]["containers"][0]["image"] = "busybox:1.36.1"
        elif choice == "selector":
            spec.setdefault("selector", {}).setdefault("matchLabels", {})["dlcharts.io/probe"] = "x"
        elif choice == "completionMode":
            spec["completionMode"] = "NonIndexed" if spec.get("completionMode") == "Indexed" else "Indexed"
        elif choice == "completions":
            spec["completions"] = int(spec.get("completions") or 1) + 1
        else:
            spec["activeDeadlineSeconds"] = 86399
        return f"Job {choice}"
    if body.get("kind") == "Service":
        choice = data.draw(st.sampled_from(["clusterIP", "headless", "port"]))
        if choice == "port" and spec.get("ports"):
            spec["ports"][0]["port"] = 4444
        elif choice != "port":
            spec["clusterIP"] = "None" if choice == "headless" else "10.96.77.77"
            spec.pop("clusterIPs", None)
        return f"Service {choice}"
    return None


UPDATE_MUTATIONS: dict[str, Mutation] = {**MUTATIONS, "immutable": _immutable}


def applies_to_update(klass: str, body: dict[str, Any]) -> bool:
    return body.get("kind") in ("Job", "Service") if klass == "immutable" else applies(klass, body)


def test_updates_get_the_same_verdict_offline_and_from_the_api_server(parity, record_testsuite_property):
    """Updates where immutability matters: each object of UPDATE_KINDS is stored for real, then drawn, changed by a
    mutation of any class (and the class ``immutable``: a Job's template, selector, completion mode and count, a
    Service's cluster IP) and sent back as a PUT with ``dryRun=All``. Offline: its schema, the API_CHECKS and
    k8s-validate's update validation from the stored object (``ApiRules.update_problems``)."""
    server, objects = parity
    rules = apirules.rules(server.kube_version)
    assert rules is not None, f"no validator of Kubernetes {server.kube_version} built"
    stored: list[dict[str, Any]] = []
    for i, body in enumerate(b for b in objects if b["kind"] in UPDATE_KINDS):
        if body["kind"] == "Job":
            body = {**body, "spec": {**body["spec"], "suspend": True}}
        res = server.kube.resource_for(str(body["apiVersion"]), str(body["kind"]))
        name = f"u{i}-{body['kind'].lower()}"  # the scenarios render the same names
        body = {**body, "metadata": {**body["metadata"], "namespace": server.namespace, "name": name}}
        resp = server.kube.request("POST", res.path(server.namespace), body=body)
        assert resp.status == 201, (body["kind"], body["metadata"]["name"], status_message(resp.doc))
        stored.append(resp.doc)
    pools = {k: [b for b in stored if applies_to_update(k, b)] for k in UPDATE_MUTATIONS}
    pools = {k: pool for k, pool in pools.items() if pool}
    assert {"immutable", "label-key", "quantity"} <= set(pools), sorted(pools)
    tally = Tally()

    def offline(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
        metadata = new.get("metadata") or {}
        key = ObjectKey(str(new.get("apiVersion")), str(new.get("kind")), None, str(metadata.get("name", "")))
        obj = K8sObject(key, new, "parity")
        findings = [*schema_findings(obj, server.kube_version), *run_policies([obj], checks=API_CHECKS)]
        if findings:
            return [f"{f.path}: {f.message}" for f in findings]
        return [f"{field}: {message}" for field, message in rules.update_problems(old, new) or []]

    @settings(max_examples=server.count(UPDATES), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.data())
    def one(data: st.DataObject) -> None:
        klass = data.draw(st.sampled_from(sorted(pools)), label="class")
        old = data.draw(st.sampled_from(pools[klass]), label="object")
        new = copy.deepcopy(old)
        new["metadata"].pop("resourceVersion", None)  # an unconditional update: the controllers write status meanwhile
        field = UPDATE_MUTATIONS[klass](new, data)
        assert field is not None, f"{klass} does not apply to {new['kind']}"
        res = server.kube.resource_for(str(old["apiVersion"]), str(old["kind"]))
        resp = server.kube.request("PUT", res.path(server.namespace, old["metadata"]["name"]), body=new,
                                   query={"dryRun": "All", "fieldManager": "dlcharts"})  # fmt: skip
        verdict = (resp.status, "" if resp.status in (200, 201) else status_message(resp.doc))
        tally.record(klass, field, new, verdict, offline(old, new))

    one()
    minor = minor_text(server.kube_version)
    table = {klass: dict(counts) for klass, counts in sorted(tally.counts.items())}
    Path(f"reports/api-parity-updates-{minor}.json").write_text(
        json.dumps({"kube": server.kube_version, "classes": table, "examples": tally.examples}, indent=1) + "\n"
    )
    for klass, counts in table.items():
        record_testsuite_property(f"api-parity updates {minor} {klass}", json.dumps(counts, sort_keys=True))
    print(f"\napi parity, updates: Kubernetes {server.kube_version}")
    for klass, counts in table.items():
        print(f"  {klass:20} {json.dumps(counts, sort_keys=True)}")
    assert table["immutable"].get("both refuse", 0) > 0, table["immutable"]  # the class does reach the rules
    assert sum(c.get("tried", 0) for c in table.values()) >= server.count(UPDATES) * 0.95, table
    disagreements = {k: tally.examples[k] for k, c in table.items() if c.get("false reject") or c.get("false accept")}
    assert not disagreements, json.dumps(disagreements, indent=1)


#: the cluster-scoped classes a Pod names that admission looks up when the Pod is created (the RuntimeClass and
#: Priority admission plugins refuse a Pod naming one the cluster lacks): the cluster's state, which no render can
#: know. The values dry-run creates each one a drawn value names, so that its verdict is about the values.
NAMED_CLASSES = {"runtimeClassName": ("node.k8s.io/v1", "RuntimeClass", {"handler": "runc"}),
                 "priorityClassName": ("scheduling.k8s.io/v1", "PriorityClass", {"value": 1000})}  # fmt: skip


def ensure_named_classes(kube: Kube, objects: Any, made: set[tuple[str, str]]) -> None:
    """Create the RuntimeClasses and PriorityClasses that the Pods among ``objects`` name and the cluster lacks
    (labelled app.kubernetes.io/managed-by=dlcharts-tests; a name the API server refuses, such as system-*, stays
    missing). ``made`` remembers the names already seen."""
    for obj in objects:
        spec = pod_spec(obj.body) if obj.kind == "Pod" else None
        for field, (api_version, kind, extra) in NAMED_CLASSES.items():
            name = (spec or {}).get(field)
            if not isinstance(name, str) or not name or (kind, name) in made:
                continue
            made.add((kind, name))
            res = kube.resource_for(api_version, kind)
            if kube.get_or_none(res.path(None, name)) is None:
                labels = {"app.kubernetes.io/managed-by": "dlcharts-tests"}
                body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "labels": labels}, **extra}
                kube.request("POST", res.path(None), body=body)


def test_values_the_charts_accept_render_objects_the_api_server_accepts(
    parity, render, record_testsuite_property, tmp_path_factory
):
    """The property tier's values, sampled: whatever a chart's values.schema.json and templates let through renders
    objects the API server creates. A value the API server would refuse must fail at render time instead.

    The draws that carry a class of cross-references (tests.support.values.CROSS_REFERENCES: a mount and its volume,
    volume names, mount paths, the Job controller's pod labels, the Job's failure and success policies against its
    containers and pod count, spread constraints) are judged both ways: rendered, the API server must
    create every object (else a false accept); refused at render, the same values rendered with the cross-reference
    checks off (tests.support.charts.without_reference_checks) must give an object the API server refuses (else a
    false reject). Refusals for other reasons too (the copy does not render either) are no verdict on the class."""
    server, _ = parity
    tally: collections.Counter[str] = collections.Counter()
    classes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    refused: list[str] = []
    false_rejects: list[str] = []
    unchecked = tmp_path_factory.mktemp("references-off")
    charts = [c for c in discover_charts(CHARTS) if (c / "values.schema.json").is_file()]

    made: set[tuple[str, str]] = set()

    def refusals(objects: Any) -> list[str]:
        ensure_named_classes(server.kube, objects, made)
        out = []
        for obj in (o for o in objects if creatable(server.kube, o)):
            status, message = server.verdict(obj.body)
            tally["objects created (dry run)"] += 1
            if status not in (200, 201):
                out.append(f"{obj.kind}/{obj.name}: {message}")
        return out

    @settings(max_examples=server.count(VALUE_SAMPLES * len(charts)), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.sampled_from(charts).flatmap(lambda chart: st.tuples(st.just(chart), cross_referenced_values(chart))))
    def one(drawn: tuple[Path, tuple[str | None, dict[str, Any]]]) -> None:
        chart, (klass, values) = drawn
        try:
            rendered = render(chart, values=values, kube_version=server.kube_version)
        except RenderError:
            tally[f"{chart.name} refused at render"] += 1
            if klass is None:
                return
            try:
                objects = render(without_reference_checks(chart, unchecked), values=values,
                                 kube_version=server.kube_version)  # fmt: skip
            except RenderError:
                classes[klass]["no verdict"] += 1  # refused for another reason too
                return
            if refusals(objects):
                classes[klass]["both refuse"] += 1
            else:
                classes[klass]["false reject"] += 1
                false_rejects.append(f"{chart.name} values {json.dumps(values)}")
            return
        tally[f"{chart.name} rendered"] += 1
        problems = refusals(rendered)
        refused.extend(f"{chart.name} values {json.dumps(values)}: {problem}" for problem in problems)
        if klass is not None:
            classes[klass]["false accept" if problems else "both accept"] += 1

    one()
    minor = minor_text(server.kube_version)
    for key, count in sorted(tally.items()):
        record_testsuite_property(f"values dry-run {minor} {key}", count)
    for klass, counts in sorted(classes.items()):
        record_testsuite_property(f"values dry-run {minor} class {klass}", json.dumps(counts, sort_keys=True))
    print(f"\nvalues dry-run: {dict(sorted(tally.items()))}")
    for klass, counts in sorted(classes.items()):
        print(f"  {klass:20} {json.dumps(counts, sort_keys=True)}")
    assert tally["objects created (dry run)"] > 0, tally
    assert not refused, "\n".join(refused[:10])
    assert not false_rejects, "\n".join(false_rejects[:10])
    judged = {k: c["both refuse"] + c["both accept"] for k, c in classes.items()}
    assert set(judged) <= set(CROSS_REFERENCES) and sum(judged.values()), dict(classes)
    if server.share >= 1:  # the full count of draws: each class reached a verdict (the oldest minor's share of
        # them, OLDEST_SHARE, may miss one of the six)
        assert set(judged) == set(CROSS_REFERENCES) and all(judged.values()), dict(classes)


def test_the_classes_cover_what_the_issue_names():
    # quantities, label and annotation keys and values, names, ports, env names, enums, requests vs limits, required
    # fields, selectors against template labels, probes, volumes (images: the kubelet's grammar, not the API's)
    assert set(MUTATIONS) >= {"quantity", "label-key", "label-value", "annotation-key", "object-name", "container-name",
                              "port", "port-name", "env-name", "enum", "requests-vs-limits", "required", "selector",
                              "probe", "volume-mount"}  # fmt: skip
    assert all(re.fullmatch(r"[a-z-]+", name) for name in MUTATIONS)
    # values that refer to each other (issue 32): the values test draws these classes of cross-references
    assert set(CROSS_REFERENCES) >= {"volume-mount-name", "volume-name", "mount-path", "job-label", "job-policy",
                                     "topology-spread"}  # fmt: skip


# --- custom resources: a CRD's own rules (x-kubernetes-validations, list-type map and set) ---------------------------

_SCALER_SPEC = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
        {"rule": "self.maxReplicas <= 100",
         "messageExpression": "'maxReplicas above 100' + (self.maxReplicas > 1000 ? ', far above' : '')"},
    ],
    "properties": {
        "minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {
            "type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    },
}  # fmt: skip
#: a hand-written CRD whose schema lists no metadata (the API server allows it at the root all the same)
SCALER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "scalers.parity.dlcharts.io", "labels": {"app.kubernetes.io/managed-by": "dlcharts-tests"}},
    "spec": {"group": "parity.dlcharts.io", "scope": "Namespaced",
             "names": {"kind": "Scaler", "plural": "scalers", "singular": "scaler", "listKind": "ScalerList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": _SCALER_SPEC}}}}]},
}  # fmt: skip
_FINE = {"minReplicas": 1, "maxReplicas": 2, "ports": [{"name": "a", "port": 1}, {"name": "b"}], "tags": ["x", "y"]}
#: each case's spec, named for whether the API server takes it ("fine": without a spec no rule runs) or what refuses it
SCALER_CASES = {
    "fine": _FINE, "cel-message": {**_FINE, "minReplicas": 5}, "cel-message-expression": {**_FINE, "maxReplicas": 1001},
    "list-map": {**_FINE, "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
    "list-set": {**_FINE, "tags": ["x", "x"]}, "fine-without-spec": None,
}  # fmt: skip


def scaler(spec: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "parity.dlcharts.io/v1", "kind": "Scaler", "metadata": {"name": "s"}}
    return body if spec is None else {**body, "spec": spec}


def scaler_verdicts(folder: Path, kube_version: str) -> dict[str, list[str]]:
    """Each case's offline verdict, with SCALER_CRD handed over as ``--crd`` does."""
    (folder / "scaler-crd.yaml").write_text(yaml.safe_dump(SCALER_CRD))
    use_crd_schemas([folder / "scaler-crd.yaml"])
    try:
        return {case: offline_verdict(scaler(spec), kube_version) for case, spec in SCALER_CASES.items()}
    finally:
        use_crd_schemas([])


def test_custom_resources_get_the_same_verdict_offline_and_from_the_api_server(parity, tmp_path):
    server, _ = parity
    ensure_crds(server.kube, [SCALER_CRD])
    offline = scaler_verdicts(tmp_path, server.kube_version)
    verdicts = {case: server.verdict(scaler(spec)) for case, spec in SCALER_CASES.items()}
    accepted = {case: case.startswith("fine") for case in SCALER_CASES}
    assert {case: status in (200, 201) for case, (status, _) in verdicts.items()} == accepted, verdicts
    assert {case: not lines for case, lines in offline.items()} == accepted, (offline, verdicts)


def test_the_custom_resource_cases_are_judged_offline_as_named(tmp_path):
    """No cluster: the cases of the test above, offline (the pinned minor's validator)."""
    offline = scaler_verdicts(tmp_path, f"{apirules.MINOR}.0")
    assert {case: not lines for case, lines in offline.items()} == {c: c.startswith("fine") for c in SCALER_CASES}
    assert any("maxReplicas above 100, far above" in line for line in offline["cel-message-expression"]), offline
