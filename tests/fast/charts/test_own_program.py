"""A user's own training program runs through every training chart without building an image, in the two
documented ways (charts/dl-common/README.md, "Running your own program"):

1. ``--set-file script=train.py``: the chart stores the file in its scripts ConfigMap and every role (every
   MPI rank) runs it with the chart's own launcher instead of the benchmark, keeping the wiring, the peer
   waits and the watchdog;
2. the user's own ConfigMap with ``defaults.command`` (``horovod.command`` / ``cntk.python.command`` in the
   MPI charts), ``defaults.volumes`` and ``defaults.volumeMounts``.

Renders go through helm's real ``--set-file`` with a file in a temporary folder; this tier also runs under
Helm 3."""

from __future__ import annotations

import hashlib
import json
import re
import shlex

import pytest

from dlcharts.catalogue import TRAINING_CHARTS
from dlcharts.podenv import main_container, start_container
from tests.support import CHARTS
from tests.support.charts import MPI, TRAINING, refusal, training_jobs

NON_MPI = [c for c in TRAINING if c not in MPI]
SCRIPT_PATH = "/opt/dl-charts/script.py"
# The launcher each chart runs a program with (MPI charts: what each rank runs, at the end of the launch line).
LAUNCHER = {"tensorflow-dist": "python", "pytorch-dist": "torchrun", "mxnet-dist": "python",
            "horovod-mpi": "python", "cntk-dist": "python", "jax-dist": "python",
            "deepspeed-dist": "python"}  # fmt: skip
BENCHMARK = {"tensorflow-dist": "bench_tf.py", "pytorch-dist": "bench_ddp.py", "mxnet-dist": "bench_mx.py",
             "horovod-mpi": "horovod_bench.py", "cntk-dist": "cntk_bench.py", "jax-dist": "bench_jax.py",
             "deepspeed-dist": "ds_bench.py"}  # fmt: skip
# Every role a chart can have, so that each one is checked (watched roles included).
ALL_ROLES = {"tensorflow-dist": {"chief": 1, "ps": 1, "evaluator": 1}, "mxnet-dist": {"server": 2}}
USER_ARGS = ["--epochs", "3", "--data", "/data/x y"]
# Text a YAML block or a template could mangle: indentation, tabs, trailing spaces, blank lines at the end,
# quotes, template braces, a document separator and a line that looks like helm's "# Source:" comment.
PROGRAM = (
    "#!/usr/bin/env python3\n"
    '"""My training: naïve — ünïcode."""\n'
    "import json, os\n"
    "\n"
    "def main():\n"
    "\tprint('tab-indented')   \n"
    '    cfg = json.loads(os.environ.get("TF_CONFIG", "{}"))  # {{ .Values.worker }} stays text\n'
    "---\n"
    "# Source: not/a/template.yaml\n"
    '    print("done: %s" % cfg)\n'
    "\n"
    "\n"
)


@pytest.fixture
def train_py(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(PROGRAM)
    return path


def program(container: dict) -> list[str]:
    """What a container runs: command + args, past its wrappers: the entrypoint wrapper's and the watchdog's
    (/bin/sh -c <script> <name>, the program in "$@") and pytorch-dist's in-pod reruns (sh -c <script> torchrun ...,
    the program its $0 and "$@")."""
    argv = [*container.get("command", []), *container.get("args", [])]
    while argv[:2] in (["/bin/sh", "-c"], ["sh", "-c"]):
        argv = argv[4:] if argv[0] == "/bin/sh" else argv[3:]
    return argv


def jobs(rendered) -> dict[str, dict]:
    return {job.name: job.body for job in training_jobs(rendered)}


def pod_spec(job: dict) -> dict:
    return job["spec"]["template"]["spec"]


def scripts_configmap(rendered) -> dict:
    return rendered.get("ConfigMap", "release-scripts").body["data"]


# --- 1. script ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("chart", TRAINING)
def test_script_is_stored_byte_for_byte_next_to_the_benchmark_and_mounted_read_only(
    chart, train_py, render, assert_valid
):
    rendered = render(CHARTS / chart, set_file=[f"script={train_py}"], set=["worker=3"])
    assert_valid(rendered)
    data = scripts_configmap(rendered)
    assert data["script.py"] == PROGRAM
    assert BENCHMARK[chart] in data
    digest = hashlib.sha256(PROGRAM.encode()).hexdigest()
    for name, job in jobs(rendered).items():
        spec = pod_spec(job)
        assert {"name": "scripts", "configMap": {"name": "release-scripts", "defaultMode": 365}} in spec["volumes"]
        mounts = main_container(job)["volumeMounts"]
        assert {"name": "scripts", "mountPath": "/opt/dl-charts", "readOnly": True} in mounts, name
        assert job["spec"]["template"]["metadata"]["annotations"]["dl-charts.io/script-sha256"] == digest


@pytest.mark.parametrize("chart", NON_MPI)
def test_every_role_runs_the_script_with_the_charts_launcher_and_keeps_its_wiring(chart, train_py, render):
    values = {**ALL_ROLES.get(chart, {}), "defaults": {"args": USER_ARGS}}
    benchmark = jobs(render(CHARTS / chart, values={**ALL_ROLES.get(chart, {})}))
    rendered = jobs(render(CHARTS / chart, values=values, set_file=[f"script={train_py}"]))
    roles = {"tensorflow-dist": ["chief", "evaluator", "ps", "worker"], "pytorch-dist": ["worker"],
             "mxnet-dist": ["scheduler", "server", "worker"], "jax-dist": ["worker"]}[chart]  # fmt: skip
    assert sorted(rendered) == sorted(benchmark) == [f"release-{role}" for role in roles]
    for name, job in rendered.items():
        main, before = main_container(job), main_container(benchmark[name])
        assert program(main) == [LAUNCHER[chart], SCRIPT_PATH, *USER_ARGS], name
        assert not any(BENCHMARK[chart] in arg for arg in program(main)), name
        # the framework wiring, the peer wait and the watchdog are the benchmark's
        assert main["env"] == before["env"], name
        assert pod_spec(job).get("initContainers") == pod_spec(benchmark[name]).get("initContainers"), name
        watched = before.get("command", [])[:2] == ["/bin/sh", "-c"]
        assert (main.get("command", [])[:2] == ["/bin/sh", "-c"]) == watched, name
        if watched:
            assert main["command"] == before["command"], name


def test_a_roles_own_args_are_its_scripts_arguments(train_py, render):
    values = {"ps": 1, "chief": 1, "defaults": {"args": ["--role-default"]}, "roles": {"ps": {"args": ["--ps"]}}}
    rendered = jobs(render(CHARTS / "tensorflow-dist", values=values, set_file=[f"script={train_py}"]))
    assert program(main_container(rendered["release-ps"])) == ["python", SCRIPT_PATH, "--ps"]
    assert program(main_container(rendered["release-chief"])) == ["python", SCRIPT_PATH, "--role-default"]


def test_tensorflow_legacy_flags_follow_the_scripts_arguments(train_py, render):
    """TF1 between-graph training (ps, no chief) is a user program's business: with a script it renders."""
    values = {"worker": 3, "ps": 2, "legacyFlags": True, "defaults": {"args": USER_ARGS}}
    release = render(CHARTS / "tensorflow-dist", values=values, set_file=[f"script={train_py}"])
    rendered = jobs(release)
    worker = start_container(main_container(rendered["release-worker"]), 0,
                             release.get("ConfigMap", "release-cluster").body["data"]).argv  # fmt: skip
    assert worker[: 2 + len(USER_ARGS)] == ["python", SCRIPT_PATH, *USER_ARGS]
    assert worker[2 + len(USER_ARGS) :] == [
        "--job_name=worker",
        "--task_index=0",
        "--ps_hosts=" + ",".join(f"release-ps-{i}.release.default.svc:2222" for i in range(2)),
        "--worker_hosts=" + ",".join(f"release-worker-{i}.release.default.svc:2222" for i in range(3)),
    ]
    stderr = refusal(render, "tensorflow-dist", values={"ps": 2, "legacyFlags": True})
    assert "--set-file script=train.py" in stderr


MPI_LAUNCHES = [(chart, {}) for chart in MPI] + [("horovod-mpi", {"horovod": {"launcher": "mpirun"}})]
MPI_LAUNCHES += [("deepspeed-dist", {"deepspeed": {"launcher": "mpirun"}})] if "deepspeed-dist" in MPI else []
MPI_LAUNCH_IDS = [f"{chart}-mpirun" if extra else chart for chart, extra in MPI_LAUNCHES]


@pytest.mark.parametrize(("chart", "extra"), MPI_LAUNCHES, ids=MPI_LAUNCH_IDS)
def test_every_mpi_rank_runs_the_script_through_the_launch_line(chart, extra, train_py, render):
    benchmark = jobs(render(CHARTS / chart, values=extra))
    rendered = jobs(render(CHARTS / chart, values={**extra, "defaults": {"args": USER_ARGS}},
                           set_file=[f"script={train_py}"]))  # fmt: skip
    bench_line = main_container(benchmark["release-launcher"])["args"]
    line = main_container(rendered["release-launcher"])["args"]
    cut = bench_line.index(f"/opt/dl-charts/{BENCHMARK[chart]}") - 1
    assert bench_line[cut] == "python"
    assert line[:cut] == bench_line[:cut]  # mpirun/horovodrun options, hostfile, activation wrapper
    assert line[cut:] == ["python", SCRIPT_PATH, *USER_ARGS, *TRAINING_CHARTS[chart].mpi_program_tail]
    launcher = main_container(rendered["release-launcher"])
    assert launcher["command"] == ["/bin/sh", "/etc/mpi/mpi-launcher.sh"]
    worker, bench_worker = main_container(rendered["release-worker"]), main_container(benchmark["release-worker"])
    assert program(worker) == ["/bin/sh", "/etc/mpi/mpi-sshd.sh"]  # defaults.args never reach sshd
    assert worker["command"] == bench_worker["command"] and worker["env"] == bench_worker["env"]
    assert launcher["env"] == main_container(benchmark["release-launcher"])["env"]


@pytest.mark.parametrize("chart", TRAINING)
def test_a_script_of_only_whitespace_is_no_script(chart, tmp_path, render):
    blank = tmp_path / "blank.py"
    blank.write_text("  \n\t\n")
    rendered = render(CHARTS / chart, set_file=[f"script={blank}"])
    assert "script.py" not in scripts_configmap(rendered)
    assert jobs(rendered) == jobs(render(CHARTS / chart))


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    ("setting", "kind"),
    [("script=true", "a boolean (true)"), ("script=42", "a number (42)"), ("script={a,b}", 'a list (["a","b"])')],
    ids=["bool", "number", "list"],
)
def test_a_script_that_is_not_text_is_refused_with_set_file_as_the_fix(chart, setting, kind, render):
    stderr = refusal(render, chart, set=[setting])
    assert f"script is {kind}, not the text of a program" in stderr, stderr
    assert "pass the file with --set-file script=train.py" in stderr


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize("where", ["defaults", "roles.worker"])
def test_script_and_a_command_are_refused_naming_the_one_to_drop(chart, where, train_py, render):
    command = ["python", "/opt/app/train.py"]
    values = {"defaults": {"command": command}} if where == "defaults" else {"roles": {"worker": {"command": command}}}
    if chart in MPI:
        values["mpi"] = {"replaceEntrypoint": True}  # the MPI rule alone would refuse it already
    stderr = refusal(render, chart, values=values, set_file=[f"script={train_py}"])
    assert f"script and {where}.command are both set" in stderr, stderr
    assert f"Drop {where}.command to run the script" in stderr and "leave script empty" in stderr


@pytest.mark.parametrize("chart", MPI)
def test_mpi_entrypoint_rules_still_hold_with_a_script(chart, train_py, render):
    stderr = refusal(render, chart, values={"defaults": {"command": ["python", "/opt/app/train.py"]}},
                     set_file=[f"script={train_py}"])  # fmt: skip
    assert "defaults.command is set, which replaces the launcher's wrapper" in stderr
    assert "mpi.replaceEntrypoint=true" in stderr
    stderr = refusal(render, chart, values={"roles": {"worker": {"args": ["-d"]}}}, set_file=[f"script={train_py}"])
    assert "roles.worker.args reaches the MPI workers" in stderr


@pytest.mark.parametrize("chart", MPI)
def test_script_and_the_mpi_charts_program_value_are_refused(chart, train_py, render):
    key, sub = str(TRAINING_CHARTS[chart].mpi_program).split(".", 1)
    values: dict = {key: {}}
    node = values[key]
    for part in sub.split(".")[:-1]:
        node = node.setdefault(part, {})
    node[sub.split(".")[-1]] = ["python", "/data/train.py"]
    stderr = refusal(render, chart, values=values, set_file=[f"script={train_py}"])
    assert f"script and {TRAINING_CHARTS[chart].mpi_program} are both set" in stderr, stderr
    assert f"Clear {TRAINING_CHARTS[chart].mpi_program} to run the script" in stderr


@pytest.mark.parametrize("chart", MPI)
def test_mpi_script_arguments_with_a_whole_launch_line_are_refused(chart, train_py, render):
    values = {"defaults": {"args": USER_ARGS}, "roles": {"launcher": {"args": ["mpirun", "python", SCRIPT_PATH]}}}
    stderr = refusal(render, chart, values=values, set_file=[f"script={train_py}"])
    assert "roles.launcher.args replaces that whole line" in stderr
    assert f"Put the arguments after {SCRIPT_PATH} in roles.launcher.args" in stderr
    line = ["mpirun", "-np", "2", "python", SCRIPT_PATH, "--epochs", "3"]
    rendered = render(CHARTS / chart, values={"roles": {"launcher": {"args": line}}}, set_file=[f"script={train_py}"])
    assert main_container(rendered.get("Job", "release-launcher").body)["args"] == line


def test_cntk_refuses_a_script_in_brainscript_mode_and_benchmark_learner_options(train_py, render):
    brainscript = {"cntk": {"mode": "brainscript", "brainscript": {"configFile": "/data/a.cntk"}}}
    stderr = refusal(render, "cntk-dist", values=brainscript, set_file=[f"script={train_py}"])
    assert "script is set but cntk.mode is brainscript" in stderr and "cntk.mode=python" in stderr
    stderr = refusal(render, "cntk-dist", values={"cntk": {"parallelTrain": {"gradientBits": 1}}},
                     set_file=[f"script={train_py}"])  # fmt: skip
    assert "but script is your own program" in stderr


@pytest.mark.parametrize("chart", TRAINING)
def test_a_script_too_large_for_a_configmap_is_refused(chart, tmp_path, render):
    large = tmp_path / "large.py"
    large.write_text("y = 1\n" * 160_000)  # 960,000 bytes
    stderr = refusal(render, chart, set_file=[f"script={large}"])
    assert "script may be at most 900 KiB" in stderr and "leave script empty" in stderr
    fits = tmp_path / "fits.py"
    fits.write_text("y = 1\n" * 150_000)  # 900,000 bytes: under 900 KiB
    assert scripts_configmap(render(CHARTS / chart, set_file=[f"script={fits}"]))["script.py"] == fits.read_text()


# --- 2. the user's ConfigMap and a command ------------------------------------------------------------------

OWN_CONFIGMAP = {
    "volumes": [{"name": "train", "configMap": {"name": "my-train"}}],
    "volumeMounts": [{"name": "train", "mountPath": "/opt/train", "readOnly": True}],
}


@pytest.mark.parametrize("chart", TRAINING)
def test_the_users_configmap_with_the_documented_command_renders_valid(chart, render, assert_valid):
    own = [LAUNCHER[chart], "/opt/train/train.py"]
    if chart in MPI:
        key, sub = str(TRAINING_CHARTS[chart].mpi_program).split(".", 1)
        values: dict = {"defaults": dict(OWN_CONFIGMAP), key: {}}
        node = values[key]
        for part in sub.split(".")[:-1]:
            node = node.setdefault(part, {})
        node[sub.split(".")[-1]] = [*own, *USER_ARGS]
    else:
        values = {"defaults": {**OWN_CONFIGMAP, "command": own, "args": USER_ARGS}, **ALL_ROLES.get(chart, {})}
    rendered = render(CHARTS / chart, values=values)
    assert_valid(rendered)
    for name, job in jobs(rendered).items():
        main = main_container(job)
        assert {"name": "train", "mountPath": "/opt/train", "readOnly": True} in main["volumeMounts"], name
        assert {"name": "train", "configMap": {"name": "my-train"}} in pod_spec(job)["volumes"], name
        if chart in MPI:
            continue
        assert program(main) == [*own, *USER_ARGS], name
    if chart in MPI:
        line = main_container(rendered.get("Job", "release-launcher").body)["args"]
        tail = [*own, *USER_ARGS, *TRAINING_CHARTS[chart].mpi_program_tail]
        assert line[-len(tail) :] == tail


# --- the documented commands ----------------------------------------------------------------------------------


def readme_commands() -> list[list[str]]:
    """argv of every `helm install` in the "Running your own program" section of the dl-common README."""
    text = (CHARTS / "dl-common" / "README.md").read_text()
    section = text.split("\n## Running your own program\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("helm install "):
                commands.append(shlex.split(line))
    return commands


def as_render_arguments(argv: list[str], train_py) -> tuple[str, dict]:
    """The chart and the render() arguments of `helm install <release> <chart> --set/--set-file/--set-json ...`."""
    chart, flags = argv[3], argv[4:]
    sets, files, values = [], [], {}
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        key, _, setting = value.partition("=")
        if flag == "--set":
            sets.append(value)
        elif flag == "--set-file":
            files.append(f"{key}={train_py}")
        else:
            assert flag == "--set-json", argv
            node = values
            for part in key.split(".")[:-1]:
                node = node.setdefault(part, {})
            node[key.split(".")[-1]] = json.loads(setting)
    return chart.removeprefix("charts/"), {"set": sets, "set_file": files, "values": values}


def test_every_command_of_the_readme_section_renders_valid(train_py, render, assert_valid):
    commands = readme_commands()
    with_script = set()
    for argv in commands:
        chart, arguments = as_render_arguments(argv, train_py)
        rendered = render(CHARTS / chart, **arguments)
        assert_valid(rendered)
        if arguments["set_file"]:
            assert scripts_configmap(rendered)["script.py"] == PROGRAM
            with_script.add(chart)
        else:
            volumes = pod_spec(rendered.get("Job", "release-worker").body)["volumes"]
            assert {"name": "train", "configMap": {"name": "my-train"}} in volumes, argv
    assert with_script == set(TRAINING), "the README shows the script command line of every training chart"
    assert len(commands) > len(TRAINING), "and the ConfigMap way"
