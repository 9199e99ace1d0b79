"""`make demo` and `dlcharts run` for real, as users type them (the installed console script), on the session's
embedded cluster: the demo trains tensorflow-dist with four workers on the real node, in a namespace at Pod
Security `restricted`, and a job that fails makes `dlcharts run` exit 1 with the reason.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dlcharts.cluster import ClusterHandle
from dlcharts.helm import find_helm
from dlcharts.install import Kube, Release
from dlcharts.install.state import job_outcome
from dlcharts.jobs import run
from tests.support import CHARTS, ROOT
from tests.support import cluster as cluster_env

pytestmark = pytest.mark.cluster

DLCHARTS = Path(sys.executable).parent / "dlcharts"
CHECKSUM = re.compile(r"^\s*\[(tf-train-worker-\d)-\w+/worker\] bench_tf: final weights sha256 ([0-9a-f]{64})$", re.M)


def dlcharts(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(DLCHARTS), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    print(proc.stdout[-20000:], proc.stderr[-5000:], sep="\n")  # in the report when an assertion fails
    return proc


def test_demo_trains_four_workers_for_real_then_places_gpu_workers(embedded_cluster: ClusterHandle) -> None:
    proc = dlcharts("demo", "--name", embedded_cluster.name)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    rows = re.findall(r"^\s*(tf-train-worker-(\d)-\w+)\s+(\S+)\s+(\S+)\s+(\S+)\s+\d+s$", out, re.M)
    outcomes = sorted((index, node, phase, code) for _, index, node, phase, code in rows)
    assert [row[:2] for row in outcomes] == [(str(i), "real-0") for i in range(4)], out
    assert outcomes[0][2:] == ("Succeeded", "0"), out
    # worker 0's success ends the Job (its success policy); a worker whose pod had not reached Succeeded by
    # then is deleted by the Job controller (the checksums below show that every worker finished training)
    assert all(phase == "Succeeded" and code == "0" or phase == "Deleted" for _, _, phase, code in outcomes), out
    assert re.search(r"jobs: tf-train-worker (Complete|SuccessCriteriaMet)$", out, re.M), out
    assert re.search(r"every pod ended \d+s after the job completed$", out, re.M), out
    losses = {  # every worker logs the globally reduced loss as it trains: the same numbers on all four
        index: re.findall(rf"\[tf-train-worker-{index}-\w+/worker\] bench_tf: step (\d+)/20 loss (\S+)$", out, re.M)
        for index in range(4)
    }
    assert losses[0] and losses[0][-1][0] == "20", out
    assert all(losses[index] == losses[0] for index in losses), losses
    checksums = dict(CHECKSUM.findall(out))
    assert sorted(checksums) == [f"tf-train-worker-{i}" for i in range(4)], out
    assert len(set(checksums.values())) == 1, f"the workers' final weights differ: {checksums}"
    placed = re.findall(r"^\s*tf-train-worker-\d-\w+\s+(gpu-\d)\s+NVIDIA-H100-80GB-HBM3\s+1\s+8$", out, re.M)
    assert len(placed) == 4, out


def test_run_exits_1_with_the_failed_pod_and_its_log(embedded_cluster: ClusterHandle) -> None:
    proc = dlcharts(
        "run", "charts/tensorflow-dist", "--cluster-name", embedded_cluster.name, "--release", "doomed",
        "--namespace", "run-fails", "--set", "worker=1", "--set", "defaults.job.backoffLimitPerIndex=0",
        "--set-json", 'defaults.command=["sh", "-c", "echo failing on purpose; exit 3"]',
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout
    assert re.search(r"^\[doomed-worker-0-\w+/worker\] failing on purpose$", proc.stdout, re.M)
    assert re.search(r"^doomed-worker-0-\w+\s+real-0\s+Failed\s+3\s+\d+s$", proc.stdout, re.M)
    lines = proc.stdout.rstrip().splitlines()
    assert "jobs: doomed-worker Failed" in lines
    # the worker started its program, so the start watch has nothing to say; the run still shows every pod ended
    assert not any("did not start their main container" in line for line in lines), proc.stdout
    assert re.fullmatch(r"every pod of the release ended \d+s after the install began", lines[-2]), proc.stdout
    # the watch, which reaches the API server through the run's relay, does not outlive the run: finished or
    # suspended (the Job controller ends its pod)
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        watch = kube.get("/apis/batch/v1/namespaces/run-fails/jobs/doomed-start-watch")
    assert watch["spec"].get("suspend") or job_outcome(watch), watch["status"]
    assert "job FAILED" in proc.stdout
    assert "release doomed in namespace run-fails failed" in proc.stderr


OWN_SCRIPT = """\
import json, os, socket, sys
task = json.loads(os.environ["TF_CONFIG"])["task"]
print(f"own script: {task['type']} {task['index']} on {socket.gethostname()}, args {sys.argv[1:]}", flush=True)
"""


def assert_own_script_ran(stdout: str, release: str, args: str) -> None:
    """Both workers of ``release`` printed OWN_SCRIPT's line, with their task from TF_CONFIG and ``args``."""
    for index in range(2):
        line = rf"^\[{release}-worker-{index}-\w+/worker\] own script: worker {index} on {release}-worker-{index}, "
        assert re.search(line + re.escape(f"args {args}") + "$", stdout, re.M), (release, index, stdout)


def test_run_users_own_script_without_building_an_image(
    embedded_cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """Both documented ways: `--set-file script=train.py`, and the user's own ConfigMap with defaults.command."""
    train = tmp_path / "train.py"
    train.write_text(OWN_SCRIPT)
    common = ["--cluster-name", embedded_cluster.name, "--set", "worker=2"]
    proc = dlcharts("run", "charts/tensorflow-dist", *common, "--release", "own", "--namespace", "own-script",
                    "--set-file", f"script={train}", "--set-json", 'defaults.args=["--epochs","3"]')  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_own_script_ran(proc.stdout, "own", "['--epochs', '3']")

    kubeconfig = str(embedded_cluster.kubeconfig)  # `namespace`: a fresh one at restricted, for the ConfigMap
    configmap = cluster_env.kubectl(
        kubeconfig, "-n", namespace, "create", "configmap", "my-train", f"--from-file={train}"
    )
    assert configmap.returncode == 0, configmap.stderr
    proc = dlcharts(
        "run", "charts/tensorflow-dist", *common, "--release", "cm", "--namespace", namespace,
        "--set-json", 'defaults.command=["python", "/opt/user/train.py", "--from-configmap"]',
        "--set-json", 'defaults.volumes=[{"name": "user", "configMap": {"name": "my-train"}}]',
        "--set-json", 'defaults.volumeMounts=[{"name": "user", "mountPath": "/opt/user", "readOnly": true}]',
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_own_script_ran(proc.stdout, "cm", "['--from-configmap']")


def _kubeconfig_of(admin: Path, namespace: str, account: str, cluster_role: str, out: Path) -> Path:
    """A kubeconfig for a new service account ``account`` bound, in ``namespace`` only, to ``cluster_role``."""
    for args in (("create", "serviceaccount", account),
                 ("create", "rolebinding", account, f"--clusterrole={cluster_role}",
                  f"--serviceaccount={namespace}:{account}")):  # fmt: skip
        done = cluster_env.kubectl(admin, "-n", namespace, *args)
        assert done.returncode == 0, done.stderr
    token = cluster_env.kubectl(admin, "-n", namespace, "create", "token", account, "--duration=10m")
    assert token.returncode == 0, token.stderr
    config = yaml.safe_load(cluster_env.kubectl(admin, "config", "view", "--raw", "--minify", "--flatten").stdout)
    config["users"] = [{"name": account, "user": {"token": token.stdout.strip()}}]
    config["contexts"][0]["context"]["user"] = account
    out.write_text(yaml.safe_dump(config))
    return out


def test_run_as_an_editor_refuses_before_installing_and_names_the_switch(
    embedded_cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """Someone bound to Kubernetes' 'edit' ClusterRole in a namespace may not create the start watch's Role and
    RoleBinding: `dlcharts run` (asking the API server with a SelfSubjectAccessReview) refuses before Helm creates
    anything, naming --set startWatch.enabled=false; with that switch, or as 'admin' there, the check passes."""
    admin = Path(embedded_cluster.kubeconfig)
    editor = _kubeconfig_of(admin, namespace, "editor", "edit", tmp_path / "editor")
    owner = _kubeconfig_of(admin, namespace, "owner", "admin", tmp_path / "owner")
    proc = dlcharts("run", "charts/tensorflow-dist", "--kubeconfig", str(editor), "--namespace", namespace,
                    "--release", "rights", "--set", "worker=2", timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stdout
    assert f"namespace {namespace}: you may not create roles.rbac.authorization.k8s.io or rolebindings." in proc.stderr
    assert "--set startWatch.enabled=false" in proc.stderr
    with Kube.from_kubeconfig(admin) as kube:  # nothing was created: no release record, no object of the chart
        for path in ("/api/v1/namespaces/{}/secrets", "/apis/batch/v1/namespaces/{}/jobs",
                     "/api/v1/namespaces/{}/configmaps", "/api/v1/namespaces/{}/services"):  # fmt: skip
            assert kube.items(path.format(namespace), label_selector="app.kubernetes.io/instance=rights") == []
        assert kube.items(f"/api/v1/namespaces/{namespace}/secrets", label_selector="owner=helm") == []
    values = run.cpu_values("tensorflow-dist", real_node=False)
    chart = CHARTS / "tensorflow-dist"
    for kubeconfig, args in ((editor, ("--set", "startWatch.enabled=false")), (owner, ())):
        with Kube.from_kubeconfig(kubeconfig) as kube:
            release = Release(find_helm(), kubeconfig, "rights", namespace)
            run.check_start_watch_rights(kube, release, chart, values, args)  # no error
