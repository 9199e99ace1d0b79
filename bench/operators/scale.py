"""``python -m bench.operators scale``: PyTorch DDP at 1,000 and 5,000 workers on kwok's fake GPU nodes, each system
on a fresh cluster of its own (control plane, fake nodes, and only that system's operator), measured as
bench/scheduling.py measures our charts (see the package's docstring)."""

from __future__ import annotations

import contextlib
import json
import math
import time
import uuid
from typing import Any

from bench import common
from bench.operators.jobs import operator_job, render
from bench.operators.report import report_scale
from bench.operators.runs import create_job
from bench.operators.verdicts import left_objects
from dlcharts.cluster import ClusterConfig
from dlcharts.cluster.cache import purge
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.install import Kube


def scale_one(handle: Any, system: str, workers: int, timeout: float, interval: float = 0.5) -> dict[str, Any]:
    """One PyTorch DDP job of ``workers`` pods on ``system``: times, CPU, memory and objects (bench.scheduling's
    measures)."""
    from bench import scheduling

    api = scheduling.Api(handle.kubeconfig)
    namespace = f"scale-{system}-w{workers}-{uuid.uuid4().hex[:4]}"
    helm_args = ("--set", f"worker={workers}", "--set", "defaults.gpu.count=1")
    with Kube.from_kubeconfig(handle.kubeconfig) as kube:
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        docs = render("pytorch-dist", {}, helm_args, namespace)
        resource = None
        if system != "ours":
            resource = operator_job("pytorch", system, docs, "train", workers)
            resource["metadata"]["namespace"] = namespace
        rss, cpu_before, load = handle.rss_bytes(), scheduling.cpu_seconds(handle), common.load()
        start = time.perf_counter()
        marks: dict[str, float] = {}
        if resource is None:
            done = scheduling.helm("install", "train", str(common.ROOT / "charts" / "pytorch-dist"), "--namespace",
                                   namespace, *helm_args, kubeconfig=handle.kubeconfig)  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"helm install worker={workers} failed: {done.stderr}")
        else:
            path = kube.resource_for(resource["apiVersion"], resource["kind"]).path(namespace)
            create_job(kube, path, namespace, docs, resource, f"{resource['kind']} worker={workers}")
        marks["created_job"] = time.perf_counter() - start
        while time.perf_counter() - start < timeout:
            with contextlib.suppress(Exception):
                pods, bound, running = api.pod_states(namespace)
                now = time.perf_counter() - start
                for mark, count in (("created", pods), ("bound", bound), ("running", running)):
                    if count >= workers and mark not in marks:
                        marks[mark] = round(now, 1)
            rss = scheduling.peak(rss, handle.rss_bytes())
            if "running" in marks:
                break
            time.sleep(interval)
        else:
            marks["timed_out"] = round(time.perf_counter() - start, 1)
        cpu_after = scheduling.cpu_seconds(handle)
        cpu = {name: round(cpu_after[name] - cpu_before.get(name, 0.0), 1) for name in cpu_after}
        left = left_objects(kube, namespace)
    result = {
        "system": system,
        "kind": resource["kind"] if resource else "pytorch-dist",
        "workers": workers,
        "seconds": marks,
        "cpu_seconds": cpu,
        "cpu_ms_per_pod": round(1000 * sum(cpu.values()) / workers, 1),
        "rss_peak": rss,
        "rss_peak_mib": round(sum(rss.values()) / 2**20),
        "load_before": load,
        **left,
    }
    print(f"operators scale: {json.dumps(result)}", flush=True)
    return result


def scale(systems: list[str], sizes: list[int], timeout: float) -> list[dict[str, Any]]:
    from dlcharts.cluster import H100_LABELS, NodePool

    nodes = math.ceil(max(sizes) * 1.05 / 8) + 2
    pool = NodePool(name="gpu", count=nodes, gpus=8, cpu="192", memory="2Ti", labels=dict(H100_LABELS))
    runs = []
    for system in systems:
        addons = () if system == "ours" else (system,)
        config = ClusterConfig(name=f"ops-scale-{system}"[:20], node_pools=(pool,), pod_run_seconds=3600,
                               start_timeout=900, real_node=False, addons=addons)  # fmt: skip
        cluster = EmbeddedCluster(config)
        for workers in sizes:  # a fresh cluster for each size: the GPUs free, the peak memory of that size alone
            cluster.stop()
            try:
                runs.append(scale_one(cluster.start(), system, workers, timeout))
            except Exception as exc:  # noqa: BLE001 - recorded: where a system cannot reach a size
                runs.append({"system": system, "workers": workers, "error": f"{type(exc).__name__}: {exc}"})
            finally:
                cluster.stop()
            report_scale(runs[-1:])  # each size as it ends: a long series stopped halfway keeps what it measured
        # the series ends: its throwaway cluster leaves nothing in the cache (stop() keeps a cluster's stores and logs)
        purged = purge(config.name, cluster.cache)
        for line in purged.skipped + purged.failed:
            print(f"operators scale: not purged: {line}", flush=True)
    return runs
