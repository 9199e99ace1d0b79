"""The main job (`make demo`): `helm install tf-train charts/tensorflow-dist --set worker=4` trains for real on the
embedded cluster's real node (through :mod:`dlcharts.jobs.run`), then the same chart with its GPU defaults is placed
on the fake GPU nodes, to show where GPU workers land."""

from __future__ import annotations

import time
from pathlib import Path

from dlcharts import toolchain
from dlcharts.cluster.config import ClusterConfig
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.errors import DLChartsError
from dlcharts.helm import find_helm
from dlcharts.host import binaries, preflight
from dlcharts.install import ChartSource, Kube, Release, install, wait_ready
from dlcharts.install.state import INSTANCE_LABEL
from dlcharts.jobs import run
from dlcharts.podenv import start_container
from dlcharts.waiting import duration

CHART = Path("charts/tensorflow-dist")  # the demo runs in a dl-charts checkout (`make demo`); --chart elsewhere
RELEASE, NAMESPACE, GPU_NAMESPACE = "tf-train", "demo", "demo-gpu"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
#: what the demo builds: the control plane, the real node and the registry and crane of the images, nothing else
#: (neither the in-process renderers, nor the oldest Kubernetes, nor the add-ons: the tests need those)
BUILD_GROUPS = ["default"]
STEPS = 4


def step(number: int, text: str) -> None:
    print(f"demo {number} of {STEPS}: {text}", flush=True)


def prepare(chart: Path) -> None:
    """Check the machine for everything the demo needs before anything is built, then build only what is missing:
    the pinned helm, the cluster's binaries (gobuild prints n of m and a line a minute)."""
    from dlcharts.cluster.node_registry import HELPER
    from dlcharts.images.build import Builder
    from dlcharts.images.definitions import IMAGES

    step(1, "checking this machine (root, Debian packages, Go, ports, disk)")
    _, to_build = binaries.missing_binaries(BUILD_GROUPS)
    images = {IMAGES[HELPER], *(image for image, _ in run.local_images(chart.name))}  # the real node's, the chart's
    images_cached = not preflight.missing_packages() and all(Builder().is_cached(image) for image in images)
    preflight.require(toolchain.cache_root(), to_build=to_build, images_cached=images_cached)
    print(f"    ready; {len(to_build)} binaries to build, images {'cached' if images_cached else 'to build'}")
    started = time.monotonic()
    step(2, f"building what is missing ({len(to_build)} binaries; once, then cached in {toolchain.cache_root()})")
    find_helm()  # installs the pinned helm when it is missing
    binaries.build_binaries(BUILD_GROUPS)
    print(f"    done in {duration(time.monotonic() - started)}")


def run_demo(chart: Path = CHART, cluster_name: str = ClusterConfig.name, workers: int = 4) -> int:
    started = time.monotonic()
    if not (chart / "Chart.yaml").is_file():
        raise DLChartsError(
            f"{chart} is not a chart folder: run the demo in a dl-charts checkout (`make demo`), or name the "
            "tensorflow-dist chart with --chart PATH"
        )
    prepare(chart)
    helm = find_helm()
    step(3, f"helm install {RELEASE} charts/tensorflow-dist --set worker={workers}, for real on CPU (dlcharts run)")
    options = run.RunOptions(helm=helm, release_name=RELEASE, namespace=NAMESPACE, cluster_name=cluster_name)
    result = run.run(chart, ["--set", f"worker={workers}"], options, lambda line: print(f"    {line}", flush=True))
    if result.problem:
        print(result.problem)
    print("\n".join(f"    {line}" for line in run.summary(result).splitlines()))
    if not result.ok:
        return 1
    gpu_placement(chart, cluster_name, workers)
    print(f"\ndemo done in {duration(time.monotonic() - started)}. The cluster keeps running:")
    kubeconfig = EmbeddedCluster(ClusterConfig(name=cluster_name)).kubeconfig
    print(
        f"  export KUBECONFIG={kubeconfig}\n  kubectl -n {NAMESPACE} logs -l job-name={RELEASE}-worker -c worker\n"
        f"  .venv/bin/dlcharts run charts/tensorflow-dist --set worker=2   # your own job: see README\n"
        f"  .venv/bin/dlcharts cluster down{'' if cluster_name == ClusterConfig.name else f' --name {cluster_name}'}"
    )
    return 0


def gpu_placement(chart: Path, cluster_name: str, workers: int) -> None:
    """The chart with its defaults (one nvidia.com/gpu per worker) on the fake H100 nodes: pod, node, GPUs,
    TF_CONFIG (composed by the pod's entrypoint from the release's cluster ConfigMap, here as it would be at
    container start). kwok marks these pods Succeeded after two seconds: no container runs there."""
    handle = EmbeddedCluster(ClusterConfig(name=cluster_name)).start()
    release = Release(find_helm(), handle.kubeconfig, RELEASE, GPU_NAMESPACE)
    print()
    step(4, f"the same chart with its GPU defaults on the fake GPU nodes (kwok; namespace {GPU_NAMESPACE})")
    with Kube.from_kubeconfig(handle.kubeconfig) as kube:
        run.prepare_namespace(kube, GPU_NAMESPACE, chart, print)
        run.replace_release(kube, release)
        install(kube, release, ChartSource(chart, set_values=(f"worker={workers}",)))
        placement = wait_ready(kube, GPU_NAMESPACE, RELEASE, timeout=120)
        nodes = {n["metadata"]["name"]: n for n in kube.items("/api/v1/nodes")}
        pods = {
            p["metadata"]["name"]: p
            for p in kube.items(
                f"/api/v1/namespaces/{GPU_NAMESPACE}/pods", label_selector=f"{INSTANCE_LABEL}={RELEASE}"
            )
        }
        cluster = kube.get(f"/api/v1/namespaces/{GPU_NAMESPACE}/configmaps/{RELEASE}-cluster")["data"]
    row = "    {:<26} {:<8} {:<24} {:>4} {:>10}"
    print(row.format("POD", "NODE", "GPU MODEL", "GPUS", "NODE GPUS"))
    for pod in sorted(placement.pods.values(), key=lambda p: (p.owner or "", p.index or "", p.name)):
        node = nodes.get(pod.node or "", {})
        product = (node.get("metadata", {}).get("labels") or {}).get("nvidia.com/gpu.product", "-")
        capacity = (node.get("status", {}).get("allocatable") or {}).get("nvidia.com/gpu", "0")
        print(row.format(pod.name, pod.node or "-", product, sum(pod.gpus.values()), capacity))
    first = min(pods.values(), key=lambda p: int(p["metadata"]["annotations"][COMPLETION_INDEX]))
    tf_config = start_container(first["spec"]["containers"][0], 0, cluster).env["TF_CONFIG"]
    print(
        f"    worker 0's TF_CONFIG, composed when its container starts from ConfigMap {RELEASE}-cluster (cluster.json,"
        f" mounted at /etc/dl-charts/cluster) and its index; the others differ in task.index. A running pod logs it:"
        f" kubectl logs <pod> | grep tf-config:\n      {tf_config}"
    )
