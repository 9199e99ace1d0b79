#!/usr/bin/env python3
"""Part 4: scheduling scale on the embedded cluster (real kube-apiserver, controller-manager, scheduler,
etcd; kwok fake GPU nodes).

Starts its own cluster named "bench" (--nodes x 8 H100 GPUs, enough for the largest job with one GPU per
worker; pods run for an hour so every worker of a job holds its GPU at once), then for each worker count
installs tensorflow-dist (``--set worker=N``, 1 GPU per worker) into a fresh namespace with Pod Security
"restricted" and measures, from the start of ``helm install``:
  helm install returned, every pod created, every pod bound (spec.nodeName set), every pod Running;
then counts what exists in the namespace (Services, EndpointSlices, Endpoints, Jobs, Pods, ...) and the
resident memory of each control-plane process (peak while the job was scheduled, and idle). The release is
uninstalled and its namespace deleted before the next size (not after the last: the cluster is stopped at
the end, which removes everything).

Pod counts are read with the API server's Table format (one small row per pod, with its node and status),
polled every --interval seconds.

With --controller-qps N the cluster's kube-controller-manager and kube-scheduler get --kube-api-qps=N
--kube-api-burst=2N (ClusterConfig.api_qps; the embedded cluster's default is 200, the components' own is 20):
the client-side rate limits that pace the Job controller's pod creation and the scheduler's bindings. Saved as
build/bench/scheduling_qps<N>.json.

Usage: .venv/bin/python bench/scheduling.py [--workers 8,64,512,1000] [--nodes 125] [--controller-qps 200]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import ssl
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

CLUSTER = "bench"
CHART = common.ROOT / "charts" / "tensorflow-dist"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"


class Api:
    """GETs against the cluster with the kubeconfig's client certificate."""

    def __init__(self, kubeconfig: Path) -> None:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        self.host = cfg.host.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file and cfg.key_file:
            self.ctx.load_cert_chain(cfg.cert_file, cfg.key_file)

    def get(self, path: str, accept: str = "application/json", **query: str) -> Any:
        url = self.host + path + ("?" + urllib.parse.urlencode(query) if query else "")
        req = urllib.request.Request(url, headers={"Accept": accept})
        with urllib.request.urlopen(req, timeout=30, context=self.ctx) as resp:
            return json.loads(resp.read())

    def pod_states(self, namespace: str) -> tuple[int, int, int]:
        """(pods, bound, running) in a namespace."""
        table = self.get(f"/api/v1/namespaces/{namespace}/pods", TABLE)
        names = [c["name"] for c in table["columnDefinitions"]]
        node, status = names.index("Node"), names.index("Status")
        rows = table.get("rows") or []
        bound = sum(1 for r in rows if r["cells"][node] not in ("<none>", "", None))
        running = sum(1 for r in rows if r["cells"][status] == "Running")
        return len(rows), bound, running

    def count(self, path: str) -> int:
        return len(self.get(path, TABLE).get("rows") or [])


def helm(*args: str, kubeconfig: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    cmd = [str(common.helm_path()), *args, "--kubeconfig", str(kubeconfig)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def peak(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: max(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)}


def run_size(handle: Any, api: Api, workers: int, interval: float, timeout: float, cleanup: bool) -> dict[str, Any]:
    namespace = f"bench-w{workers}"
    handle.create_namespace(namespace, "restricted")
    release = "train"
    rss = handle.rss_bytes()
    load = common.load()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(common.helm_path()), "install", release, str(CHART), "--namespace", namespace,
         "--set", f"worker={workers}", "--set", "defaults.gpu.count=1", "--kubeconfig", str(handle.kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    marks: dict[str, float] = {}
    samples = []
    while True:
        if "helm_install" not in marks and proc.poll() is not None:
            marks["helm_install"] = time.perf_counter() - start
            if proc.returncode != 0:
                raise SystemExit(f"helm install worker={workers} failed: {proc.stderr.read()}")  # type: ignore[union-attr]
        with contextlib.suppress(Exception):
            pods, bound, running = api.pod_states(namespace)
            now = time.perf_counter() - start
            samples.append((round(now, 3), pods, bound, running))
            if pods >= workers and "created" not in marks:
                marks["created"] = now
            if bound >= workers and "bound" not in marks:
                marks["bound"] = now
            if running >= workers and "running" not in marks:
                marks["running"] = now
        rss = peak(rss, handle.rss_bytes())
        if {"helm_install", "bound", "running"} <= set(marks):
            break
        if time.perf_counter() - start > timeout:
            marks.setdefault("timed_out", time.perf_counter() - start)
            break
        time.sleep(interval)
    ns = f"/api/v1/namespaces/{namespace}"
    objects = {
        "Service": api.count(f"{ns}/services"),
        "Endpoints": api.count(f"{ns}/endpoints"),
        "EndpointSlice": api.count(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"),
        "Job": api.count(f"/apis/batch/v1/namespaces/{namespace}/jobs"),
        "ConfigMap": api.count(f"{ns}/configmaps") - 1,  # minus kube-root-ca.crt
        "Secret": api.count(f"{ns}/secrets"),
        "Pod": api.count(f"{ns}/pods"),
    }
    result = {
        "workers": workers,
        "seconds": marks,
        "objects": objects,
        "rss_peak": rss,
        "load_before": load,
        "samples": samples[:: max(1, len(samples) // 60)],
    }
    print(f"scheduling: worker={workers}: {json.dumps(marks)} objects {objects}", flush=True)
    if not cleanup:  # the last size: stopping the cluster removes everything
        return result
    t = time.perf_counter()
    helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "5m", kubeconfig=handle.kubeconfig)
    handle.delete_namespace(namespace, wait=True, timeout=300)
    result["cleanup_seconds"] = time.perf_counter() - t
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", default="8,64,512,1000")
    parser.add_argument("--nodes", type=int, default=0, help="8-GPU nodes (default: enough for the largest job)")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=240)
    parser.add_argument("--controller-qps", type=int, default=0, help="--kube-api-qps of controller-manager+scheduler")
    args = parser.parse_args(argv)
    from dlcharts.cluster import H100_LABELS, ClusterConfig, EmbeddedCluster, NodePool
    from dlcharts.cluster.binaries import ETCD_VERSION, KUBERNETES_VERSION, KWOK_VERSION

    sizes = [int(w) for w in args.workers.split(",")]
    nodes = args.nodes or math.ceil(max(sizes) / 8)
    pool = NodePool(name="gpu", count=nodes, gpus=8, cpu="192", memory="2Ti", labels=dict(H100_LABELS))
    qps = args.controller_qps or ClusterConfig.api_qps
    config = ClusterConfig(name=CLUSTER, node_pools=(pool,), pod_run_seconds=3600, start_timeout=600, api_qps=qps)
    cluster = EmbeddedCluster(config)
    cluster.stop()  # a leftover "bench" cluster from an interrupted run
    result: dict[str, Any] = {
        "nodes": nodes,
        "gpus_per_node": 8,
        "versions": {"kubernetes": KUBERNETES_VERSION, "kwok": KWOK_VERSION, "etcd": ETCD_VERSION},
        "load_start": common.load(),
        "controller_qps": args.controller_qps or None,
        "runs": [],
    }
    try:
        handle = cluster.start()
        result["start_seconds"] = handle.start_seconds
        result["rss_idle_start"] = handle.rss_bytes()
        print(f"scheduling: cluster up with {nodes} nodes in {handle.start_seconds:.1f}s", flush=True)
        api = Api(handle.kubeconfig)
        for i, workers in enumerate(sizes):
            last = i == len(sizes) - 1
            result["runs"].append(run_size(handle, api, workers, args.interval, args.timeout, cleanup=not last))
        result["rss_idle_end"] = handle.rss_bytes()
    except Exception as exc:  # noqa: BLE001 - record what stood in the way, then stop the cluster
        result["error"] = f"{type(exc).__name__}: {exc}"
        print(f"scheduling: {result['error']}", flush=True)
    finally:
        t = time.perf_counter()
        cluster.stop()
        result["stop_seconds"] = time.perf_counter() - t
    result["load_end"] = common.load()
    common.save(f"scheduling_qps{args.controller_qps}" if args.controller_qps else "scheduling", result)
    return 0 if "error" not in result else 1


if __name__ == "__main__":
    raise SystemExit(main())
