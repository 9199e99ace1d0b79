"""The main job on the embedded cluster: `helm install tf-train charts/tensorflow-dist --set worker=4`, then where
each worker landed, its GPUs and its TF_CONFIG."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from dlcharts.cluster.config import ClusterConfig
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.errors import ClusterError
from dlcharts.helm import find_helm
from dlcharts.podenv import container_env
from dlcharts.render import Renderer
from dlcharts.waiting import poll

ROOT = Path(__file__).resolve().parents[2]
RELEASE, NAMESPACE = "tf-train", "demo"


def run_demo(cluster_name: str = "dlcharts", workers: int = 4, chart: Path | None = None) -> int:
    from kubernetes import client

    chart = chart or ROOT / "charts" / "tensorflow-dist"
    helm = find_helm()
    print(f"1/3 embedded cluster {cluster_name!r} (kube-apiserver on 127.0.0.1, fake GPU nodes from kwok) ...")
    handle = EmbeddedCluster(ClusterConfig(name=cluster_name)).start()
    print(
        f"    {'reused' if handle.reused else 'started'} in {handle.start_seconds:.1f}s; KUBECONFIG={handle.kubeconfig}"
    )

    with contextlib.closing(handle.api_client()) as api:
        core: Any = client.CoreV1Api(api)
        if not any(ns.metadata.name == NAMESPACE for ns in core.list_namespace().items):
            handle.create_namespace(NAMESPACE, "restricted")
        Renderer(helm).ensure_dependencies(chart)
        argv = ["upgrade", "--install", RELEASE, str(chart), "--namespace", NAMESPACE, "--set", f"worker={workers}"]
        print(f"2/3 helm {' '.join(argv[:3])} charts/tensorflow-dist --set worker={workers} -n {NAMESPACE}")
        proc = helm.run(argv, check=False, env=handle.env())
        if proc.returncode != 0:
            raise ClusterError(f"helm install failed:\n{proc.stderr.strip()}")
        selector = f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component=worker"

        def bound() -> list[Any] | None:
            pods = core.list_namespaced_pod(NAMESPACE, label_selector=selector).items
            latest = {p.metadata.name: p for p in pods if p.metadata.deletion_timestamp is None}
            ready = [p for p in latest.values() if p.spec.node_name]
            return sorted(ready, key=lambda p: p.metadata.name) if len(ready) >= workers else None

        pods = poll(bound, 120, f"{workers} worker pods bound to nodes")
        nodes = {n.metadata.name: n for n in core.list_node().items}

    print(f"3/3 where each worker landed (release {RELEASE}, namespace {NAMESPACE}):\n")
    row = "{:<26} {:<8} {:<24} {:>4} {:>10}  {}"
    print(row.format("POD", "NODE", "GPU MODEL", "GPUS", "NODE GPUS", "PHASE"))
    for pod in pods:
        main = pod.spec.containers[0]
        gpus = (main.resources.limits or {}).get("nvidia.com/gpu", "0")
        node = nodes[pod.spec.node_name]
        product = (node.metadata.labels or {}).get("nvidia.com/gpu.product", "-")
        capacity = (node.status.allocatable or {}).get("nvidia.com/gpu", "0")
        print(row.format(pod.metadata.name, pod.spec.node_name, product, gpus, capacity, pod.status.phase))
    print("\nTF_CONFIG of each worker (from the pod spec, with $(DL_TASK_INDEX) expanded as the kubelet does):")
    for pod in pods:
        index = int(pod.metadata.annotations["batch.kubernetes.io/job-completion-index"])
        spec = client.ApiClient().sanitize_for_serialization(pod.spec.containers[0])  # type: ignore[no-untyped-call]
        tf_config = json.loads(container_env(spec, index)["TF_CONFIG"])
        print(f"  {pod.metadata.name}: {json.dumps(tf_config, separators=(',', ':'))}")
    print(
        f"\nThe cluster keeps running. Next:\n  export KUBECONFIG={handle.kubeconfig}\n"
        f"  kubectl -n {NAMESPACE} get jobs,pods -o wide\n  {helm.path} -n {NAMESPACE} test {RELEASE}\n"
        "  .venv/bin/dlcharts cluster down"
    )
    return 0
