"""imageEntrypoint (issue 45 item 2): a role runs its image's own ENTRYPOINT, as Kubeflow's operators ran a
container without command: no command in the container, args only when given, and the environment the operator
would have set (PyTorchJob's MASTER_ADDR, WORLD_SIZE, RANK, PET_*; TFJob's TF_CONFIG; the MPI launcher's hostfile and
OMPI_MCA_*; Trainer's JAX_*; the DMLC_* of MXNet), with the peer wait and the watchdog kept: a role that never ends by
itself runs its image in a native sidecar beside the watchdog. Bad combinations are refused naming the values."""

from __future__ import annotations

import json

import pytest

from dlcharts.errors import RenderError
from dlcharts.podenv import DEFAULT_CONTAINER, container_env, main_container
from tests.support import CHARTS
from tests.support.charts import MPI, TRAINING, refusal, training_jobs

SINGLE = [c for c in TRAINING if c not in MPI]
ARGS = ["--epochs", "1"]
#: the roles each chart renders with these counts, beside its workers
SHAPE = {
    "tensorflow-dist": ["worker=3", "ps=2", "chief=1"],
    "pytorch-dist": ["worker=3"],
    "jax-dist": ["worker=3"],
    "mxnet-dist": ["worker=3", "server=2"],
}
DOMAIN = "release.default.svc"


def rendered_in_entrypoint_mode(render, assert_valid, chart: str):  # type: ignore[no-untyped-def]
    result = render(CHARTS / chart, set=[*SHAPE[chart], "defaults.imageEntrypoint=true", "defaults.gpu.count=0"],
                    values={"defaults": {"args": ARGS}})  # fmt: skip
    assert_valid(result)
    return result


def expected_env(chart: str, role: str, index: int) -> dict[str, str]:
    """What the operator (or Trainer) gave pod ``index`` of ``role``, with this test's counts."""
    worker0 = f"release-worker-0.{DOMAIN}"
    if chart == "pytorch-dist":
        return {"MASTER_ADDR": worker0, "MASTER_PORT": "29500", "WORLD_SIZE": "3", "RANK": str(index),
                "PET_NNODES": "3", "PET_NPROC_PER_NODE": "1", "PET_NODE_RANK": str(index),
                "PET_MASTER_ADDR": worker0, "PET_MASTER_PORT": "29500", "PYTHONUNBUFFERED": "1"}  # fmt: skip
    if chart == "jax-dist":
        return {"JAX_NUM_PROCESSES": "3", "JAX_PROCESS_ID": str(index), "JAX_COORDINATOR_ADDRESS": f"{worker0}:1234"}
    if chart == "mxnet-dist":
        env = {"DMLC_ROLE": role, "DMLC_NUM_WORKER": "3", "DMLC_NUM_SERVER": "2", "DMLC_USE_KUBERNETES": "1"}
        return env | ({"DMLC_WORKER_ID": str(index)} if role == "worker" else {})
    hosts = {r: [f"release-{r}-{i}.{DOMAIN}:2222" for i in range(n)] for r, n in (("chief", 1), ("ps", 2),
                                                                                   ("worker", 3))}  # fmt: skip
    return {"TF_CONFIG": json.dumps({"cluster": hosts, "task": {"type": role, "index": index},
                                     "environment": "cloud"}, separators=(",", ":"))}  # fmt: skip


@pytest.mark.parametrize("chart", SINGLE)
def test_every_role_runs_its_image_entrypoint_with_the_operators_env(chart, render, assert_valid):
    result = rendered_in_entrypoint_mode(render, assert_valid, chart)
    jobs = training_jobs(result)
    assert len(jobs) == len(SHAPE[chart]) + (chart == "mxnet-dist")  # mxnet-dist's scheduler too
    for job in jobs:
        role = job.name.removeprefix("release-")
        program = main_container(job.body)
        assert program["name"] == role
        assert "command" not in program, (job.name, program.get("command"))
        assert program["args"] == ARGS
        for index in range(job.body["spec"]["completions"]):
            env = container_env(program, index)
            wanted = expected_env(chart, role, index)
            if "TF_CONFIG" in wanted:
                assert json.loads(env["TF_CONFIG"]) == json.loads(wanted.pop("TF_CONFIG"))
            if chart == "jax-dist":
                wanted["JAX_COORDINATOR_ADDRESS"] = env["JAX_COORDINATOR_ADDRESS"]  # its port is the chart's
                assert env["JAX_COORDINATOR_ADDRESS"].startswith(f"release-worker-0.{DOMAIN}:")
            assert {k: env.get(k) for k in wanted} == wanted, (job.name, index)
    # without the value the same roles run the chart's program
    plain = render(CHARTS / chart, set=SHAPE[chart])
    assert all(main_container(job.body).get("command") for job in training_jobs(plain))


@pytest.mark.parametrize("chart", SINGLE)
def test_a_role_that_never_ends_runs_its_image_in_a_sidecar_beside_the_watchdog(chart, render, assert_valid):
    result = rendered_in_entrypoint_mode(render, assert_valid, chart)
    watched = []
    for job in training_jobs(result):
        role = job.name.removeprefix("release-")
        template = job.body["spec"]["template"]
        spec = template["spec"]
        if spec["containers"][0]["name"] != "watchdog":
            assert [c["name"] for c in spec["containers"]] == [role]
            assert not any(c.get("restartPolicy") for c in spec.get("initContainers") or [])
            continue
        watched.append(role)
        (watchdog,) = spec["containers"]
        assert watchdog["command"][:2] == ["/bin/sh", "-c"] and watchdog["command"][3] == "dl-watchdog"
        assert "args" not in watchdog  # no program: it only watches, then exits 0 and the pod completes
        assert {e["name"] for e in watchdog["env"]} >= {"DL_WATCH_GROUPS", "DL_WATCH_READY", "DL_WATCH_MISSES"}
        assert watchdog["image"] == main_container(job.body)["image"]  # the role's image: getent or python
        sidecars = [c for c in spec["initContainers"] if c.get("restartPolicy") == "Always"]
        assert [c["name"] for c in sidecars] == [role]
        assert spec["initContainers"][-1]["name"] == role  # after the peer wait
        assert template["metadata"]["annotations"][DEFAULT_CONTAINER] == role
        assert not any(e["name"].startswith("DL_WATCH_") for e in sidecars[0]["env"])
    assert watched == {"tensorflow-dist": ["ps", "worker"], "mxnet-dist": ["scheduler", "server"]}.get(chart, [])


@pytest.mark.parametrize("chart", MPI)
def test_an_mpi_launcher_runs_the_launch_line_as_its_image_entrypoint(chart, render, assert_valid):
    line = ["mpirun", "-n", "2", "/home/mpiuser/pi"]
    result = render(CHARTS / chart, set=["worker=2"],
                    values={"roles": {"launcher": {"imageEntrypoint": True, "args": line}}})  # fmt: skip
    assert_valid(result)
    launcher = result.get("Job", "release-launcher").body
    container = main_container(launcher)
    assert "command" not in container and container["args"] == line
    env = container_env(container, 0)
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert env["OMPI_MCA_plm_rsh_args"] == "-o ConnectionAttempts=10 -p 2222"
    assert "/etc/mpi" in {m["mountPath"] for m in container["volumeMounts"]}  # the hostfile
    init = {c["name"]: c for c in launcher["spec"]["template"]["spec"]["initContainers"]}
    assert list(init) == ["mpi-setup", "mpi-wait"]  # mpi-wait waits for the workers: no peer-wait before it
    assert init["mpi-wait"]["command"] == ["/bin/sh", "/etc/mpi/mpi-launcher.sh"]
    assert container_env(init["mpi-wait"], 0)["MPI_WAIT_ONLY"] == "true"
    assert container_env(init["mpi-wait"], 0)["MPI_PEER_GROUPS"] == "release-worker:2"
    worker = main_container(result.get("Job", "release-worker").body)
    assert worker["args"] == ["/bin/sh", "/etc/mpi/mpi-sshd.sh"]  # the chart's sshd, under the watchdog
    hostfile = result.get("ConfigMap", "release-mpi").body["data"]["hostfile"]
    assert f"release-worker-1.{DOMAIN}" in hostfile
    if chart != "horovod-mpi":
        return  # the other MPI charts run Open MPI only
    intel = render(CHARTS / chart, set=["worker=2", "mpi.implementation=intel"],
                   values={"roles": {"launcher": {"imageEntrypoint": True, "args": line}}})  # fmt: skip
    assert container_env(main_container(intel.get("Job", "release-launcher").body), 0)["I_MPI_HYDRA_HOST_FILE"] == (
        "/etc/mpi/hostfile"
    )


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"defaults": {"imageEntrypont": True}}, ("imageEntrypont",)),
        # helm 4 names the field /defaults/imageEntrypoint, helm 3 defaults.imageEntrypoint
        ({"defaults": {"imageEntrypoint": "yes"}}, ("/defaults/imageEntrypoint", "defaults.imageEntrypoint")),
    ],
    ids=["typo", "not-a-boolean"],
)
def test_the_schema_refuses_a_typo_or_a_non_boolean(chart, values, expected, render):
    with pytest.raises(RenderError) as info:
        render(CHARTS / chart, values=values)
    assert any(name in info.value.stderr for name in expected), info.value.stderr


@pytest.mark.parametrize(
    ("chart", "values", "expected"),
    [
        (
            "pytorch-dist",
            {"defaults": {"imageEntrypoint": True, "command": ["python", "train.py"]}},
            "defaults.imageEntrypoint is true and defaults.command is set",
        ),
        (
            "tensorflow-dist",
            {"roles": {"worker": {"imageEntrypoint": True}}, "script": "print(1)"},
            "roles.worker.imageEntrypoint is true and script is set",
        ),
        (
            "pytorch-dist",
            {"defaults": {"imageEntrypoint": True}, "elastic": {"minWorkers": 1}},
            "defaults.imageEntrypoint is true and elastic.minWorkers is set",
        ),
        (
            "tensorflow-dist",
            {"defaults": {"imageEntrypoint": True}, "legacyFlags": True},
            "defaults.imageEntrypoint is true and legacyFlags is true",
        ),
        (
            "horovod-mpi",
            {"defaults": {"imageEntrypoint": True}},
            "defaults.imageEntrypoint is true, but the MPI workers run the chart's sshd",
        ),
        (
            "cntk-dist",
            {"roles": {"worker": {"imageEntrypoint": True}}},
            "roles.worker.imageEntrypoint is true, but the MPI workers run the chart's sshd",
        ),
        (
            "deepspeed-dist",
            {"roles": {"launcher": {"imageEntrypoint": True, "gpu": {"count": 1}}}},
            "roles.launcher.imageEntrypoint is true, but the launcher runs ranks",
        ),
        (
            "tensorflow-dist",
            {
                "defaults": {"imageEntrypoint": True},
                "worker": 1500,
                "fullnameOverride": "a-release-name-of-forty-characters-xxxxx",
            },
            "so TF_CONFIG is an environment variable of the worker pods, but it is",
        ),
    ],
    ids=["command", "script", "elastic", "legacy-flags", "mpi-defaults", "mpi-worker", "launcher-ranks", "tf-config"],
)
def test_what_the_image_entrypoint_cannot_do_is_refused_naming_the_values(chart, values, expected, render):
    stderr = refusal(render, chart, values=values)
    assert expected in stderr, stderr
