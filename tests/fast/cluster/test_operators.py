"""The training operators of the benchmark (dlcharts.cluster.addons.operators, bench/operators/): built only when
named, installed with their webhooks on 127.0.0.1, and their jobs made from our charts' render."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from bench import operators as bench_ops
from dlcharts.cluster.addons import ALL, addon_of, operators
from dlcharts.errors import ClusterError
from dlcharts.host import binaries
from dlcharts.jobs import run

ROOT = Path(__file__).resolve().parents[3]


def test_operators_are_a_group_of_their_own_outside_the_default_and_ci_builds() -> None:
    assert binaries.GROUPS["operators"] == binaries.OPERATOR_BINARIES == operators.OPERATORS
    for group in ("default", "control-plane", "addons"):
        assert not set(binaries.GROUPS[group]) & set(operators.OPERATORS)
    recipe = re.search(r"^control-plane:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None and "operators" not in recipe.group(1)


def test_missing_operators_name_their_build(tmp_path: Path) -> None:
    with pytest.raises(ClusterError) as err:
        binaries.require_binaries(tmp_path, binaries.OPERATOR_BINARIES)
    assert "trainer v2.2.0" in str(err.value) and "dlcharts cluster build operators" in str(err.value)


def test_trainer_brings_jobset_first_and_processes_map_to_their_addon() -> None:
    assert operators.with_needs(("trainer", "mpi-operator")) == ("jobset", "trainer", "mpi-operator")
    assert operators.with_needs(("jobset", "trainer")) == ("jobset", "trainer")
    assert [addon_of(p) for p in ("coscheduling-controller", "training-operator", "mpi-operator", "kueue")] == [
        "coscheduling", "training-operator", "mpi-operator", "kueue",
    ]  # fmt: skip
    assert ALL[-len(operators.OPERATORS) :] == operators.OPERATORS


def test_webhooks_are_called_on_loopback_with_the_ca_and_filtered_by_resource() -> None:
    docs = [
        {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "validating-webhook-configuration"},
         "webhooks": [
             {"name": "tf", "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/validate-tf"}},
              "rules": [{"resources": ["tfjobs"]}]},
             {"name": "mx", "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/validate-mx"}},
              "rules": [{"resources": ["mxjobs"]}]},
         ]},
        {"kind": "CustomResourceDefinition", "metadata": {"name": "x"}},
    ]  # fmt: skip
    out = operators.webhook_configurations(docs, 9443, b"CA", prefix="p-", keep=("tfjobs",))
    assert [d["metadata"]["name"] for d in out] == ["p-validating-webhook-configuration"]
    assert out[0]["webhooks"] == [
        {"name": "tf", "clientConfig": {"url": "https://127.0.0.1:9443/validate-tf",
                                        "caBundle": base64.b64encode(b"CA").decode()},
         "rules": [{"resources": ["tfjobs"]}]},
    ]  # fmt: skip
    assert "service" in docs[0]["webhooks"][0]["clientConfig"]  # the input is left as it was
    assert operators.webhook_configurations(docs, 1, b"", keep=("pods",)) == []


@pytest.fixture(scope="module")
def renders() -> dict[str, list[dict[str, object]]]:
    return {
        name: bench_ops.render(job.chart, run.cpu_values(job.chart, "registry.test:5000"), job.helm_args, "ns")
        for name, job in bench_ops.JOBS.items()
        if name in ("pytorch", "tensorflow", "horovod")
    }


def test_operator_jobs_run_our_program_without_our_wiring(renders: dict[str, list[dict[str, object]]]) -> None:
    torch = bench_ops.operator_job("pytorch", "training-operator", renders["pytorch"], "bench", 2)
    specs = torch["spec"]["pytorchReplicaSpecs"]
    assert {role: spec["replicas"] for role, spec in specs.items()} == {"Master": 1, "Worker": 1}
    # one process per pod, as ours and the TrainJob (numProcPerNode 1): "auto" would start one per CPU
    assert torch["spec"]["nprocPerNode"] == "1"
    main = specs["Worker"]["template"]["spec"]["containers"][0]
    assert main["name"] == "pytorch" and main["command"][:2] == ["torchrun", "/opt/dl-charts/bench_ddp.py"]
    assert main["image"] == "registry.test:5000/pytorch/pytorch:2.6.0-cpu"
    assert [e["name"] for e in main["env"]] == ["DL_COLLECTIVE_TIMEOUT_SECONDS", "HOME", "NVIDIA_VISIBLE_DEVICES"]
    assert "initContainers" not in specs["Worker"]["template"]["spec"]

    tf = bench_ops.operator_job("tensorflow", "training-operator", renders["tensorflow"], "bench", 4)
    worker = tf["spec"]["tfReplicaSpecs"]["Worker"]
    container = worker["template"]["spec"]["containers"][0]
    assert worker["replicas"] == 4 and container["name"] == "tensorflow"
    assert container["command"][:2] == ["python", "/opt/dl-charts/bench_tf.py"]  # our TF_CONFIG wrapper is gone
    assert {v["name"] for v in worker["template"]["spec"]["volumes"]} == {"shm", "tmp", "scripts"}
    assert [c["metadata"]["name"] for c in bench_ops.config_maps(renders["tensorflow"])] == ["bench-scripts"]

    train = bench_ops.operator_job("pytorch", "trainer", renders["pytorch"], "bench", 2)
    assert train["spec"]["runtimeRef"] == {"name": "torch-distributed"}
    assert train["spec"]["trainer"]["numNodes"] == 2 and train["spec"]["trainer"]["command"] == main["command"]
    assert train["spec"]["trainer"]["numProcPerNode"] == 1
    pod = train["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    assert pod["template"]["spec"]["template"]["spec"]["nodeSelector"] == {"dlcharts.io/node-type": "real"}


def test_mpi_job_runs_our_ranks_through_the_operators_ssh(renders: dict[str, list[dict[str, object]]]) -> None:
    job = bench_ops.operator_job("horovod", "mpi-operator", renders["horovod"], "bench", 2)
    specs = job["spec"]["mpiReplicaSpecs"]
    assert job["spec"]["sshAuthMountPath"] == "/root/.ssh" and specs["Worker"]["replicas"] == 2
    launcher = specs["Launcher"]["template"]["spec"]
    command = launcher["containers"][0]["command"]
    assert command[:4] == ["mpirun", "--allow-run-as-root", "-np", "2"]
    assert command[command.index("-x") + 2 :][:2] == ["python", "/opt/dl-charts/horovod_bench.py"]  # horovodrun's
    assert launcher["securityContext"] == {"runAsUser": 0, "runAsGroup": 0}  # the image's user has no passwd entry
    worker = specs["Worker"]["template"]["spec"]
    assert "exec /usr/sbin/sshd -De -o HostKey=/root/.ssh/id_rsa" in worker["containers"][0]["command"][2]
    for spec in (launcher, worker):  # our SSH setup, hostfile and passwd entry are gone: the operator makes its own
        assert {v["name"] for v in spec.get("volumes") or []} <= {"shm", "tmp", "scripts"}
        assert not [e for e in spec["containers"][0].get("env") or [] if e["name"].startswith(("MPI_", "OMPI_"))]


def test_image_missing_breaks_only_the_workers_image(renders: dict[str, list[dict[str, object]]]) -> None:
    torch = bench_ops.operator_job("pytorch", "training-operator", renders["pytorch"], "bench", 2)
    bench_ops.break_worker_image(torch)
    images = {role: spec["template"]["spec"]["containers"][0]["image"]
              for role, spec in torch["spec"]["pytorchReplicaSpecs"].items()}  # fmt: skip
    assert images == {"Master": "registry.test:5000/pytorch/pytorch:2.6.0-cpu",
                      "Worker": "registry.test:5000/pytorch/pytorch:bench-missing"}  # fmt: skip
    train = bench_ops.operator_job("pytorch", "trainer", renders["pytorch"], "bench", 2)
    bench_ops.break_worker_image(train)
    assert train["spec"]["trainer"]["image"].endswith(":bench-missing")
