"""pytorch-dist, mxnet-dist and horovod-mpi train for real on the embedded cluster's real node, through the same path as
`dlcharts run` (local CPU image pushed to the cluster's registry, CPU values, every container's log), each in a
namespace at its chart's Pod Security level (restricted; cntk-dist: baseline).

- pytorch-dist: torchrun reads the chart's PET_* variables, rendezvous through c10d on worker 0, DDP all-reduces
  with gloo; both ranks end with the same parameters. Image: Debian's PyTorch 2.6.0 CPU build.
- mxnet-dist: ps-lite reads the chart's DMLC_* variables: a scheduler, two servers and two workers train with
  the dist_sync kvstore, and the scheduler and servers exit by themselves when the workers are done. Image:
  PyPI's mxnet 1.9.1 CPU wheel.
- horovod-mpi: horovodrun reads the chart's hostfile and SSH key and trains the chart's PyTorch benchmark on two sshd
  workers (Horovod 0.28.1 built from source); plain mpirun runs an mpi4py allreduce through horovod.command; a worker
  deleted mid-run fails the launcher and the Job, and no sshd pod is left. cntk-dist: the same MPI path as root
  (Pod Security baseline) with an mpi4py allreduce through cntk.python.command (CNTK itself has no current wheel).
- jax-dist: every process joins through jax.distributed.initialize from the chart's JAX_* variables (process 0 runs
  the coordinator), the jitted step's gradient mean is an all-reduce across both pods (gloo), and both end with the
  same parameters; a user's own program through --set-file script=. Image: PyPI's jax/jaxlib 0.12.0.1 CPU wheels.
- deepspeed-dist: DeepSpeed's launcher (--launcher openmpi) reads the chart's hostfile and starts one rank per sshd
  worker; a user's script and ds_config file (--set-file) train with ZeRO stage 2 over gloo, checksums equal.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dlcharts.catalogue import mpi4py_program
from dlcharts.cluster import ClusterHandle
from dlcharts.install import Kube
from dlcharts.jobs import run
from tests.support import CHARTS
from tests.support.cluster import CHECKPOINT_ARGS, checkpoint_claim
from tests.support.real_node import assert_spread

pytestmark = pytest.mark.cluster


def delete_pod_on_line(
    cluster: ClusterHandle, real_run: Any, trigger: re.Pattern[str], job: str, index: int | Callable[[], int]
) -> tuple[Callable[[str], None], dict[str, Any]]:
    """An ``on_line`` for ``real_run`` that deletes the pod of ``job``'s completion ``index`` (in a thread, so the
    log keeps flowing) the first time a line matches ``trigger``, and what it did: ``at`` (time.time() of the
    match) and ``pod`` (the deleted pod's name). A callable ``index`` is asked at the match (a victim that the
    log named by then)."""
    fault: dict[str, Any] = {}

    def delete() -> None:
        with Kube.from_kubeconfig(cluster.kubeconfig) as kube:
            at = index() if callable(index) else index
            selector = f"batch.kubernetes.io/job-name={job},batch.kubernetes.io/job-completion-index={at}"
            pods = kube.items(f"/api/v1/namespaces/{real_run.namespace}/pods", selector)
            name = next(p["metadata"]["name"] for p in pods if (p.get("status") or {}).get("phase") == "Running")
            fault["pod"] = name
            resp = kube.request("DELETE", f"/api/v1/namespaces/{real_run.namespace}/pods/{name}")
            assert resp.status == 200, resp.doc

    def on_line(line: str) -> None:
        if "at" not in fault and trigger.search(line):
            fault["at"] = time.time()
            threading.Thread(target=delete, daemon=True).start()

    return on_line, fault


def assert_workers_succeeded(result: run.RunResult, release: str, cluster: ClusterHandle) -> None:
    """The release's one Job (its workers) complete, both pods Succeeded on the real nodes (on different ones when
    there are several), none left running."""
    assert result.ok, result.problem
    assert [(p.phase, p.exit_code) for p in result.pods] == [("Succeeded", 0)] * 2
    assert_spread(result.pods, cluster)
    assert result.jobs == {f"{release}-worker": "Complete"}
    assert result.settled_seconds is not None, "a pod of the finished job kept running"


def test_pytorch_torchrun_c10d_ddp_trains_across_two_pods(real_run, embedded_cluster) -> None:  # type: ignore[no-untyped-def]
    result, log = real_run("pytorch-dist", "bert", "--set", "worker=2")
    assert_workers_succeeded(result, "bert", embedded_cluster)
    assert re.search(r"\[bert-worker-0-\w+/worker\] bench_ddp: 2 process\(es\), backend gloo", log)
    for rank in range(2):  # torchrun gave each pod its rank from the c10d rendezvous, on its own host name
        assert re.search(rf"\[bert-worker-{rank}-\w+/worker\] bench_ddp: rank {rank}/2 on bert-worker-{rank} ", log)
    checksums = dict(re.findall(r"bench_ddp: rank (\d) final parameters sha256 ([0-9a-f]{64})", log))
    assert sorted(checksums) == ["0", "1"], log
    assert checksums["0"] == checksums["1"], f"the ranks' final parameters differ: {checksums}"


def test_mxnet_dist_sync_with_scheduler_two_servers_two_workers(real_run, embedded_cluster) -> None:  # type: ignore[no-untyped-def]
    result, log = real_run("mxnet-dist", "mx", "--set", "worker=2", "--set", "server=2")
    assert result.ok, result.problem
    assert result.jobs == {"mx-scheduler": "Complete", "mx-server": "Complete", "mx-worker": "Complete"}
    assert {(p.owner, p.phase, p.exit_code) for p in result.pods} == {
        (f"Job/mx-{role}", "Succeeded", 0) for role in ("scheduler", "server", "worker")
    }
    assert_spread(result.pods, embedded_cluster)
    assert len(result.pods) == 5
    assert result.settled_seconds is not None, "the scheduler or a server kept running after the workers finished"
    scheduler = "scheduler mx-scheduler-0.mx.{ns}.svc:9091, 2 server(s), 2 worker(s)"
    for pod in ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1"):  # each role read DMLC_* from us
        role = pod.split("-")[0]
        assert re.search(
            rf"\[mx-{pod}-\w+/{role}\] bench_mx: {role} on mx-{pod}, "
            + re.escape(scheduler).replace(re.escape("{ns}"), r"[\w-]+"),
            log,
        ), pod
    ranks = sorted(re.findall(r"bench_mx: worker rank (\d)/2, devices \[cpu\(0\)\]", log))
    assert ranks == ["0", "1"], log  # ps-lite's scheduler gave the two workers distinct ranks
    assert re.search(r"bench_mx: step 20/20 loss \d", log)


def test_pytorch_deleted_workers_rerun_in_place_a_hot_spare_at_once_worker_0_with_its_replacement(
    real_run, embedded_cluster: ClusterHandle, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """pytorch-dist (restartsInPod 3) with spareWorkers=1 and a checkpoint volume: three worker pods, two of them
    torchrun's nodes and the third waiting in its rendezvous (c10d takes the first two to join: worker 0, which
    hosts the rendezvous, as rank 0, or, when it joins last, workers 1 and 2). The pod of rank 1 is deleted at step
    30 of 100: the other pods run torchrun again in place (no new pod for them), and the fresh round takes the spare
    at once, where the Job controller's replacement comes only after its back-off (and becomes the spare). Worker 0
    now trains either way; it is deleted at step 60: everyone runs again and waits for its replacement, which joins
    as rank 0. Each time the ranks resume from the last checkpoint; the Job succeeds once two pods have (its
    successPolicy), ending the spare left, and both ranks end with the same parameters."""
    steps = 100
    rank1: list[int] = []  # the worker index that trains as rank 1 first (c10d's rendezvous picks it)
    deletes: list[tuple[Callable[[str], None], dict[str, Any]]] = []
    resumed_at: list[float] = []

    def on_line(line: str) -> None:
        if not deletes and (found := re.search(r"bench_ddp: rank 1/2 on spare-worker-(\d) ", line)):
            rank1.append(int(found.group(1)))
            for step, index in ((30, rank1[0]), (60, 0)):  # rank 0 logs the steps
                trigger = re.compile(rf"\[spare-worker-\d-\w+/worker\] bench_ddp: step {step}/{steps} loss")
                deletes.append(delete_pod_on_line(embedded_cluster, real_run, trigger, "spare-worker", index))
        for delete, _ in deletes[: len(resumed_at) + 1]:  # the second only once the ranks resumed from the first
            delete(line)
        if re.search(r"bench_ddp: resumed from step \d+ ", line):
            resumed_at.append(time.time())

    with checkpoint_claim(embedded_cluster.kubeconfig, tmp_path / "checkpoints") as claim:
        result, log = real_run(
            "pytorch-dist", "spare", "--set", "worker=2", "--set", "spareWorkers=1",
            "--set", f"benchmark.steps={steps}", *CHECKPOINT_ARGS, "--set", "checkpoint.everySteps=10",
            before=claim, on_line=on_line,
        )  # fmt: skip
    faults = [fault for _, fault in deletes]
    assert rank1 and rank1[0] in (1, 2) and all("pod" in f for f in faults), (rank1, faults)
    assert result.ok, result.problem
    # two pods succeeded: the Job meets its successPolicy, ends the spare left, then completes
    assert result.jobs["spare-worker"] in ("SuccessCriteriaMet", "Complete"), result.jobs
    rank0 = int(re.findall(r"bench_ddp: rank 0/2 on spare-worker-(\d) ", log)[0])
    spare = 3 - rank0 - rank1[0]  # the pod that waited
    before = log.split("bench_ddp: resumed from step")[0]  # the spare trained when the ranks first resumed
    assert re.search(rf"\[spare-worker-{spare}-\w+/worker\] bench_ddp: rank \d/2 on spare-worker-{spare} ", before)
    rerun = r"/worker\] pytorch-dist: torchrun exited with 1; running it again in this pod \(1 of 3\)"
    assert re.search(rf"\[spare-worker-{rank0}-\w+" + rerun, before), before[-3000:]
    # a stopped pod never closed the rendezvous for the others (the spare left may meet a closed one at the end)
    assert "RendezvousClosedError" not in log.split("final parameters sha256")[0]
    resumed = re.findall(r"bench_ddp: resumed from step (\d+) ", log)
    assert resumed[0] in ("20", "30") and resumed[1] in ("50", "60") and len(resumed) == 2, resumed
    checksums = re.findall(r"\[spare-worker-(\d)-\w+/worker\] bench_ddp: rank (\d) final parameters sha256 (\w+)", log)
    ranks = {rank: worker for worker, rank, _ in checksums}
    # worker 0's replacement is rank 0 again; rank 1 is the former spare or, if it joined the round first, the
    # replacement of the first pod deleted (the other then waits as the spare)
    assert ranks.keys() == {"0", "1"} and ranks["0"] == "0" and ranks["1"] in ("1", "2"), checksums
    assert len({digest for *_, digest in checksums}) == 1, checksums
    succeeded = sorted(p.name.rsplit("-", 1)[0] for p in result.pods if p.phase == "Succeeded")
    assert succeeded == ["spare-worker-0", f"spare-worker-{ranks['1']}"], result.pods
    kept = 3 - rank1[0]  # never deleted (the spare or, when worker 0 was the spare, rank 0 of the first round)
    assert len([p for p in result.pods if p.name.startswith(f"spare-worker-{kept}-")]) == 1, result.pods  # in place
    assert result.settled_seconds is not None
    print(
        f"rank 1's pod (worker {rank1[0]}) deleted at step 30/{steps}: the spare (worker {spare}) took its place, the "
        f"ranks resumed from step {resumed[0]} {resumed_at[0] - faults[0]['at']:.1f}s later; worker 0 deleted at step "
        f"60: resumed from step {resumed[1]} with its replacement {resumed_at[1] - faults[1]['at']:.1f}s later; "
        f"job {result.seconds:.0f}s"
    )


def mpi4py_command(steps: int, pause: float) -> str:
    """dlcharts.jobs.run's mpi4py allreduce (every rank names its host, allreduces each step, checks the last sum) as a
    JSON list for ``--set-json <chart's program value>=...``."""
    return json.dumps(mpi4py_program(steps, pause))


def pod_times(kubeconfig: object, namespace: str, release: str) -> tuple[float, float]:
    """(the launcher's main container end, the last main container end of the release) as epoch seconds."""
    ends: dict[str, float] = {}
    with Kube.from_kubeconfig(str(kubeconfig)) as kube:
        pods = kube.items(f"/api/v1/namespaces/{namespace}/pods", f"app.kubernetes.io/instance={release}")
    for pod in pods:
        main = pod["spec"]["containers"][0]["name"]
        for status in pod["status"].get("containerStatuses") or []:
            ended = (status.get("state") or {}).get("terminated")
            if status["name"] == main and ended:
                ends[pod["metadata"]["name"]] = run.parse_time(ended["finishedAt"]).timestamp()
    launcher = [t for name, t in ends.items() if name.startswith(f"{release}-launcher-")]
    assert launcher and ends, ends
    return max(launcher), max(ends.values())


def assert_mpi_job_succeeded(result: run.RunResult, release: str, cluster: ClusterHandle) -> None:
    """Both Jobs complete, the launcher and the two sshd workers Succeeded on the real nodes (the workers on
    different ones when there are several), none left running."""
    assert result.ok, result.problem
    assert result.jobs == {f"{release}-launcher": "Complete", f"{release}-worker": "Complete"}
    assert {(p.owner, p.phase, p.exit_code) for p in result.pods} == {
        (f"Job/{release}-{role}", "Succeeded", 0) for role in ("launcher", "worker")
    }
    assert_spread(result.pods, cluster)
    assert len(result.pods) == 3
    assert result.settled_seconds is not None, "an sshd worker kept running after the launcher finished"


def assert_mpi_ranks(log: str, release: str, launcher: str) -> None:
    """mpirun placed one rank on each worker pod, named by Open MPI itself, and the allreduce summed across both."""
    assert re.search(rf"\[{release}-launcher-0-\w+/{launcher}\] mpi-launcher: 2 of 2 worker\(s\) accept SSH", log), log
    assert re.search(
        rf"\[{release}-launcher-0-\w+/{launcher}\] mpi-launcher: running: mpirun --hostfile /etc/mpi/hostfile -np 2 ",
        log,
    )
    hosts = dict(re.findall(r"mpi4py: rank (\d)/2 on (\S+)", log))
    assert hosts == {"0": f"{release}-worker-0", "1": f"{release}-worker-1"}, hosts  # Open MPI's processor names
    assert sorted(re.findall(r"mpi4py: rank (\d) done, allreduce 11\b", log)) == ["0", "1"], log  # (0+5)+(1+5)
    for i in range(2):
        assert re.search(
            rf"\[{release}-worker-{i}-\w+/worker\] mpi-sshd: the launcher finished and released this pod", log
        )


def test_horovod_mpi_horovodrun_trains_the_charts_benchmark_on_two_sshd_workers(real_run, embedded_cluster) -> None:  # type: ignore[no-untyped-def]
    """The chart's PyTorch benchmark under horovodrun (horovod.launcher=horovodrun; the default is mpirun for a
    static run) with Horovod 0.28.1 built from source: horovodrun reads the chart's hostfile and SSH key, starts
    one rank per worker pod through their sshd, and the DistributedOptimizer's allreduce keeps both replicas
    identical."""
    started = time.monotonic()
    first_step: list[float] = []

    def clock(line: str) -> None:
        if "iteration 0:" in line and not first_step:
            first_step.append(time.monotonic() - started)

    result, log = real_run("horovod-mpi", "hvdrun", "--set", "worker=2", "--set", "horovod.launcher=horovodrun",
                           on_line=clock)  # fmt: skip
    assert_mpi_job_succeeded(result, "hvdrun", embedded_cluster)
    assert re.search(
        r"\[hvdrun-launcher-0-\w+/launcher\] mpi-launcher: running: horovodrun -np 2 --hostfile /etc/mpi/hostfile "
        r"--ssh-port 2222 --ssh-identity-file /home/mpi/.ssh/id_ecdsa python /opt/dl-charts/horovod_bench.py",
        log,
    )
    hosts = dict(re.findall(r"horovod_bench: rank (\d)/2 \(local rank 0\) on (\S+)", log))
    assert hosts == {"0": "hvdrun-worker-0", "1": "hvdrun-worker-1"}, hosts  # Horovod's ranks, one per worker pod
    assert re.search(r"images/sec total on 2 rank\(s\): \d", log), log
    checksums = dict(re.findall(r"horovod_bench: rank (\d) final parameters sha256 ([0-9a-f]{64})", log))
    assert sorted(checksums) == ["0", "1"] and checksums["0"] == checksums["1"], checksums
    for i in range(2):
        assert re.search(
            rf"\[hvdrun-worker-{i}-\w+/worker\] mpi-sshd: the launcher finished and released this pod", log
        )
    launcher_end, last_end = pod_times(embedded_cluster.kubeconfig, real_run.namespace, "hvdrun")
    print(
        f"horovod-mpi horovodrun: first step {first_step[0] if first_step else -1:.0f}s after the test's start; "
        f"job end -> last pod exit {last_end - launcher_end:.1f}s; wall {result.seconds:.0f}s"
    )


def test_horovod_mpi_launcher_runs_mpi4py_allreduce_on_two_sshd_workers(real_run, embedded_cluster) -> None:  # type: ignore[no-untyped-def]
    """horovod-mpi's plain mpirun launcher (horovod.launcher=mpirun) with a program of the user's (horovod.command),
    here an mpi4py allreduce: mpirun reads the chart's hostfile and places one rank on each sshd worker."""
    result, log = real_run(
        "horovod-mpi",
        "hvd",
        "--set",
        "worker=2",
        "--set",
        "horovod.launcher=mpirun",
        "--set-json",
        f"horovod.command={mpi4py_command(5, 0.2)}",
        "--set-json",
        'horovod.mpiArgs=["--display-map"]',
    )
    assert_mpi_job_succeeded(result, "hvd", embedded_cluster)
    assert_mpi_ranks(log, "hvd", "launcher")
    assert re.search(r"hvd-worker-0\.hvd\.[\w-]+\.svc", log.split("mpi-launcher: running:")[1])  # --display-map
    launcher_end, last_end = pod_times(embedded_cluster.kubeconfig, real_run.namespace, "hvd")
    print(f"horovod-mpi: job end -> last pod exit {last_end - launcher_end:.1f}s; wall {result.seconds:.0f}s")


def test_horovod_worker_deleted_mid_run_the_launcher_runs_again_in_its_pod_on_a_hot_spare_from_the_checkpoint(
    real_run, embedded_cluster: ClusterHandle, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """horovod-mpi (mpi.restartsInPod 3) with a hot spare (mpi.spareWorkers=1) and a checkpoint volume: the launcher
    runs the ranks on the first two of the three workers that accept SSH and keeps the third spare. The pod of the
    second rank's host is deleted once rank 0 reports iteration 2 of 6 (it saves after each). mpirun fails; the
    launcher finds that worker gone and, in the same pod, runs the ranks again on the first host and the spare at
    once (the Job's replacement comes after its back-off and becomes the spare), resuming from the last checkpoint:
    both Jobs complete with one launcher pod and the same parameters on both ranks."""
    iterations = 6
    trigger = re.compile(r"<stdout>:iteration 2: ")
    ranks_on = re.compile(r"mpi-launcher: ranks on: hvdre-worker-(\d+)\S* hvdre-worker-(\d+)\S*; spare\(s\) or not up: "
                          r"hvdre-worker-(\d+)")  # fmt: skip
    rounds: list[tuple[int, ...]] = []
    delete_second_rank, fault = delete_pod_on_line(
        embedded_cluster, real_run, trigger, "hvdre-worker", lambda: rounds[0][1]
    )

    def on_line(line: str) -> None:
        if match := ranks_on.search(line):
            rounds.append(tuple(int(i) for i in match.groups()))
        delete_second_rank(line)
        if "at" in fault and "resumed" not in fault and "horovod_bench: resumed from iteration" in line:
            fault["resumed"] = time.time()

    with checkpoint_claim(embedded_cluster.kubeconfig, tmp_path / "checkpoints") as claim:
        result, log = real_run(
            "horovod-mpi", "hvdre", "--set", "worker=2", "--set", "mpi.spareWorkers=1",
            "--set", f"benchmark.iterations={iterations}", "--set", "benchmark.batchesPerIter=5",
            "--set", "checkpoint.everySteps=5", *CHECKPOINT_ARGS, before=claim, on_line=on_line,
        )  # fmt: skip
    assert "pod" in fault, fault
    assert result.ok, result.problem
    assert result.jobs == {"hvdre-launcher": "Complete", "hvdre-worker": "Complete"}
    launchers = [p for p in result.pods if p.name.startswith("hvdre-launcher-")]
    assert len(launchers) == 1, result.pods  # run again in its pod: no second launcher pod, no Job back-off
    assert len(rounds) == 2, log[-3000:]
    (first, deleted, spare), again = rounds
    assert sorted(rounds[0]) == [0, 1, 2], rounds
    assert fault["pod"].startswith(f"hvdre-worker-{deleted}-"), fault
    assert sorted(again[:2]) == sorted([first, spare]) and again[2] == deleted, rounds  # the spare took its place
    assert "after worker(s) were replaced or lost" in log, log[-3000:]
    assert "running the command again in this pod (1 of 3, mpi.restartsInPod)" in log, log[-3000:]
    resumed = [int(n) for n in re.findall(r"horovod_bench: resumed from iteration (\d+)", log)]
    assert resumed and resumed[-1] >= 1, log[-3000:]  # saved after iteration 1 at least
    assert re.search(rf"<stdout>:iteration {iterations - 1}: ", log), log[-3000:]
    checksums = dict(re.findall(r"horovod_bench: rank (\d) final parameters sha256 ([0-9a-f]{64})", log))
    assert len(checksums) == 2 and len(set(checksums.values())) == 1, checksums
    assert "releasing them and the spare(s)" in log
    print(
        f"horovod-mpi: worker {deleted} (rank 1's host) deleted at iteration 2; the ranks resumed on spare worker "
        f"{spare} from iteration {resumed[-1]} {fault['resumed'] - fault['at']:.1f}s later, in the same launcher pod"
    )


def test_horovod_mpi_killed_worker_fails_the_launcher_and_frees_every_pod(real_run, embedded_cluster) -> None:  # type: ignore[no-untyped-def]
    """A worker pod deleted while Horovod trains (the chart's benchmark under mpirun) with no run again in the
    launcher's pod (mpi.restartsInPod=0) and no launcher retry (backoffLimitPerIndex=0): mpirun loses a rank, the
    launcher fails, the Job fails, and every sshd pod stops (the survivor and the worker's replacement, through
    the watchdog: 6 checks 5 s apart here)."""
    kill_worker_at_iteration_2, killed = delete_pod_on_line(
        embedded_cluster, real_run, re.compile("iteration 2:"), "hvdkill-worker", 1
    )
    result, log = real_run(
        "horovod-mpi",
        "hvdkill",
        "--set",
        "worker=2",
        "--set",
        "benchmark.iterations=1000",
        "--set",
        "roles.launcher.job.backoffLimitPerIndex=0",
        "--set",
        "mpi.restartsInPod=0",
        "--set",
        "watchdog.intervalSeconds=5",
        "--set",
        "watchdog.missedChecks=6",
        on_line=kill_worker_at_iteration_2,
    )
    assert killed, "the training never reached its iteration 2"
    failed_after = time.time() - killed["at"]
    assert not result.ok
    assert result.jobs["hvdkill-launcher"] == "Failed", result.jobs
    assert "the command failed with exit status" in log  # the chart's launcher says why it failed
    assert re.search(
        r"mpi-sshd: terminated \(SIGTERM\): exiting 143 \(a worker deleted from outside fails", log
    )  # the killed worker is a failed one
    # no sshd pod is left: the survivor and the worker's replacement stop through their watchdog (30 s here)
    started = time.monotonic()
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        while time.monotonic() - started < 300:
            pods = kube.items(f"/api/v1/namespaces/{real_run.namespace}/pods", "app.kubernetes.io/instance=hvdkill")
            if all(p["status"].get("phase") in ("Succeeded", "Failed") for p in pods):
                break
            time.sleep(2)
        phases = {p["metadata"]["name"]: p["status"].get("phase") for p in pods}
        assert all(phase in ("Succeeded", "Failed") for phase in phases.values()), phases
        # the Job replaced the killed worker (it failed: 143); the replacement never saw the failed launcher and
        # stopped through its watchdog, counting from its start
        replacement = [n for n in phases if n.startswith("hvdkill-worker-1-") and n != killed["pod"]]
        assert len(replacement) == 1, phases
        path = f"/api/v1/namespaces/{real_run.namespace}/pods/{replacement[0]}/log"
        replaced_log = kube.request("GET", path, query={"container": "worker"}).doc
        assert "watchdog: this pod replaces a failed one (failure 1)" in replaced_log, replaced_log
        assert "watchdog: the pods this role serves have finished; stopping" in replaced_log, replaced_log
    launcher_end, last_end = pod_times(embedded_cluster.kubeconfig, real_run.namespace, "hvdkill")
    print(
        f"horovod-mpi fault: the launcher failed {launcher_end - killed['at']:.1f}s after the kill (dlcharts run "
        f"returned after {failed_after:.1f}s); job end -> last pod exit {last_end - launcher_end:.1f}s; {phases}"
    )


def test_cntk_dist_launcher_runs_mpi4py_allreduce_through_cntk_python_command(real_run, embedded_cluster) -> None:  # type: ignore[no-untyped-def]
    """cntk-dist's launcher and workers (root, Pod Security baseline) with an mpi4py program through the chart's
    own values: CNTK itself has no wheel for any current Python (see the chart README)."""
    result, log = real_run(
        "cntk-dist",
        "cntk",
        "--set",
        "worker=2",
        "--set",
        "cntk.activate=",
        "--set-json",
        f"cntk.python.command={mpi4py_command(5, 0.2)}",
        "--set-json",
        'cntk.mpirunArgs=["--display-map"]',
    )
    assert_mpi_job_succeeded(result, "cntk", embedded_cluster)
    assert_mpi_ranks(log, "cntk", "launcher")
    assert "--allow-run-as-root" in log.split("mpi-launcher: running:")[1].splitlines()[0]  # root, as CNTK's images
    launcher_end, last_end = pod_times(embedded_cluster.kubeconfig, real_run.namespace, "cntk")
    print(f"cntk-dist: job end -> last pod exit {last_end - launcher_end:.1f}s; wall {result.seconds:.0f}s")


def test_jax_dist_processes_join_the_coordinator_and_train_data_parallel(real_run, embedded_cluster) -> None:  # type: ignore[no-untyped-def]
    result, log = real_run("jax-dist", "jx", "--set", "worker=2")
    assert_workers_succeeded(result, "jx", embedded_cluster)
    for pid in range(2):  # JAX took its process id, count and coordinator from the chart's variables
        assert re.search(
            rf"\[jx-worker-{pid}-\w+/worker\] bench_jax: process {pid}/2 on jx-worker-{pid}, coordinator "
            r"jx-worker-0\.jx\.[\w-]+\.svc:6666, 1 local cpu device\(s\) of 2",
            log,
        ), pid
    assert re.search(r"\[jx-worker-0-\w+/worker\] loss=\d+\.\d+$", log, re.MULTILINE)  # the Katib-style metric line
    checksums = dict(re.findall(r"bench_jax: process (\d) final parameters sha256 ([0-9a-f]{64})", log))
    assert sorted(checksums) == ["0", "1"], log
    assert checksums["0"] == checksums["1"], f"the processes' final parameters differ: {checksums}"


#: a user's own JAX program: every process adds its id into a global sum each step
JAX_SCRIPT = """
import os, sys
import jax, jax.numpy as jnp
from jax.experimental import multihost_utils
env = os.environ
jax.distributed.initialize(num_processes=int(env["JAX_NUM_PROCESSES"]), process_id=int(env["JAX_PROCESS_ID"]))
value = jnp.float32(jax.process_index() + 1)
total = sum(float(multihost_utils.process_allgather(value).sum()) for _ in range(int(sys.argv[1])))
print(f"own-jax: process {jax.process_index()}/{jax.process_count()} total {total:g}", flush=True)
jax.distributed.shutdown()
"""


def test_jax_dist_runs_a_users_own_script(real_run, embedded_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--set-file script=: every worker runs the user's program with defaults.args, wired by the same variables."""
    (tmp_path / "train.py").write_text(JAX_SCRIPT)
    result, log = real_run(
        "jax-dist", "jxown", "--set", "worker=2", "--set-file", f"script={tmp_path / 'train.py'}",
        "--set-json", 'defaults.args=["3"]',
    )  # fmt: skip
    assert_workers_succeeded(result, "jxown", embedded_cluster)
    # (1 + 2) per step, 3 steps: the allgather crossed both pods
    assert sorted(re.findall(r"own-jax: process (\d)/2 total 9\b", log)) == ["0", "1"], log


def test_deepspeed_zero2_trains_a_users_script_and_ds_config_file_on_two_sshd_workers(  # type: ignore[no-untyped-def]
    real_run, embedded_cluster, tmp_path
) -> None:
    """deepspeed-dist with DeepSpeed's own launcher (`deepspeed --launcher openmpi` on the chart's hostfile) and both
    files a user gives with --set-file: the program (here the chart's own benchmark, as a user's script, with its
    arguments in defaults.args) and the ds_config (ZeRO stage 2). DeepSpeed's MPI discovery gives each rank its
    rank on its own worker pod, gloo carries ZeRO's collectives, and both ranks end with the same parameters."""
    script = tmp_path / "train.py"
    script.write_text((CHARTS / "deepspeed-dist" / "files" / "ds_bench.py").read_text())
    ds_config = tmp_path / "ds_config.json"
    ds_config.write_text(
        json.dumps(
            {
                "train_micro_batch_size_per_gpu": 8,
                "optimizer": {"type": "Adam", "params": {"lr": 0.001, "torch_adam": True}},
                "zero_optimization": {"stage": 2},
            }
        )
    )
    result, log = real_run(
        "deepspeed-dist",
        "ds",
        "--set",
        "worker=2",
        "--set-file",
        f"script={script}",
        "--set-file",
        f"dsConfig={ds_config}",
        "--set-json",
        'defaults.args=["--hidden","64","--layers","2","--warmup-steps","1","--steps","10"]',
    )
    assert_mpi_job_succeeded(result, "ds", embedded_cluster)
    line = log.split("mpi-launcher: running:")[1].splitlines()[0]
    assert line.startswith(" deepspeed --hostfile /etc/mpi/hostfile --launcher openmpi "), line
    assert line.endswith(
        "--no_python python /opt/dl-charts/script.py --hidden 64 --layers 2 --warmup-steps 1 --steps 10 "
        "--deepspeed_config /opt/dl-charts/ds_config.json"
    ), line
    hosts = dict(re.findall(r"ds-bench: world size 2, rank (\d), local rank 0, host (\S+), backend gloo", log))
    assert hosts == {"0": "ds-worker-0", "1": "ds-worker-1"}, hosts  # one rank on each worker pod
    assert "ds-bench: ZeRO stage 2, micro batch 8 per rank, 2 ranks" in log
    checksums = dict(re.findall(r"ds-bench: rank (\d) on \S+ final parameters checksum ([0-9a-f]{16})", log))
    assert sorted(checksums) == ["0", "1"] and checksums["0"] == checksums["1"], checksums
    assert re.search(r"^\S+ loss=\d+\.\d+$", log, re.M) and re.search(r"samples_per_second=\d", log), log
    # the launcher's run marker reached both workers before the command and was still there after it (dl-common
    # 0.4.1: Open MPI 5's prterun can exit 0 after losing a worker; tests/fast/charts/test_chart_scripts.py has
    # the lost and replaced cases)
    assert "mpi-launcher: the command succeeded and all 2 worker(s) ran it to the end; releasing them" in log
    launcher_end, last_end = pod_times(embedded_cluster.kubeconfig, real_run.namespace, "ds")
    print(f"deepspeed-dist: job end -> last pod exit {last_end - launcher_end:.1f}s; wall {result.seconds:.0f}s")
