"""Fast checks of the cluster's configuration, stages and binary lookup (no cluster needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts.cluster import (
    BINARY_NAMES,
    ClusterConfig,
    EmbeddedCluster,
    NodePool,
    Taint,
    default_node_pools,
    require_binaries,
)
from dlcharts.cluster.config import node_objects, stage_documents
from dlcharts.errors import ClusterError
from dlcharts.host.binaries import (
    ADDON_BINARIES,
    OLDEST_KUBERNETES_VERSION,
    TABLE,
    binary,
    build_binaries,
    control_plane_binaries,
    read_versions,
)
from tests.support import ROOT as REPO


def test_versions_are_pinned_once_for_the_build_and_the_cluster() -> None:
    versions = read_versions()
    assert versions["KUBERNETES_VERSION"].startswith("v1.35.")
    for name, key in {"kube-apiserver": "KUBERNETES_VERSION", "kube-apiserver@oldest": "OLDEST_KUBERNETES_VERSION",
                      "etcd": "ETCD_VERSION", "crane": "CRANE_VERSION", "kueue": "KUEUE_VERSION",
                      "helm-unittest": "HELM_UNITTEST_VERSION"}.items():  # fmt: skip
        assert TABLE[name].version == versions[key], name


def test_binary_cache_layout(tmp_path: Path) -> None:
    b = binary("kube-apiserver", tmp_path)
    assert b.path == tmp_path / "bin" / f"kube-apiserver-{b.version}" / "kube-apiserver"
    old = binary("kube-apiserver@oldest", tmp_path)
    assert old.path == tmp_path / "bin" / f"kube-apiserver-{OLDEST_KUBERNETES_VERSION}" / "kube-apiserver"


def test_the_oldest_minor_is_the_one_the_charts_claim() -> None:
    claims = {(c / "Chart.yaml").read_text().split("kubeVersion:")[1].split()[0] for c in (REPO / "charts").iterdir()}
    assert claims == {f'">={OLDEST_KUBERNETES_VERSION.lstrip("v").rsplit(".", 1)[0]}.0-0"'}
    config = ClusterConfig(name="old", real_node=False, kubernetes_version=OLDEST_KUBERNETES_VERSION)
    config.validate()
    assert control_plane_binaries(OLDEST_KUBERNETES_VERSION) == tuple(
        f"{n}@oldest" if n.startswith("kube-") else n for n in control_plane_binaries()
    )
    assert {
        n["status"]["nodeInfo"]["kubeletVersion"] for n in node_objects(config.node_pools, OLDEST_KUBERNETES_VERSION)
    } == {OLDEST_KUBERNETES_VERSION}
    assert config.control_plane_fingerprint() != ClusterConfig(name="old", real_node=False).control_plane_fingerprint()


def test_missing_binaries_name_each_one_and_the_build_command(tmp_path: Path) -> None:
    with pytest.raises(ClusterError) as err:
        require_binaries(tmp_path)
    message = str(err.value)
    for name in BINARY_NAMES:
        assert name in message
    assert "dlcharts cluster build\n" in message


def test_missing_addons_name_their_build(tmp_path: Path) -> None:
    with pytest.raises(ClusterError) as err:
        require_binaries(tmp_path, ADDON_BINARIES)
    assert "kueue v0.17.0" in str(err.value) and "scheduler-plugins v0.34.7" in str(err.value)
    assert "dlcharts cluster build addons" in str(err.value)


def test_start_without_binaries_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="kube-apiserver"):
        EmbeddedCluster(ClusterConfig(name="nobin", cache=tmp_path)).start()


def test_default_nodes_are_four_h100_nodes_and_two_cpu_nodes() -> None:
    nodes = node_objects(default_node_pools())
    gpu = [n for n in nodes if "nvidia.com/gpu" in n["status"]["allocatable"]]
    cpu = [n for n in nodes if "nvidia.com/gpu" not in n["status"]["allocatable"]]
    assert len(gpu) == 4 and len(cpu) == 2
    for node in gpu:
        labels = node["metadata"]["labels"]
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert labels["nvidia.com/gpu.present"] == "true"
        assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
    for node in cpu:
        assert "nvidia.com/gpu.present" not in node["metadata"]["labels"]


def test_custom_pool_with_other_gpu_resource_and_taint() -> None:
    pool = NodePool(
        name="a100",
        count=2,
        gpus=4,
        gpu_resource="nvidia.com/mig-1g.10gb",
        labels={"nvidia.com/gpu.product": "NVIDIA-A100"},
        taints=(Taint("nvidia.com/gpu", "present"),),
    )
    nodes = node_objects((pool,))
    assert [n["metadata"]["name"] for n in nodes] == ["a100-0", "a100-1"]
    assert nodes[0]["status"]["capacity"]["nvidia.com/mig-1g.10gb"] == "4"
    assert nodes[0]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        (ClusterConfig(name="Bad_Name"), "cluster name"),
        (ClusterConfig(node_pools=(NodePool("gpu", 1, gpus=-1),)), "node_pools[0].gpus"),
        (ClusterConfig(node_pools=(NodePool("gpu", 1, memory="lots"),)), "node_pools[0].memory"),
        (ClusterConfig(node_pools=(NodePool("a", 1), NodePool("a", 1))), "node_pools[1].name"),
        (ClusterConfig(node_pools=(NodePool("a", 0),)), "no nodes"),
        (ClusterConfig(node_pools=(NodePool("a", 1, taints=(Taint("k", effect="Never"),)),)), "effect"),
        (ClusterConfig(real_node_cidr="10.250.7.1/24"), "real_node_cidr: '10.250.7.1/24'"),
        (ClusterConfig(real_node_cidr="10.0.0.0/8"), "real_node_cidr: '10.0.0.0/8'"),
        (ClusterConfig(real_node_cidr="fd00::/64"), "real_node_cidr"),
        (
            ClusterConfig(real_node_cidr="10.250.7.0/27"),
            "real_node_cidr: '10.250.7.0/27' is not an IPv4 network of /16 to /26",
        ),
        (ClusterConfig(real_nodes=0), "real_nodes: 0 is not 1 to 4 .*--no-real-node"),
        (ClusterConfig(real_nodes=5), "real_nodes: 5 is not 1 to 4"),
        (ClusterConfig(kubernetes_version="v1.31.14"), "'v1.31.14' is not one the embedded cluster runs"),
        (ClusterConfig(kubernetes_version=OLDEST_KUBERNETES_VERSION), "cannot have the real node"),
        (ClusterConfig(addons=("kueue", "volcano")), "addons: 'volcano' unknown; choose from kueue, coscheduling"),
    ],
)
def test_bad_config_names_the_field(config: ClusterConfig, fragment: str) -> None:
    with pytest.raises(ClusterError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        config.validate()


def test_stages_cover_nodes_and_pods_and_take_the_run_time() -> None:
    docs = {d["metadata"]["name"]: d for d in stage_documents(pod_run_seconds=0.5)}
    assert {"node-initialize", "node-heartbeat", "pod-ready", "pod-complete", "pod-delete"} <= docs.keys()
    assert docs["pod-complete"]["spec"]["delay"]["durationMilliseconds"] == 500
    owner = [e for e in docs["pod-complete"]["spec"]["selector"]["matchExpressions"] if "ownerReferences" in e["key"]]
    assert owner == [{"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]}]
    assert "exitCode: 0" in docs["pod-complete"]["spec"]["next"]["statusTemplate"]


def test_real_node_network_is_per_cluster_and_its_bridge_name_fits_linux() -> None:
    from dlcharts.cluster.node_layout import Network

    one, other = Network.for_node("dlcharts", "", 0), Network.for_node("other", "", 0)
    assert one.bridge != other.bridge and max(len(one.bridge), len(other.bridge)) <= 15  # IFNAMSIZ - 1
    assert one.cluster_range.startswith("10.250.") and one.cluster_range.endswith(".0/24")
    assert one.subnet == one.cluster_range.replace("/24", "/26") and one.node_ip == one.subnet.replace(".0/26", ".1")


def test_each_real_node_gets_its_own_part_of_the_range_and_bridge() -> None:
    from dlcharts.cluster.node_layout import MAX_REAL_NODES, Network

    nodes = [Network.for_node("x", "10.1.2.0/26", i) for i in range(MAX_REAL_NODES)]
    assert [n.subnet for n in nodes] == ["10.1.2.0/28", "10.1.2.16/28", "10.1.2.32/28", "10.1.2.48/28"]
    assert [n.node_ip for n in nodes] == ["10.1.2.1", "10.1.2.17", "10.1.2.33", "10.1.2.49"]
    assert {n.cluster_range for n in nodes} == {"10.1.2.0/26"}
    assert len({n.bridge for n in nodes}) == MAX_REAL_NODES and all(len(n.bridge) <= 15 for n in nodes)
    assert nodes[0].bridge == Network.for_node("x", "", 0).bridge  # real-0's bridge is named as before


def test_each_real_node_has_its_own_folders_cgroup_and_image_store(tmp_path: Path) -> None:
    from dlcharts.cluster.node_layout import NodeLayout

    first, second = (NodeLayout.of(tmp_path / "c", "c", "", tmp_path, i) for i in (0, 1))
    assert (first.name, second.name) == ("real-0", "real-1")
    assert (first.dir.name, second.dir.name) == ("node", "node-1")
    assert (first.logs_dir, second.logs_dir) == (tmp_path / "c" / "logs", tmp_path / "c" / "logs" / "real-1")
    assert (first.cgroup_name, second.cgroup_name) == ("dlcharts-c", "dlcharts-c-real-1")
    assert (first.image_store.name, second.image_store.name) == ("c", "c.real-1")
    second.dir.mkdir(parents=True)
    (tmp_path / "c" / "node-x").mkdir()
    assert NodeLayout.indexes_on_disk(tmp_path / "c") == [1]


def test_cluster_dns_forwards_nothing_off_the_machine(tmp_path: Path) -> None:
    from dlcharts.cluster.dns import corefile

    text = corefile("10.250.3.1", tmp_path / "kubeconfig.yaml")
    plugins = {line.split()[0] for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")}
    assert not plugins & {"forward", "proxy", "grpc"}, plugins
    assert text.count("bind 10.250.3.1") == 2
    assert "rcode NXDOMAIN" in text


def test_a_damaged_cached_binary_is_rebuilt_never_used(tmp_path: Path) -> None:
    """A truncated binary with its sha256 record, and a garbage one without a record: both are reported and
    rebuilt from the module proxy (Go caches warm: seconds), into the very bytes first built (reproducible)."""
    import hashlib
    import shutil

    built = binary("etcd")  # built by `make control-plane` before the cluster tier
    good = hashlib.sha256(built.path.read_bytes()).hexdigest()
    cache = binary("etcd", tmp_path).path
    cache.parent.mkdir(parents=True)
    damages = [
        ("truncated", built.path.read_bytes()[: built.path.stat().st_size // 2], good),
        ("garbage", b"oops", None),
    ]
    for what, content, record in damages:
        cache.write_bytes(content)
        cache.chmod(0o755)
        record_file = cache.with_name("etcd.sha256")
        if record:
            record_file.write_text(record + "\n")
        else:
            record_file.unlink(missing_ok=True)
        log = tmp_path / f"{what}.log"
        assert build_binaries(["etcd"], cache=tmp_path, log=log) == {"etcd": cache}
        expected = "is damaged" if record else "does not run"
        assert f"etcd: {cache} {expected}" in log.read_text(), (what, log.read_text())
        assert "built etcd" in log.read_text(), (what, log.read_text())
        assert hashlib.sha256(cache.read_bytes()).hexdigest() == good, what
        assert record_file.read_text().strip() == good, what
    shutil.rmtree(tmp_path / "build")
