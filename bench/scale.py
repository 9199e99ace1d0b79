#!/usr/bin/env python3
"""Part 3: what one job creates as the worker count grows, ours beside one-Service-per-replica designs.

For each training chart (default values) and worker count 1, 8, 64, 512, 1000, 10000: a cold ``helm template``
(pinned helm, one process per render, median of --repeat) and the same render by the in-process renderer
(dlcharts.render_server, its objects decoded as the harness uses them), the rendered objects by kind and bytes,
the largest object's bytes (a Kubernetes object must stay under 1.5 MiB, etcd's request limit), and what
the cluster's controllers add at run time, computed from the render: pods (each Indexed Job's completions),
and per Service with a selector one Endpoints object and ceil(endpoints / 100) EndpointSlices (the
EndpointSlice controller's default of at most 100 endpoints per slice; a selector Service always has at
least one).

Beside it, the same job (same roles, same replica counts) under designs that create one Service per replica,
computed from their source (cited in bench/results.md):
- Kubeflow training-operator v1 (TFJob, PyTorchJob, MXJob): the job object, and per replica one Pod and
  one headless Service (plus that Service's Endpoints and EndpointSlice).
- mpi-operator v2 (MPIJob v2beta1, for the MPI charts): the MPIJob, one headless Service, one ConfigMap,
  one ssh Secret, a launcher Job with its pod, and one Pod per worker.
- the 2017/2018 inovex examples: per replica one workload object (Job), one ClusterIP Service and the pod
  (plus Endpoints and EndpointSlice), no custom resource.

Usage: .venv/bin/python bench/scale.py [--repeat 3] [--workers 1,8,64,512,1000,10000]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SLICE_MAX = 100  # kube-controller-manager --max-endpoints-per-slice default


def pods_of(job: dict[str, Any]) -> int:
    spec = job.get("spec") or {}
    count = spec.get("completions")
    if count is None:
        count = spec.get("parallelism", 1)
    return int(count)


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def analyse(objects: list[Any]) -> dict[str, Any]:
    """Rendered kinds (hooks apart), pods by role, and the controller-made endpoint objects."""
    kinds: collections.Counter[str] = collections.Counter()
    hooks: collections.Counter[str] = collections.Counter()
    roles: dict[str, int] = {}
    jobs = []
    for obj in objects:
        if obj.is_hook:
            hooks[obj.kind] += 1
            continue
        kinds[obj.kind] += 1
        if obj.kind == "Job":
            labels = obj.body["spec"]["template"]["metadata"].get("labels") or {}
            role = labels.get("app.kubernetes.io/component", obj.name)
            roles[role] = roles.get(role, 0) + pods_of(obj.body)
            jobs.append((labels, pods_of(obj.body)))
    slices = endpoints = 0
    for obj in objects:
        if obj.kind == "Service" and not obj.is_hook and (obj.body.get("spec") or {}).get("selector"):
            selected = sum(n for labels, n in jobs if matches(obj.body["spec"]["selector"], labels))
            endpoints += 1
            slices += max(1, math.ceil(selected / SLICE_MAX))
    pods = sum(roles.values())
    return {
        "kinds": dict(sorted(kinds.items())),
        "hooks": dict(hooks),
        "roles": roles,
        "rendered": sum(kinds.values()),
        "pods": pods,
        "endpoints": endpoints,
        "endpointslices": slices,
        "total": sum(kinds.values()) + pods + endpoints + slices,
    }


def kubeflow_v1(roles: dict[str, int]) -> dict[str, Any]:
    """TFJob / PyTorchJob / MXJob: the CR; per replica a Pod and a headless Service (+ Endpoints, slice)."""
    replicas = sum(roles.values())
    return {"custom": 1, "services": replicas, "other": 0, "pods": replicas, "endpoints": replicas,
            "endpointslices": replicas, "total": 1 + 4 * replicas}  # fmt: skip


def mpijob_v2(roles: dict[str, int]) -> dict[str, Any]:
    """MPIJob v2beta1: the CR, 1 headless Service, 1 ConfigMap, 1 Secret, launcher Job + pod, worker Pods."""
    workers = roles.get("worker", 0)
    pods = workers + 1
    slices = max(1, math.ceil(pods / SLICE_MAX))
    return {"custom": 1, "services": 1, "other": 3, "pods": pods, "endpoints": 1, "endpointslices": slices,
            "total": 1 + 1 + 3 + pods + 1 + slices}  # fmt: skip


def inovex(roles: dict[str, int]) -> dict[str, Any]:
    """Per replica: a Job, a ClusterIP Service, the pod, the Service's Endpoints and EndpointSlice."""
    replicas = sum(roles.values())
    return {"custom": 0, "services": replicas, "other": replicas, "pods": replicas, "endpoints": replicas,
            "endpointslices": replicas, "total": 5 * replicas}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", default="1,8,64,512,1000,10000")
    args = parser.parse_args(argv)
    from dlcharts import render_server
    from dlcharts.helm import find_helm
    from dlcharts.render import Renderer, RenderRequest, parse_manifest

    helm = find_helm()
    server = render_server.server_for(helm)
    if server is None:
        raise SystemExit("scale: the in-process renderer is unavailable (see the notice above); run `make tools`")
    counts = [int(w) for w in args.workers.split(",")]
    rows = []
    started = time.perf_counter()
    for chart_name in common.TRAINING_CHARTS:
        chart = common.ROOT / "charts" / chart_name
        Renderer(helm).ensure_dependencies(chart)
        for workers in counts:
            request = RenderRequest(chart=chart, set_values=(f"worker={workers}",), kube_version=common.KUBE_VERSION)
            load = common.load()["1m"]
            samples, proc = common.timed(lambda: helm.run(request.helm_args()), args.repeat)  # noqa: B023
            objects = list(parse_manifest(proc.stdout).values())

            def by_server() -> None:
                reply = server.template(request.helm_args())  # noqa: B023
                assert reply is not None and reply.status == 0, reply and reply.stderr
                parse_manifest(reply.stdout, request.namespace, reply.objects, reply.fallback)  # noqa: B023

            server_samples, _ = common.timed(by_server, args.repeat)
            sizes = {o.ref(): len(json.dumps(o.body, separators=(",", ":")).encode()) for o in objects}  # as the API
            largest = max(sizes, key=lambda ref: sizes[ref])  # server stores it: compact JSON
            ours = analyse(objects)
            mpi = chart_name in ("horovod-mpi", "cntk-dist")
            rows.append(
                {
                    "chart": chart_name,
                    "workers": workers,
                    "render_samples": samples,
                    "server_samples": server_samples,
                    "largest": {"object": largest, "bytes": sizes[largest]},
                    "load_1m": load,
                    "bytes": len(proc.stdout.encode()),
                    "ours": ours,
                    "operator": ("MPIJob v2" if mpi else "Kubeflow v1"),
                    "kubeflow": mpijob_v2(ours["roles"]) if mpi else kubeflow_v1(ours["roles"]),
                    "inovex": inovex(ours["roles"]),
                }
            )
            print(
                f"scale: {chart_name} worker={workers}: {ours['rendered']} rendered objects, {ours['pods']} pods, "
                f"{len(proc.stdout) / 1024:.1f} KiB, binary {common.median(samples) * 1e3:.0f} ms, "
                f"server {common.median(server_samples) * 1e3:.0f} ms, largest {largest} "
                f"{sizes[largest] / 1024:.0f} KiB",
                flush=True,
            )
    common.save("scale", {"rows": rows, "workers": counts, "repeat": args.repeat,
                          "seconds": time.perf_counter() - started, "helm": helm.version})  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
