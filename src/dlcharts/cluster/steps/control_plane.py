"""The control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kwok controller, as
``kwokctl create cluster`` starts them (:mod:`dlcharts.cluster.kwokctl`), until it serves: ``/readyz``, the
controller-manager's and scheduler's leader leases, the ``default`` ServiceAccount."""

from __future__ import annotations

import contextlib
import functools
import shutil
from pathlib import Path
from typing import Any

from dlcharts.cluster import kubeapi, kwokctl
from dlcharts.cluster.steps import StepContext
from dlcharts.waiting import poll


def start(ctx: StepContext) -> None:
    """Create the control plane (a reused cluster's runs already) and wait until it serves."""
    if ctx.reused:
        ctx.server = wait_serving(ctx.layout.kubeconfig, ctx.config.start_timeout)
        return
    # kwokctl takes free ports as it creates a cluster: two creations at once (CI's two test
    # sessions) took the same one, and a kwok-controller failed to bind it
    with ctx.layout.lock("kwokctl-create"):
        kwokctl.create(ctx.layout, ctx.config, ctx.binaries)
        ctx.server = wait_serving(ctx.layout.kubeconfig, ctx.config.start_timeout)


def stop(ctx: StepContext) -> None:
    kwokctl.delete(ctx.layout)


def clean_up(ctx: StepContext) -> None:
    """The state directory, whatever kwokctl left of it (the other steps' folders are in it too)."""
    if ctx.layout.state_dir.exists():
        shutil.rmtree(ctx.layout.state_dir, ignore_errors=True)


def wait_serving(kubeconfig: Path, timeout: float) -> str:
    """Wait for ``/readyz``, the leader leases and the default ServiceAccount; the API server's address."""
    poll(
        lambda: kubeapi.get(kubeconfig, "/readyz", timeout=5) == "ok",
        timeout,
        "kube-apiserver /readyz",
    )
    from kubernetes import client

    with contextlib.closing(kubeapi.api(kubeconfig)) as api:
        coord: Any = client.CoordinationV1Api(api)
        for lease in ("kube-controller-manager", "kube-scheduler"):
            poll(
                functools.partial(_lease_holder, coord, lease),
                timeout,
                f"{lease} to take its leader lease",
            )
        core: Any = client.CoreV1Api(api)
        poll(
            lambda: core.read_namespaced_service_account("default", "default"),
            timeout,
            "the default ServiceAccount (kube-controller-manager's serviceaccount controller)",
        )
    return kubeapi.server(kubeconfig)


def _lease_holder(coord: Any, name: str) -> str | None:
    lease = coord.read_namespaced_lease(name, "kube-system")
    return lease.spec.holder_identity if lease.spec else None
