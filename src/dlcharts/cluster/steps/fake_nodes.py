"""The fake nodes (:func:`dlcharts.cluster.config.node_objects`): created through the API, then Ready once kwok, which
manages only the nodes annotated ``kwok.x-k8s.io/node: fake``, heartbeats them. A reused cluster gets the ones it
lacks. They go with the control plane."""

from __future__ import annotations

import contextlib
from typing import Any

from dlcharts.cluster import kubeapi
from dlcharts.cluster.config import node_objects
from dlcharts.cluster.steps import StepContext
from dlcharts.errors import ClusterError
from dlcharts.waiting import poll


def start(ctx: StepContext) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    wanted = node_objects(ctx.config.node_pools, ctx.config.kubernetes_version)
    with contextlib.closing(kubeapi.api(ctx.layout.kubeconfig)) as api:
        core: Any = client.CoreV1Api(api)
        existing = {n.metadata.name for n in core.list_node().items}
        for node in wanted:
            if node["metadata"]["name"] in existing:
                continue
            try:
                core.create_node(node)
            except ApiException as exc:
                if exc.status != 409:
                    raise ClusterError(f"could not create node {node['metadata']['name']}: {exc.body}") from exc
        names = {n["metadata"]["name"] for n in wanted}

        def all_ready() -> bool:
            ready = set()
            for n in core.list_node().items:
                for cond in n.status.conditions or []:
                    if cond.type == "Ready" and cond.status == "True":
                        ready.add(n.metadata.name)
            return names <= ready

        poll(all_ready, ctx.config.start_timeout, f"{len(names)} fake nodes to be Ready (kwok)")
