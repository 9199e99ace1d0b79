"""Settings that would break a training job only at run time are refused when the chart renders, with a message
that names the value the user set and the fix; the same values render alike under Helm 4 and Helm 3 (this
tier runs again with --dlcharts-helm helm-v3.18.0)."""

from __future__ import annotations

import re

import pytest

from dlcharts import toolchain
from dlcharts.catalogue import TRAINING_CHARTS
from dlcharts.helm import find_helm
from dlcharts.podenv import container_env, main_container
from tests.support import CHARTS
from tests.support.charts import MPI, TRAINING, refusal


def job_command(rendered, job: str) -> list[str]:
    container = main_container(rendered.get("Job", job).body)
    return [*container.get("command", []), *container.get("args", [])]


# --- A1: a command must not silently replace the MPI launcher wrapper or the workers' sshd ---------------------


@pytest.mark.parametrize("chart", MPI)
@pytest.mark.parametrize(
    ("values", "path"),
    [
        ({"defaults": {"command": ["python", "/opt/app/train.py"]}}, "defaults.command is set"),
        ({"roles": {"launcher": {"command": ["python", "/opt/app/train.py"]}}}, "roles.launcher.command is set"),
        ({"roles": {"worker": {"command": ["python", "/opt/app/train.py"]}}}, "roles.worker.command is set"),
        ({"defaults": {"args": ["/opt/app/train.py"]}}, "defaults.args reaches the MPI workers"),
        ({"roles": {"worker": {"args": ["-d"]}}}, "roles.worker.args reaches the MPI workers"),
    ],
    ids=["defaults.command", "launcher.command", "worker.command", "defaults.args", "worker.args"],
)
def test_mpi_entrypoint_override_is_refused_naming_the_program_key(chart, values, path, render):
    stderr = refusal(render, chart, values=values)
    assert path in stderr, stderr
    assert f"Put the program every rank runs in {TRAINING_CHARTS[chart].mpi_program}" in stderr, stderr
    if "command" in path:
        assert "mpi.replaceEntrypoint=true" in stderr, stderr


@pytest.mark.parametrize("chart", MPI)
def test_mpi_entrypoint_override_renders_with_the_documented_opt_in(chart, render):
    values = {"mpi": {"replaceEntrypoint": True}, "defaults": {"command": ["python", "/opt/app/train.py"]}}
    rendered = render(CHARTS / chart, values=values)
    launcher = job_command(rendered, "release-launcher")  # the user's program, once its workers resolve
    assert launcher[:2] == ["/bin/sh", "-c"] and "peer-wait:" in launcher[2], launcher
    assert launcher[3:] == ["dl-entrypoint", "python", "/opt/app/train.py"]
    assert "/etc/mpi/mpi-sshd.sh" not in job_command(rendered, "release-worker")


@pytest.mark.parametrize("chart", MPI)
def test_launcher_args_replace_the_launch_line_and_keep_the_wrapper(chart, render):
    line = ["mpirun", "-np", "2", "python", "/opt/app/train.py"]
    rendered = render(CHARTS / chart, values={"roles": {"launcher": {"args": line}}})
    assert job_command(rendered, "release-launcher") == ["/bin/sh", "/etc/mpi/mpi-launcher.sh", *line]


# --- A2: an image repository that carries a tag or a digest ---------------------------------------------------


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("defaults.image.repository=pytorch/pytorch:2.9.1",
         'defaults.image.repository is "pytorch/pytorch:2.9.1", which carries the tag "2.9.1"'),
        ("defaults.image.repository=registry.example.com:5000/team/train:v3",
         "Set defaults.image.repository=registry.example.com:5000/team/train and defaults.image.tag=v3"),
        ("defaults.image.repository=pytorch/pytorch@sha256:" + "a" * 64,
         "defaults.image.repository is \"pytorch/pytorch@sha256:" + "a" * 64 + "\", which carries a digest"),
        ("roles.worker.image.repository=pytorch/pytorch:2.9.1",
         'roles.worker.image.repository is "pytorch/pytorch:2.9.1", which carries the tag'),
        ("peerWait.image.repository=busybox:1.37.0",
         'peerWait.image.repository is "busybox:1.37.0", which carries the tag "1.37.0"'),
    ],
    ids=["tag", "registry-port-and-tag", "digest", "role-image", "helper-image"],
)  # fmt: skip
def test_image_repository_with_a_tag_or_digest_is_refused(chart, setting, expected, render):
    assert expected in refusal(render, chart, set=[setting])


@pytest.mark.parametrize("chart", TRAINING)
def test_registry_port_is_not_a_tag(chart, render):
    rendered = render(CHARTS / chart, set=["defaults.image.repository=localhost:5000/team/train"])
    image = main_container(rendered.get("Job", "release-worker").body)["image"]
    assert image.startswith("localhost:5000/team/train:") and image.count(":") == 2


# --- A3: /dev/shm sizes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (["defaults.shm.sizeLimit=16"], "defaults.shm.sizeLimit is 16, a size without a unit"),
        (["defaults.shm.sizeLimit=16GB"], 'defaults.shm.sizeLimit is "16GB", which is not a Kubernetes quantity'),
        (["defaults.shm.sizeLimit=1e10"], 'defaults.shm.sizeLimit is "1e10", a size without a unit'),
        (["defaults.shm.sizeLimit=512m"], 'defaults.shm.sizeLimit is "512m", less than one byte'),
        (["defaults.tmp.sizeLimit=10"], "defaults.tmp.sizeLimit is 10, a size without a unit"),
        (["defaults.resources.limits.memory=1Gi", "defaults.shm.sizeLimit=16Gi"],
         "defaults.shm.sizeLimit is 16Gi but defaults.resources.limits.memory is 1Gi"),
        (["defaults.resources.limits.memory=16G", "defaults.shm.sizeLimit=15Gi"],  # 16.0e9 < 16.1e9 bytes
         "defaults.shm.sizeLimit is 15Gi but defaults.resources.limits.memory is 16G"),
        (["defaults.resources.limits.memory=16Gi", "defaults.shm.sizeLimit=17179869185k"],
         "defaults.shm.sizeLimit is 17179869185k but defaults.resources.limits.memory is 16Gi"),
        (["roles.worker.resources.limits.memory=1Gi"],
         "defaults.shm.sizeLimit is 2Gi but roles.worker.resources.limits.memory is 1Gi"),
        (["defaults.resources.limits.memory=lots"],
         'defaults.resources.limits.memory is "lots", which is not a Kubernetes quantity'),
    ],
    ids=["no-unit", "not-a-quantity", "exponent", "milli", "tmp-no-unit", "above-limit", "decimal-limit",
         "decimal-size", "role-limit", "bad-limit"],
)  # fmt: skip
def test_shm_size_is_refused_naming_the_value(chart, settings, expected, render):
    assert expected in refusal(render, chart, set=settings)


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    "settings",
    [["roles.worker.resources.limits.memory=16Gi", "roles.worker.shm.sizeLimit=16Gi"],
     ["roles.worker.resources.limits.memory=16G", "roles.worker.shm.sizeLimit=14Gi"],
     ["roles.worker.resources.limits.memory=1.6e10", "roles.worker.shm.sizeLimit=14Gi"],
     ["roles.worker.resources.limits.memory=16Gi", "roles.worker.shm.sizeLimit=16000M"]],
    ids=["equal", "decimal-limit", "exponent-limit", "decimal-size"],
)  # fmt: skip
def test_shm_up_to_the_memory_limit_renders(chart, settings, render):
    rendered = render(CHARTS / chart, set=settings)
    volumes = rendered.get("Job", "release-worker").body["spec"]["template"]["spec"]["volumes"]
    (shm,) = [v for v in volumes if v["name"] == "shm"]
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": settings[1].split("=")[1]}


def test_shm_is_checked_per_role_after_merging(render):
    """mxnet-dist's scheduler has a 2Gi memory limit of its own: a 4Gi /dev/shm from defaults is too big there."""
    expected = "defaults.shm.sizeLimit is 4Gi but roles.scheduler.resources.limits.memory is 2Gi"
    assert expected in refusal(render, "mxnet-dist", set=["defaults.shm.sizeLimit=4Gi"])
    render(CHARTS / "mxnet-dist", set=["defaults.shm.sizeLimit=4Gi", "roles.scheduler.shm.enabled=false"])


# --- A4: one rule for devices vs amounts: torchrun nproc and MPI slots ----------------------------------------

AMOUNT = ["defaults.gpu.resource=nvidia.com/gpumem", "defaults.gpu.count=4000"]


def test_pytorch_amount_resource_runs_one_process_per_pod(render):
    job = render(CHARTS / "pytorch-dist", set=AMOUNT).get("Job", "release-worker").body
    assert container_env(main_container(job), 0)["PET_NPROC_PER_NODE"] == "1"
    assert main_container(job)["resources"]["limits"]["nvidia.com/gpumem"] in (4000, "4000")


@pytest.mark.parametrize("chart", MPI)
def test_mpi_amount_resource_gives_one_slot(chart, render):
    rendered = render(CHARTS / chart, set=AMOUNT)
    hostfile = rendered.get("ConfigMap", "release-mpi").body["data"]["hostfile"]
    assert hostfile.split() == ["release-worker-0.release.default.svc", "slots=1",
                                "release-worker-1.release.default.svc", "slots=1"]  # fmt: skip


DEVICES_AND_AMOUNTS = [("nvidia.com/gpu.shared", "4"), ("nvidia.com/mig-1g.10gb", "4"), ("nvidia.com/gpucores", "1"),
                       ("nvidia.com/gpumem-percentage", "1"), ("tencent.com/vcuda-core", "1")]  # fmt: skip


@pytest.mark.parametrize(("resource", "nproc"), DEVICES_AND_AMOUNTS)
def test_devices_and_amounts_give_the_same_processes_in_pytorch_and_mpi(resource, nproc, render):
    settings = [f"defaults.gpu.resource={resource}", "defaults.gpu.count=4"]
    job = render(CHARTS / "pytorch-dist", set=settings).get("Job", "release-worker").body
    assert container_env(main_container(job), 0)["PET_NPROC_PER_NODE"] == nproc
    hostfile = render(CHARTS / "horovod-mpi", set=settings).get("ConfigMap", "release-mpi").body["data"]["hostfile"]
    assert hostfile.splitlines()[0].endswith(f"slots={nproc}")


def test_pytorch_nproc_that_contradicts_device_count_is_refused(render):
    stderr = refusal(render, "pytorch-dist", set=["defaults.gpu.resource=nvidia.com/gpu.shared",
                                                  "defaults.gpu.count=4", "nprocPerNode=2"])  # fmt: skip
    assert "nprocPerNode is 2 but each worker requests 4 nvidia.com/gpu.shared (defaults.gpu.count)" in stderr


# --- C: messages that point the right way ---------------------------------------------------------------------


def test_tf_parameter_servers_without_chief_name_what_the_user_set(render):
    stderr = refusal(render, "tensorflow-dist", set=["ps=1"])
    assert "ps is 1, so strategy auto picks parameter-server, which needs a coordinator, but chief is 0" in stderr
    assert "Set chief=1" in stderr and "ps=0" in stderr
    explicit = refusal(render, "tensorflow-dist", set=["ps=1", "strategy=parameter-server"])
    assert "strategy is parameter-server (ps is 1)" in explicit


@pytest.mark.parametrize("chart", TRAINING)
def test_bad_fullname_override_is_blamed_not_the_release_name(chart, render):
    stderr = refusal(render, chart, set=["fullnameOverride=My_Job"])
    assert 'fullnameOverride is "My_Job", which is not a DNS-1035 label' in stderr and '"my-job"' in stderr
    assert "release name" not in stderr
    long = refusal(render, chart, set=["fullnameOverride=" + "a" * 53, "worker=1000"])
    assert f'fullnameOverride "{"a" * 53}" is 53 characters' in long and "release name" not in long


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize("setting", ["defaults.gpu.count=-1", "roles.worker.gpu.count=-1"])
def test_negative_gpu_count_message_is_about_the_number(chart, setting, render):
    stderr = refusal(render, chart, set=[setting])
    path = setting.split("=")[0]
    # Helm 4: "at '/defaults/gpu/count': minimum: got -1, want 0"; Helm 3: "defaults.gpu.count: Must be greater
    # than or equal to 0"
    assert f"'/{path.replace('.', '/')}': minimum: got -1, want 0" in stderr or \
        f"{path}: Must be greater than or equal to 0" in stderr, stderr  # fmt: skip
    assert "anyOf" not in stderr and "want string" not in stderr and "Expected: string" not in stderr


@pytest.mark.parametrize("chart", TRAINING)
def test_null_in_a_role_keeps_the_default(chart, render):
    plain = render(CHARTS / chart)
    worker = {"gpu": {"count": None}, "image": {"tag": None}, "resources": {"limits": {"memory": None}}}
    nulled = render(CHARTS / chart, values={"roles": {"worker": worker}})
    assert nulled.get("Job", "release-worker").body == plain.get("Job", "release-worker").body


@pytest.mark.parametrize("chart", TRAINING)
def test_null_gpu_count_in_defaults_is_refused_not_silently_zero(chart, render):
    stderr = refusal(render, chart, set=["defaults.gpu.count=null"])
    assert "defaults.gpu.count is not set" in stderr


@pytest.mark.parametrize("chart", TRAINING)
def test_notes_name_the_namespace_in_every_command(chart, chart_renderer, tmp_path):
    """NOTES.txt as `helm install` prints it. Only Helm 4 renders NOTES without a cluster (--dry-run=client), so
    this uses the pinned Helm 4 whatever --dlcharts-helm says."""
    helm4 = find_helm(next(k for k in toolchain.HELM_MATRIX if toolchain.TOOLS[k].version.startswith("v4.")))
    chart_renderer.ensure_dependencies(CHARTS / chart)
    proc = helm4.run(["install", "t", str(CHARTS / chart), "-n", "team-ml", "--dry-run=client"],
                     env={"KUBECONFIG": str(tmp_path / "no-cluster")})  # fmt: skip
    notes = proc.stdout.split("NOTES:", 1)[1]
    commands = [line for line in notes.splitlines() if re.match(r"\s+(kubectl|helm) ", line) or "`helm un" in line]
    assert any("helm uninstall t -n team-ml" in line for line in commands), notes
    for line in commands:
        assert "-n team-ml" in line, line


@pytest.mark.parametrize(("setting", "allowed"), [("horovod.logLevel=LOUD", "TRACE|DEBUG|INFO|WARNING|ERROR|FATAL"),
                                                   ("horovod.controller=nccl", "mpi|gloo")])  # fmt: skip
def test_a_tri_state_choice_names_its_choices_without_nil(setting, allowed, render):
    """null (= Horovod's default) is allowed by the schema's type, so the message lists only real choices."""
    stderr = refusal(render, "horovod-mpi", set=[setting])
    assert allowed in stderr and "<nil>" not in stderr, stderr


# --- Rules the API server enforces in code (not in its OpenAPI schema): refused when the chart renders -----------


def names_schema_path(stderr: str, path: str) -> bool:
    """Whether a values-schema refusal names ``path`` (a.b.c): Helm 4 writes at '/a/b/c', Helm 3 a.b.c:."""
    return f"at '/{path.replace('.', '/')}'" in stderr or f"- {path}:" in stderr


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    ("settings", "path", "expected"),
    [
        (["defaults.shm.sizeLimit=lots"], "defaults.shm.sizeLimit", "which is not a Kubernetes quantity"),
        (["defaults.resources.limits.memory=16 GB"], "defaults.resources.limits.memory",
         'is "16 GB", which is not a Kubernetes quantity; write a size with a unit'),
        (["defaults.resources.requests.cpu=4", "defaults.resources.limits.cpu=2"], "defaults.resources.requests.cpu",
         "is 4 but defaults.resources.limits.cpu is 2: Kubernetes refuses a request above its limit"),
        (["roles.worker.resources.requests.memory=64Gi"], "roles.worker.resources.requests.memory",
         "is 64Gi but defaults.resources.limits.memory is"),  # above the chart's default limit
        (["roles.worker.resources.requests.cpu=lots"], "roles.worker.resources.requests.cpu",
         'is "lots", which is not a Kubernetes quantity; write an amount of cores, e.g.'),
        (["defaults.resources.requests.memory=-1Gi"], "defaults.resources.requests.memory",
         "is -1Gi; a resource amount cannot be negative"),
        (["defaults.resources.limits.example\\.com/nic=2", "defaults.resources.requests.example\\.com/nic=1"],
         "defaults.resources.requests.example.com/nic", "requires the request of example.com/nic to equal its limit"),
        (["peerWait.resources.requests.memory=1Ti"], "peerWait.resources.requests.memory",
         "Kubernetes refuses a request above its limit"),
    ],
    ids=["shm-lots", "memory-16-GB", "cpu-request-above-limit", "request-above-default-limit", "cpu-lots",
         "negative", "extended-unequal", "peer-wait"],
)  # fmt: skip
def test_resources_the_api_server_refuses_are_refused_naming_the_value(chart, settings, path, expected, render):
    stderr = refusal(render, chart, set=settings)
    assert f"{path} {expected}" in stderr or (path in stderr and expected in stderr), stderr


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    ("settings", "path"),
    [
        (["defaults.nodeSelector.bad\\ key!=x"], "defaults.nodeSelector"),
        (["defaults.nodeSelector.pool=has space"], "defaults.nodeSelector.pool"),
        (["roles.worker.podLabels.team=" + "x" * 64], "roles.worker.podLabels.team"),
        (["defaults.podAnnotations.-bad=x"], "defaults.podAnnotations"),
        (["defaults.image.tag=has space"], "defaults.image.tag"),
        (["defaults.image.repository=Team/Train"], "defaults.image.repository"),
        (["peerWait.image.tag=1.0+build"], "peerWait.image.tag"),
        (["kueue.queueName=Team_A!"], "kueue.queueName"),
    ],
    ids=["label-key", "label-value", "label-value-64", "annotation-key", "tag-space", "repository-uppercase",
         "tag-plus", "queue-name"],
)  # fmt: skip
def test_names_the_api_server_refuses_fail_the_values_schema(chart, settings, path, render):
    stderr = refusal(render, chart, set=settings)
    assert "values don't meet the specifications of the schema" in stderr, stderr
    assert names_schema_path(stderr, path), stderr


@pytest.mark.parametrize("chart", TRAINING)
def test_valid_names_and_quantities_render(chart, render):
    digest = "sha256:" + "0123456789abcdef" * 4
    rendered = render(CHARTS / chart, set=[
        "defaults.nodeSelector.cloud\\.example\\.com/gpu-type=A100_80GB", "defaults.podLabels.team=",
        "defaults.podAnnotations.example\\.com/owner=anyone at all", f"defaults.image.tag=2.0.1_rc-1@{digest}",
        "defaults.image.repository=registry.example.com:5000/ml/train_v2", "defaults.resources.requests.cpu=1500m",
        "defaults.resources.limits.cpu=2", "defaults.resources.requests.memory=4e9",
        "defaults.resources.limits.memory=4Gi", "defaults.resources.limits.example\\.com/nic=1",
    ])  # fmt: skip
    pod = rendered.get("Job", "release-worker").body["spec"]["template"]
    assert pod["spec"]["nodeSelector"]["cloud.example.com/gpu-type"] == "A100_80GB"
    assert main_container(rendered.get("Job", "release-worker").body)["image"].endswith(f":2.0.1_rc-1@{digest}")


# --- values the API server refuses, found by the cluster tier's dry-run of the property tier's values ----------


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    "setting",
    ["defaults.priorityClassName=High_Prio", "roles.worker.schedulerName=My Scheduler",
     "defaults.serviceAccountName=-train", "gang.schedulerName=Coscheduler"],
)  # fmt: skip
def test_names_the_api_server_takes_as_dns_subdomains_are_refused_at_render(chart, setting, render):
    key = setting.split("=")[0]
    message = refusal(render, chart, set=[setting])
    assert f"at '/{key.replace('.', '/')}'" in message or f"{key}: " in message, message  # Helm 4 / Helm 3 wording


@pytest.mark.parametrize("chart", [c for c in TRAINING if c not in ("pytorch-dist", "jax-dist")])  # no host list
def test_a_host_list_over_the_configmap_limit_is_refused_naming_worker(chart, render):
    message = refusal(render, chart, set=["worker=60000"])
    assert re.search(r"worker=60000 makes the ConfigMap release-\w+ \d+ bytes, .* at most 1 MiB", message), message
    fit = int(re.search(r"set worker to at most about (\d+)", message).group(1))
    assert 10_000 < fit < 60_000
    render(CHARTS / chart, set=[f"worker={fit * 9 // 10}"])  # what the message says fits does render


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    "key",
    ["defaults.job.backoffLimit", "roles.worker.job.backoffLimitPerIndex", "defaults.job.ttlSecondsAfterFinished",
     "defaults.job.activeDeadlineSeconds", "defaults.terminationGracePeriodSeconds"],
)  # fmt: skip
def test_integers_past_int32_are_refused_at_render(chart, key, render):
    """Job counts and TTL are 32-bit in the API (DLCHARTS_VALUE_SAMPLES found backoffLimit 396768293002393, which
    the schema let through and the API server refused); the 64-bit durations get the same bound, 68 years, which
    keeps them exact through Helm's float64 values. 2**31 - 1 renders; one more fails the schema, naming the key."""
    render(CHARTS / chart, set=[f"{key}=2147483647"])
    message = refusal(render, chart, set=[f"{key}=2147483648"])
    assert f"at '/{key.replace('.', '/')}'" in message or f"{key}: " in message, message  # Helm 4 / Helm 3 wording
