"""`dlcharts import`: Kubeflow manifests (our own fixtures in manifests/, written from the documented TFJob,
PyTorchJob, MPIJob and TrainJob formats) become values files that render with our charts, pass our validation
and carry the job over: replicas, image, command, env, resources and GPUs, scheduling, volumes, elastic bounds,
run policy and the Kueue queue. A field with no equivalent is refused with its path, and nothing is written."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dlcharts.cli import main
from dlcharts.jobs import importer
from dlcharts.podenv import container_env, main_container
from tests.support import CHARTS

MANIFESTS = Path(__file__).parent / "manifests"


def imported(name: str, tmp_path: Path) -> tuple[importer.Imported, Path]:
    """The one job of manifests/<name>, written as a values file under tmp_path."""
    (job,) = importer.read(MANIFESTS / name)
    ((_, path, _),) = importer.write([job], tmp_path / f"{job.name}.yaml")
    assert path is not None
    return job, path


@pytest.fixture
def rendered(request: pytest.FixtureRequest, render, assert_valid, tmp_path: Path) -> Any:  # type: ignore[no-untyped-def]
    """The import of manifests/<param> rendered with its chart (in the job's namespace), after our validation."""
    job, path = imported(request.param, tmp_path)
    result = render(CHARTS / job.chart, values_files=[path], namespace=job.namespace or "training")
    assert_valid(result)
    return result


def job_of(rendered: Any, name: str) -> dict[str, Any]:
    return rendered.get("Job", name).body  # type: ignore[no-any-return]


def env_of(rendered: Any, name: str, index: int = 0) -> dict[str, str]:
    return container_env(main_container(job_of(rendered, name)), index)


def mounts(container: dict[str, Any]) -> dict[str, str]:
    return {m["mountPath"]: m["name"] for m in container.get("volumeMounts") or []}


@pytest.mark.parametrize("rendered", ["tfjob-dist-mnist.yaml"], indirect=True)
def test_tfjob_chief_ps_workers(rendered: Any) -> None:
    jobs = {role: job_of(rendered, f"release-{role}") for role in ("chief", "ps", "worker")}
    assert {role: job["spec"]["completions"] for role, job in jobs.items()} == {"chief": 1, "ps": 2, "worker": 4}
    for role, job in jobs.items():
        container = main_container(job)
        assert container["image"] == "registry.example.com/ml/tf-dist-mnist:2.15.0"
        assert container["args"] == [
            "python",
            "/opt/mnist/dist_mnist.py",
            "--train_steps=2000",
            "--data_dir=/data/mnist",
        ]
        assert env_of(rendered, f"release-{role}")["TF_CPP_MIN_LOG_LEVEL"] == "1"
        assert mounts(container)["/data/mnist"] == "mnist-data"
        volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
        assert volumes["mnist-data"]["persistentVolumeClaim"] == {"claimName": "mnist-pvc"}
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a-queue"
        spec = job["spec"]
        assert (spec["backoffLimit"], spec["activeDeadlineSeconds"], spec["ttlSecondsAfterFinished"]) == (4, 7200, 600)
        annotations = job["spec"]["template"]["metadata"]["annotations"]
        assert annotations["sidecar.istio.io/inject"] == "false"
    for role in ("chief", "worker"):
        container = main_container(jobs[role])
        assert container["resources"] == {
            "requests": {"cpu": "2", "memory": "4Gi"},
            "limits": {"memory": "8Gi", "nvidia.com/gpu": 1},
        }
        pod = jobs[role]["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    ps = main_container(jobs["ps"])
    assert ps["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}
    assert env_of(rendered, "release-ps")["NVIDIA_VISIBLE_DEVICES"] == "void"
    # the GPU toleration is the GPU roles' alone; the ps has only the start watch's of a lost node's taints
    assert all(
        t["key"].startswith("node.kubernetes.io/") for t in jobs["ps"]["spec"]["template"]["spec"]["tolerations"]
    )
    # the worker's /dev/shm volume is the chart's own shm, at the manifest's size; the others keep 64Mi as before
    shm = {
        role: next(v for v in j["spec"]["template"]["spec"]["volumes"] if v["name"] == "shm")
        for role, j in jobs.items()
    }
    assert shm["worker"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Gi"}
    assert shm["ps"]["emptyDir"]["sizeLimit"] == "64Mi"
    # restartPolicy ExitCode: exit codes 1-127 fail the job at once, signals are retried
    rules = jobs["worker"]["spec"]["podFailurePolicy"]["rules"]
    fail = next(rule for rule in rules if rule["action"] == "FailJob")
    assert fail["onExitCodes"]["containerName"] == main_container(jobs["worker"])["name"]
    assert fail["onExitCodes"]["values"] == list(range(1, 128))
    assert [rule["action"] for rule in jobs["chief"]["spec"]["podFailurePolicy"]["rules"]] == ["Ignore"]
    cluster = rendered.get("ConfigMap", "release-cluster").body["data"]["cluster.json"]
    assert '"release-ps-1.release.team-a.svc:2222"' in cluster, cluster


@pytest.mark.parametrize("rendered", ["pytorchjob-mnist.yaml"], indirect=True)
def test_pytorchjob_master_and_workers_run_under_torchrun(rendered: Any) -> None:
    job = job_of(rendered, "release-worker")
    assert job["spec"]["completions"] == 3  # the master is worker 0
    container = main_container(job)
    assert container["args"][-5:] == ["/opt/mnist/src/mnist.py", "--epochs", "1", "--backend", "nccl"]
    assert container["imagePullPolicy"] == "Always"
    assert container["resources"]["limits"] == {"memory": "6Gi", "nvidia.com/gpu": 1}
    env = env_of(rendered, "release-worker", 2)
    assert env["PET_NPROC_PER_NODE"] == "1"  # `python` started one process per pod
    assert env["PET_NNODES"] == "3"
    assert env["PYTHONUNBUFFERED"] == "1"


@pytest.mark.parametrize("rendered", ["pytorchjob-elastic.yaml"], indirect=True)
def test_elastic_pytorchjob_keeps_its_bounds(rendered: Any) -> None:
    job = job_of(rendered, "release-worker")
    assert job["spec"]["completions"] == 3
    env = env_of(rendered, "release-worker", 1)
    assert env["PET_NNODES"] == "1:3"
    assert env["PET_MAX_RESTARTS"] == "20"
    assert env["PET_NPROC_PER_NODE"] == "2"
    assert env["PET_RDZV_ENDPOINT"].endswith(":29400")
    assert env["NCCL_DEBUG"] == "INFO"
    args = main_container(job)["args"]
    assert "--nnodes=1:3" not in args and "--rdzv-backend" not in args
    assert args[-6:] == ["--log-dir", "/tmp/torchrun", "/workspace/imagenet.py", "--arch=resnet18", "--epochs=20",
                         "--batch-size=64"]  # fmt: skip
    assert main_container(job)["resources"]["limits"]["nvidia.com/gpu"] == 2
    pod = job["spec"]["template"]["spec"]
    assert next(v for v in pod["volumes"] if v["name"] == "shm")["emptyDir"]["sizeLimit"] == "8Gi"
    # the toleration of the manifest, then the start watch's of a lost node's taints (startWatch.nodeLoss)
    assert pod["tolerations"][0] == {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    lost = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert [toleration["key"] for toleration in pod["tolerations"][1:]] == lost
    assert job["spec"]["template"]["metadata"]["labels"]["team"] == "vision"
    assert job["spec"]["backoffLimit"] == 10


@pytest.mark.parametrize("rendered", ["mpijob-pi.yaml"], indirect=True)
def test_mpijob_pi_launch_line_and_sshd_workers(rendered: Any) -> None:
    launcher, workers = job_of(rendered, "release-launcher"), job_of(rendered, "release-worker")
    assert workers["spec"]["completions"] == 2
    line = main_container(launcher)
    assert [*line["command"], *line["args"]][-4:] == ["mpirun", "-n", "2", "/home/mpiuser/pi"]
    assert "/usr/sbin/sshd" not in main_container(workers).get("args", [])
    for job in (launcher, workers):
        assert main_container(job)["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
        assert main_container(job)["image"] == "registry.example.com/ml/mpi-pi:openmpi-4.1"
        assert job["spec"]["ttlSecondsAfterFinished"] == 60
    assert "slots=1" in rendered.get("ConfigMap", "release-mpi").body["data"]["hostfile"]


@pytest.mark.parametrize("rendered", ["mpijob-horovod.yaml"], indirect=True)
def test_mpijob_horovod_gpu_workers_and_queue(rendered: Any) -> None:
    launcher, workers = job_of(rendered, "release-launcher"), job_of(rendered, "release-worker")
    assert main_container(workers)["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "nvidia.com/gpu" not in main_container(launcher)["resources"].get("limits", {})
    line = main_container(launcher)
    assert [*line["command"], *line["args"]][-5:] == [
        "horovodrun",
        "-np",
        "2",
        "python",
        "/examples/tensorflow2_mnist.py",
    ]
    for job in (launcher, workers):
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-queue"


@pytest.mark.parametrize("rendered", ["trainjob-torch.yaml"], indirect=True)
def test_trainjob_on_torch_distributed(rendered: Any) -> None:
    job = job_of(rendered, "release-worker")
    assert job["spec"]["completions"] == 2
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-b"
    env = env_of(rendered, "release-worker", 1)
    assert (env["PET_NPROC_PER_NODE"], env["PET_NNODES"], env["NCCL_DEBUG"]) == ("4", "2", "WARN")
    container = main_container(job)
    assert container["args"][-3:] == ["/workspace/train.py", "--epochs", "3"]
    assert container["resources"] == {"requests": {"cpu": "16", "memory": "64Gi"},
                                      "limits": {"memory": "64Gi", "nvidia.com/gpu": 4}}  # fmt: skip
    assert mounts(container)["/data"] == "datasets"
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}


def test_the_file_names_its_chart_and_commands_and_what_it_carried(tmp_path: Path) -> None:
    job, path = imported("pytorchjob-elastic.yaml", tmp_path)
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# dlcharts import: PyTorchJob elastic-imagenet (") and "chart pytorch-dist" in lines[0]
    assert lines[1] == f"#   dlcharts run charts/pytorch-dist -f {path} --release elastic-imagenet -n research"
    assert lines[2] == f"#   helm install elastic-imagenet charts/pytorch-dist -n research -f {path}"
    text = "\n".join(lines)
    assert "# carried over:" in text and "minReplicas 1 as elastic.minWorkers (PET_NNODES=1:3)" in text
    assert "spec.elasticPolicy.maxReplicas (3)" not in text  # replicas == maxReplicas: nothing dropped
    assert "--nnodes: the chart sets it for torchrun" in text
    assert yaml.safe_load(text) == job.values


def test_gang_scheduling_follows_the_pods_scheduler(render, assert_valid, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    doc = yaml.safe_load((MANIFESTS / "pytorchjob-elastic.yaml").read_text())
    doc["spec"]["runPolicy"]["schedulingPolicy"] = {"queue": "research", "minAvailable": 3}
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "volcano"
    job = importer.convert(doc, "test")
    assert job.values["gang"] == {"scheduler": "volcano", "queue": "research"}
    path = tmp_path / "gang.yaml"
    path.write_text(job.text(str(path)))
    result = render(CHARTS / "pytorch-dist", values_files=[path], namespace="research",
                    api_versions=["scheduling.volcano.sh/v1beta1"])  # fmt: skip
    assert_valid(result)
    group = result.of_kind("PodGroup")[0].body
    assert group["spec"]["minMember"] == 3 and group["spec"]["queue"] == "research"


def test_a_scheduler_that_gangs_nothing_is_the_pods_scheduler() -> None:
    doc = load("pytorchjob-elastic.yaml")
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "bin-packing"
    job = importer.convert(doc, "test")
    assert job.values["defaults"]["schedulerName"] == "bin-packing" and "gang" not in job.values


def test_role_defaults_match_the_charts() -> None:
    """ROLE_DEFAULTS names what each chart's values.yaml sets under roles.<role>."""
    for chart in ("tensorflow-dist", "pytorch-dist", "horovod-mpi"):
        roles = yaml.safe_load((CHARTS / chart / "values.yaml").read_text())["roles"]
        found = {role: set(settings) for role, settings in roles.items() if settings}
        assert found == importer.ROLE_DEFAULTS.get(chart, {}), chart


# ----- refusals --------------------------------------------------------------------------------------------------


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((MANIFESTS / name).read_text())  # type: ignore[no-any-return]


def changed(name: str, change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(load(name))
    change(doc)
    return doc


def tf_container(doc: dict[str, Any], role: str = "Worker") -> dict[str, Any]:
    return doc["spec"]["tfReplicaSpecs"][role]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def pt_pod(doc: dict[str, Any], role: str = "Worker") -> dict[str, Any]:
    return doc["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]  # type: ignore[no-any-return]


TF_WORKER = "spec.tfReplicaSpecs.Worker.template.spec"
REFUSALS = {
    "liveness probe": ("tfjob-dist-mnist.yaml", lambda d: tf_container(d).update(livenessProbe={"exec": {}}),
                       f"{TF_WORKER}.containers[0].livenessProbe: no equivalent in tensorflow-dist"),
    "sidecar": ("tfjob-dist-mnist.yaml",
                lambda d: d["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"].append(
                    {"name": "log-shipper", "image": "fluent/fluent-bit:3.1"}),
                "spec.tfReplicaSpecs.PS.template.spec.containers[1]: a second container (log-shipper)"),
    "init container": ("tfjob-dist-mnist.yaml",
                       lambda d: d["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].update(
                           initContainers=[{"name": "fetch", "image": "busybox:1.37.0"}]),
                       f"{TF_WORKER}.initContainers: no equivalent"),
    "host network": ("tfjob-dist-mnist.yaml",
                     lambda d: d["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].update(hostNetwork=True),
                     f"{TF_WORKER}.hostNetwork: no equivalent"),
    "latest": ("tfjob-dist-mnist.yaml", lambda d: tf_container(d).update(image="kubeflow/tf-dist-mnist:latest"),
               f"{TF_WORKER}.containers[0].image: 'kubeflow/tf-dist-mnist:latest' has the tag latest"),
    "no tag": ("tfjob-dist-mnist.yaml", lambda d: tf_container(d, "Chief").update(image="kubeflow/tf-dist-mnist"),
               "has no tag: our charts run a published version tag"),
    "elastic without command": ("pytorchjob-elastic.yaml", lambda d: pt_pod(d)["containers"][0].pop("command"),
                                "containers.command: none, with elasticPolicy: the chart wraps torchrun"),
    "launcher gpus without command": (
        "mpijob-args-only.yaml",
        lambda d: d["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        .update({"nvidia.com/gpu": 1}) or d["spec"].update(runLauncherAsWorker=True),
        "spec.mpiReplicaSpecs.Launcher: GPUs on a launcher without command"),
    "worker args": ("mpijob-args-only.yaml",
                    lambda d: d["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(
                        args=["python", "serve.py"]),
                    "spec.mpiReplicaSpecs.Worker.template.spec.containers.args: the workers run sshd"),
    "own volume name": ("tfjob-dist-mnist.yaml",
                        lambda d: d["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["volumes"][0].update(
                            name="scripts") or tf_container(d, "PS")["volumeMounts"][0].update(name="scripts"),
                        "spec.tfReplicaSpecs.PS.template.spec.volumes[0].name: 'scripts' is a volume the chart has"),
    "two chiefs": ("tfjob-dist-mnist.yaml", lambda d: d["spec"]["tfReplicaSpecs"]["Chief"].update(replicas=2),
                   "spec.tfReplicaSpecs chief: 2 chief pods"),
    "dynamic workers": ("tfjob-dist-mnist.yaml", lambda d: d["spec"].update(enableDynamicWorker=True),
                        "spec.enableDynamicWorker: workers cannot join a running release"),
    "suspend": ("tfjob-dist-mnist.yaml", lambda d: d["spec"]["runPolicy"].update(suspend=True),
                "spec.runPolicy.suspend: our releases start when installed"),
    "gang without scheduler": ("tfjob-dist-mnist.yaml",
                               lambda d: d["spec"]["runPolicy"].update(schedulingPolicy={"minAvailable": 7}),
                               "spec.runPolicy.schedulingPolicy: gang scheduling, but the pods name no gang scheduler"),
    "kueue priority": ("tfjob-dist-mnist.yaml",
                       lambda d: d["metadata"]["labels"].update({"kueue.x-k8s.io/priority-class": "high"}),
                       "metadata.labels.kueue.x-k8s.io/priority-class: a Kueue setting"),
    "unknown replica type": ("pytorchjob-mnist.yaml",
                             lambda d: d["spec"]["pytorchReplicaSpecs"].update(Launcher={"replicas": 1}),
                             "spec.pytorchReplicaSpecs.Launcher: a replica type pytorch-dist has no role for"),
    "master differs": ("pytorchjob-mnist.yaml",
                       lambda d: pt_pod(d, "Master").update(nodeSelector={"pool": "cpu"}),
                       "spec.pytorchReplicaSpecs.Master: Master and Worker pods differ (nodeSelector)"),
    "hpa metrics": ("pytorchjob-elastic.yaml",
                    lambda d: d["spec"]["elasticPolicy"].update(metrics=[{"type": "Resource"}]),
                    "spec.elasticPolicy.metrics: autoscaling the workers"),
    "etcd rendezvous": ("pytorchjob-elastic.yaml", lambda d: d["spec"]["elasticPolicy"].update(rdzvBackend="etcd"),
                        "spec.elasticPolicy.rdzvBackend: etcd: the chart's rendezvous is c10d on worker 0"),
    "rendezvous host": ("pytorchjob-elastic.yaml", lambda d: d["spec"]["elasticPolicy"].update(rdzvHost="etcd-0"),
                        "spec.elasticPolicy.rdzvHost"),
    "two gpu kinds": ("pytorchjob-elastic.yaml",
                      lambda d: pt_pod(d)["containers"][0]["resources"]["limits"].update({"amd.com/gpu": 1}),
                      "several GPU resources (amd.com/gpu, nvidia.com/gpu)"),
    "worker program": ("mpijob-pi.yaml",
                       lambda d: d["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(
                           command=["python", "serve.py"]),
                       "spec.mpiReplicaSpecs.Worker.template.spec.containers.command: the workers run sshd"),
    "launcher as worker": ("mpijob-pi.yaml", lambda d: d["spec"].update(runLauncherAsWorker=True),
                           "spec.runLauncherAsWorker: the chart's launcher runs ranks only with GPUs"),
    "slots unlike gpus": ("mpijob-horovod.yaml", lambda d: d["spec"].update(slotsPerWorker=4),
                          "spec.slotsPerWorker: 4 with 1 GPUs per worker"),
    "deepspeed": ("trainjob-torch.yaml", lambda d: d["spec"]["runtimeRef"].update(name="deepspeed-distributed"),
                  "spec.runtimeRef.name: deepspeed-distributed: DeepSpeed's MPI launcher has no chart here"),
    "mlx": ("trainjob-torch.yaml", lambda d: d["spec"]["runtimeRef"].update(name="mlx-distributed"),
            "spec.runtimeRef.name: mlx-distributed: MLX over MPI has no chart here"),
    "torchtune": ("trainjob-torch.yaml", lambda d: d["spec"]["runtimeRef"].update(name="torchtune-llama3.2-1b"),
                  "spec.runtimeRef.name: 'torchtune-llama3.2-1b': only torch-distributed maps to a chart here"),
    "own runtime": ("trainjob-torch.yaml", lambda d: d["spec"]["runtimeRef"].update(kind="TrainingRuntime"),
                    "spec.runtimeRef: TrainingRuntime torch-distributed: a runtime of your own"),
    "initializer": ("trainjob-torch.yaml",
                    lambda d: d["spec"].update(initializer={"dataset": {"storageUri": "hf://tatsu-lab/alpaca"}}),
                    "spec.initializer: dataset and model initializers have no equivalent"),
    "placeholder image": ("tfjob-dist-mnist.yaml", lambda d: tf_container(d).update(image="gcr.io/<project>/mnist:v1"),
                          f"{TF_WORKER}.containers[0].image: 'gcr.io/<project>/mnist:v1' is a placeholder, not an "
                          "image"),
    "two masters": ("pytorchjob-mnist.yaml", lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"].update(replicas=2),
                    "spec.pytorchReplicaSpecs.Master.replicas: 2 Masters: Kubeflow refuses more than one"),
    "override of another job": ("trainjob-torch.yaml",
                                lambda d: d["spec"]["podTemplateOverrides"][0].update(
                                    targetJobs=[{"name": "dataset-initializer"}]),
                                "spec.podTemplateOverrides[0].targetJobs: ['dataset-initializer']"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_field_without_equivalent_is_refused_with_its_path(case: str) -> None:
    name, change, expected = REFUSALS[case]
    with pytest.raises(importer.ImportRefused) as info:
        importer.convert(changed(name, change), name)
    assert expected in str(info.value), str(info.value)


def test_strings_yaml_1_1_would_retype_are_written_quoted(render, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`y`, `off`, `1e3`, `0x1F` and `12:30` are strings to PyYAML but a bool or a number to helm's YAML: written
    bare they changed type (helm refused an env value of `y`); quoted, they reach the pods as the manifest had them."""
    words = ["y", "off", "1e3", "0x1F", "12:30"]

    def change(doc: dict[str, Any]) -> None:
        for role in ("Master", "Worker"):
            container = pt_pod(doc, role)["containers"][0]
            container["env"] = [{"name": f"WORD_{i}", "value": word} for i, word in enumerate(words)]
            container["args"] = [*container.get("args", []), *words]

    job = importer.convert(changed("pytorchjob-mnist.yaml", change), "pytorchjob-mnist.yaml")
    ((_, path, text),) = importer.write([job], tmp_path / "quoted.yaml")
    assert all(f'"{word}"' in text for word in words), text
    assert path is not None
    result = render(CHARTS / job.chart, values_files=[path])
    env = container_env(main_container(result.get("Job", "release-worker").body), 0)
    assert [env[f"WORD_{i}"] for i in range(len(words))] == words, env


@pytest.mark.parametrize(
    ("api", "kind", "expected"),
    [
        ("kubeflow.org/v1", "MPIJob", "MPIJob kubeflow.org/v1 (this importer reads MPIJob kubeflow.org/v2beta1)"),
        ("kubeflow.org/v1", "XGBoostJob", "XGBoostJob kubeflow.org/v1 is not a job dlcharts import converts"),
        ("kubeflow.org/v2alpha1", "TrainJob", "(this importer reads TrainJob trainer.kubeflow.org/v1alpha1)"),
        ("apps/v1", "Deployment", "Deployment apps/v1 is not a job dlcharts import converts; it reads TFJob"),
    ],
)
def test_unknown_kinds_and_api_versions_are_refused(api: str, kind: str, expected: str) -> None:
    with pytest.raises(importer.ImportRefused) as info:
        importer.convert({"apiVersion": api, "kind": kind, "metadata": {"name": "x"}, "spec": {}}, "f.yaml")
    assert expected in str(info.value)


# ----- the command -----------------------------------------------------------------------------------------------


def test_cli_writes_one_file_per_job_from_a_multi_document_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    both = tmp_path / "jobs.yaml"
    both.write_text(
        (MANIFESTS / "tfjob-dist-mnist.yaml").read_text() + "\n---\n" + (MANIFESTS / "mpijob-pi.yaml").read_text()
    )
    out = tmp_path / "values"
    assert main(["import", str(both), str(MANIFESTS / "trainjob-torch.yaml"), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["dist-mnist.yaml", "fashion-mnist.yaml", "pi.yaml"]
    assert yaml.safe_load((out / "pi.yaml").read_text())["worker"] == 2
    assert f"MPIJob pi -> {out / 'pi.yaml'} (chart horovod-mpi)" in capsys.readouterr().err


def test_cli_one_job_to_stdout_and_several_need_a_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(MANIFESTS / "mpijob-pi.yaml")]) == 0
    assert capsys.readouterr().out.startswith("# dlcharts import: MPIJob pi (")
    assert main(["import", str(MANIFESTS / "mpijob-pi.yaml"), str(MANIFESTS / "trainjob-torch.yaml")]) == 2
    assert "2 jobs: give -o FOLDER" in capsys.readouterr().err


def test_cli_refusal_writes_nothing_and_lists_every_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = changed("tfjob-dist-mnist.yaml", lambda d: tf_container(d).update(livenessProbe={}, stdin=True))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    out = tmp_path / "values"
    assert main(["import", str(MANIFESTS / "mpijob-pi.yaml"), str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: TFJob dist-mnist cannot become values of tensorflow-dist:" in err
    assert f"{TF_WORKER}.containers[0].livenessProbe" in err and f"{TF_WORKER}.containers[0].stdin" in err
    assert "nothing written" in err
    assert not out.exists()


def test_cli_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: no such file" in capsys.readouterr().err
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [TFJob\n")
    assert main(["import", str(broken)]) == 2
    assert "broken.yaml: not valid YAML" in capsys.readouterr().err


def _pt_worker(doc: dict[str, Any]) -> dict[str, Any]:
    return pt_pod(doc)["containers"][0]  # type: ignore[no-any-return]


#: a field of the wrong type: (the change to pytorchjob-mnist.yaml, the refusal's line)
WRONG_TYPES = {
    "spec": (lambda d: d.update(spec="oops"), "spec: 'oops' is not a mapping"),
    "metadata": (lambda d: d.update(metadata="x"), "metadata: 'x' is not a mapping (name, namespace, labels)"),
    "labels": (lambda d: d["metadata"].update(labels=["a"]), "metadata.labels: ['a'] is not a mapping"),
    "replica spec": (lambda d: d["spec"]["pytorchReplicaSpecs"].update(Worker=[1, 2]),
                     "spec.pytorchReplicaSpecs.Worker: [1, 2] is not a mapping"),
    "elastic policy": (lambda d: d["spec"].update(elasticPolicy=5), "spec.elasticPolicy: 5 is not a mapping"),
    "run policy": (lambda d: d["spec"].update(runPolicy=3), "spec.runPolicy: 3 is not a mapping"),
    "containers": (lambda d: pt_pod(d).update(containers="x"),
                   "spec.pytorchReplicaSpecs.Worker.template.spec.containers: 'x' is not a list"),
    "env": (lambda d: _pt_worker(d).update(env="A=b"),
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env: 'A=b' is not a list"),
    "resources": (lambda d: _pt_worker(d).update(resources=[1]),
                  "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources: [1] is not a mapping"),
    "command": (lambda d: _pt_worker(d).update(command="python /opt/mnist.py"),  # not one argument per character
                "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command: 'python /opt/mnist.py' is not a "
                "list"),
    "node selector": (lambda d: pt_pod(d).update(nodeSelector=["a"]),
                      "spec.pytorchReplicaSpecs.Worker.template.spec.nodeSelector: ['a'] is not a mapping"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(WRONG_TYPES))
def test_a_field_of_the_wrong_type_is_refused_with_its_path_never_a_traceback(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, expected = WRONG_TYPES[case]
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(changed("pytorchjob-mnist.yaml", change)))
    assert main(["import", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err


def test_an_image_without_a_version_tag_runs_the_tag_given_with_image_tag(
    render, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    """Kubeflow's own examples run `:latest`: refused with the way out named, and with --image-tag the job imports,
    every role on the tag given (one image for every pod), the header saying so."""
    manifest = tmp_path / "latest.yaml"
    latest = changed("tfjob-dist-mnist.yaml",
                     lambda d: [tf_container(d, r).update(image="kubeflow/tf-dist-mnist:latest")
                                for r in ("Chief", "PS", "Worker")])  # fmt: skip
    manifest.write_text(yaml.safe_dump(latest))
    assert main(["import", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert "has the tag latest" in err and "or import with --image-tag TAG" in err, err
    assert "nothing written: change the manifest as each line above says (or the options it names)" in err, err
    out = tmp_path / "values"
    assert main(["import", str(manifest), "--image-tag", "v1.8.0", "-o", str(out)]) == 0
    (values,) = out.iterdir()
    text = values.read_text()
    assert "'kubeflow/tf-dist-mnist:latest' runs as kubeflow/tf-dist-mnist:v1.8.0 (--image-tag)" in text, text
    result = render(CHARTS / "tensorflow-dist", values_files=[values], namespace="kubeflow")
    images = {main_container(job_of(result, f"release-{role}"))["image"] for role in ("chief", "ps", "worker")}
    assert images == {"kubeflow/tf-dist-mnist:v1.8.0"}, images


def test_an_env_var_read_from_kubeflows_pod_labels_reads_ours(render, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`training.kubeflow.org/replica-index` (and replica-type, job-name) are never on our pods: an env var read
    from them reads the Job's completion index (and our component and instance labels); another Kubeflow label is
    refused with what says the same here."""

    def ref(name: str, label: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}

    def change(doc: dict[str, Any]) -> None:
        for role in ("Chief", "PS", "Worker"):
            tf_container(doc, role).setdefault("env", []).extend([
                ref("INDEX", "training.kubeflow.org/replica-index"), ref("ROLE", "training.kubeflow.org/replica-type")
            ])  # fmt: skip

    job = importer.convert(changed("tfjob-dist-mnist.yaml", change), "tfjob-dist-mnist.yaml")
    ((_, path, _),) = importer.write([job], tmp_path / "refs.yaml")
    assert path is not None
    result = render(CHARTS / job.chart, values_files=[path], namespace="kubeflow")
    env = {e["name"]: e for e in main_container(job_of(result, "release-worker"))["env"]}
    fields = {name: env[name]["valueFrom"]["fieldRef"]["fieldPath"] for name in ("INDEX", "ROLE")}
    assert fields == {"INDEX": "metadata.annotations['batch.kubernetes.io/job-completion-index']",
                      "ROLE": "metadata.labels['app.kubernetes.io/component']"}, fields  # fmt: skip
    other = changed("tfjob-dist-mnist.yaml", lambda d: tf_container(d).setdefault("env", []).append(
        ref("MASTER", "training.kubeflow.org/job-role")))  # fmt: skip
    with pytest.raises(importer.ImportRefused, match=r"job-role'\]: our pods carry no such label; DL_TASK_INDEX"):
        importer.convert(other, "tfjob-dist-mnist.yaml")


def test_a_privileged_container_keeps_the_escalation_it_needs(render, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """RDMA guides run privileged: merged with the chart's allowPrivilegeEscalation false the API server refused the
    pods; the import writes it true, and the render passes the API server's rules."""
    doc = changed("tfjob-dist-mnist.yaml", lambda d: [tf_container(d, r).update(securityContext={"privileged": True})
                                                      for r in ("Chief", "PS", "Worker")])  # fmt: skip
    job = importer.convert(doc, "tfjob-dist-mnist.yaml")
    ((_, path, text),) = importer.write([job], tmp_path / "privileged.yaml")
    assert "so allowPrivilegeEscalation is true" in text, text
    assert path is not None
    result = render(CHARTS / job.chart, values_files=[path], namespace="kubeflow")
    context = main_container(job_of(result, "release-worker"))["securityContext"]
    assert context["privileged"] is True and context["allowPrivilegeEscalation"] is True, context
    from dlcharts.schemas import validate_objects

    errors = [f for f in validate_objects(result.objects.values(), "1.35.0") if "privileged" in f.message.lower()]
    assert not errors, errors


# The image's own entrypoint (issue 45 item 2): a container without command runs its image's ENTRYPOINT
# (imageEntrypoint), with the environment Kubeflow's operator gave it.


def mode_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith("# mode: ")]


def test_a_pytorchjob_without_command_runs_the_image_entrypoint_with_the_operators_env(
    render, assert_valid, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    job, path = imported("pytorchjob-entrypoint.yaml", tmp_path)
    assert job.values["defaults"]["imageEntrypoint"] is True
    (mode,) = mode_lines(path)
    assert "every worker: the image's own entrypoint" in mode and "WORLD_SIZE" in mode and "RANK" in mode
    result = render(CHARTS / "pytorch-dist", values_files=[path], namespace="training")
    assert_valid(result)
    workers = job_of(result, "release-worker")
    assert workers["spec"]["completions"] == 3  # the Master and 2 Workers
    container = main_container(workers)
    assert "command" not in container
    assert container["args"] == ["--backend", "gloo", "--epochs", "1"]
    master = "release-worker-0.release.training.svc"
    for index in range(3):
        env = env_of(result, "release-worker", index)
        assert (env["RANK"], env["PET_NODE_RANK"], env["WORLD_SIZE"]) == (str(index), str(index), "3")
        assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == (master, "29500")
        assert (env["PET_MASTER_ADDR"], env["PET_NNODES"], env["PET_NPROC_PER_NODE"]) == (master, "3", "1")
        assert env["PYTHONUNBUFFERED"] == "1"


def test_a_tfjob_without_command_gets_tf_config_and_its_ps_end_through_the_watchdog(
    render, assert_valid, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    job, path = imported("tfjob-entrypoint.yaml", tmp_path)
    assert job.values["defaults"]["imageEntrypoint"] is True
    assert [line.split(":")[1].strip() for line in mode_lines(path)] == ["PS (ps)", "Worker (worker)"]
    assert any("PS: never ends by itself" in line for line in job.differs)
    result = render(CHARTS / "tensorflow-dist", values_files=[path], namespace="training")
    assert_valid(result)
    cluster = {
        "ps": [f"release-ps-{i}.release.training.svc:2222" for i in range(2)],
        "worker": [f"release-worker-{i}.release.training.svc:2222" for i in range(3)],
    }
    for role, count in (("ps", 2), ("worker", 3)):
        container = main_container(job_of(result, f"release-{role}"))
        assert container["name"] == role and "command" not in container and "args" not in container
        for index in range(count):
            tf_config = json.loads(env_of(result, f"release-{role}", index)["TF_CONFIG"])
            assert tf_config == {"cluster": cluster, "task": {"type": role, "index": index}, "environment": "cloud"}
    ps = job_of(result, "release-ps")["spec"]["template"]["spec"]
    # the parameter server runs in a native sidecar; the pod's container is the watchdog, which completes it
    assert [c["name"] for c in ps["containers"]] == ["watchdog"]
    assert ps["containers"][0]["command"][:2] == ["/bin/sh", "-c"] and len(ps["containers"][0]["command"]) == 4
    sidecar = [c for c in ps["initContainers"] if c["name"] == "ps"]
    assert sidecar and sidecar[0]["restartPolicy"] == "Always"
    assert [c["name"] for c in ps["initContainers"]] == ["peer-wait", "ps"]


def test_an_mpijob_launch_line_in_args_runs_as_the_launcher_image_entrypoint(
    render, assert_valid, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    job, path = imported("mpijob-args-only.yaml", tmp_path)
    assert job.values["roles"]["launcher"]["imageEntrypoint"] is True
    assert "imageEntrypoint" not in job.values["defaults"]
    assert any("Worker.template.spec.containers args (/usr/sbin/sshd" in line for line in job.dropped)
    (mode,) = mode_lines(path)
    assert mode.startswith("# mode: the launcher: the image's own entrypoint") and "/etc/mpi/hostfile" in mode
    result = render(CHARTS / "horovod-mpi", values_files=[path], namespace="training")
    assert_valid(result)
    launcher = job_of(result, "release-launcher")
    container = main_container(launcher)
    assert "command" not in container and container["args"] == ["mpirun", "-n", "2", "/home/mpiuser/pi"]
    env = env_of(result, "release-launcher")
    assert env["I_MPI_HYDRA_HOST_FILE"] == "/etc/mpi/hostfile" and env["I_MPI_HYDRA_BOOTSTRAP"] == "ssh"
    init = {c["name"]: c for c in launcher["spec"]["template"]["spec"]["initContainers"]}
    assert list(init) == ["mpi-setup", "mpi-wait"]
    wait = init["mpi-wait"]
    assert wait["command"] == ["/bin/sh", "/etc/mpi/mpi-launcher.sh"]
    assert {"name": "MPI_WAIT_ONLY", "value": "true"} in wait["env"]
    assert {m["mountPath"] for m in wait["volumeMounts"]} >= {"/etc/mpi", "/home/mpi", "/etc/passwd"}
    assert main_container(job_of(result, "release-worker"))["args"] == ["/bin/sh", "/etc/mpi/mpi-sshd.sh"]  # sshd
