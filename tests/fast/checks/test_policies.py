"""Each policy and invariant fires on the violation it names, stays quiet on a good object, and can be exempted."""

from __future__ import annotations

import copy

import pytest
import yaml

from dlcharts.errors import DLChartsError
from dlcharts.policies import CHECKS, load_exemptions, run_policies, unused_exemptions
from dlcharts.render import parse_manifest

GOOD = """\
---
# Source: c/templates/svc.yaml
apiVersion: v1
kind: Service
metadata: {name: r-train, labels: {app.kubernetes.io/name: c}}
spec:
  clusterIP: None
  selector: {app.kubernetes.io/name: c, app.kubernetes.io/instance: r}
---
# Source: c/templates/ds.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: r-agent}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: c, app.kubernetes.io/instance: r}}
  template:
    metadata: {labels: {app.kubernetes.io/name: c, app.kubernetes.io/instance: r}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: main
          image: registry.example.com:5000/team/agent:1.2.3
          env: [{name: A, value: "1"}, {name: B, value: "2"}]
          resources:
            requests: {cpu: 100m, memory: 64Mi}
            limits: {memory: 64Mi, nvidia.com/gpu: 1}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
"""


def objects(text=GOOD):
    return list(parse_manifest(text).values())


def mutate(fn):
    docs = [d for d in yaml.safe_load_all(GOOD)]
    ds = copy.deepcopy(docs[1])
    fn(ds)
    text = GOOD.split("---\n# Source: c/templates/ds.yaml")[0]
    return objects(text + "---\n# Source: c/templates/ds.yaml\n" + yaml.safe_dump(ds))


def container(ds):
    return ds["spec"]["template"]["spec"]["containers"][0]


def test_good_render_has_no_findings():
    assert run_policies(objects()) == []


CASES = {
    "resources": lambda ds: container(ds)["resources"].pop("requests"),
    "gpu-limits": lambda ds: container(ds)["resources"]["requests"].update({"nvidia.com/gpu": 2}),
    "image-tag": lambda ds: container(ds).update(image="registry.example.com:5000/team/agent"),
    "duplicate-env": lambda ds: container(ds)["env"].append({"name": "A", "value": "3"}),
    "selector-labels": lambda ds: ds["spec"]["selector"]["matchLabels"].update({"helm.sh/chart": "agent-1.0.0"}),
    "dns-names": lambda ds: ds["metadata"].update(name="R_Agent"),
    "security-context": lambda ds: container(ds)["securityContext"].pop("capabilities"),
    "host-access": lambda ds: ds["spec"]["template"]["spec"].update(hostNetwork=True),
    "service-selects": lambda ds: ds["spec"]["template"]["metadata"]["labels"].update(
        {"app.kubernetes.io/instance": "other"}
    ),
    "network-policy": lambda ds: container(ds).update(ports=[{"name": "grpc", "containerPort": 2222}]),
    "named-ports": lambda ds: container(ds).update(readinessProbe={"httpGet": {"path": "/", "port": "htpp"}}),
}


@pytest.mark.parametrize("check_id", sorted(CASES))
def test_each_check_fires_on_its_violation(check_id):
    findings = run_policies(mutate(CASES[check_id]))
    assert check_id in {f.check for f in findings}, findings
    hit = next(f for f in findings if f.check == check_id)
    assert hit.source and hit.object and hit.message


def test_every_registered_check_has_a_case():
    assert set(CHECKS) == set(CASES)


def test_latest_and_root_are_refused():
    def bad(ds):
        container(ds)["image"] = "busybox:latest"
        ds["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 0

    findings = run_policies(mutate(bad))
    messages = " ".join(f.message for f in findings)
    assert "is latest" in messages and "runAsUser other than 0" in messages


def test_indexed_job_hostnames_must_fit():
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x" * 60},
        "spec": {"completionMode": "Indexed", "completions": 1000, "template": {"spec": {"containers": []}}},
    }  # fmt: skip
    text = "---\n# Source: c/j.yaml\n" + yaml.safe_dump(job)
    findings = run_policies(objects(text), checks=["dns-names"])
    assert any("last index" in f.message for f in findings)
    # a '.' is fine in a Job name but not in its pods' hostnames: the API server refuses an Indexed Job named so
    # ("will not able to create pod with invalid DNS label"; found by tests/cluster/api_parity/test_api_parity.py)
    job["metadata"]["name"] = "train.v2"
    (finding,) = run_policies(objects("---\n# Source: c/j.yaml\n" + yaml.safe_dump(job)), checks=["dns-names"])
    assert "pod hostname 'train.v2-999' must be a DNS-1123 label" in finding.message
    del job["spec"]["completionMode"]
    assert run_policies(objects("---\n# Source: c/j.yaml\n" + yaml.safe_dump(job)), checks=["dns-names"]) == []


def test_exemptions_cover_only_their_chart_check_and_objects(tmp_path):
    path = tmp_path / "ex.yaml"
    path.write_text("c:\n  host-access:\n    reason: needs the node network\n    objects: ['DaemonSet/r-*']\n")
    exemptions = load_exemptions(path)["c"]
    objs = mutate(CASES["host-access"])
    assert run_policies(objs, exemptions) == []
    assert unused_exemptions(objects(), exemptions) == exemptions


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("c:\n  host-access: {objects: [x]}\n", "needs a `reason:`"),
        ("c:\n  hostaccess: {reason: r}\n", "unknown check"),
        ("c:\n  host-access: {reason: r, object: [x]}\n", "unknown keys"),
        # a string would be read character by character, and its lone "*" would exempt every object
        (
            "c:\n  host-access: {reason: r, objects: 'Deployment/*'}\n",
            r"ex.yaml: c.host-access.objects: expected a list .* got 'Deployment/\*'; write `objects: \[\"Deployment/",
        ),
        ("c:\n  host-access: {reason: r, objects: [DaemonSet/a, {x: 1}]}\n", "c.host-access.objects: expected a list"),
        ("c:\n  host-access: {reason: r, objects: [DaemonSet/a, '']}\n", "c.host-access.objects: expected a list"),
    ],
)
def test_bad_exemption_files_are_errors(tmp_path, text, message):
    path = tmp_path / "ex.yaml"
    path.write_text(text)
    with pytest.raises(DLChartsError, match=message):
        load_exemptions(path)


def _named(kind: str, name: str, api_version: str = "v1", spec: dict | None = None) -> list:
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
    if spec is not None:
        body["spec"] = spec
    return objects("---\n# Source: c/t.yaml\n" + yaml.safe_dump(body))


# (kind, apiVersion, name, refused): the API server's name rule per kind, Kubernetes 1.35 (see policies._NAME_RULES)
NAMES = [
    ("Deployment", "apps/v1", "d" * 76, False),  # a DNS-1123 subdomain: 253 characters, not 63
    ("DaemonSet", "apps/v1", "my.agent-" + "d" * 70, False),
    ("ConfigMap", "v1", "c" * 253, False),
    ("ConfigMap", "v1", "c" * 254, True),
    ("Secret", "v1", "Upper", True),
    ("Service", "v1", "9lives-kube-state-metrics", True),  # DNS-1035: a letter first
    ("Service", "v1", "lives-9", False),
    ("Service", "v1", "s" * 64, True),
    ("Service", "v1", "a.b", True),
    ("Namespace", "v1", "a.b", True),
    ("ClusterRole", "rbac.authorization.k8s.io/v1", "system:Controller:x", False),  # a path segment name
    ("RoleBinding", "rbac.authorization.k8s.io/v1", "a/b", True),
    ("Job", "batch/v1", "j" * 63, False),
    ("Job", "batch/v1", "j" * 64, True),  # its name becomes the pod template's job-name label value
    ("CronJob", "batch/v1", "c" * 52, False),
    ("CronJob", "batch/v1", "c" * 53, True),
]


@pytest.mark.parametrize(
    ("kind", "api_version", "name", "refused"), NAMES, ids=[f"{k}-{n[:12]}-{len(n)}" for k, _, n, _ in NAMES]
)
def test_name_rules_follow_the_api_server_per_kind(kind, api_version, name, refused):
    findings = [
        f for f in run_policies(_named(kind, name, api_version), checks=["dns-names"]) if f.path == "metadata.name"
    ]
    assert bool(findings) == refused, findings
    if refused:
        assert findings[0].message.startswith(f"{kind} name {name!r} ")


def test_a_statefulset_pod_hostname_must_be_a_dns_label():
    ok = _named("StatefulSet", "s" * 61, "apps/v1", {"replicas": 10})  # s...s-9: 63 characters
    long = _named("StatefulSet", "s" * 61, "apps/v1", {"replicas": 11})  # s...s-10: 64
    assert run_policies(ok, checks=["dns-names"]) == []
    assert "pod hostname 'sss" in run_policies(long, checks=["dns-names"])[0].message


def _pod_security(pod_sc=None, container_sc=None, os_name=None):
    def change(ds):
        spec = ds["spec"]["template"]["spec"]
        if pod_sc is not None:
            spec["securityContext"] = pod_sc
        if container_sc is not None:
            container(ds)["securityContext"] = container_sc
        if os_name:
            spec["os"] = {"name": os_name}

    return [f.message for f in run_policies(mutate(change), checks=["security-context"])]


RESTRICTED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


# (pod securityContext, container securityContext, refused): k8s.io/pod-security-admission 'restricted', policy 1.35
POD_SECURITY = {
    "runAsUser-does-not-stand-in-for-runAsNonRoot": (
        {"runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}, RESTRICTED, "runAsNonRoot: true (here or"),
    "container-runAsNonRoot-false": (
        None, {**RESTRICTED, "runAsNonRoot": False}, "it sets false, which Pod Security refuses"),
    "pod-runAsNonRoot-false-container-true": (
        {"runAsNonRoot": False, "seccompProfile": {"type": "RuntimeDefault"}}, {**RESTRICTED, "runAsNonRoot": True},
        "the pod's securityContext needs runAsNonRoot: true (it sets false"),
    "pod-runAsUser-0-container-1000": (
        {"runAsNonRoot": True, "runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}},
        {**RESTRICTED, "runAsUser": 1000}, "the pod's securityContext needs a runAsUser other than 0"),
    "pod-seccomp-unconfined-container-runtime-default": (
        {"runAsNonRoot": True, "seccompProfile": {"type": "Unconfined"}},
        {**RESTRICTED, "seccompProfile": {"type": "RuntimeDefault"}}, "(it sets Unconfined)"),
    "every-container-runAsNonRoot-true": (
        {"seccompProfile": {"type": "RuntimeDefault"}}, {**RESTRICTED, "runAsNonRoot": True}, None),
}  # fmt: skip


@pytest.mark.parametrize("case", POD_SECURITY)
def test_pod_security_restricted_follows_pod_security_admission(case):
    pod_sc, container_sc, refused = POD_SECURITY[case]
    messages = _pod_security(pod_sc, container_sc)
    if refused is None:
        assert messages == []
    else:
        assert any(refused in m for m in messages), messages


def test_windows_pods_need_runAsNonRoot_but_not_the_linux_only_controls():
    messages = _pod_security({"runAsNonRoot": True}, {}, os_name="windows")
    assert messages == []
    messages = _pod_security({}, {}, os_name="windows")
    assert len(messages) == 1 and "runAsNonRoot: true" in messages[0] and "allowPrivilegeEscalation" not in messages[0]


def test_a_selector_on_stable_labels_of_the_authors_choosing_is_fine():
    """kubebuilder's `control-plane: controller-manager` and the classic `app: x` are stable; only labels that
    change between chart versions or rollouts make a selector a trap."""

    def kubebuilder(ds):
        for labels in (ds["spec"]["selector"]["matchLabels"], ds["spec"]["template"]["metadata"]["labels"]):
            labels.update({"control-plane": "controller-manager", "app": "agent"})

    assert [f for f in run_policies(mutate(kubebuilder)) if f.check == "selector-labels"] == []


LISTENS = CASES["network-policy"]


def policy(spec: dict, name: str = "r") -> str:
    doc = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name}, "spec": spec}
    return "---\n# Source: c/templates/np.yaml\n" + yaml.safe_dump(doc)


def with_policy(spec: dict, change=LISTENS):
    return [*mutate(change), *objects(policy(spec))]


RELEASE = {"matchLabels": {"app.kubernetes.io/name": "c", "app.kubernetes.io/instance": "r"}}
FROM_RELEASE = [{"from": [{"podSelector": RELEASE}]}]


def network_findings(objs):
    return [f.message for f in run_policies(objs, checks=["network-policy"])]


def test_a_listening_pod_needs_an_ingress_network_policy_of_its_release():
    (message,) = network_findings(mutate(LISTENS))
    assert "port 2222 (grpc)" in message and "no NetworkPolicy of the release selects them" in message
    assert network_findings(with_policy({"podSelector": RELEASE, "ingress": FROM_RELEASE})) == []
    assert network_findings(with_policy({"podSelector": {}, "policyTypes": ["Ingress"], "ingress": []})) == []
    # selecting other pods, or governing only egress, leaves the port open
    other = {"matchLabels": {"app.kubernetes.io/instance": "other"}}
    assert network_findings(with_policy({"podSelector": other, "ingress": FROM_RELEASE}))
    assert network_findings(with_policy({"podSelector": RELEASE, "policyTypes": ["Egress"], "egress": []}))


def test_a_rule_without_from_opens_the_port_it_admits_again():
    spec = {"podSelector": RELEASE, "ingress": [*FROM_RELEASE, {"ports": [{"port": 2222}]}]}
    (message,) = network_findings(with_policy(spec))
    assert "port 2222 is open to every source: NetworkPolicy/r spec.ingress[1] has no `from`" in message
    for elsewhere in ({"port": 9090}, {"port": "metrics"}, {"port": 2222, "protocol": "UDP"}):
        assert network_findings(with_policy({"podSelector": RELEASE, "ingress": [{"ports": [elsewhere]}]})) == []
    for same in ({"port": "grpc"}, {"port": 2000, "endPort": 3000}, {"protocol": "TCP"}):
        assert network_findings(with_policy({"podSelector": RELEASE, "ingress": [{"ports": [same]}]}))


def test_pods_behind_a_service_listen_and_a_test_hook_does_not():
    def served(ds):
        ds["kind"], ds["apiVersion"] = "Pod", "v1"
        ds["metadata"]["labels"] = ds["spec"]["template"]["metadata"]["labels"]
        ds["spec"] = ds["spec"]["template"]["spec"]

    svc = yaml.safe_load(GOOD.split("---\n")[1].split("\n", 1)[1])
    svc["spec"]["ports"] = [{"name": "grpc", "port": 2222}]
    text = "---\n# Source: c/templates/svc.yaml\n" + yaml.safe_dump(svc)
    pod = mutate(served)[1:]
    (message,) = network_findings([*objects(text), *pod])
    assert "its pods listen (Service/r-train)" in message
    pod[0].body["metadata"]["annotations"] = {"helm.sh/hook": "test"}
    assert network_findings([*objects(text), *pod]) == []


def test_no_network_policy_covers_a_host_network_pod():
    def host(ds):
        LISTENS(ds)
        ds["spec"]["template"]["spec"]["hostNetwork"] = True

    (message,) = network_findings(with_policy({"podSelector": RELEASE, "ingress": FROM_RELEASE}, change=host))
    assert "on the node's network (hostNetwork), where no NetworkPolicy applies" in message


def serving(change=None):
    """GOOD with the agent listening on a port named http and the Service sending port 80 to it (``change`` edits
    the DaemonSet first)."""

    def listen(ds):
        container(ds)["ports"] = [{"name": "http", "containerPort": 8080}]
        if change:
            change(ds)

    objs = mutate(listen)
    objs[0].body["spec"]["ports"] = [{"port": 80, "targetPort": "http"}]
    return objs


def port_findings(objs):
    return [f for f in run_policies(objs, checks=["named-ports"])]


def test_a_probe_names_a_port_of_its_own_container():
    (finding,) = port_findings(
        serving(lambda ds: container(ds).update(readinessProbe={"httpGet": {"path": "/", "port": "htpp"}}))
    )
    assert (finding.object, finding.path) == (
        "DaemonSet/r-agent", "spec.template.spec.containers[0].readinessProbe.httpGet.port"
    )  # fmt: skip
    assert (
        "readinessProbe.httpGet.port 'htpp' is no port of container 'main' (its named ports: http)" in finding.message
    )
    assert finding.is_error
    for fine in ("http", 8080, "8080"):  # a name it declares; a number (a string of digits is one to the kubelet)
        probe = {"livenessProbe": {"tcpSocket": {"port": fine}}, "startupProbe": {"httpGet": {"port": fine}}}
        assert port_findings(serving(lambda ds, probe=probe: container(ds).update(probe))) == []
    hook = {"lifecycle": {"preStop": {"httpGet": {"port": "admin"}}, "postStart": {"tcpSocket": {"port": "x"}}}}
    (finding,) = port_findings(serving(lambda ds: container(ds).update(hook)))  # a hook's tcpSocket is never run
    assert finding.path.endswith("containers[0].lifecycle.preStop.httpGet.port") and "the hook fails" in finding.message


def test_a_service_target_port_names_a_port_of_the_pods_it_selects():
    assert port_findings(serving()) == []
    objs = serving()
    objs[0].body["spec"]["ports"] = [{"port": 80, "targetPort": "metricz"}, {"port": 81, "targetPort": 8080}]
    (finding,) = port_findings(objs)
    assert (finding.object, finding.path) == ("Service/r-train", "spec.ports[0].targetPort")
    assert "targetPort 'metricz' is no port of the pods it selects (DaemonSet/r-agent; their named ports: http)" in (
        finding.message
    )
    objs[0].body["spec"]["ports"] = [{"port": 80, "targetPort": "http", "protocol": "UDP"}]  # the protocol counts
    (finding,) = port_findings(objs)
    assert "targetPort 'http' (UDP) is no port" in finding.message


def test_a_service_of_pods_the_render_does_not_hold_is_not_judged():
    objs = serving()
    objs[0].body["spec"].update(
        selector={"app.kubernetes.io/instance": "other"}, ports=[{"port": 80, "targetPort": "m"}]
    )
    assert port_findings(objs) == []


def test_a_network_policy_port_names_a_port_of_the_pods_it_is_about():
    web = {"matchLabels": {"app.kubernetes.io/instance": "r"}}
    other = {"matchLabels": {"app.kubernetes.io/instance": "other"}}

    def found(spec):
        return [(f.path, f.message) for f in port_findings([*serving(), *objects(policy(spec))])]

    ((path, message),) = found({"podSelector": web, "ingress": [{"ports": [{"port": "metricz"}, {"port": "http"}]}]})
    assert path == "spec.ingress[0].ports[0].port" and "port 'metricz' is no port of the pods it selects" in message
    ((path, message),) = found(
        {"podSelector": {}, "egress": [{"to": [{"podSelector": web}], "ports": [{"port": "x"}]}]}
    )
    assert path == "spec.egress[0].ports[0].port" and "port 'x' is no port of the pods it sends to" in message
    # judged only where the render holds every pod meant: not every pod of the namespace, not another release's
    assert found({"podSelector": {}, "ingress": [{"ports": [{"port": "metricz"}]}]}) == []
    assert found({"podSelector": other, "ingress": [{"ports": [{"port": "metricz"}]}]}) == []
    for to in ([{"podSelector": web}, {"podSelector": other}], [{"podSelector": web, "namespaceSelector": {}}], []):
        assert found({"podSelector": web, "egress": [{"to": to, "ports": [{"port": "x"}]}]}) == [], to
