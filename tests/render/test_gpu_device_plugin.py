"""gpu-device-plugin: the rendered config is what NVIDIA's plugin reads, and misplaced keys never pass."""

from __future__ import annotations

import pytest
import yaml

from dlcharts.errors import RenderError

from ..conftest import CHARTS

CHART = CHARTS / "gpu-device-plugin"


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
