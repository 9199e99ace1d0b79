"""Policies and invariants over a whole render, with per-chart, per-check exemptions from one file.

Each check is a plain function from the rendered objects to findings, registered in ``CHECKS`` under its id.
Exemptions live in one YAML file (``ci/policy-exemptions.yaml`` in this repository)::

    gpu-device-plugin:                 # chart name
      host-access:                     # check id
        reason: the plugin registers through the kubelet's device-plugin socket directory
        objects: ["DaemonSet/*"]       # optional fnmatch patterns on "Kind/name"; absent = every object

A reason is required; an exemption that matches nothing is itself reported, so exemptions cannot rot.

Each check is registered with its kind (dlcharts.findings): an ERROR check finds what the API server or kubelet
would refuse or what breaks the workload (``gpu-limits``, ``duplicate-env``, ``selector-labels``, ``service-selects``,
``named-ports``, ``dns-names``): always a failure. A POLICY check is an opinion (``resources``, ``image-tag``,
``security-context``, ``host-access``, ``network-policy``), whose level (error, warning, off) the author configures
(dlcharts.config).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from dlcharts import findings
from dlcharts.errors import DLChartsError, read_yaml
from dlcharts.findings import ERROR, POLICY, Finding, format_path
from dlcharts.render import K8sObject

Check = Callable[[list[K8sObject]], Iterable[Finding]]
CHECKS: dict[str, Check] = {}
# Warnings: findings about an object the API server still takes. deprecated-api: a built-in API deprecated at the
# target Kubernetes version but still served (dlcharts.apilifecycle); removed-api is an error. api-rules-between: of
# the API server's rules of the two linked minors around the target's, one refuses the object (dlcharts.schemas).
WARNING_CHECKS = ("deprecated-api", "api-rules-between")
# Schema findings an exemption may cover: an object of a kind no schema is known for (a CRD the author cannot
# hand over with --crd), and the warnings. Every other schema finding is a real error and cannot be exempted.
SCHEMA_CHECKS = ("no-schema", *WARNING_CHECKS)

# Labels whose values change from one chart version, release or rollout to the next. A workload's selector is
# immutable, so one that uses them makes the next `helm upgrade` fail ("field is immutable"). Any other key
# (app.kubernetes.io/name, app, kubebuilder's control-plane, ...) is the author's choice.
VOLATILE_SELECTOR_KEYS = frozenset(
    {"helm.sh/chart", "app.kubernetes.io/version", "chart", "version", "pod-template-hash", "controller-revision-hash"}
)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# The name rule the API server applies to each kind: the name function its ValidateObjectMeta call gets, as of
# Kubernetes 1.35 (k8s.io/kubernetes pkg/apis/*/validation, and k8s.io/apimachinery pkg/api/validation for the
# functions themselves). Any other kind, custom resources included, is a DNS-1123 subdomain (NameIsDNSSubdomain).
#   Service: ValidateServiceName = NameIsDNS1035Label (a letter first). KEP-5311's RelaxedServiceNameValidation
#     gate, which allows a DNS-1123 label, is alpha and off by default in 1.34 and 1.35 (beta from 1.36).
#   Namespace: ValidateNamespaceName = NameIsDNSLabel.
#   Role, ClusterRole, RoleBinding, ClusterRoleBinding: ValidateRBACName = path.IsValidPathSegmentName.
#   Deployment, ReplicaSet, DaemonSet, StatefulSet, Job, CronJob, Pod, ConfigMap, Secret, ServiceAccount, ...:
#     NameIsDNSSubdomain (253 characters, dots allowed).
# Then the limits a kind adds on top of its name rule (see _NAME_LIMITS).
_NAME_RULES: dict[str, str] = {
    "Service": "dns-1035-label",
    "Namespace": "dns-1123-label",
    "Role": "path-segment",
    "ClusterRole": "path-segment",
    "RoleBinding": "path-segment",
    "ClusterRoleBinding": "path-segment",
}
# Kubernetes 1.35 limits beyond the name function:
#   CronJob: ValidateCronJob refuses names over 52 characters (DNS1035LabelMaxLength - 11: the controller
#     appends "-<11-digit timestamp>" to name each Job).
#   Job: the API server labels the pod template with batch.kubernetes.io/job-name=<name> (and job-name), and a
#     label value has at most 63 characters, so a longer Job is refused ("spec.template.labels: must be no
#     more than 63 characters").
_NAME_LIMITS = {"CronJob": 52, "Job": 63}


def check(check_id: str, kind: str, description: str) -> Callable[[Check], Check]:
    """Register a check under ``check_id``: ``kind`` is ERROR (the API server or kubelet would refuse what it finds,
    or it breaks the workload: always a failure) or POLICY (an opinion, whose level the author configures)."""

    def register(fn: Check) -> Check:
        CHECKS[check_id] = fn
        findings.register(check_id, kind, description)
        return fn

    return register


@dataclasses.dataclass(frozen=True)
class PodSpecAt:
    """A pod spec inside an object, with the path to it and the labels its pods get."""

    obj: K8sObject
    path: list[Any]
    spec: dict[str, Any]
    labels: dict[str, str]


def pod_specs(obj: K8sObject) -> Iterator[PodSpecAt]:
    body = obj.body
    spec = body.get("spec") or {}
    if obj.kind == "Pod":
        yield PodSpecAt(obj, ["spec"], spec, (body.get("metadata") or {}).get("labels") or {})
    elif obj.kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController"):
        template = spec.get("template") or {}
        yield PodSpecAt(obj, ["spec", "template", "spec"], template.get("spec") or {}, _labels_of(template))
    elif obj.kind == "CronJob":
        template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
        yield PodSpecAt(
            obj, ["spec", "jobTemplate", "spec", "template", "spec"], template.get("spec") or {}, _labels_of(template)
        )
    elif obj.kind == "JobSet":
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            template = (((rj.get("template") or {}).get("spec") or {}).get("template")) or {}
            path = ["spec", "replicatedJobs", i, "template", "spec", "template", "spec"]
            yield PodSpecAt(obj, path, template.get("spec") or {}, _labels_of(template))


def _labels_of(template: dict[str, Any]) -> dict[str, str]:
    return dict((template.get("metadata") or {}).get("labels") or {})


def containers(pod: PodSpecAt) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for i, container in enumerate(pod.spec.get(field) or []):
            yield [*pod.path, field, i], container


def _finding(obj: K8sObject, path: list[Any], message: str, check_id: str) -> Finding:
    return Finding(obj.source, obj.ref(), format_path(path), message, check_id)


def is_gpu_resource(name: str) -> bool:
    return name.startswith("nvidia.com/") or name.startswith("amd.com/") or "gpu" in name.lower()


@check("resources", POLICY, "containers set CPU and memory requests and a memory limit")
def _resources(objects: list[K8sObject]) -> Iterator[Finding]:
    for obj in objects:
        for pod in pod_specs(obj):
            for path, c in containers(pod):
                res = c.get("resources") or {}
                requests, limits = res.get("requests") or {}, res.get("limits") or {}
                missing = [f"requests.{r}" for r in ("cpu", "memory") if r not in requests]
                missing += ["limits.memory"] if "memory" not in limits else []
                if missing:
                    msg = f"container {c.get('name')!r} sets no {', '.join(missing)}; set them so the scheduler and OOM killer treat it predictably"  # noqa: E501
                    yield _finding(obj, [*path, "resources"], msg, "resources")


@check("gpu-limits", ERROR, "a GPU (extended resource) request has an equal limit; the API server refuses any other")
def _gpu_limits(objects: list[K8sObject]) -> Iterator[Finding]:
    for obj in objects:
        for pod in pod_specs(obj):
            for path, c in containers(pod):
                res = c.get("resources") or {}
                requests, limits = res.get("requests") or {}, res.get("limits") or {}
                for name, value in requests.items():
                    if not is_gpu_resource(name):
                        continue
                    if name not in limits:
                        msg = f"GPU resource {name} is requested but not limited; extended resources belong in limits"
                        yield _finding(obj, [*path, "resources", "requests", name], msg, "gpu-limits")
                    elif str(limits[name]) != str(value):
                        msg = f"GPU resource {name}: request {value} differs from limit {limits[name]}; they must be equal"  # noqa: E501
                        yield _finding(obj, [*path, "resources", "requests", name], msg, "gpu-limits")


@check("image-tag", POLICY, "images are pinned to a tag other than latest, or a digest")
def _image_tag(objects: list[K8sObject]) -> Iterator[Finding]:
    for obj in objects:
        for pod in pod_specs(obj):
            for path, c in containers(pod):
                image = str(c.get("image") or "")
                if "@sha256:" in image:
                    continue
                last = image.rsplit("/", 1)[-1]
                tag = last.split(":", 1)[1] if ":" in last else ""
                if not image or not tag or tag == "latest":
                    msg = f"image {image!r} is {'empty' if not image else 'untagged' if not tag else 'latest'}; pin a published tag or a digest"  # noqa: E501
                    yield _finding(obj, [*path, "image"], msg, "image-tag")


@check("duplicate-env", ERROR, "no env var is set twice in a container; Helm 4's server-side apply refuses it")
def _duplicate_env(objects: list[K8sObject]) -> Iterator[Finding]:
    for obj in objects:
        for pod in pod_specs(obj):
            for path, c in containers(pod):
                counts = Counter(str(e.get("name")) for e in c.get("env") or [])
                for name, n in counts.items():
                    if n > 1:
                        msg = f"env var {name} is set {n} times in container {c.get('name')!r}; Helm 4's server-side apply rejects duplicates"  # noqa: E501
                        yield _finding(obj, [*path, "env"], msg, "duplicate-env")


def _selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


@check(
    "selector-labels",
    ERROR,
    "a workload selector matches its pod template (else the API server refuses it) and uses no label whose value "
    "changes between versions (else the next upgrade is refused)",
)
def _selector_labels(objects: list[K8sObject]) -> Iterator[Finding]:
    for obj in objects:
        selector = (obj.body.get("spec") or {}).get("selector")
        if not isinstance(selector, dict) or obj.kind not in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
            continue
        for pod in pod_specs(obj):
            if not _selector_matches(selector, pod.labels):
                msg = f"selector {selector} does not match the pod template labels {pod.labels}"
                yield _finding(obj, ["spec", "selector"], msg, "selector-labels")
        for key in selector.get("matchLabels") or {}:
            if key in VOLATILE_SELECTOR_KEYS:
                msg = (
                    f"selector uses label {key!r}, whose value changes between chart versions or rollouts; a "
                    "selector is immutable, so the next helm upgrade would be refused (select on stable labels "
                    "such as app.kubernetes.io/name and app.kubernetes.io/instance)"
                )
                yield _finding(obj, ["spec", "selector", "matchLabels", key], msg, "selector-labels")


@check("service-selects", ERROR, "a Service's selector selects a pod of the release")
def _service_selects(objects: list[K8sObject]) -> Iterator[Finding]:
    templates = [pod.labels for obj in objects for pod in pod_specs(obj) if not obj.is_hook]
    for obj in objects:
        if obj.kind != "Service":
            continue
        selector = (obj.body.get("spec") or {}).get("selector")
        if not selector:
            if (obj.body.get("spec") or {}).get("type") != "ExternalName":
                yield _finding(
                    obj, ["spec", "selector"], "Service has no selector, so it selects no pod", "service-selects"
                )  # noqa: E501
            continue
        if not any(_selector_matches({"matchLabels": selector}, labels) for labels in templates):
            msg = f"Service selector {selector} matches no pod template of this release"
            yield _finding(obj, ["spec", "selector"], msg, "service-selects")


# A port given by name is looked up where it is used (Kubernetes 1.35), and the API server, which checks only the
# name's grammar, accepts a name found nowhere, which breaks the workload:
#   a probe's httpGet or tcpSocket port, a lifecycle hook's httpGet port: the kubelet looks it up in the container's
#     own ports (pkg/probe ResolveContainerPort): the probe never succeeds, the hook fails. A hook's tcpSocket is
#     never run, and grpc takes a number only.
#   a Service's targetPort: the endpoints controllers look it up, with the Service port's protocol, in the ports of
#     each selected pod's containers (endpointslice FindPort): a pod without it gets no traffic on that port.
#   a NetworkPolicy port: the network plugin looks it up, with its protocol, in the pods the rule is about: for
#     ingress the pods the policy selects, for egress the rule's destinations. A name none declares admits nothing.
# Those pods are judged only where the render holds them all: the release's pods (not its hooks') that a non-empty
# selector matches, in the policy's or Service's namespace. A selector that matches none of them (another
# release's pods), an empty selector (every pod of the namespace) and an egress rule to any other destination
# give no finding. All-digit strings are no names (the API server refuses them as names: a port name has a letter).
_PORT_HANDLERS = (  # (the container's field, its handlers that take a port, what an unknown name does)
    ("livenessProbe", ("httpGet", "tcpSocket"), "the probe never succeeds"),
    ("readinessProbe", ("httpGet", "tcpSocket"), "the probe never succeeds"),
    ("startupProbe", ("httpGet", "tcpSocket"), "the probe never succeeds"),
    ("lifecycle.postStart", ("httpGet",), "the hook fails"),
    ("lifecycle.preStop", ("httpGet",), "the hook fails"),
)
_Pods = list[tuple[K8sObject, PodSpecAt]]  # pod templates of the release, with their objects


def _port_name(value: Any) -> str:
    """``value`` when it names a port, else ""."""
    return value if isinstance(value, str) and value and not value.isdigit() else ""


def _named_container_ports(of: Iterable[dict[str, Any]]) -> set[tuple[str, str]]:
    """The (name, protocol) of every named port of the containers ``of``."""
    return {
        (str(p["name"]), str(p.get("protocol") or "TCP")) for c in of for p in c.get("ports") or [] if p.get("name")
    }


def _port_names(declared: Iterable[tuple[str, str]]) -> str:
    """``named ports: dns/UDP, http`` (a protocol other than TCP named), or ``no named port``."""
    names = sorted(name if protocol == "TCP" else f"{name}/{protocol}" for name, protocol in declared)
    return f"named ports: {', '.join(names)}" if names else "no named port"


def _one_namespace(a: Any, b: Any) -> bool:
    """Whether objects of a release with namespaces ``a`` and ``b`` are in one (an object without one is in the
    release's, so only two different explicit namespaces differ)."""
    return a is None or b is None or a == b


def _namespace(obj: K8sObject) -> Any:
    return (obj.body.get("metadata") or {}).get("namespace")


def _selects_some(selector: Any) -> bool:
    """Whether a label selector is not empty (an empty one selects every pod of the namespace)."""
    return isinstance(selector, dict) and bool(selector.get("matchLabels") or selector.get("matchExpressions"))


@check(
    "named-ports",
    ERROR,
    "a port given by name (a probe's, a lifecycle hook's, a Service's targetPort, a NetworkPolicy's) is one that "
    "the containers it refers to declare",
)
def _named_ports(objects: list[K8sObject]) -> Iterator[Finding]:
    release = [(obj, pod) for obj in objects if not obj.is_hook for pod in pod_specs(obj)]
    for obj in objects:
        yield from _handler_ports(obj)
        if obj.kind == "Service":
            yield from _service_ports(obj, release)
        elif obj.kind == "NetworkPolicy":
            yield from _policy_ports(obj, release)


def _handler_ports(obj: K8sObject) -> Iterator[Finding]:
    """Probes' and lifecycle hooks' port names, each in its container's own ports."""
    for pod in pod_specs(obj):
        for path, c in containers(pod):
            own = _named_container_ports([c])
            for where, actions, outcome in _PORT_HANDLERS:
                handler = c
                for key in where.split("."):
                    handler = handler.get(key) or {}
                for action in actions:
                    name = _port_name((handler.get(action) or {}).get("port"))
                    if name and all(name != declared for declared, _ in own):  # the kubelet ignores the protocol
                        msg = (
                            f"{where}.{action}.port {name!r} is no port of container {c.get('name')!r} (its "
                            f"{_port_names(own)}), so {outcome}; name one of its ports, or give the number"
                        )
                        yield _finding(obj, [*path, *where.split("."), action, "port"], msg, "named-ports")


def _selected(by: K8sObject, selector: dict[str, Any], release: _Pods) -> _Pods:
    """The release's pod templates in ``by``'s namespace that ``selector`` matches."""
    return [
        (obj, pod)
        for obj, pod in release
        if _one_namespace(_namespace(by), _namespace(obj)) and _selector_matches(selector, pod.labels)
    ]


def _service_ports(svc: K8sObject, release: _Pods) -> Iterator[Finding]:
    """A Service's targetPort names, in the pods it selects."""
    spec = svc.body.get("spec") or {}
    if not isinstance(spec.get("selector"), dict) or not spec["selector"]:
        return
    pods = _selected(svc, {"matchLabels": spec["selector"]}, release)
    for i, port in enumerate(spec.get("ports") or []):
        outcome = f"they get no traffic on port {port.get('port')}"
        yield from _unresolved(svc, ["spec", "ports", i, "targetPort"], port, pods, "the pods it selects", outcome)


def _policy_ports(policy: K8sObject, release: _Pods) -> Iterator[Finding]:
    """A NetworkPolicy's port names: an ingress rule's in the pods the policy selects, an egress rule's in its
    destinations when each is a selector of the release's pods."""
    spec = policy.body.get("spec") or {}
    rules: list[tuple[list[Any], dict[str, Any], _Pods, str]] = []
    if _selects_some(spec.get("podSelector")):
        pods = _selected(policy, spec["podSelector"], release)
        rules += [
            (["spec", "ingress", i], r, pods, "the pods it selects") for i, r in enumerate(spec.get("ingress") or [])
        ]
    for i, rule in enumerate(spec.get("egress") or []):
        peers = rule.get("to") or []
        to = [
            _selected(policy, p["podSelector"], release)
            for p in peers
            if set(p) == {"podSelector"} and _selects_some(p["podSelector"])
        ]
        if peers and len(to) == len(peers) and all(to):
            rules.append((["spec", "egress", i], rule, [pod for pods in to for pod in pods], "the pods it sends to"))
    for path, rule, pods, whose in rules:
        for j, port in enumerate(rule.get("ports") or []):
            yield from _unresolved(
                policy, [*path, "ports", j, "port"], port, pods, whose, "the rule admits nothing there"
            )


def _unresolved(
    obj: K8sObject, path: list[Any], entry: dict[str, Any], pods: _Pods, whose: str, outcome: str
) -> Iterator[Finding]:
    """A finding when ``entry``'s port (at ``path``) is a name that no container of ``pods`` declares with its
    protocol; none when no pod is known."""
    field = path[-1]
    name, protocol = _port_name(entry.get(field)), str(entry.get("protocol") or "TCP")
    declared = _named_container_ports(c for _, pod in pods for _, c in containers(pod))
    if name and pods and (name, protocol) not in declared:
        named = repr(name) + (f" ({protocol})" if protocol != "TCP" else "")
        refs = ", ".join(sorted({o.ref() for o, _ in pods}))
        msg = (
            f"{field} {named} is no port of {whose} ({refs}; their {_port_names(declared)}), so {outcome}; name "
            "one of their ports, or give the number"
        )
        yield _finding(obj, path, msg, "named-ports")


@check("dns-names", ERROR, "names, hostnames and label values follow the rules the API server applies to each kind")
def _dns_names(objects: list[K8sObject]) -> Iterator[Finding]:
    for obj in objects:
        name = obj.name
        problem = _name_problem(obj.kind, name)
        if problem:
            yield _finding(obj, ["metadata", "name"], f"{obj.kind} name {name!r} {problem}", "dns-names")
        if obj.kind == "StatefulSet":  # the controller makes each pod's hostname its name, <name>-<ordinal>
            pod_name = f"{name}-{max(int((obj.body.get('spec') or {}).get('replicas') or 1) - 1, 0)}"
            if len(pod_name) > 63 or not _DNS_LABEL.match(pod_name):
                msg = f"pod hostname {pod_name!r} of the last replica must be a DNS-1123 label (at most 63 characters)"
                yield _finding(obj, ["metadata", "name"], msg, "dns-names")
        yield from _label_values(obj, ["metadata", "labels"], (obj.body.get("metadata") or {}).get("labels") or {})
        selector = _selector_label_map(obj)
        if selector is not None:
            yield from _label_values(obj, *selector)
        for pod in pod_specs(obj):
            yield from _label_values(obj, [*pod.path[:-1], "metadata", "labels"], pod.labels)
            for field in ("hostname", "subdomain"):
                value = pod.spec.get(field)
                if value is not None and (len(str(value)) > 63 or not _DNS_LABEL.match(str(value))):
                    yield _finding(obj, [*pod.path, field], f"{field} {value!r} must be a DNS-1123 label", "dns-names")
            if obj.kind == "Job" and (obj.body.get("spec") or {}).get("completionMode") == "Indexed":
                last = int(obj.body["spec"].get("completions") or 1) - 1
                hostname = f"{name}-{last}"
                if len(hostname) > 63:
                    msg = f"pod hostname {hostname!r} of the last index is {len(hostname)} characters; at most 63"
                    yield _finding(obj, ["metadata", "name"], msg, "dns-names")
                elif not _DNS_LABEL.match(hostname):  # a '.' in the name: found by tests/cluster/api_parity/
                    msg = f"pod hostname {hostname!r} must be a DNS-1123 label (a-z, 0-9, '-'): no '.' in the Job name"
                    yield _finding(obj, ["metadata", "name"], msg, "dns-names")


def _name_problem(kind: str, name: str) -> str:
    """What is wrong with ``name`` for an object of ``kind`` (see _NAME_RULES), or ""."""
    rule = _NAME_RULES.get(kind, "dns-1123-subdomain")
    if rule == "path-segment":
        if name in (".", "..") or "/" in name or "%" in name:
            return "must be a path segment name (not '.' or '..', no '/' or '%')"
        return ""
    if rule == "dns-1035-label" and (len(name) > 63 or not _DNS1035_LABEL.match(name)):
        return (
            f"must be a DNS-1035 label (a-z, 0-9, '-'; a letter first, alphanumeric last; at most 63 characters; "
            f"it has {len(name)})"
        )
    if rule == "dns-1123-label" and (len(name) > 63 or not _DNS_LABEL.match(name)):
        return f"must be a DNS-1123 label (a-z, 0-9, '-'; at most 63 characters; it has {len(name)})"
    if rule == "dns-1123-subdomain" and (len(name) > 253 or not _DNS_SUBDOMAIN.match(name)):
        return f"must be a DNS-1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters; it has {len(name)})"
    limit = _NAME_LIMITS.get(kind)
    if limit is not None and len(name) > limit:
        return f"has {len(name)} characters; the API server refuses a {kind} name over {limit}"
    return ""


def _selector_label_map(obj: K8sObject) -> tuple[list[Any], dict[str, Any]] | None:
    """The path and labels of ``obj``'s selector, whose values the API server judges as label values
    (ValidateLabelSelector's matchLabels; a Service's plain map), or None."""
    spec = obj.body.get("spec") or {}
    if obj.kind == "Service":
        path = ["spec", "selector"]
    elif obj.kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        path = ["spec", "selector", "matchLabels"]
    elif obj.kind == "NetworkPolicy":
        path = ["spec", "podSelector", "matchLabels"]
    else:
        return None
    labels: Any = spec
    for key in path[1:]:
        labels = labels.get(key) if isinstance(labels, dict) else None
    return (path, labels) if isinstance(labels, dict) else None


def _label_values(obj: K8sObject, path: list[Any], labels: dict[str, Any]) -> Iterator[Finding]:
    for key, value in labels.items():
        text = "" if value is None else str(value)
        if len(text) > 63 or not _LABEL_VALUE.match(text):
            yield _finding(
                obj,
                [*path, key],
                f"label value {text!r} is not a valid label value (<= 63 characters, alphanumeric at both ends)",
                "dns-names",
            )  # noqa: E501


# Pod Security "restricted" as k8s.io/pod-security-admission checks it at policy version 1.35 (its `latest` on a
# 1.35 API server; staging/src/k8s.io/pod-security-admission/policy in kubernetes/kubernetes):
#   runAsNonRoot (check_runAsNonRoot.go): true at pod level, or on every container; an explicit false at either
#     level is refused even where the other says true; a runAsUser does not stand in for it.
#   runAsUser (check_runAsUser.go): 0 is refused at pod and at container level; unset is allowed.
#   allowPrivilegeEscalation (check_allowPrivilegeEscalation.go): false on every container.
#   capabilities_restricted: drop ALL on every container; add nothing but NET_BIND_SERVICE.
#   seccompProfile_restricted: RuntimeDefault or Localhost at pod level (then a container may leave it unset) or
#     on every container; any other value at either level is refused.
#   The last three do not apply to pods with spec.os.name "windows" (policy 1.25+).
# Not followed: at policy 1.35 runAsNonRoot and runAsUser are skipped for pods with hostUsers: false (user
# namespaces); the policies here know no Kubernetes version, and older policy versions do not skip them.
_SECCOMP_RESTRICTED = ("RuntimeDefault", "Localhost")


def _is_root(uid: Any) -> bool:
    return uid is not None and str(uid).strip() == "0"


@check("security-context", POLICY, "pods meet Pod Security 'restricted'")
def _security_context(objects: list[K8sObject]) -> Iterator[Finding]:
    for obj in objects:
        for pod in pod_specs(obj):
            psc = pod.spec.get("securityContext") or {}
            windows = (pod.spec.get("os") or {}).get("name") == "windows"
            pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
            pod_problems = []
            if psc.get("runAsNonRoot") is False:
                pod_problems.append("runAsNonRoot: true (it sets false, which Pod Security refuses at any level)")
            if _is_root(psc.get("runAsUser")):
                pod_problems.append("a runAsUser other than 0")
            if not windows and pod_seccomp is not None and pod_seccomp not in _SECCOMP_RESTRICTED:
                pod_problems.append(f"seccompProfile.type RuntimeDefault or Localhost (it sets {pod_seccomp})")
            if pod_problems:
                msg = "the pod's securityContext needs " + "; ".join(pod_problems) + " (Pod Security 'restricted')"
                yield _finding(obj, [*pod.path, "securityContext"], msg, "security-context")
            for path, c in containers(pod):
                problems = _container_problems(c.get("securityContext") or {}, psc, windows)
                if problems:
                    msg = f"container {c.get('name')!r} needs " + "; ".join(problems) + " (Pod Security 'restricted')"
                    yield _finding(obj, [*path, "securityContext"], msg, "security-context")


def _container_problems(sc: dict[str, Any], psc: dict[str, Any], windows: bool) -> list[str]:
    """What one container lacks for Pod Security 'restricted', given its pod's securityContext ``psc``."""
    problems = []
    own = sc.get("runAsNonRoot")
    if own is False:
        problems.append("runAsNonRoot: true (it sets false, which Pod Security refuses at any level)")
    elif own is None and psc.get("runAsNonRoot") is not True:
        problems.append("runAsNonRoot: true (here or in the pod's securityContext; a runAsUser does not count)")
    if _is_root(sc.get("runAsUser")):
        problems.append("a runAsUser other than 0")
    if windows:
        return problems
    if sc.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation: false")
    caps = sc.get("capabilities") or {}
    if "ALL" not in (caps.get("drop") or []):
        problems.append("capabilities.drop: [ALL]")
    added = [a for a in caps.get("add") or [] if a != "NET_BIND_SERVICE"]
    if added:
        problems.append(f"no added capabilities (adds {added})")
    seccomp = (sc.get("seccompProfile") or {}).get("type")
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    if seccomp is not None and seccomp not in _SECCOMP_RESTRICTED:
        problems.append(f"seccompProfile.type RuntimeDefault or Localhost (it sets {seccomp})")
    elif seccomp is None and pod_seccomp not in _SECCOMP_RESTRICTED:
        problems.append("seccompProfile.type: RuntimeDefault (here or in the pod's securityContext)")
    return problems


@check("host-access", POLICY, "no host network, PID, IPC, path, port or privileged container")
def _host_access(objects: list[K8sObject]) -> Iterator[Finding]:
    for obj in objects:
        for pod in pod_specs(obj):
            for field in ("hostNetwork", "hostPID", "hostIPC"):
                if pod.spec.get(field):
                    yield _finding(obj, [*pod.path, field], f"{field} is set", "host-access")
            for i, vol in enumerate(pod.spec.get("volumes") or []):
                if "hostPath" in vol:
                    msg = f"volume {vol.get('name')!r} mounts host path {vol['hostPath'].get('path')}"
                    yield _finding(obj, [*pod.path, "volumes", i, "hostPath"], msg, "host-access")
            for path, c in containers(pod):
                if (c.get("securityContext") or {}).get("privileged"):
                    yield _finding(
                        obj,
                        [*path, "securityContext", "privileged"],
                        f"container {c.get('name')!r} is privileged",
                        "host-access",
                    )  # noqa: E501
                for j, port in enumerate(c.get("ports") or []):
                    if port.get("hostPort"):
                        yield _finding(
                            obj, [*path, "ports", j, "hostPort"], f"hostPort {port['hostPort']}", "host-access"
                        )  # noqa: E501


def _ingress_policies(objects: list[K8sObject], labels: dict[str, str], namespace: Any) -> list[K8sObject]:
    """The release's NetworkPolicies that govern ingress to pods labelled ``labels`` in ``namespace``."""
    found = []
    for policy in objects:
        spec = policy.body.get("spec") or {}
        types = spec.get("policyTypes") or ["Ingress"]  # the API server's default always includes Ingress
        if (
            policy.kind == "NetworkPolicy"
            and _one_namespace(_namespace(policy), namespace)
            and "Ingress" in types
            and _selector_matches(spec.get("podSelector") or {}, labels)
        ):
            found.append(policy)
    return found


def _rule_admits_port(rule: dict[str, Any], port: dict[str, Any]) -> bool:
    """Whether an ingress rule's ``ports`` include a container port (no ``ports`` = every port)."""
    if not rule.get("ports"):
        return True
    for allowed in rule["ports"]:
        if (allowed.get("protocol") or "TCP") != (port.get("protocol") or "TCP"):
            continue
        number = allowed.get("port")
        if number is None or number == port.get("name"):
            return True
        if isinstance(number, int) and number <= int(port.get("containerPort") or 0) <= (
            allowed.get("endPort") or number
        ):
            return True
    return False


@check("network-policy", POLICY, "pods that listen are selected by an ingress NetworkPolicy of the release")
def _network_policy(objects: list[K8sObject]) -> Iterator[Finding]:
    """Pods that listen (a containerPort, or selected by a Service of the release) must be selected by an
    ingress NetworkPolicy of the release; without one, every pod in the cluster can connect to them. A policy
    rule that admits every source (no ``from``) to a declared port opens it again."""
    services = [
        svc
        for svc in objects
        if svc.kind == "Service"
        and (svc.body.get("spec") or {}).get("selector")
        and (svc.body.get("spec") or {}).get("ports")
    ]
    for obj in objects:
        namespace = _namespace(obj)
        for pod in pod_specs(obj):
            ports = [(path, p) for path, c in containers(pod) for p in c.get("ports") or []]
            exposed_by = [  # a hook (a helm test pod) carries the release's labels but serves nothing
                svc.ref()
                for svc in services
                if not obj.is_hook and _selector_matches({"matchLabels": svc.body["spec"]["selector"]}, pod.labels)
            ]
            if not ports and not exposed_by:
                continue
            listens = ", ".join(
                [f"port {p.get('containerPort')}" + (f" ({p['name']})" if p.get("name") else "") for _, p in ports]
                + exposed_by
            )
            if pod.spec.get("hostNetwork"):
                msg = (
                    f"its pods listen ({listens}) on the node's network (hostNetwork), where no NetworkPolicy "
                    "applies; any pod and host that reaches the node can connect (exempt it with the reason)"
                )
                yield _finding(obj, [*pod.path, "hostNetwork"], msg, "network-policy")
                continue
            policies = _ingress_policies(objects, pod.labels, namespace)
            if not policies:
                msg = (
                    f"its pods listen ({listens}) but no NetworkPolicy of the release selects them, so every pod "
                    "in the cluster can connect; add one that admits only the peers that need them, or exempt it "
                    "with the reason"
                )
                yield _finding(obj, [*pod.path[:-1], "metadata", "labels"], msg, "network-policy")
                continue
            for path, port in ports:
                for policy in policies:
                    for i, rule in enumerate((policy.body.get("spec") or {}).get("ingress") or []):
                        if not rule.get("from") and _rule_admits_port(rule, port):
                            msg = (
                                f"port {port.get('containerPort')} is open to every source: {policy.ref()} "
                                f"spec.ingress[{i}] has no `from`; name the peers that need it"
                            )
                            yield _finding(obj, path, msg, "network-policy")


@dataclasses.dataclass(frozen=True)
class Exemption:
    chart: str
    check: str
    reason: str
    objects: tuple[str, ...]  # fnmatch patterns on "Kind/name"; empty = all

    def covers(self, finding: Finding) -> bool:
        return finding.check == self.check and (
            not self.objects or any(fnmatch.fnmatchcase(finding.object, p) for p in self.objects)
        )


def load_exemptions(path: Path | None) -> dict[str, list[Exemption]]:
    """Read the exemptions file; a missing reason or an unknown check id is an error, not a silent pass."""
    if path is None or not path.is_file():
        return {}
    data = read_yaml(path) or {}
    if not isinstance(data, dict) or not all(isinstance(checks, dict | None) for checks in data.values()):
        raise DLChartsError(f"{path}: expected `<chart>: {{<check>: {{reason: ..., objects: [...]}}}}` mappings")
    out: dict[str, list[Exemption]] = {}
    for chart, checks in data.items():
        for check_id, spec in (checks or {}).items():
            if check_id not in CHECKS and check_id not in SCHEMA_CHECKS:
                known = ", ".join([*CHECKS, *SCHEMA_CHECKS])
                raise DLChartsError(f"{path}: {chart}.{check_id}: unknown check; known checks: {known}")
            if not isinstance(spec, dict) or not str(spec.get("reason") or "").strip():
                raise DLChartsError(f"{path}: {chart}.{check_id}: every exemption needs a `reason:`")
            unknown = set(spec) - {"reason", "objects"}
            if unknown:
                raise DLChartsError(f"{path}: {chart}.{check_id}: unknown keys {sorted(unknown)}; use reason, objects")
            patterns = spec.get("objects")
            if patterns is not None and (
                not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns)
            ):
                raise DLChartsError(
                    f"{path}: {chart}.{check_id}.objects: expected a list of `Kind/name` patterns, got "
                    f"{patterns!r}; write `objects: [{_example_pattern(patterns)}]`"
                )
            out.setdefault(chart, []).append(Exemption(chart, check_id, str(spec["reason"]), tuple(patterns or ())))
    return out


def _example_pattern(patterns: Any) -> str:
    """A list the user probably meant, for the error message: ``"Deployment/*"`` -> ``"Deployment/*"``."""
    if isinstance(patterns, str) and patterns:
        return f'"{patterns}"'
    return '"Kind/name-*"'


def run_policies(
    objects: Iterable[K8sObject],
    exemptions: Iterable[Exemption] = (),
    checks: Iterable[str] | None = None,
) -> list[Finding]:
    """Run the checks (all by default; ``checks`` names them) over one render and drop what the chart's exemptions
    cover."""
    objs = list(objects)
    exempt = list(exemptions)
    findings: list[Finding] = []
    for check_id in CHECKS if checks is None else checks:
        for finding in CHECKS[check_id](objs):
            if not any(e.covers(finding) for e in exempt):
                findings.append(finding)
    return findings


def unused_exemptions(objects: Iterable[K8sObject], exemptions: Iterable[Exemption]) -> list[Exemption]:
    """Exemptions that cover no finding of this render (candidates for deletion)."""
    objs = list(objects)
    raw = [f for check_id in CHECKS for f in CHECKS[check_id](objs)]
    return [e for e in exemptions if not any(e.covers(f) for f in raw)]
