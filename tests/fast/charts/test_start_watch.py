"""dl-common's start watch (scripts/start_watch.py) against a made-up API server: which pods it blames, what it
patches, when it waits and when it gives up. Rendering it is tested with the charts (test_training_charts.py);
ending a real release is tests/cluster/training/test_start_watch.py."""

from __future__ import annotations

import copy
import io
import json
import os
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest

from dlcharts.policies import pod_specs
from tests.support import CHARTS
from tests.support.charts import TRAINING, refusal

SCRIPT = CHARTS / "dl-common" / "scripts" / "start_watch.py"
NOW = 1_800_000_000.0


def stamp(seconds_ago: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(NOW - seconds_ago, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job(name: str, started_ago: float | None = 120, **status: Any) -> dict[str, Any]:
    st = dict(status)
    if started_ago is not None:
        st["startTime"] = stamp(started_ago)
    return {"metadata": {"name": name}, "spec": {}, "status": st}


def pod(job_name: str, index: int, role: str, *, node: str | None = "n1", phase: str = "Pending",
        main: dict[str, Any] | None = None, init: list[dict[str, Any]] | None = None,
        conditions: list[dict[str, Any]] | None = None, suffix: str = "abcde") -> dict[str, Any]:  # fmt: skip
    status: dict[str, Any] = {"phase": phase, "conditions": conditions or []}
    if main is not None:
        status["containerStatuses"] = [{"name": role, **main}]
    if init is not None:
        status["initContainerStatuses"] = init
    return {
        "metadata": {
            "name": f"{job_name}-{index}-{suffix}",
            "creationTimestamp": stamp(100),
            "labels": {"batch.kubernetes.io/job-name": job_name, "app.kubernetes.io/component": role},
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
        },
        "spec": {"containers": [{"name": role}], **({"nodeName": node} if node else {})},
        "status": status,
    }


RUNNING = {"state": {"running": {"startedAt": stamp(50)}}}
PULL = {"state": {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "r/tf:does-not-exist"'}}}
PEER_WAIT = [{"name": "peer-wait", "state": {"running": {"startedAt": stamp(90)}}}]
NODE_LOSS = "dl-charts.io/node-loss"


def on_lost_node(pod: dict[str, Any], due_in: float, *, marked: bool = True, evicted: bool = True) -> dict[str, Any]:
    """``pod`` (Running, its main container running) as Kubernetes leaves it on a node that stopped answering: its
    deletion due in ``due_in`` seconds (negative: overdue); ``marked``: the node controller set its Ready condition
    False (its containers still say ready); ``evicted``: the taint manager's DisruptionTarget condition."""
    pod["metadata"]["deletionTimestamp"] = stamp(-due_in)
    pod["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    pod["metadata"]["resourceVersion"] = "7"
    pod["status"]["containerStatuses"][0]["ready"] = True
    conditions = [{"type": "Ready", "status": "False" if marked else "True"}]
    if evicted:
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                           "lastTransitionTime": stamp(5)})  # fmt: skip
    pod["status"]["conditions"] = conditions
    return pod


class Api:
    """The made-up API server: Jobs by name, the release's pods, the PATCHes it received."""

    def __init__(
        self, jobs: list[dict[str, Any]], pods: list[dict[str, Any]], status: int = 200,
        watch_pods: list[dict[str, Any]] | None = None,
    ) -> None:  # fmt: skip
        self.jobs = {j["metadata"]["name"]: j for j in jobs}
        self.pods = pods
        self.watch_pods = watch_pods or []  # the pods of the watch's own Job (no instance label)
        self.status = status
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.deletes: list[tuple[str, dict[str, Any]]] = []
        self.pod_patches: list[tuple[str, dict[str, Any]]] = []
        self.evictions: list[tuple[str, dict[str, Any]]] = []
        self.resets: set[str] = set()
        self.finish_on_watch: set[str] = set()  # the Jobs that a watch of them sees finish
        self.fail_on_watch: set[str] = set()  # the Jobs that the next watch of them sees count a failed pod (once)
        self.fail_from_get: dict[str, int] = {}  # a Job's status.failed is 1 from its n-th GET on
        self.gets: dict[str, int] = {}
        self.watched: list[str] = []

    def urlopen(self, request: urllib.request.Request, context: Any = None, timeout: float = 0) -> io.BytesIO:
        assert request.full_url.startswith("https://10.96.0.1:443/")
        assert request.get_header("Authorization") == "Bearer the-token"
        if self.status != 200:
            raise urllib.error.HTTPError(request.full_url, self.status, "Forbidden", {}, io.BytesIO(b'{"reason":"x"}'))  # type: ignore[arg-type]
        path = request.full_url.split(":443", 1)[1]
        if request.get_method() == "PATCH" and "/pods/" in path:
            assert request.get_header("Content-type") == "application/merge-patch+json"
            name, body = path.rsplit("/", 1)[1], json.loads(request.data)  # type: ignore[arg-type]
            self.pod_patches.append((name, body))
            return io.BytesIO(b"{}")
        if request.get_method() == "PATCH":
            assert request.get_header("Content-type") == "application/merge-patch+json"
            name, body = path.rsplit("/", 1)[1], json.loads(request.data)  # type: ignore[arg-type]
            if name in self.resets:  # once: the connection breaks before the answer
                self.resets.discard(name)
                raise ConnectionResetError(104, "Connection reset by peer")
            self.patches.append((name, body))
            job = self.jobs[name]
            job["metadata"].setdefault("annotations", {}).update(body["metadata"]["annotations"])
            job["spec"].update(body.get("spec", {}))
            return io.BytesIO(b"{}")
        if request.get_method() == "POST":
            name, body = path.split("/")[-2], json.loads(request.data)  # type: ignore[arg-type]
            assert path == f"/api/v1/namespaces/ns/pods/{name}/eviction" and body["metadata"] == {"name": name}
            self.evictions.append((name, body["deleteOptions"]))
            return io.BytesIO(b"{}")
        if request.get_method() == "DELETE":
            name, body = path.rsplit("/", 1)[1], json.loads(request.data)  # type: ignore[arg-type]
            assert (
                path == f"/api/v1/namespaces/ns/pods/{name}"
                and request.get_header("Content-type") == "application/json"
            )
            self.deletes.append((name, body))
            self.pods = [p for p in self.pods if p["metadata"]["name"] != name]
            self.watch_pods = [p for p in self.watch_pods if p["metadata"]["name"] != name]
            return io.BytesIO(b"{}")
        if "&watch=1&" in path:
            query = urllib.parse.parse_qs(path.split("?", 1)[1])
            assert path.startswith("/apis/batch/v1/namespaces/ns/jobs?") and query["timeoutSeconds"] == ["5"], path
            name = query["fieldSelector"][0].removeprefix("metadata.name=")
            self.watched.append(name)
            added = json.dumps({"type": "ADDED", "object": copy.deepcopy(self.jobs[name])})
            if name in self.fail_on_watch:
                self.fail_on_watch.discard(name)
                self.jobs[name]["status"]["failed"] = self.jobs[name]["status"].get("failed", 0) + 1
                return io.BytesIO(f"{added}\n{json.dumps({'type': 'MODIFIED', 'object': self.jobs[name]})}".encode())
            if name not in self.finish_on_watch:
                return io.BytesIO(added.encode())  # the watch timed out with no change
            self.jobs[name]["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
            event = {"type": "MODIFIED", "object": self.jobs[name]}
            return io.BytesIO(
                (
                    json.dumps({"type": "ADDED", "object": {"metadata": {"name": name}}}) + "\n" + json.dumps(event)
                ).encode()
            )
        if path.endswith("/pods?labelSelector=app.kubernetes.io/instance%3Dtrain"):
            return io.BytesIO(json.dumps({"items": self.pods}).encode())
        if path.endswith("/pods?labelSelector=batch.kubernetes.io/job-name%3Dtrain-start-watch"):
            return io.BytesIO(json.dumps({"items": self.watch_pods}).encode())
        name = path.rsplit("/", 1)[1]
        self.gets[name] = self.gets.get(name, 0) + 1
        if self.gets[name] >= self.fail_from_get.get(name, 1 << 30):
            self.jobs[name]["status"]["failed"] = 1
        return io.BytesIO(json.dumps(self.jobs[name]).encode())


class Stop(Exception):
    pass


def watch(monkeypatch: pytest.MonkeyPatch, api: Api, *, rounds: int = 3, unbound: bool = True,
          jobs: str = "train-chief:1 train-ps:1 train-worker:2",
          node_loss: str = "", restart_all: bool = True, restart_on_failure: bool = False,
          ) -> tuple[int | None, str]:  # fmt: skip
    """Run the script for at most ``rounds`` rounds; (its exit status, or None when still watching; its output).
    ``node_loss``: the chart's startWatch.nodeLoss (recover, fail), or "" for ignore."""
    env = {"DL_NAMESPACE": "ns", "DL_RELEASE": "train", "DL_START_TIMEOUT": "60", "DL_START_INTERVAL": "5",
           "DL_START_UNBOUND": "1" if unbound else "0", "DL_START_ANNOTATION": "dl-charts.io/start-failure",
           "DL_START_JOBS": jobs, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}  # fmt: skip
    if node_loss:
        env |= {"DL_NODE_LOSS": node_loss, "DL_NODE_ANNOTATION": NODE_LOSS, "DL_WATCH_JOB": "train-start-watch",
                "DL_RESTART_ALL": "1" if restart_all else "0"}  # fmt: skip
    else:
        for key in ("DL_NODE_LOSS", "DL_NODE_ANNOTATION", "DL_WATCH_JOB", "DL_RESTART_ALL"):
            monkeypatch.delenv(key, raising=False)
    if restart_on_failure:
        env["DL_RESTART_ON_FAILURE"] = "1"
    else:
        monkeypatch.delenv("DL_RESTART_ON_FAILURE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(ssl, "create_default_context", lambda cafile=None: object())
    monkeypatch.setattr(urllib.request, "urlopen", api.urlopen)
    monkeypatch.setattr("time.time", lambda: NOW)
    slept = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) >= rounds:
            raise Stop

    monkeypatch.setattr("time.sleep", sleep)
    monkeypatch.setattr("signal.signal", lambda *_: None)  # the handler would be this test process's
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)

    def fake_open(path: str, *args: Any, **kwargs: Any) -> io.StringIO:
        assert path == "/var/run/secrets/kubernetes.io/serviceaccount/token"
        return io.StringIO("the-token\n")

    code: int | None = None
    try:
        exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), {"__name__": "start_watch", "open": fake_open})
    except SystemExit as exc:
        code = int(exc.code or 0)
    except Stop:
        pass
    return code, out.getvalue()


def test_a_pod_that_cannot_pull_its_image_fails_every_job_naming_role_pod_and_reason(monkeypatch):
    api = Api(
        [job("train-chief"), job("train-ps"), job("train-worker")],
        [pod("train-chief", 0, "chief", phase="Running", main=RUNNING), pod("train-ps", 0, "ps", main=PULL),
         pod("train-worker", 0, "worker", phase="Running", main=RUNNING),
         pod("train-worker", 1, "worker", phase="Running", main=RUNNING)],
    )  # fmt: skip
    code, out = watch(monkeypatch, api)
    assert code == 0, out
    assert [name for name, _ in api.patches] == ["train-chief", "train-ps", "train-worker"]
    verdict = api.patches[0][1]["metadata"]["annotations"]["dl-charts.io/start-failure"]
    assert verdict == (
        "1 pod(s) of release train did not start their main container within 60s (peerWait.timeoutSeconds) of their "
        'Job\'s start: role ps, pod train-ps-0-abcde: ImagePullBackOff: Back-off pulling image "r/tf:does-not-exist"'
    )
    assert all(body["spec"] == {"activeDeadlineSeconds": 1} for _, body in api.patches)
    assert "start-watch: ERROR: " + verdict in out


def test_a_watch_cut_off_while_it_fails_the_release_finishes_the_work_in_its_next_round(monkeypatch):
    api = Api(
        [job("train-chief"), job("train-ps"), job("train-worker")],
        [pod("train-chief", 0, "chief", phase="Running", main=RUNNING), pod("train-ps", 0, "ps", main=PULL),
         pod("train-worker", 0, "worker", phase="Running", main=RUNNING),
         pod("train-worker", 1, "worker", phase="Running", main=RUNNING)],
    )  # fmt: skip
    api.resets.add("train-worker")
    code, out = watch(monkeypatch, api)
    assert code == 0, out
    assert [name for name, _ in api.patches] == ["train-chief", "train-ps", "train-worker"]
    assert "Connection reset by peer" in out
    # and a new pod of the watch (its Job retried it) finishes what an earlier one began, with the same verdict
    api.jobs["train-worker"] = job("train-worker")
    api.patches.clear()
    assert watch(monkeypatch, api)[0] == 0
    assert [name for name, _ in api.patches] == ["train-worker"]
    said = api.jobs["train-ps"]["metadata"]["annotations"]["dl-charts.io/start-failure"]
    assert api.patches[0][1]["metadata"]["annotations"]["dl-charts.io/start-failure"] == said


def test_the_stuck_pod_is_named_before_the_pods_that_wait_for_it(monkeypatch):
    unschedulable = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                      "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]  # fmt: skip
    api = Api(
        [job("train-ps"), job("train-worker")],
        [pod("train-ps", 0, "ps", node=None, conditions=unschedulable),
         pod("train-worker", 0, "worker", main={"state": {"waiting": {"reason": "PodInitializing"}}}, init=PEER_WAIT)],
    )  # fmt: skip
    code, out = watch(monkeypatch, api, jobs="train-ps:1 train-worker:1")
    assert code == 0
    verdict = api.patches[0][1]["metadata"]["annotations"]["dl-charts.io/start-failure"]
    assert verdict.endswith(
        "role ps, pod train-ps-0-abcde: Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    )
    assert "worker" not in verdict.split("start: ", 1)[1]


def test_nothing_happens_before_the_deadline_or_once_every_pod_started(monkeypatch):
    early = Api([job("train-ps", started_ago=30)], [pod("train-ps", 0, "ps", main=PULL)])
    assert watch(monkeypatch, early, jobs="train-ps:1")[0] is None and not early.patches
    queued = Api([job("train-ps", started_ago=None)], [])  # suspended by a queue: not started, not timed
    assert watch(monkeypatch, queued, jobs="train-ps:1")[0] is None and not queued.patches
    done = Api([job("train-ps")], [pod("train-ps", 0, "ps", phase="Running", main=RUNNING)])
    code, out = watch(monkeypatch, done, jobs="train-ps:1")
    assert code == 0 and not done.patches and "every pod of the release has started" in out
    ran = {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    finished = Api([job("train-ps", conditions=[{"type": "Complete", "status": "True"}])],
                   [pod("train-ps", 0, "ps", phase="Succeeded", main=ran)])  # fmt: skip
    assert watch(monkeypatch, finished, jobs="train-ps:1")[0] == 0 and not finished.patches


def test_with_a_gang_scheduler_unbound_pods_wait_but_a_bound_one_that_cannot_pull_counts(monkeypatch):
    gang = Api(
        [job("train-worker")],
        [pod("train-worker", 0, "worker", node=None), pod("train-worker", 1, "worker", node=None)],
    )
    assert watch(monkeypatch, gang, unbound=False, jobs="train-worker:2")[0] is None and not gang.patches
    bound = Api(
        [job("train-worker")],
        [pod("train-worker", 0, "worker", main=PULL), pod("train-worker", 1, "worker", node=None)],
    )
    assert watch(monkeypatch, bound, unbound=False, jobs="train-worker:2")[0] == 0
    assert (
        "role worker, pod train-worker-0-abcde: ImagePullBackOff"
        in bound.patches[0][1]["metadata"]["annotations"]["dl-charts.io/start-failure"]
    )


def test_an_init_container_that_keeps_failing_counts_and_a_missing_pod_is_named(monkeypatch):
    failed = [{"name": "mpi-setup", "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]
    waiting = {"state": {"waiting": {"reason": "PodInitializing"}}}
    launcher = pod("train-launcher", 0, "launcher", phase="Failed", init=failed, main=waiting)
    api = Api([job("train-launcher"), job("train-worker")], [launcher])
    code, _ = watch(monkeypatch, api, jobs="train-launcher:1 train-worker:1")
    assert code == 0
    verdict = api.patches[0][1]["metadata"]["annotations"]["dl-charts.io/start-failure"]
    assert "role launcher, pod train-launcher-0-abcde: init container mpi-setup failed (Error, exit code 2)" in verdict
    assert "Job train-worker index 0: no pod (kubectl describe job train-worker says why)" in verdict


def test_an_api_server_that_keeps_refusing_ends_the_watch_with_exit_1(monkeypatch):
    api = Api([job("train-ps")], [], status=403)
    code, out = watch(monkeypatch, api, rounds=100, jobs="train-ps:1")
    assert code == 1
    assert "HTTP Error 403: Forbidden" in out and "check the Role and RoleBinding" in out


def running(job_name: str, index: int, role: str, node: str = "n1", **kwargs: Any) -> dict[str, Any]:
    return pod(job_name, index, role, node=node, phase="Running", main=dict(RUNNING), suffix=f"s{index}", **kwargs)


def test_a_pod_on_a_lost_node_is_deleted_at_once_and_the_jobs_note_it_while_the_watch_goes_on(monkeypatch):
    lost = on_lost_node(running("train-worker", 1, "worker", node="n2"), due_in=25)
    pods = [running("train-ps", 0, "ps"), running("train-worker", 0, "worker"), lost]
    api = Api([job("train-ps"), job("train-worker")], pods)
    code, out = watch(monkeypatch, api, jobs="train-ps:1 train-worker:2", node_loss="recover")
    assert code is None, out  # every pod has started, but the watch guards the release until its Jobs finish
    # the Job's finalizer first (the Job counts a pod's end only once it has failed, which no kubelet will say)
    assert api.pod_patches == [("train-worker-1-s1", {"metadata": {"finalizers": None, "resourceVersion": "7"}})]
    assert api.deletes == [
        ("train-worker-1-s1", {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    ]
    # the survivors cannot train without rank 1: evicted (a disruption, no retry counted) to start again with it
    assert api.evictions == [
        ("train-ps-0-s0", {"gracePeriodSeconds": 5}),
        ("train-worker-0-s0", {"gracePeriodSeconds": 5}),
    ]
    note = (f"node n2 lost: pods train-worker-1-s1 (role worker, index 1) deleted at {stamp(0)}; their Jobs replace "
            "them on the nodes that work; the release's other 2 pod(s) evicted to train again with them")  # fmt: skip
    assert {name: body["metadata"]["annotations"][NODE_LOSS] for name, body in api.patches} == {
        "train-ps": note, "train-worker": note,
    }  # fmt: skip
    assert all("spec" not in body for _, body in api.patches)  # recovering fails nothing
    assert "start-watch: node n2 lost: deleted pod train-worker-1-s1 (role worker, index 1)" in out


def test_only_pods_that_ran_before_the_loss_are_evicted_and_none_in_an_elastic_run(monkeypatch):
    lost = on_lost_node(running("train-worker", 1, "worker", node="n2"), due_in=25)
    replacement = running("train-worker", 0, "worker")
    replacement["metadata"]["creationTimestamp"] = stamp(2)  # started after the node was lost: already new
    done = running("train-ps", 0, "ps")
    done["status"]["phase"] = "Succeeded"
    api = Api([job("train-ps"), job("train-worker")], [done, replacement, lost])
    assert watch(monkeypatch, api, jobs="train-ps:1 train-worker:2", node_loss="recover")[0] is None
    assert api.evictions == [] and [name for name, _ in api.deletes] == ["train-worker-1-s1"]
    elastic = Api([job("train-worker")], [running("train-worker", 0, "worker"), on_lost_node(lost, due_in=25)])
    watch(monkeypatch, elastic, jobs="train-worker:2", node_loss="recover", restart_all=False)
    assert elastic.evictions == [] and [name for name, _ in elastic.deletes] == ["train-worker-1-s1"]
    assert "evicted" not in elastic.patches[0][1]["metadata"]["annotations"][NODE_LOSS]


def test_with_restart_on_failure_a_failed_pod_gets_every_live_training_pod_evicted_once(monkeypatch):
    replacement = running("train-worker", 1, "worker")
    # made after the round that counted no failure: it may have joined the pods that trained with the failed one
    replacement["metadata"]["creationTimestamp"] = stamp(-1)
    done = running("train-scheduler", 0, "scheduler")
    done["status"]["phase"] = "Succeeded"
    pods = [running("train-server", 0, "server"), running("train-worker", 0, "worker"), replacement, done]
    jobs = "train-scheduler:1 train-server:1 train-worker:2"

    def api() -> Api:
        return Api([job("train-scheduler"), job("train-server"), job("train-worker")], copy.deepcopy(pods))

    failing = api()
    failing.fail_from_get = {"train-worker": 2}  # the first round counts none, the second one
    assert watch(monkeypatch, failing, jobs=jobs, node_loss="recover", restart_on_failure=True)[0] is None
    evicted = [name for name, _ in failing.evictions]
    assert evicted == ["train-server-0-s0", "train-worker-0-s0", replacement["metadata"]["name"]]  # once
    for off in ({"restart_on_failure": False}, {"node_loss": "fail", "restart_on_failure": True}):
        quiet = api()
        quiet.fail_from_get = {"train-worker": 2}
        watch(monkeypatch, quiet, jobs=jobs, **({"node_loss": "recover"} | off))  # type: ignore[arg-type]
        assert quiet.evictions == [], off
    already = api()  # a watch that starts after the failure (its pod replaced) counts it as the first round's
    already.fail_from_get = {"train-worker": 1}
    watch(monkeypatch, already, jobs=jobs, node_loss="recover", restart_on_failure=True)
    assert already.evictions == []


def test_a_pod_whose_deletion_no_kubelet_confirms_is_deleted_once_overdue_and_no_sooner(monkeypatch):
    overdue = on_lost_node(running("train-worker", 0, "worker"), due_in=-16, marked=False, evicted=False)
    on_time = on_lost_node(running("train-worker", 1, "worker"), due_in=-10, marked=False, evicted=False)
    evicted_only = on_lost_node(running("train-worker", 2, "worker"), due_in=20, marked=False)
    ended = on_lost_node(running("train-worker", 3, "worker"), due_in=-600)
    ended["status"]["phase"] = "Succeeded"  # it waits for its Job to count it, not for a node
    api = Api([job("train-worker")], [overdue, on_time, evicted_only, ended])
    assert watch(monkeypatch, api, jobs="train-worker:4", node_loss="recover")[0] is None
    assert [name for name, _ in api.deletes] == ["train-worker-0-s0"]
    assert [name for name, _ in api.pod_patches] == ["train-worker-0-s0"]


def test_with_fail_the_watch_fails_the_release_naming_the_node_and_pods_and_a_new_watch_finishes_it(monkeypatch):
    lost = on_lost_node(running("train-worker", 1, "worker", node="n2"), due_in=25)
    api = Api([job("train-ps"), job("train-worker")], [running("train-ps", 0, "ps"), lost])
    api.resets.add("train-worker")  # the watch is cut off halfway through failing the release
    code, out = watch(monkeypatch, api, rounds=1, jobs="train-ps:1 train-worker:2", node_loss="fail")
    assert code is None and "Connection reset by peer" in out
    assert [name for name, _ in api.deletes] == ["train-worker-1-s1"]
    deleted = f"node n2 lost: pods train-worker-1-s1 (role worker, index 1) deleted at {stamp(0)}"
    verdict = f"failed the release: {deleted} (startWatch.nodeLoss: fail)"
    failing = {"metadata": {"annotations": {NODE_LOSS: verdict}}, "spec": {"activeDeadlineSeconds": 1}}
    assert api.patches == [("train-ps", failing)]
    assert "start-watch: ERROR: " + verdict in out
    api.patches.clear()  # its next pod (or round) finishes the work
    assert watch(monkeypatch, api, jobs="train-ps:1 train-worker:2", node_loss="fail")[0] == 0
    assert api.patches == [("train-worker", failing)]


def test_the_watchs_own_pod_on_a_lost_node_is_deleted_without_a_note(monkeypatch):
    own = on_lost_node(running("train-start-watch", 0, "start-watch", node="n2"), due_in=25)
    api = Api([job("train-worker")], [running("train-worker", 0, "worker")], watch_pods=[own])
    assert watch(monkeypatch, api, jobs="train-worker:1", node_loss="recover")[0] is None
    assert [name for name, _ in api.deletes] == ["train-start-watch-0-s0"] and not api.patches


def test_ignore_leaves_a_lost_node_to_kubernetes_and_the_watch_ends_once_every_pod_started(monkeypatch):
    lost = on_lost_node(running("train-worker", 0, "worker"), due_in=-100)
    api = Api([job("train-worker")], [lost])
    code, out = watch(monkeypatch, api, jobs="train-worker:1")
    assert code == 0 and not api.deletes and "every pod of the release has started" in out


def test_a_guarding_watch_ends_once_every_job_has_finished(monkeypatch):
    complete = [{"type": "Complete", "status": "True"}]
    api = Api([job("train-ps", conditions=complete), job("train-worker", conditions=complete)], [])
    code, out = watch(monkeypatch, api, jobs="train-ps:1 train-worker:1", node_loss="recover")
    assert code == 0 and "every Job of the release has finished; done" in out


def test_a_guarding_watch_waits_on_a_watch_of_an_unfinished_job_and_ends_as_soon_as_the_last_one_finishes(
    monkeypatch,
):
    api = Api(
        [job("train-ps"), job("train-worker")], [running("train-ps", 0, "ps"), running("train-worker", 0, "worker")]
    )
    assert watch(monkeypatch, api, jobs="train-ps:1 train-worker:1", node_loss="recover", rounds=2)[0] is None
    # nothing finished: each round's wait is a watch of each Job, side by side, that timed out
    assert sorted(api.watched) == ["train-ps", "train-ps", "train-worker", "train-worker"]
    api.finish_on_watch = {"train-ps", "train-worker"}
    code, out = watch(monkeypatch, api, jobs="train-ps:1 train-worker:1", node_loss="recover", rounds=1)
    assert code == 0 and "every Job of the release has finished; done" in out, out
    assert sorted(api.watched[4:]) == ["train-ps", "train-worker"]  # no sleep: the wait ended at the Jobs' end


def test_a_failed_pod_in_any_job_starts_the_guards_next_round_at_once(monkeypatch):
    pods = [running("train-scheduler", 0, "scheduler"), running("train-server", 0, "server")]
    pods += [
        running("train-server", 1, "server"),
        running("train-worker", 0, "worker"),
        running("train-worker", 1, "worker"),
    ]
    api = Api([job("train-scheduler"), job("train-server"), job("train-worker")], pods)
    api.fail_on_watch = {"train-worker"}
    jobs = "train-scheduler:1 train-server:2 train-worker:2"
    code, out = watch(monkeypatch, api, jobs=jobs, node_loss="recover", restart_on_failure=True, rounds=1)
    assert code is None, out
    # the first wait ended at the failure, with no sleep; the second round evicted, then waited out its watches
    assert sorted(api.watched) == sorted(["train-scheduler", "train-server", "train-worker"] * 2), api.watched
    assert "a training pod failed or was deleted (1 more failure(s) in the release's Jobs)" in out, out
    assert len(api.evictions) == 5


def test_without_node_loss_handling_the_watch_sleeps_between_rounds_and_watches_nothing(monkeypatch):
    api = Api([job("train-worker", started_ago=10)], [pod("train-worker", 0, "worker", init=PEER_WAIT)])
    assert watch(monkeypatch, api, jobs="train-worker:1")[0] is None and not api.watched


def test_a_pod_that_replaces_a_lost_one_is_not_timed_by_a_new_watch(monkeypatch):
    replacement = pod("train-worker", 1, "worker", main={"state": {"waiting": {"reason": "ImagePullBackOff"}}})
    replacement["metadata"]["annotations"]["batch.kubernetes.io/job-index-ignored-failure-count"] = "1"
    api = Api([job("train-worker", started_ago=600)], [running("train-worker", 0, "worker"), replacement])
    assert watch(monkeypatch, api, jobs="train-worker:2", node_loss="recover")[0] is None
    assert not api.patches  # the Job's backoffLimitPerIndex bounds a replacement, not the start deadline


def test_sigterm_ends_the_watch_at_once_with_143_so_that_an_uninstall_need_not_wait_out_the_grace(tmp_path):
    # the script as its container runs it, kept in its loop by an API server it cannot reach (no token here);
    # PID 1 of a container ignores SIGTERM unless it has a handler, and a drained node's watch must be restarted
    env = {"DL_NAMESPACE": "ns", "DL_RELEASE": "train", "DL_START_TIMEOUT": "60", "DL_START_INTERVAL": "30",
           "DL_START_ANNOTATION": "a", "DL_START_JOBS": "train-worker:1", "DL_START_API": "https://127.0.0.1:9",
           "PATH": os.environ["PATH"]}  # fmt: skip
    untrusted = "import ssl; ssl.create_default_context = lambda cafile=None: ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)"
    run = f"{untrusted}; exec(compile(open({str(SCRIPT)!r}).read(), 'start_watch', 'exec'))"
    with subprocess.Popen([sys.executable, "-c", run], env=env, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        assert "did not answer (1 in a row)" in lines[1], lines  # now asleep for DL_START_INTERVAL
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 143


def script_body() -> str:
    """The script as its define renders it: without the lines meant for the tools."""
    return "\n".join(line for line in SCRIPT.read_text().splitlines() if not line.startswith("#:")).strip()


def watch_env(rendered: Any, release: str = "train") -> dict[str, str]:
    spec = rendered.get("Job", f"{release}-start-watch").body["spec"]["template"]["spec"]
    return {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}


@pytest.mark.parametrize("chart", TRAINING)
def test_every_chart_renders_its_start_watch_with_the_only_token_of_the_release(chart, render, find_problems):
    rendered = render(CHARTS / chart, set=["worker=2", "peerWait.timeoutSeconds=60"], release="train")
    training = sorted(j.name for j in rendered.of_kind("Job") if j.name != "train-start-watch")
    (role,) = rendered.of_kind("Role")
    assert role.name == "train-start-watch"
    assert role.body["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": training, "verbs": ["get", "watch", "patch"]},
    ]
    (binding,) = rendered.of_kind("RoleBinding")
    assert binding.body["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role.name}
    assert [(s["kind"], s["name"]) for s in binding.body["subjects"]] == [("ServiceAccount", "train-start-watch")]
    (account,) = rendered.of_kind("ServiceAccount")
    assert account.name == "train-start-watch" and account.body["automountServiceAccountToken"] is False
    tokens = {obj.name for obj in rendered for pod in pod_specs(obj) if pod.spec.get("automountServiceAccountToken")}
    assert tokens == {"train-start-watch"}
    template = rendered.get("Job", "train-start-watch").body["spec"]["template"]
    # not a pod of the training: the release's Services and NetworkPolicy select by the instance label
    assert "app.kubernetes.io/instance" not in template["metadata"]["labels"]
    assert template["metadata"]["labels"]["app.kubernetes.io/part-of"] == "train"
    spec = template["spec"]
    assert spec["serviceAccountName"] == "train-start-watch"
    (container,) = spec["containers"]
    assert container["image"] == "python:3.13-alpine"
    assert container["command"] == ["python3", "-c"] and container["args"][0].strip() == script_body()
    env = watch_env(rendered)
    assert sorted(group.rsplit(":", 1)[0] for group in env["DL_START_JOBS"].split()) == training
    assert (env["DL_START_TIMEOUT"], env["DL_START_UNBOUND"]) == ("60", "1")
    assert env["DL_START_ANNOTATION"] == "dl-charts.io/start-failure"
    assert (env["DL_NODE_LOSS"], env["DL_NODE_ANNOTATION"], env["DL_WATCH_JOB"], env["DL_RESTART_ALL"]) == (
        "recover", "dl-charts.io/node-loss", "train-start-watch", "1",
    )  # fmt: skip
    assert not [f for f in find_problems(rendered) if "start-watch" in f.object]  # restricted, resources, tag


@pytest.mark.parametrize("chart", TRAINING)
def test_a_gang_lets_unbound_pods_wait_and_the_switch_removes_the_watch(chart, render):
    gang = render(CHARTS / chart, set=["worker=2", "gang.scheduler=volcano"], release="train")
    assert watch_env(gang)["DL_START_UNBOUND"] == "0"
    assert "DL_START_API" not in watch_env(gang)  # the kubernetes Service
    relayed = render(CHARTS / chart, set=["worker=2", "startWatch.apiServer=https://10.250.7.1:40123"], release="train")
    assert watch_env(relayed)["DL_START_API"] == "https://10.250.7.1:40123"
    off = render(CHARTS / chart, set=["worker=2", "startWatch.enabled=false"], release="train")
    assert not [o for o in off if "start-watch" in o.name]
    assert not off.of_kind("Role") and not off.of_kind("ServiceAccount")


LOST_NODE_TOLERATIONS = [
    {"effect": "NoExecute", "key": f"node.kubernetes.io/{taint}", "operator": "Exists", "tolerationSeconds": 20}
    for taint in ("not-ready", "unreachable")
]


@pytest.mark.parametrize("chart", TRAINING)
def test_every_pod_of_a_guarded_release_leaves_a_lost_node_after_node_loss_seconds(chart, render):
    rendered = render(CHARTS / chart, set=["worker=2"], release="train")
    specs = [pod for obj in rendered.of_kind("Job") for pod in pod_specs(obj)]
    assert specs and all(spec.spec["tolerations"][-2:] == LOST_NODE_TOLERATIONS for spec in specs)
    own = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    kept = render(CHARTS / chart, set=["worker=2", "startWatch.nodeLossSeconds=45"], release="train",
                  values={"defaults": {"tolerations": [own]}})  # fmt: skip
    for spec in (pod for obj in kept.of_kind("Job") for pod in pod_specs(obj)):  # the pod's own toleration is kept
        assert spec.spec["tolerations"] == [own, {**LOST_NODE_TOLERATIONS[0], "tolerationSeconds": 45}]
    # only MXNet's ps-lite cannot take a replacement pod into its running job: the others rerun in place or abort
    assert watch_env(rendered).get("DL_RESTART_ON_FAILURE") == ("1" if chart == "mxnet-dist" else None)
    failing = render(CHARTS / chart, set=["worker=2", "startWatch.nodeLoss=fail"], release="train")
    assert watch_env(failing)["DL_NODE_LOSS"] == "fail"
    ignored = render(CHARTS / chart, set=["worker=2", "startWatch.nodeLoss=ignore"], release="train")
    assert "DL_NODE_LOSS" not in watch_env(ignored)
    rules = ignored.of_kind("Role")[0].body["rules"]  # no patches or deletes of pods: Kubernetes' own way
    assert [(r["resources"], r["verbs"]) for r in rules] == [(["pods"], ["list"]), (["jobs"], ["get", "patch"])]
    assert not [pod for obj in ignored.of_kind("Job") for pod in pod_specs(obj) if pod.spec.get("tolerations")]
    assert "nodeLoss" in refusal(render, chart, set=["startWatch.nodeLoss=restart"])


@pytest.mark.parametrize(
    ("chart", "elastic"),
    [
        ("pytorch-dist", ["elastic.minWorkers=1"]),
        ("horovod-mpi", ["horovod.elastic.enabled=true", "horovod.elastic.minNp=1"]),
    ],
)
def test_an_elastic_minimum_lets_unbound_workers_wait(chart, elastic, render):
    if chart not in TRAINING:
        pytest.skip(f"{chart} is not among the charts under test")
    rendered = render(CHARTS / chart, set=["worker=3", *elastic], release="train")
    assert watch_env(rendered)["DL_START_UNBOUND"] == "0"
    assert watch_env(rendered)["DL_RESTART_ALL"] == "0"  # an elastic run goes on without the ranks of a lost node


@pytest.mark.parametrize("chart", TRAINING)
def test_an_untagged_start_watch_image_is_refused_naming_the_value_unless_the_watch_is_off(chart, render):
    assert "startWatch.image.tag is empty" in refusal(render, chart, set=["startWatch.image.tag=null"])
    render(CHARTS / chart, set=["startWatch.enabled=false", "startWatch.image.tag=null"])
