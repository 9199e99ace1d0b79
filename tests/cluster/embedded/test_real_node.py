"""The embedded cluster's real node: containers really run (containerd + runc + kubelet), logs and exec go
through the API server to the kubelet, pods resolve each other through CoreDNS, and `cluster down` leaves
nothing on the host.

Pods here select the node (dlcharts.io/node-type=real) and tolerate its taint; every other test's pods keep
landing on the fake nodes. The image is the helper image busybox:1.37.0 (runs as 1000:1000), which the kubelet
pulls from the cluster's own registry on 127.0.0.1 (dlcharts.cluster.node_registry)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from dlcharts.cluster import ClusterHandle, netpol, node, node_registry, poll
from dlcharts.host import procs, system
from dlcharts.toolchain import cache_root
from tests.support import cluster as cluster_env
from tests.support.real_node import RESTRICTED, listening_addresses, real_pod_spec

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def image(embedded_cluster: ClusterHandle) -> str:
    images = embedded_cluster.images
    assert images is not None, "the session's cluster was started without its real node"
    return images.busybox


def kubectl(handle: ClusterHandle, *args: str) -> subprocess.CompletedProcess[str]:
    return cluster_env.kubectl(handle.kubeconfig, *args)


def run_to_end(core: Any, namespace: str, name: str, spec: dict[str, Any], timeout: float = 120) -> Any:
    core.create_namespaced_pod(namespace, {"metadata": {"name": name}, "spec": spec})

    def finished() -> Any:
        pod = core.read_namespaced_pod(name, namespace)
        return pod if pod.status.phase in ("Succeeded", "Failed") else None

    return poll(finished, timeout, f"pod {name} to finish on the real node")


def test_real_node_is_ready_labelled_and_tainted(api: Any, embedded_cluster: ClusterHandle) -> None:
    found = client.CoreV1Api(api).read_node(node.NODE_NAME)
    assert found.metadata.labels[node.LABEL_KEY] == node.LABEL_VALUE
    assert [(t.key, t.value, t.effect) for t in found.spec.taints] == [(node.LABEL_KEY, "real", "NoSchedule")]
    assert [c.status for c in found.status.conditions if c.type == "Ready"] == ["True"]
    assert found.status.node_info.container_runtime_version.startswith("containerd://")
    assert embedded_cluster.real_node is not None
    assert {a.address for a in found.status.addresses if a.type == "InternalIP"} == {embedded_cluster.real_node["ip"]}


def test_restricted_pod_succeeds_and_its_logs_come_through_the_api_server(
    api: Any, embedded_cluster: ClusterHandle, namespace: str, image: str
) -> None:
    core: Any = client.CoreV1Api(api)
    pod = run_to_end(core, namespace, "hello", real_pod_spec(image, "echo hello from $(hostname) as uid $(id -u)"))
    assert pod.status.phase == "Succeeded", pod.status
    assert pod.spec.node_name == node.NODE_NAME
    assert pod.status.pod_ip.startswith(embedded_cluster.real_node["subnet"].rsplit(".", 1)[0] + ".")  # type: ignore[index]
    logs = kubectl(embedded_cluster, "logs", "-n", namespace, "hello")
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.strip() == "hello from hello as uid 1000"


def test_the_kubelet_pulled_the_image_from_the_cluster_registry(
    api: Any, embedded_cluster: ClusterHandle, namespace: str, image: str
) -> None:
    images = embedded_cluster.images
    assert images is not None
    assert image == f"{images.registry}/busybox:1.37.0" and images.registry.startswith("127.0.0.1:")
    core: Any = client.CoreV1Api(api)
    pod = run_to_end(core, namespace, "pulled", real_pod_spec(image, "id -u"))
    assert pod.status.phase == "Succeeded", pod.status
    [status] = pod.status.container_statuses
    # the runtime names the image by the repository digest it pulled: the manifest the registry serves now
    served = node_registry.digest(image, cache_root())
    assert status.image_id == f"{images.registry}/busybox@{served}"
    assert served == images.busybox_digest
    assert core.read_namespaced_pod_log("pulled", namespace).strip() == "1000"
    # the sandbox image comes from the same registry (containerd pulled it for the first pod)
    wanted = {f"{images.registry}/pause@{images.pause_digest}", f"{images.registry}/busybox@{images.busybox_digest}"}

    def listed() -> bool:  # the kubelet reports the node's images every few seconds
        status = core.read_node(node.NODE_NAME).status
        return wanted <= {name for img in status.images or [] for name in img.names or []}

    poll(listed, 60, f"the real node to list {', '.join(sorted(wanted))}")


def test_exec_runs_in_the_container(api: Any, embedded_cluster: ClusterHandle, namespace: str, image: str) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_pod(namespace, {"metadata": {"name": "sleeper"}, "spec": real_pod_spec(image, "sleep 600")})
    poll(lambda: core.read_namespaced_pod("sleeper", namespace).status.phase == "Running", 120, "pod sleeper to run")
    out = kubectl(embedded_cluster, "exec", "-n", namespace, "sleeper", "--", "sh", "-c", "echo $((6 * 7)) $(id -u)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42 1000"


def test_indexed_job_pods_resolve_each_other_through_coredns(
    api: Any, embedded_cluster: ClusterHandle, namespace: str, image: str
) -> None:
    core: Any = client.CoreV1Api(api)
    batch: Any = client.BatchV1Api(api)
    core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "peers"},
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": {"job-name": "ring"},
                "ports": [{"name": "p", "port": 2222}],
            },
        },
    )
    # Each worker serves one greeting on port 2222 and fetches its peer's, connecting to <job>-<index>.<service>
    # (nc resolves through libc: resolv.conf's search path adds <ns>.svc.cluster.local, CoreDNS answers). It
    # prints the peer's address as nslookup gives it for the same search-path name, and the greeting it got,
    # then waits until its own greeting was fetched.
    script = (
        "peer=ring-$((1 - JOB_COMPLETION_INDEX)).peers; "
        '(echo "hello from $(hostname)" | nc -l -p 2222) & served=$!; '
        'for i in $(seq 90); do msg=$(nc -w 2 $peer 2222 2>/dev/null) && [ -n "$msg" ] && break; sleep 1; done; '
        "domain=$(sed -n 's/^search \\([^ ]*\\).*/\\1/p' /etc/resolv.conf); "
        "ip=$(nslookup $peer.$domain | sed -n 's/^Address: \\([0-9.]*\\)$/\\1/p' | tail -1); "
        'echo "$peer $ip: $msg"; wait $served'
    )
    spec = real_pod_spec(image, script, subdomain="peers")
    batch.create_namespaced_job(
        namespace,
        {
            "metadata": {"name": "ring"},
            "spec": {
                "completions": 2,
                "parallelism": 2,
                "completionMode": "Indexed",
                "backoffLimit": 0,
                "template": {"spec": spec},
            },
        },
    )

    def complete() -> bool:
        status = batch.read_namespaced_job_status("ring", namespace).status
        failed = [c for c in status.conditions or [] if c.type == "Failed" and c.status == "True"]
        assert not failed, status
        return (status.succeeded or 0) == 2

    poll(complete, 180, "Indexed Job ring to complete on the real node")
    pods = {p.metadata.annotations["batch.kubernetes.io/job-completion-index"]: p for p in
            core.list_namespaced_pod(namespace, label_selector="job-name=ring").items}  # fmt: skip
    assert sorted(pods) == ["0", "1"]
    for index, pod in pods.items():
        peer = pods[str(1 - int(index))]
        logs = core.read_namespaced_pod_log(pod.metadata.name, namespace).strip()
        assert logs == f"ring-{1 - int(index)}.peers {peer.status.pod_ip}: hello from ring-{1 - int(index)}"


def test_memory_empty_dir_on_dev_shm_has_the_requested_size(api: Any, namespace: str, image: str) -> None:
    core: Any = client.CoreV1Api(api)
    spec = real_pod_spec(
        image,
        "df -k /dev/shm | tail -1",
        volumes=[{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "48Mi"}}],
        container={"volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]},
    )
    pod = run_to_end(core, namespace, "shm", spec)
    assert pod.status.phase == "Succeeded"
    fields = core.read_namespaced_pod_log("shm", namespace).split()
    assert fields[0] == "tmpfs" and fields[1] == str(48 * 1024), fields


def test_read_only_root_with_a_writable_tmp(api: Any, namespace: str, image: str) -> None:
    core: Any = client.CoreV1Api(api)
    script = "echo ok > /tmp/probe && cat /tmp/probe; if touch /probe 2>/dev/null; then echo root-writable; fi"
    spec = real_pod_spec(
        image,
        script,
        volumes=[{"name": "tmp", "emptyDir": {}}],
        container={
            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            "securityContext": {**RESTRICTED, "readOnlyRootFilesystem": True},
        },
    )
    pod = run_to_end(core, namespace, "readonly", spec)
    assert pod.status.phase == "Succeeded"
    assert core.read_namespaced_pod_log("readonly", namespace).split() == ["ok"]


def test_real_node_listens_on_loopback_and_its_bridge_only(embedded_cluster: ClusterHandle) -> None:

    pids = embedded_cluster.node_pids()
    assert set(pids) == {"containerd", "kubelet", "coredns", "kube-router"}
    assert embedded_cluster.real_node is not None
    allowed = ("127.", "[::1]", embedded_cluster.real_node["ip"] + ":")
    listening = listening_addresses(set(pids.values()))
    assert any(a.startswith(embedded_cluster.real_node["ip"] + ":") for a in listening), listening
    assert sorted(a for a in listening if not a.startswith(allowed)) == []


# ----- up / status / down through the CLI, and what down leaves behind ---------------------------------------


def _host_traces(state_dir: Path, nodes: list[dict[str, Any]], cgroup: str) -> dict[str, list[str]]:
    """What a cluster's real nodes could leave on the host (``nodes``: their entries in the cluster's state)."""
    prefix = str(state_dir) + "/"
    bridges = [n["bridge"] for n in nodes]
    networks = [n["subnet"].rsplit(".", 1)[0] + "." for n in nodes]

    def lines(*cmd: str) -> list[str]:
        return subprocess.run(list(cmd), capture_output=True, text=True, check=True).stdout.splitlines()

    rules = lines("iptables-save")
    procs_left = [
        f"{pid} {' '.join(argv)}"
        for pid in procs.all_pids()
        if (argv := procs.cmdline(pid)) and any(str(state_dir) in a for a in argv) and procs.alive(pid)
    ]
    return {
        "processes": procs_left,
        "mounts": [m for m in system.mount_points() if m.startswith(prefix)],
        "links": [ln for ln in lines("ip", "-o", "link", "show") if any(b in ln for b in bridges)],
        "iptables": [r for r in rules if any(b in r for b in bridges) or any(n in r for n in networks)],
        # the routes between nodes: policy rules per node veth, and connected routes on them
        "ip rules": [
            r for r in lines("ip", "-4", "rule") if any(b in r for b in bridges) or nodes[0]["cluster_range"] in r
        ],
        "routes": [r for r in lines("ip", "-4", "route") if any(b in r for b in bridges)],
        # kube-router's chains and sets live in the node's network namespace, never in the host's
        "host netpol": [r for r in [*rules, *lines("ipset", "list", "-n")] if "KUBE-" in r],
        "cgroups": [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/{cgroup}*")],
    }


def test_cluster_down_leaves_no_process_mount_link_or_rule(tmp_path: Path) -> None:
    """Two real nodes, a pod on each (the pods reach each other across the nodes), then down: nothing is left."""
    # its own name, derived from the session's: two sessions (DLCHARTS_CLUSTER_NAME) never share this cluster
    name = f"{os.environ.get('DLCHARTS_CLUSTER_NAME', 'dlcharts')}-down"
    env = {**os.environ}
    cli = [sys.executable, "-m", "dlcharts.cluster"]
    up = subprocess.run([*cli, "up", "--name", name, "--real-nodes", "2"], capture_output=True, text=True, env=env,
                        timeout=600)  # fmt: skip
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        status = subprocess.run([*cli, "status", "--name", name], capture_output=True, text=True, env=env)
        assert status.returncode == 0 and "running" in status.stdout
        from dlcharts.cluster import EmbeddedCluster
        from dlcharts.cluster.config import ClusterConfig

        cluster = EmbeddedCluster(ClusterConfig(name=name))
        nodes = json.loads((cluster.state_dir / "dlcharts-cluster.json").read_text())["real_nodes"]
        assert [n["name"] for n in nodes] == ["real-0", "real-1"], nodes
        state = nodes[0]
        reg = node_registry.registry_for(name, cache_root()).status()
        assert reg.running and reg.address == state["images"]["registry"], reg
        kubeconfig = cluster.kubeconfig
        pids = {**embedded_pids(cluster.state_dir)}
        pids.update({f"real-1 {k}": v for k, v in procs.pids(cluster.state_dir / "node-1" / "pids").items()})
        assert len(pids) >= 5 + 2 * 4, pids  # the control plane's, and each node's four
        # a pod on each node, so that there are veths, network namespaces and container mounts to clean up; the
        # one on real-1 reaches the one on real-0 through the routes between the nodes
        handle = ClusterHandle(
            name=name, kubeconfig=kubeconfig, server="", state_dir=cluster.state_dir, reused=True, start_seconds=0
        )
        serve = "mkdir -p /tmp/w && echo served-by-$(hostname) > /tmp/w/i && exec httpd -f -p 8080 -h /tmp/w"
        for pod_name, node_name, script in (("idle", "real-0", serve), ("peer", "real-1", "sleep 600")):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod_name, "namespace": "default"},
                "spec": real_pod_spec(state["images"]["busybox"], script, nodeName=node_name),
            }
            (tmp_path / "pod.json").write_text(json.dumps(pod))
            assert kubectl(handle, "apply", "-f", str(tmp_path / "pod.json")).returncode == 0
        for pod_name in ("idle", "peer"):
            assert kubectl(handle, "wait", "--for=condition=Ready", f"pod/{pod_name}", "--timeout=120s").returncode == 0
        served = kubectl(handle, "get", "pod", "idle", "-o", "jsonpath={.status.podIP}")
        fetched = kubectl(handle, "exec", "peer", "--", "wget", "-qO-", "-T", "5", f"http://{served.stdout}:8080/i")
        assert fetched.stdout.strip() == "served-by-idle", fetched.stdout + fetched.stderr
        before = _host_traces(cluster.state_dir, nodes, f"dlcharts-{name}")
        assert before["mounts"] and before["processes"] and len(before["links"]) == 2, before  # each node's veth end
        assert len(before["ip rules"]) == 4 and len(before["routes"]) == 2, before
        assert before["host netpol"] == [], before
        pods_netns = node.RealNode(cluster.state_dir, name).netns
        assert str(pods_netns) in before["mounts"]
        # kube-router's chains, and the pod's, are in the namespace (it syncs the pod soon after its IP is known)
        poll(lambda: ("default", "idle") in netpol.policies_by_pod(pods_netns), 60, "kube-router to firewall pod idle")
    finally:
        down = subprocess.run([*cli, "down", "--name", name], capture_output=True, text=True, env=env, timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    after = _host_traces(cluster.state_dir, nodes, f"dlcharts-{name}")
    assert after == {"processes": [], "mounts": [], "links": [], "iptables": [], "ip rules": [], "routes": [],
                     "host netpol": [], "cgroups": []}  # fmt: skip
    assert [p for p in pids.values() if procs.alive(p)] == []
    assert reg.pid is not None and not procs.alive(reg.pid)  # the cluster's registry is stopped with it
    assert not node_registry.registry_for(name, cache_root()).status().running
    assert not cluster.state_dir.exists()
    status = subprocess.run([*cli, "status", "--name", name], capture_output=True, text=True, env=env)
    assert status.returncode == 1 and "not running" in status.stdout


def embedded_pids(state_dir: Path) -> dict[str, int]:
    from dlcharts.cluster import embedded

    found = embedded.component_pids(state_dir)
    found.update(procs.pids(state_dir / "node" / "pids"))
    return found
