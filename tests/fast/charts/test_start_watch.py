"""dl-common's start watch (scripts/start_watch.py) against a made-up API server: which pods it blames, what it
patches, when it waits and when it gives up. Rendering it is tested with the charts (test_training_charts.py);
ending a real release is tests/cluster/training/test_start_watch.py."""

from __future__ import annotations

import io
import json
import ssl
import urllib.error
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


class Api:
    """The made-up API server: Jobs by name, the release's pods, the PATCHes it received."""

    def __init__(self, jobs: list[dict[str, Any]], pods: list[dict[str, Any]], status: int = 200) -> None:
        self.jobs = {j["metadata"]["name"]: j for j in jobs}
        self.pods = pods
        self.status = status
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.resets: set[str] = set()

    def urlopen(self, request: urllib.request.Request, context: Any = None, timeout: float = 0) -> io.BytesIO:
        assert request.full_url.startswith("https://10.96.0.1:443/")
        assert request.get_header("Authorization") == "Bearer the-token"
        if self.status != 200:
            raise urllib.error.HTTPError(request.full_url, self.status, "Forbidden", {}, io.BytesIO(b'{"reason":"x"}'))  # type: ignore[arg-type]
        path = request.full_url.split(":443", 1)[1]
        if request.get_method() == "PATCH":
            assert request.get_header("Content-type") == "application/merge-patch+json"
            name, body = path.rsplit("/", 1)[1], json.loads(request.data)  # type: ignore[arg-type]
            if name in self.resets:  # once: the connection breaks before the answer
                self.resets.discard(name)
                raise ConnectionResetError(104, "Connection reset by peer")
            self.patches.append((name, body))
            job = self.jobs[name]
            job["metadata"].setdefault("annotations", {}).update(body["metadata"]["annotations"])
            job["spec"].update(body["spec"])
            return io.BytesIO(b"{}")
        if path.endswith("/pods?labelSelector=app.kubernetes.io/instance%3Dtrain"):
            return io.BytesIO(json.dumps({"items": self.pods}).encode())
        return io.BytesIO(json.dumps(self.jobs[path.rsplit("/", 1)[1]]).encode())


class Stop(Exception):
    pass


def watch(monkeypatch: pytest.MonkeyPatch, api: Api, *, rounds: int = 3, unbound: bool = True,
          jobs: str = "train-chief:1 train-ps:1 train-worker:2") -> tuple[int | None, str]:  # fmt: skip
    """Run the script for at most ``rounds`` rounds; (its exit status, or None when still watching; its output)."""
    env = {"DL_NAMESPACE": "ns", "DL_RELEASE": "train", "DL_START_TIMEOUT": "60", "DL_START_INTERVAL": "5",
           "DL_START_UNBOUND": "1" if unbound else "0", "DL_START_ANNOTATION": "dl-charts.io/start-failure",
           "DL_START_JOBS": jobs, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}  # fmt: skip
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
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": training, "verbs": ["get", "patch"]},
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


@pytest.mark.parametrize("chart", TRAINING)
def test_an_untagged_start_watch_image_is_refused_naming_the_value_unless_the_watch_is_off(chart, render):
    assert "startWatch.image.tag is empty" in refusal(render, chart, set=["startWatch.image.tag=null"])
    render(CHARTS / chart, set=["startWatch.enabled=false", "startWatch.image.tag=null"])
