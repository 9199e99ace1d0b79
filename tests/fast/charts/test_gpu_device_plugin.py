"""gpu-device-plugin: the rendered config is what NVIDIA's plugin reads, and misplaced keys never pass."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest
import yaml
from jsonschema import Draft7Validator

from dlcharts.errors import RenderError
from dlcharts.helm import find_helm
from tests.support import CHARTS

CHART = CHARTS / "gpu-device-plugin"
NVIDIA_VALUES = CHART / "ci" / "07-nvidia-chart-values.yaml"
CONFIG_SCHEMA = json.loads((CHART / "files" / "config.schema.json").read_text())


def plugin_config(rendered):
    """The config file the plugin loads: CONFIG_FILE/DEFAULT_CONFIG from the DaemonSet, data from the ConfigMap."""
    daemonset = rendered.get("DaemonSet", "release-device-plugin").body
    plugin = next(c for c in daemonset["spec"]["template"]["spec"]["containers"] if c["name"] == "nvidia-device-plugin")
    env = {e["name"]: e.get("value") for e in plugin.get("env") or []}
    init = next(
        c for c in daemonset["spec"]["template"]["spec"]["initContainers"] if c["name"] == "config-manager-init"
    )
    default = next(e["value"] for e in init["env"] if e["name"] == "DEFAULT_CONFIG")
    (configmap,) = [cm for cm in rendered.of_kind("ConfigMap") if cm.name.endswith("-configs")]
    return env, yaml.safe_load(configmap.body["data"][default])


def test_time_slicing_x4_asks_the_plugin_for_4_replicas(render):
    rendered = render(CHART, values_files=[CHART / "ci" / "02-time-slicing-4-values.yaml"])
    env, config = plugin_config(rendered)
    assert env["CONFIG_FILE"]
    assert config["version"] == "v1"
    assert config["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert "flags" not in config or "renameByDefault" not in config["flags"]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"config": {"map": {"default": {"flags": {"renameByDefault": True}}}}}, "renameByDefault"),
        ({"config": {"map": {"default": {"sharing": {"timeSlicing": {"renameByDefualt": True}}}}}}, "renameByDefualt"),
        ({"config": {"map": {"default": {"sharing": {"timeSlicing": {"resources": [
            {"name": "nvidia.com/gpu", "replicas": 0}]}}}}}}, "replicas"),
        ({"config": {"map": {"default": {"sharing": {
            "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
            "mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}}}}}, "mutually exclusive"),
        ({"migStrategie": "mixed"}, "migStrategie"),
        ({"draDriver": {"enabled": True}}, "DRA"),
    ],
    ids=["misplaced-renameByDefault", "typo-in-sharing", "zero-replicas", "timeslicing-and-mps", "top-level-typo",
         "dra-coexistence"],
)  # fmt: skip
def test_misplaced_or_unknown_config_is_refused_at_render_time(values, expected, render):
    with pytest.raises(RenderError) as info:
        render(CHART, values=values)
    assert expected in info.value.stderr, info.value.stderr


def test_default_affinity_targets_gpu_nodes_only(render):
    daemonset = render(CHART).get("DaemonSet", "release-device-plugin").body
    spec = daemonset["spec"]["template"]["spec"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    keys = {expr["key"] for term in terms for expr in term["matchExpressions"]}
    assert {"nvidia.com/gpu.present", "feature.node.kubernetes.io/pci-10de.present"} <= keys
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["priorityClassName"] == "system-node-critical"


def test_servicemonitor_only_with_the_prometheus_operator_api(render):
    scenario = CHART / "ci" / "06-gfd-metrics-values.yaml"
    without = render(CHART, values_files=[scenario])
    with_api = render(CHART, values_files=[scenario], api_versions=["monitoring.coreos.com/v1/ServiceMonitor"])
    assert not without.of_kind("ServiceMonitor")
    assert len(with_api.of_kind("ServiceMonitor")) == 1


def refusal(render, values=None, set=()):  # noqa: A002 - mirrors the render fixture
    """helm's refusal of these values (its stderr); the render must fail."""
    with pytest.raises(RenderError) as info:
        render(CHART, values=values, set=set)
    return info.value.stderr


def problems(stderr):
    """The messages of the chart's own refusal ("gpu-device-plugin values are invalid:" then one per line)."""
    assert "gpu-device-plugin values are invalid:" in stderr, stderr
    return [line[len("  - ") :] for line in stderr.splitlines() if line.startswith("  - ")]


def as_objects(values):
    """The same values with every string entry of config.map written as an object (this chart's own form)."""
    out = copy.deepcopy(values)
    out["config"]["map"] = {name: yaml.safe_load(text) for name, text in values["config"]["map"].items()}
    return out


def test_values_written_for_nvidias_chart_render_as_the_same_configs_as_objects(render):
    nvidia = yaml.safe_load(NVIDIA_VALUES.read_text())
    assert all(isinstance(entry, str) for entry in nvidia["config"]["map"].values()), "the fixture keeps NVIDIA's form"
    from_strings = render(CHART, values_files=[NVIDIA_VALUES])
    from_objects = render(CHART, values=as_objects(nvidia))
    assert from_strings.text == from_objects.text
    data = from_strings.get("ConfigMap", "release-configs").body["data"]
    assert yaml.safe_load(data["default"]) == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert yaml.safe_load(data["ts"]) == {
        "version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}
    }  # fmt: skip
    # The rest of the file took effect too.
    env, config = plugin_config(from_strings)
    assert (env["MIG_STRATEGY"], env["FAIL_ON_INIT_ERROR"], env["DEVICE_LIST_STRATEGY"]) == ("none", "true", "envvar")
    assert config == yaml.safe_load(data["default"])
    spec = from_strings.get("DaemonSet", "release-device-plugin").body["spec"]["template"]["spec"]
    assert spec["runtimeClassName"] == "nvidia"
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    # compatWithCPUManager: null (NVIDIA's default) is false: the plugin is not privileged.
    assert not any(c.get("securityContext", {}).get("privileged") for c in spec["containers"])
    assert from_strings.get("DaemonSet", "release-gpu-feature-discovery")


@pytest.mark.parametrize(
    ("text", "detail"),
    [("version: v1\nflags: [none\n", "did not find expected"), ("- version: v1\n", "cannot unmarshal array"),
     ("time-slicing x4", "cannot unmarshal string")],
    ids=["invalid-yaml", "a-list", "a-scalar"],
)  # fmt: skip
def test_a_config_string_that_is_not_a_yaml_mapping_is_refused_naming_the_entry(text, detail, render):
    (message,) = problems(refusal(render, {"config": {"map": {"ts": text}}}))
    assert message.startswith("config.map.ts: the string is not a YAML mapping"), message
    assert detail in message


BAD_CONFIGS = {
    "misplaced-renameByDefault": {"version": "v1", "flags": {"renameByDefault": True}},
    "typo": {"sharing": {"timeSlicing": {"renameByDefualt": True, "resources": [{"name": "gpu", "replicas": 2}]}}},
    "one-replica": {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}},
    "replicas-as-text": {"sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": "4"}]}}},
    "unknown-mig-strategy": {"version": "v1", "flags": {"migStrategy": "nonee"}},
    "version-2": {"version": "v2"},
    "timeslicing-and-mps": {"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]},
                                        "mps": {"resources": [{"name": "gpu", "replicas": 2}]}}},
    "mig-profile-without-mixed": {"sharing": {"timeSlicing": {"resources": [{"name": "mig-1g.10gb", "replicas": 2}]}}},
}  # fmt: skip


@pytest.mark.parametrize("config", BAD_CONFIGS.values(), ids=BAD_CONFIGS)
def test_a_config_string_gets_the_same_refusal_as_the_same_config_as_an_object(config, render):
    as_object = problems(refusal(render, {"config": {"map": {"default": config}}}))
    as_string = problems(refusal(render, {"config": {"map": {"default": yaml.safe_dump(config)}}}))
    assert as_object
    assert as_string == as_object
    assert all(message.startswith("config.map.default") for message in as_object), as_object


CONFIGS = [
    {}, {"version": "v1"}, {"version": "v2"}, {"flags": {"failOnInitError": "yes"}},
    {"flags": {"plugin": {"deviceListStrategy": ["envvar", "cdi-cri"]}}},
    {"flags": {"plugin": {"deviceListStrategy": ["envvar", "envvar"]}}},
    {"flags": {"plugin": {"deviceListStrategy": "nope"}}}, {"flags": {"plugin": {"cdiAnnotationPrefix": ""}}},
    {"flags": {"gfd": {"sleepInterval": "60s"}}}, {"flags": {"gfd": {"sleepInterval": "60"}}},
    {"flags": {"nvidiaDriverRoot": "/"}}, {"sharing": 5}, {"sharing": {"timeSlicing": {}}},
    {"sharing": {"timeSlicing": {"resources": []}}},
    {"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]}}},
    {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/GPU", "replicas": 2}]}}},
    {"sharing": {"mps": {"failRequestsGreaterThanOne": True, "resources": [{"name": "gpu", "replicas": 2.5}]}}},
    {"sharing": {"mps": {"resources": [{"name": "gpu", "replicas": 2.0, "devices": "all"}]}}},
]  # fmt: skip


@pytest.mark.parametrize("form", ["object", "string"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: json.dumps(c, sort_keys=True))
def test_the_chart_checks_configs_as_a_json_schema_validator_does(config, form, render):
    """The chart's template-side checker agrees with a real JSON Schema validator on files/config.schema.json
    (these configs break no cross-field rule, so the schema alone decides)."""
    valid = not list(Draft7Validator(CONFIG_SCHEMA).iter_errors(config))
    entry = config if form == "object" else yaml.safe_dump(config)
    try:
        render(CHART, values={"config": {"map": {"default": entry}}})
    except RenderError as exc:
        assert not valid, f"refused a config the schema accepts: {exc.stderr}"
        assert all(m.startswith("config.map.default") for m in problems(exc.stderr)), exc.stderr
    else:
        assert valid, f"accepted a config the schema refuses: {config}"


def test_timeslicing_with_mps_is_refused_with_both_paths_and_the_fix(render):
    config = BAD_CONFIGS["timeslicing-and-mps"]
    (message,) = problems(refusal(render, {"config": {"map": {"default": config}}}))
    assert message.startswith("config.map.default.sharing: timeSlicing and mps are mutually exclusive"), message
    assert "remove config.map.default.sharing.timeSlicing or config.map.default.sharing.mps" in message
    # Helm 3's schema engine wrapped the former schema rule in "must be one of the following"; it is the
    # template's message now, the same under Helm 3 and Helm 4 (CI runs this file under both).
    assert "must be one of" not in message and "value must be" not in message


DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("setting", "path", "repository", "tag"),
    [("image.repository=nvcr.io/nvidia/k8s-device-plugin:v0.20.0", "image.repository",
      "nvcr.io/nvidia/k8s-device-plugin", "v0.20.0"),
     ("image.repository=localhost:5000/nvidia/k8s-device-plugin:v0.20.0", "image.repository",
      "localhost:5000/nvidia/k8s-device-plugin", "v0.20.0"),
     (f"dcgmExporter.image.repository=nvcr.io/nvidia/k8s/dcgm-exporter@{DIGEST}", "dcgmExporter.image.repository",
      "nvcr.io/nvidia/k8s/dcgm-exporter", None)],
    ids=["tag", "tag-after-registry-port", "digest"],
)  # fmt: skip
def test_an_image_repository_with_a_tag_or_digest_is_refused_with_the_fix(setting, path, repository, tag, render):
    """The one rule of dl-common (dl-common.validate.image), as in the training charts."""
    (message,) = problems(refusal(render, set=[setting]))
    tag_path = path.replace(".repository", ".tag")
    assert message.startswith(f"{path} is "), message
    assert f"{path}={repository}" in message
    assert (f"{tag_path}={tag}" if tag else f"give the version in {tag_path}") in message


def test_a_registry_port_is_not_a_tag(render):
    settings = ["image.repository=localhost:5000/nvidia/k8s-device-plugin", "image.tag=v0.20.0"]
    spec = render(CHART, set=settings).get("DaemonSet", "release-device-plugin").body["spec"]["template"]["spec"]
    (plugin,) = [c for c in spec["containers"] if c["name"] == "nvidia-device-plugin"]
    assert plugin["image"] == "localhost:5000/nvidia/k8s-device-plugin:v0.20.0"


@pytest.mark.parametrize("scenario", ["01-default", "03-mps", "05-named-configs", "06-gfd-metrics"])
def test_notes_name_the_namespace_in_every_command_on_the_release(scenario, chart_renderer):
    """NOTES as `helm install` prints them. Helm 3 renders NOTES only against a cluster, so this renders them
    with the pinned Helm 4 (client-side dry run, no cluster) in both Helm sessions."""
    chart_renderer.ensure_dependencies(CHART)
    values = CHART / "ci" / f"{scenario}-values.yaml"
    proc = find_helm("helm-v4.3.1").run(
        ["install", "nvdp", str(CHART), "-n", "gpu-system", "--dry-run=client", "-f", str(values)],
        env={"KUBECONFIG": os.devnull},
    )  # fmt: skip
    notes = proc.stdout.split("\nNOTES:\n", 1)[1]
    commands = re.findall(r"\b(?:helm|kubectl) [^\n]*", notes)
    helm_on_release = [c for c in commands if c.startswith("helm ") and " nvdp" in c]
    namespaced = [c for c in commands if re.match(r"kubectl (?:-n \S+ )?(?:logs|port-forward|get daemonset)", c)]
    assert helm_on_release and namespaced, notes
    for command in helm_on_release + namespaced:
        assert re.search(r"(?:-n|--namespace) gpu-system\b", command), command


def test_the_parameter_table_shows_real_defaults():
    """No `{}` or `[]` in the README's Value column for a parameter whose default is not empty, and the sentence
    that says the table is generated comes before it."""
    readme = (CHART / "README.md").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    section = readme.split("\n## Parameters\n", 1)[1]
    assert section.index("The tables below are generated") < section.index("| Name")
    rows = re.findall(r"^\| `([^`]+)` +\|.*\| `(.*)` +\|$", section, flags=re.M)
    assert len(rows) > 50
    for name, shown in rows:
        default = values
        for key in re.findall(r"[^.\[\]]+", name):
            default = default[int(key)] if isinstance(default, list) else default[key]
        if shown in ("{}", "[]"):
            assert default in ({}, []), f"{name}: the table shows {shown}, the default is {default!r}"


def test_the_dcgm_exporter_policy_stays_closed_until_metrics_from_names_a_scraper(render, find_problems):
    rendered = render(CHARTS / "gpu-device-plugin", set=["dcgmExporter.enabled=true"])
    (policy,) = rendered.of_kind("NetworkPolicy")
    assert policy.body["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "dcgm-exporter"
    assert policy.body["spec"]["ingress"] == []
    prometheus = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    values = {"dcgmExporter": {"enabled": True}, "networkPolicy": {"metricsFrom": prometheus}}
    opened = render(CHARTS / "gpu-device-plugin", values=values).of_kind("NetworkPolicy")[0]
    assert opened.body["spec"]["ingress"] == [{"from": prometheus, "ports": [{"port": 9400, "protocol": "TCP"}]}]
    # only the exporter listens: without it there is nothing to cover; turned off, the check says so
    assert render(CHARTS / "gpu-device-plugin").of_kind("NetworkPolicy") == []
    off = render(CHARTS / "gpu-device-plugin", set=["dcgmExporter.enabled=true", "networkPolicy.enabled=false"])
    caught = {f.object for f in find_problems(off) if f.check == "network-policy"}
    assert caught == {"DaemonSet/release-dcgm-exporter"}


@pytest.mark.parametrize("component", ["devicePlugin", "gfd", "dcgmExporter", "tests"])
def test_a_request_above_its_limit_is_refused_naming_both_values(component, render):
    stderr = refusal(render, set=[f"{component}.resources.requests.memory=64Gi"])
    assert (
        f"{component}.resources.requests.memory is 64Gi but {component}.resources.limits.memory is" in stderr
        and "Kubernetes refuses a request above its limit" in stderr
    ), stderr


@pytest.mark.parametrize(
    ("rolling", "shown"),
    [({"maxUnavailable": 0}, "maxUnavailable 0 and maxSurge 0"),
     ({"maxUnavailable": "0%"}, "maxUnavailable 0% and maxSurge 0"),
     ({"maxUnavailable": "0%", "maxSurge": "0%"}, "maxUnavailable 0% and maxSurge 0%")],
)  # fmt: skip
def test_a_rolling_update_that_replaces_no_pod_is_refused_as_a_percentage_too(rolling, shown, render):
    """Found by the API parity property test: maxUnavailable "0%" passed the chart's check for 0, and the API server
    refused the DaemonSet."""
    (message,) = problems(refusal(render, {"updateStrategy": {"rollingUpdate": rolling}}))
    assert message.startswith(f"updateStrategy.rollingUpdate: {shown} let no pod be replaced"), message
    assert message.endswith("set maxUnavailable: 1."), message
