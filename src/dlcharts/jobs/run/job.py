"""One release of a training chart on a cluster that is ready for it (:func:`run_job`): installed, its logs
streamed, its Jobs waited for, its outcome read. `dlcharts run` runs one on its :mod:`~dlcharts.jobs.run.command`
session; the benchmarks and the cluster tests run theirs on clusters of their own."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlcharts.errors import ClusterError
from dlcharts.install import ChartSource, Kube, Release, install, namespace_inventory, uninstall, wait_uninstalled
from dlcharts.install.releases import run_helm
from dlcharts.install.waits import Readiness, wait_ready
from dlcharts.jobs.run.logs import LogStream, Write
from dlcharts.jobs.run.outcome import SETTLE_SECONDS, RunResult, job_verdicts, release_pods
from dlcharts.jobs.run.values import values_file
from dlcharts.jobs.run.watch import node_losses, start_watch_aftermath


def replace_release(kube: Kube, release: Release) -> None:
    """Uninstall an earlier release of the same name and wait until its pods are gone."""
    if run_helm(release, ["status", release.name], 60).returncode != 0:
        return
    before = namespace_inventory(kube, release.namespace)
    uninstall(kube, release)
    wait_uninstalled(kube, release.namespace, release.name, before, timeout=120)


def run_job(
    kube: Kube,
    release: Release,
    chart: Path,
    values: dict[str, Any],
    helm_args: Sequence[str] = (),
    *,
    timeout: float = 900,
    write: Write = print,
) -> RunResult:
    """Install ``chart`` as ``release`` with ``values`` then ``helm_args``, stream its logs through ``write``,
    wait for its Jobs; the outcome (never raises for a job that fails: ``RunResult.problem`` says why)."""
    started = time.monotonic()
    replace_release(kube, release)
    readiness: Readiness | None = None
    problem = ""
    logs = LogStream(release.kubeconfig, release.namespace, release.name, write)
    with values_file(values) as path, logs:
        install(kube, release, ChartSource(chart, values_files=(path,), extra_args=tuple(helm_args)))
        try:
            readiness = wait_ready(kube, release.namespace, release.name, timeout=timeout, interval=1.0)
        except ClusterError as exc:
            problem = str(exc)
        settled = _settle(kube, release) if readiness is not None else None
        aftermath = [] if readiness is not None else start_watch_aftermath(kube, release, started, write)
        aftermath = node_losses(kube, release) + aftermath
    jobs = job_verdicts(kube, release.namespace, release.name)
    ok = readiness is not None and bool(jobs) and all(s in ("Complete", "SuccessCriteriaMet") for s in jobs.values())
    if readiness is not None and not jobs:
        problem = f"release {release.name} has no Job: nothing ran to completion (is {chart} a training chart?)"
    pods = release_pods(kube, release.namespace, release.name, logs.seen)
    return RunResult(ok, time.monotonic() - started, pods, jobs, problem, settled, aftermath)


def _settle(kube: Kube, release: Release) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < SETTLE_SECONDS:
        if not any(p.phase in ("Pending", "Running") for p in release_pods(kube, release.namespace, release.name)):
            return time.monotonic() - started
        time.sleep(1.0)
    return None
