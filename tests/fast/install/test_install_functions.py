"""The pure parts of dlcharts.install and of the tier's cluster additions, without a cluster: node matching
for DaemonSets, Job outcomes from all conditions, the Pod Security file, argv building, the previous chart
version, and CRDs rebuilt from the converted schemas."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from dlcharts.errors import ClusterError
from dlcharts.helm import find_helm
from dlcharts.install.podsecurity import chart_pod_security, pod_security_for, stricter_level
from dlcharts.install.releases import ChartSource, previous_chart
from dlcharts.install.state import daemonset_nodes, job_outcome, node_matches, pod_gpus
from dlcharts.policies import is_gpu_resource
from tests.support import CHARTS
from tests.support import cluster as cluster_env
from tests.support.cluster import POD_SECURITY


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


GPU_NODE = node("gpu-0", {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8"})
CPU_NODE = node("cpu-0", {"kubernetes.io/os": "linux"})


def affinity(*terms: list[dict]) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


def test_required_affinity_terms_are_ored_and_expressions_anded() -> None:
    spec = {
        "affinity": affinity(
            [{"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In", "values": ["true"]}],
            [
                {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
                {"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["4"]},
            ],
        )
    }
    assert node_matches(spec, GPU_NODE)
    assert not node_matches(spec, CPU_NODE)
    small = node("gpu-s", {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "2"})
    assert not node_matches(spec, small)


def test_node_selector_not_in_does_not_exist_and_match_fields() -> None:
    assert node_matches({"nodeSelector": {"kubernetes.io/os": "linux"}}, CPU_NODE)
    assert not node_matches({"nodeSelector": {"kubernetes.io/os": "windows"}}, CPU_NODE)
    not_gpu = {"affinity": affinity([{"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}])}
    assert node_matches(not_gpu, CPU_NODE) and not node_matches(not_gpu, GPU_NODE)
    fields = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["cpu-0"]}]}
                    ]
                }
            }
        }
    }
    assert node_matches(fields, CPU_NODE) and not node_matches(fields, GPU_NODE)
    empty_term = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}
    }
    assert not node_matches(empty_term, CPU_NODE)


def test_taints_need_tolerations_except_the_ones_daemonsets_always_tolerate() -> None:
    tainted = node("gpu-t", {}, [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    assert not node_matches({}, tainted)
    assert node_matches({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}, tainted)
    assert node_matches({"tolerations": [{"operator": "Exists"}]}, tainted)
    assert not node_matches({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "x"}]}, tainted)
    prefer = node("p", {}, [{"key": "k", "effect": "PreferNoSchedule"}])
    assert node_matches({}, prefer)
    not_ready = node("n", {}, [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])
    assert node_matches({}, not_ready)


def test_daemonset_nodes_reads_the_pod_template() -> None:
    ds = {"spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}}}}
    assert daemonset_nodes(ds, [GPU_NODE, CPU_NODE]) == {"gpu-0"}


@pytest.mark.parametrize(
    ("conditions", "outcome"),
    [
        ([], None),
        ([{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}], "succeeded"),
        ([{"type": "Suspended", "status": "False"}, {"type": "Complete", "status": "True"}], "succeeded"),
        ([{"type": "SuccessCriteriaMet", "status": "True"}], "succeeded"),
        ([{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"}], "failed"),
        ([{"type": "Complete", "status": "False"}, {"type": "Failed", "status": "True", "message": "m"}], "failed"),
    ],
)
def test_job_outcome_reads_every_condition(conditions: list[dict], outcome: str | None) -> None:
    result = job_outcome({"status": {"conditions": conditions}})
    assert (result[0] if result else None) == outcome


def test_chart_pod_security_reads_the_charts_annotations(tmp_path: Path) -> None:
    assert chart_pod_security(CHARTS / "tensorflow-dist").level == "restricted"
    assert chart_pod_security(CHARTS / "gpu-device-plugin").level == "privileged"
    assert "hostPath" in chart_pod_security(CHARTS / "gpu-device-plugin").reason
    assert pod_security_for("cntk-dist", POD_SECURITY).level == "baseline"
    assert pod_security_for("pytorch-dist", POD_SECURITY).level == "restricted"
    assert stricter_level("privileged") == "baseline" and stricter_level("restricted") is None
    chart = tmp_path / "mychart"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("name: mychart\nannotations: {dl-charts/pod-security: priviledged}\n")
    with pytest.raises(ClusterError, match=r"pod-security: 'priviledged' is not one of privileged, baseline"):
        chart_pod_security(chart)
    (chart / "Chart.yaml").write_text("name: mychart\nannotations: {dl-charts/pod-security: baseline}\n")
    with pytest.raises(ClusterError, match=r"needs Pod Security 'baseline' must say why: add annotations.dl-charts/"):
        chart_pod_security(chart)
    (chart / "Chart.yaml").write_text("name: mychart\n")
    assert chart_pod_security(chart).level == "restricted"


def test_chart_source_is_an_argv_list() -> None:
    source = ChartSource(Path("charts/x"), (Path("ci/01-values.yaml"),), ("worker=2",), ('a={"b":1}',))
    assert source.with_values("ps=1").args() == [
        "charts/x",
        "-f",
        "ci/01-values.yaml",
        "--set",
        "worker=2",
        "--set",
        "ps=1",
        "--set-json",
        'a={"b":1}',
    ]


def test_gpu_resources() -> None:
    pod = {
        "spec": {
            "containers": [
                {"resources": {"limits": {"nvidia.com/gpu": "8", "memory": "1Gi"}}},
                {"resources": {"limits": {"nvidia.com/gpu.shared": 1, "amd.com/gpu": "2"}}},
            ]
        }
    }
    assert pod_gpus(pod) == {"nvidia.com/gpu": 8, "nvidia.com/gpu.shared": 1, "amd.com/gpu": 2}
    assert is_gpu_resource("nvidia.com/mig-1g.10gb") and not is_gpu_resource("memory")


@pytest.mark.parametrize("linked", [False, True], ids=["built", "linked"])
def test_previous_chart_is_the_base_commit_when_the_version_differs(tmp_path: Path, linked: bool) -> None:
    """In a throwaway repository: the chart committed on main, bumped to 99.0.0 in the work tree. A base whose
    dl-common is a committed link (charts/dl-common -> ../../dl-common) is used as it is, with no build: a build
    would put a packaged copy beside the link."""
    repo = tmp_path / "repo"
    (repo / "charts").mkdir(parents=True)
    for chart in ("tensorflow-dist", "dl-common"):
        shutil.copytree(CHARTS / chart, repo / "charts" / chart, ignore=shutil.ignore_patterns("charts", "Chart.lock"))
    if linked:
        (repo / "charts" / "tensorflow-dist" / "charts").mkdir()
        (repo / "charts" / "tensorflow-dist" / "charts" / "dl-common").symlink_to(Path("..", "..", "dl-common"))

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base")
    helm = find_helm("helm-v4.3.1")
    chart = repo / "charts" / "tensorflow-dist"
    base_version = str(yaml.safe_load((chart / "Chart.yaml").read_text())["version"])
    library_version = str(yaml.safe_load((repo / "charts" / "dl-common" / "Chart.yaml").read_text())["version"])
    same = previous_chart(helm, chart, tmp_path / "w1")
    assert same.chart == chart and same.version == base_version
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    meta["version"] = "99.0.0"
    (chart / "Chart.yaml").write_text(yaml.safe_dump(meta))
    work = tmp_path / "w2"
    work.mkdir()
    old = previous_chart(helm, chart, work)
    assert old.version == base_version and old.chart == work / "charts" / "tensorflow-dist", old
    assert "at main" in old.description
    vendored = sorted(p.name for p in (old.chart / "charts").iterdir())
    if linked:
        assert vendored == ["dl-common"] and (old.chart / "charts" / "dl-common").is_symlink(), vendored
        assert (old.chart / "charts" / "dl-common").resolve() == (work / "charts" / "dl-common").resolve()
    else:
        assert vendored == [f"dl-common-{library_version}.tgz"], vendored


def test_crds_from_the_converted_schemas_are_structural() -> None:
    crds = {c["metadata"]["name"]: c for c in cluster_env.all_crds()}
    assert {
        "servicemonitors.monitoring.coreos.com",
        "podgroups.scheduling.volcano.sh",
        "podgroups.scheduling.x-k8s.io",
    } <= set(crds)

    def walk(node: object) -> None:
        if isinstance(node, dict):
            assert node.get("additionalProperties") is not False
            assert not (isinstance(node.get("type"), list)), node
            assert "$schema" not in node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for crd in crds.values():
        assert sum(v["storage"] for v in crd["spec"]["versions"]) == 1
        walk(crd["spec"]["versions"])
    pg = crds["podgroups.scheduling.volcano.sh"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    min_resources = pg["properties"]["spec"]["properties"]["minResources"]["additionalProperties"]
    assert min_resources["x-kubernetes-int-or-string"] is True
