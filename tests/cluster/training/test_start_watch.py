"""A role that never starts releases the job (issue 32, item 5), for real on the embedded cluster's real node: a
tensorflow-dist parameter server whose image tag does not exist never starts its main container; the chart's start
watch fails every Job of the release peerWait.timeoutSeconds after they started, naming the role, the pod and the
pull error, and the Job controller ends every pod, the stuck one too. The path is `dlcharts run`'s: local images in
the cluster's registry, CPU values, and the relay through which the real node's pods reach the API server
(run.api_relay; a real cluster's pods have the kubernetes Service)."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from dlcharts.cluster import ClusterHandle
from dlcharts.helm import find_helm
from dlcharts.install import Kube, Release
from dlcharts.install.namespaces import delete_namespace
from dlcharts.install.podsecurity import chart_pod_security
from dlcharts.jobs import run
from tests.support import CHARTS

pytestmark = pytest.mark.cluster

TIMEOUT = 60  # peerWait.timeoutSeconds
INTERVAL = 5  # peerWait.intervalSeconds (the charts' default)
HELM_ARGS = ("--set", "chief=1", "--set", "ps=1", "--set", "worker=2", "--set", "roles.ps.image.tag=does-not-exist",
             "--set", f"peerWait.timeoutSeconds={TIMEOUT}")  # fmt: skip


def test_a_parameter_server_whose_image_cannot_be_pulled_fails_the_release_and_ends_every_pod(
    embedded_cluster: ClusterHandle,
) -> None:
    assert embedded_cluster.images is not None and embedded_cluster.real_node is not None
    chart = CHARTS / "tensorflow-dist"
    namespace = f"nostart-{uuid.uuid4().hex[:6]}"
    embedded_cluster.create_namespace(namespace, chart_pod_security(chart).level)
    lines: list[str] = []
    run.push_images("tensorflow-dist", embedded_cluster.images.registry, lines.append)
    relay = run.api_relay(embedded_cluster.server, embedded_cluster.state_dir, embedded_cluster.real_node["ip"])
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube, relay as api_server:
        try:
            started = time.monotonic()
            result = run.run_job(
                kube,
                Release(find_helm(), embedded_cluster.kubeconfig, "nostart", namespace),
                chart,
                run.cpu_values("tensorflow-dist", embedded_cluster.images.registry, api_server=api_server),
                HELM_ARGS,
                timeout=600,
                write=lines.append,
            )
            took = time.monotonic() - started
            summary = run.summary(result)
            print(*lines, summary, result.problem, sep="\n")  # in the report when an assertion fails
            assert not result.ok, summary
            # Failed, or FailureTarget while the Job controller still counts its deleted pods
            assert sorted(result.jobs) == ["nostart-chief", "nostart-ps", "nostart-worker"], summary
            assert set(result.jobs.values()) <= {"Failed", "FailureTarget"}, summary
            # dlcharts run saw the pull error at once, and then the chart freed everything by itself
            assert re.search(r"pod nostart-ps-0-\w+ container ps is waiting in (ImagePullBackOff|ErrImagePull)",
                             result.problem)  # fmt: skip
            verdict = next(line for line in result.aftermath if line.startswith("start watch: "))
            assert re.search(
                rf"did not start their main container within {TIMEOUT}s \(peerWait.timeoutSeconds\) of their Job's "
                r"start: role ps, pod nostart-ps-0-\w+: (ImagePullBackOff|ErrImagePull): .*tensorflow/tensorflow:"
                "does-not-exist",
                verdict,
            ), verdict
            assert "role worker" not in verdict and "role chief" not in verdict  # they started: not named
            ended = next(line for line in result.aftermath if line.startswith("every pod of the release ended"))
            seconds = int(re.search(r"ended (\d+)s after", ended)[1])  # type: ignore[index]
            assert seconds <= TIMEOUT + INTERVAL + run.START_WATCH_MARGIN + 30, ended  # + the install
            assert all(p.phase not in ("Pending", "Running") for p in result.pods), summary
            for job in ("nostart-chief", "nostart-ps", "nostart-worker"):
                body = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{job}")
                ends = body["status"].get("conditions") or []
                reasons = {c.get("reason") for c in ends if c["type"] in ("Failed", "FailureTarget")}
                assert reasons == {"DeadlineExceeded"}, body["status"]
                said = body["metadata"]["annotations"]["dl-charts.io/start-failure"]
                assert said == verdict.removeprefix("start watch: ")
            # the watch itself is no pod of the training (no instance label): it ends once it has acted (the
            # kubelet may report that a little after the training pods' end)
            selector = "app.kubernetes.io/component=start-watch,app.kubernetes.io/part-of=nostart"
            deadline = time.monotonic() + 60
            while True:
                (watch,) = kube.items(f"/api/v1/namespaces/{namespace}/pods", label_selector=selector)
                if watch["status"]["phase"] != "Running" or time.monotonic() > deadline:
                    break
                time.sleep(1)
            assert watch["status"]["phase"] == "Succeeded", watch["status"]
            log = kube.request("GET", f"/api/v1/namespaces/{namespace}/pods/{watch['metadata']['name']}/log").doc
            assert "start-watch: ERROR: " in log and "Job nostart-ps: failed" in log, log
            print(f"wall time of the run: {took:.0f}s; {ended}")
        finally:
            delete_namespace(kube, namespace)
