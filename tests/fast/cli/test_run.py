"""`dlcharts run` without a cluster: the CPU values it installs with, the images it pushes, how it reads pods,
what it prints, and how its command line passes helm arguments through (tests/cluster/cli/test_run.py runs it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlcharts.cli import build_parser, main
from dlcharts.cluster import node
from dlcharts.errors import DLChartsError
from dlcharts.helm import find_helm
from dlcharts.images.definitions import IMAGES
from dlcharts.install import Release
from dlcharts.install.kube import Response
from dlcharts.jobs import run
from tests.support import CHARTS


def test_cpu_values_point_every_local_image_at_the_registry_and_pods_at_the_real_node() -> None:
    values = run.cpu_values("tensorflow-dist", "127.0.0.1:5000")
    assert values["global"] == {"imageRegistry": "127.0.0.1:5000"}
    assert values["defaults"]["image"] == {"tag": IMAGES["tensorflow"].tag, "pullPolicy": "Always"}
    assert values["peerWait"]["image"] == {"tag": IMAGES["busybox"].tag, "pullPolicy": "Always"}
    assert values["defaults"]["gpu"] == {"count": 0}
    assert values["defaults"]["nodeSelector"] == node.NODE_SELECTOR
    assert values["defaults"]["tolerations"] == [node.TOLERATION]
    assert values["benchmark"]["steps"] < 100  # the chart's GPU-sized default would take many minutes on CPU


def test_cpu_values_without_registry_or_real_node_keep_the_charts_images_and_placement() -> None:
    values = run.cpu_values("pytorch-dist", registry=None, real_node=False)
    assert "global" not in values and "image" not in values["defaults"]
    assert "nodeSelector" not in values["defaults"] and "tolerations" not in values["defaults"]
    assert values["defaults"]["gpu"] == {"count": 0}


def test_cpu_values_are_fresh_copies() -> None:
    run.cpu_values("tensorflow-dist", "r:1")["defaults"]["gpu"]["count"] = 8
    assert run.cpu_values("tensorflow-dist", "r:1")["defaults"]["gpu"]["count"] == 0


def test_local_images_name_existing_values_of_the_chart() -> None:
    paths = dict((path, image.name) for image, path in run.local_images("tensorflow-dist"))
    assert paths == {"defaults.image": "tensorflow", "peerWait.image": "busybox", "startWatch.image": "python"}
    assert run.local_images("no-such-chart") == []


def _pod(name: str, phase: str, exit_code: int | None) -> dict[str, object]:
    state = (
        {
            "terminated": {
                "exitCode": exit_code,
                "startedAt": "2026-11-23T05:00:00Z",
                "finishedAt": "2026-11-23T05:00:42Z",
            }
        }
        if exit_code is not None
        else {"running": {"startedAt": "2026-11-23T05:00:00Z"}}
    )
    return {
        "metadata": {"name": name, "ownerReferences": [{"kind": "Job", "name": "tf-train-worker", "controller": True}]},
        "spec": {"nodeName": "real-0", "containers": [{"name": "worker"}, {"name": "sidecar"}]},
        "status": {
            "phase": phase,
            "containerStatuses": [
                {"name": "sidecar", "state": {"terminated": {"exitCode": 9}}},
                {"name": "worker", "state": state},
            ],
        },
    }


def test_pod_outcome_reads_the_main_container() -> None:
    done = run.PodOutcome.of(_pod("w-0", "Succeeded", 0))
    assert (done.node, done.phase, done.exit_code, done.seconds, done.owner) == (
        "real-0", "Succeeded", 0, 42.0, "Job/tf-train-worker",
    )  # fmt: skip
    running = run.PodOutcome.of(_pod("w-1", "Running", None))
    assert (running.exit_code, running.seconds) == (None, None)


def test_summary_lists_pods_jobs_and_the_verdict() -> None:
    pods = [run.PodOutcome.of(_pod("w-0", "Succeeded", 0)), run.PodOutcome.of(_pod("w-1", "Failed", 3))]
    text = run.summary(run.RunResult(False, 61.2, pods, {"tf-train-worker": "Failed"}))
    lines = text.splitlines()
    assert lines[1].split() == ["w-0", "real-0", "Succeeded", "0", "42s"]
    assert lines[2].split() == ["w-1", "real-0", "Failed", "3", "42s"]
    assert lines[-2:] == ["jobs: tf-train-worker Failed", "job FAILED in 61s"]


def test_run_passes_unknown_arguments_to_helm_in_order() -> None:
    argv = ["run", str(CHARTS / "tensorflow-dist"), "--set", "worker=2", "-n", "ns1", "--set-file", "script=t.py",
            "--timeout", "60", "-f", "v.yaml"]  # fmt: skip
    args, extra = build_parser().parse_known_args(argv)
    assert (args.namespace, args.timeout) == ("ns1", 60.0)
    assert extra == ["--set", "worker=2", "--set-file", "script=t.py", "-f", "v.yaml"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["validate", str(CHARTS), "--set-file", "x=y"], "unrecognized arguments: --set-file x=y"),
        (["run", str(CHARTS)], "charts is not a chart folder (no Chart.yaml)"),
        (
            ["run", str(CHARTS / "tensorflow-dist"), "--kubeconfig", "/nonexistent/kc"],
            "--kubeconfig /nonexistent/kc: no such file",
        ),
    ],
)
def test_wrong_run_invocations_exit_2_naming_the_value(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_summary_of_a_success_says_when_every_pod_had_ended() -> None:
    pods = [run.PodOutcome.of(_pod("w-0", "Succeeded", 0))]
    settled = run.summary(run.RunResult(True, 50, pods, {"tf-train-worker": "SuccessCriteriaMet"}, settled_seconds=4.2))
    assert settled.splitlines()[-2:] == ["every pod ended 4s after the job completed", "job succeeded in 50s"]
    pods.append(run.PodOutcome.of(_pod("w-1", "Running", None)))
    stuck = run.summary(run.RunResult(True, 50, pods, {"tf-train-worker": "Complete"}))
    assert "1 pod(s) still Pending or Running 120s after the job completed" in stuck


class _Listing:
    """What run.release_pods reads of the API: one listing of pods."""

    def __init__(self, *pods: dict[str, object]) -> None:
        self.pods = list(pods)

    def items(self, path: str, label_selector: str) -> list[dict[str, object]]:
        assert path == "/api/v1/namespaces/ns/pods" and label_selector.endswith("=tf-train")
        return self.pods


def test_pods_deleted_by_their_job_keep_their_row_as_deleted() -> None:
    # tensorflow-dist's success policy (worker 0) lets the Job delete workers whose main container has just
    # exited but whose pod has not reached Succeeded yet: the table still shows them, with their exit code
    listing = _Listing(_pod("w-0", "Succeeded", 0))
    seen = {"w-0": _pod("w-0", "Running", None), "w-1": _pod("w-1", "Running", 0), "w-2": _pod("w-2", "Running", None)}
    pods = run.release_pods(listing, "ns", "tf-train", seen)  # type: ignore[arg-type]
    assert [(p.name, p.phase, p.exit_code) for p in pods] == [
        ("w-0", "Succeeded", 0),
        ("w-1", "Deleted", 0),
        ("w-2", "Deleted", None),
    ]
    table = run.summary(run.RunResult(True, 50, pods, {"tf-train-worker": "SuccessCriteriaMet"}, settled_seconds=0))
    assert "Deleted: removed by its Job before it ended (success policy met, or failed); EXIT as last seen" in table
    assert "Deleted" not in run.summary(run.RunResult(True, 50, pods[:1], {"tf-train-worker": "Complete"}))


def test_the_start_watch_is_left_out_of_the_pods_and_its_verdict_ends_a_failed_summary() -> None:
    watch = _pod("tf-train-start-watch-x", "Succeeded", 0)
    watch["metadata"]["labels"] = {"app.kubernetes.io/component": "start-watch"}  # type: ignore[index]
    pods = run.release_pods(_Listing(_pod("w-0", "Running", None), watch), "ns", "tf-train")  # type: ignore[arg-type]
    assert [p.name for p in pods] == ["w-0"]
    aftermath = [
        "start watch: 1 pod(s) of release tf-train did not start ...",
        "every pod of the release ended 80s ...",
    ]
    result = run.RunResult(False, 90, pods, {"tf-train-worker": "Failed"}, "the problem", aftermath=aftermath)
    assert run.summary(result).splitlines()[-3:] == [*aftermath, "job FAILED in 90s"]


def test_cpu_values_run_the_start_watch_on_the_real_node_only_through_a_relay() -> None:
    assert run.cpu_values("tensorflow-dist", "127.0.0.1:5000")["startWatch"] == {"enabled": False}
    relayed = run.cpu_values("tensorflow-dist", "127.0.0.1:5000", api_server="https://10.250.7.1:40123")
    assert relayed["startWatch"] == {"apiServer": "https://10.250.7.1:40123"}
    assert "startWatch" not in run.cpu_values("tensorflow-dist", real_node=False)  # another cluster: the chart's own


class _Reviews:
    """The API server's answers to SelfSubjectAccessReviews: ``allowed`` names the resources the caller may create;
    ``asked`` records each review's attributes."""

    def __init__(self, *allowed: str) -> None:
        self.allowed = set(allowed)
        self.asked: list[dict[str, str]] = []

    def request(self, method: str, path: str, *, body: dict[str, Any]) -> Response:
        assert (method, path) == ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        assert body["kind"] == "SelfSubjectAccessReview"
        attributes = body["spec"]["resourceAttributes"]
        self.asked.append(attributes)
        return Response(201, {**body, "status": {"allowed": attributes["resource"] in self.allowed}}, [])


def _release(tmp_path: Path) -> Release:
    return Release(find_helm(), tmp_path / "kubeconfig", "rights", "team-a")  # helm template reads no cluster


def test_the_start_watch_needs_the_right_to_create_its_role_and_binding_or_the_switch(tmp_path: Path) -> None:
    """`dlcharts run` asks the API server before installing; under 'edit' it refuses, naming the way out."""
    values = run.cpu_values("tensorflow-dist", real_node=False)  # the chart's default: the start watch is on
    kube = _Reviews("serviceaccounts")
    with pytest.raises(DLChartsError) as refused:
        run.check_start_watch_rights(kube, _release(tmp_path), CHARTS / "tensorflow-dist", values)  # type: ignore[arg-type]
    message = str(refused.value)
    assert "namespace team-a: you may not create roles.rbac.authorization.k8s.io or rolebindings." in message
    assert "--set startWatch.enabled=false" in message and "'edit' has not" in message
    assert "Nothing was installed" in message
    assert kube.asked == [
        {"namespace": "team-a", "verb": "create", "group": "rbac.authorization.k8s.io", "resource": resource}
        for resource in ("roles", "rolebindings")
    ]

    only_roles = _Reviews("roles")
    with pytest.raises(DLChartsError, match=r"you may not create rolebindings\.rbac\.authorization\.k8s\.io there"):
        run.check_start_watch_rights(only_roles, _release(tmp_path), CHARTS / "tensorflow-dist", values)  # type: ignore[arg-type]

    roles_only = _Reviews("roles", "rolebindings")  # may not touch pods, which the watch's Role grants rights on
    with pytest.raises(DLChartsError) as refused:
        run.check_start_watch_rights(roles_only, _release(tmp_path), CHARTS / "tensorflow-dist", values)  # type: ignore[arg-type]
    message = str(refused.value)
    assert (
        "namespace team-a: you may not list pods or patch pods or delete pods or create pods/eviction there" in message
    )
    assert "--set startWatch.nodeLoss=ignore" in message and "Nothing was installed" in message
    assert {"namespace": "team-a", "verb": "create", "group": "", "resource": "pods", "subresource": "eviction"} in (
        roles_only.asked
    )

    admin = _Reviews("roles", "rolebindings", "pods")
    run.check_start_watch_rights(admin, _release(tmp_path), CHARTS / "tensorflow-dist", values)  # type: ignore[arg-type]
    assert [(a["verb"], a["resource"]) for a in admin.asked[2:]] == [
        ("list", "pods"), ("patch", "pods"), ("delete", "pods"), ("create", "pods")
    ]  # fmt: skip
    ignoring = _Reviews("roles", "rolebindings", "pods")  # startWatch.nodeLoss=ignore: the Role lists pods, no more
    args = ("--set", "startWatch.nodeLoss=ignore")
    run.check_start_watch_rights(ignoring, _release(tmp_path), CHARTS / "tensorflow-dist", values, args)  # type: ignore[arg-type]
    assert [(a["verb"], a["resource"]) for a in ignoring.asked[2:]] == [("list", "pods")]

    switched_off = _Reviews()  # the switch, among the user's helm arguments: nothing to ask
    args = ("--set", "worker=2", "--set", "startWatch.enabled=false")
    run.check_start_watch_rights(switched_off, _release(tmp_path), CHARTS / "tensorflow-dist", values, args)  # type: ignore[arg-type]
    assert switched_off.asked == []


class _Watches:
    """The release's Jobs and the start watch's pods, as run.suspend_start_watch reads them; the PATCHes it sends."""

    def __init__(self, jobs: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.jobs, self.pods = jobs, pods
        self.patched: list[tuple[str, str, dict[str, Any], str]] = []

    def items(self, path: str, label_selector: str) -> list[dict[str, Any]]:
        if path == "/apis/batch/v1/namespaces/ns/jobs":
            assert label_selector == "app.kubernetes.io/instance=tf"
            return self.jobs
        assert (path, label_selector) == ("/api/v1/namespaces/ns/pods", "app.kubernetes.io/component=start-watch")
        return self.pods

    def request(self, method: str, path: str, *, body: dict[str, Any], content_type: str) -> Response:
        self.patched.append((method, path, body, content_type))
        return Response(200, {}, [])


def _job(name: str, component: str, *conditions: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app.kubernetes.io/component": component}},
        "spec": {},
        "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]},
    }


def _watch_pod(job: str, phase: str) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{job}-x", "ownerReferences": [{"kind": "Job", "name": job, "controller": True}]},
        "status": {"phase": phase},
    }


def test_the_end_of_a_run_suspends_a_start_watch_that_still_runs_and_nothing_else(tmp_path: Path) -> None:
    release = Release(find_helm(), tmp_path / "kubeconfig", "tf", "ns")
    running = _Watches([_job("tf-worker", "worker"), _job("tf-start-watch", "start-watch")],
                       [_watch_pod("tf-start-watch", "Running")])  # fmt: skip
    assert run.suspend_start_watch(running, release) == ["tf-start-watch"]  # type: ignore[arg-type]
    assert running.patched == [("PATCH", "/apis/batch/v1/namespaces/ns/jobs/tf-start-watch",
                                {"spec": {"suspend": True}}, "application/merge-patch+json")]  # fmt: skip
    # a watch whose pod has ended, or that has acted (its verdict is on the Jobs), finishes as it did
    verdict = {run.START_FAILURE: "1 pod(s) of release tf did not start ..."}
    for jobs, pods in (
        ([_job("tf-start-watch", "start-watch")], [_watch_pod("tf-start-watch", "Succeeded")]),
        ([_job("tf-start-watch", "start-watch", "Complete")], [_watch_pod("tf-start-watch", "Running")]),
        ([_job("tf-worker", "worker")], [_watch_pod("tf-worker", "Running")]),
        (
            [
                {**_job("tf-worker", "worker", "Failed"), "metadata": {"name": "tf-worker", "annotations": verdict}},
                _job("tf-start-watch", "start-watch"),
            ],
            [_watch_pod("tf-start-watch", "Running")],
        ),  # fmt: skip
    ):
        left = _Watches(jobs, pods)
        assert run.suspend_start_watch(left, release) == [] and left.patched == []  # type: ignore[arg-type]
