"""`dlcharts sweep` for real, as users type it (the installed console script), on the session's embedded cluster:
a grid over the learning rate of bench/frameworks' LeNet-5 on pytorch-dist, one trial at a time. The first trial
learns; the second, with a learning rate too small to learn, is stopped by the median rule; the third is
interrupted (SIGINT, as Ctrl-C) while it runs, which leaves nothing of it in the cluster, and `--resume` runs it
again without rerunning the first two.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from dlcharts.cluster import ClusterHandle
from dlcharts.install import Kube
from dlcharts.install.namespaces import delete_namespace
from tests.support import CHARTS, ROOT

pytestmark = pytest.mark.cluster

DLCHARTS = Path(sys.executable).parent / "dlcharts"
SCRIPT = ROOT / "bench" / "training" / "torch_train.py"


def test_a_sweep_stops_a_hopeless_trial_and_resumes_after_an_interrupt(
    embedded_cluster: ClusterHandle, tmp_path: Path
) -> None:
    namespace = f"sweep-{uuid.uuid4().hex[:6]}"
    spec = {
        "name": "lr",
        "objective": {"metric": "loss", "type": "minimize"},
        "algorithm": "grid",
        "parallelTrials": 1,
        "maxTrials": 3,
        "maxFailedTrials": 1,
        "earlyStopping": {"rule": "median", "minTrials": 1, "startStep": 4},
        "parameters": [{"name": "lr", "type": "categorical", "values": [0.2, 0.00001, 0.25]}],
        "values": {"defaults": {"args": ["--model", "lenet", "--steps", "40", "--log-every", "2", "--warmup", "0",
                                         "--pause", "0.25", "--lr=${lr}"]}},
    }  # fmt: skip
    file = tmp_path / "lr.yaml"
    file.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    argv = [str(DLCHARTS), "sweep", str(CHARTS / "pytorch-dist"), "--sweep", str(file), "--out", str(out),
            "-n", namespace, "--cluster-name", embedded_cluster.name, "--set", "worker=1",
            "--set-file", f"script={SCRIPT}"]  # fmt: skip
    try:
        lines: list[str] = []
        # SIGINT as a terminal delivers it: a job started in the background (CI's sessions are) ignores SIGINT, and
        # its children inherit that; a foreground command in a terminal has the default disposition
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as proc:  # fmt: skip
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line.rstrip())
                if line.startswith("trial 2 Running"):
                    time.sleep(8)  # its pod starts
                    proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=300)
        print("\n".join(lines))
        assert code == 130, lines
        assert any(line.startswith("trial 1 EarlyStopped") and "median rule" in line for line in lines), lines
        assert any(line.startswith("resume: dlcharts sweep") for line in lines), lines
        with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
            left = [p["metadata"]["name"] for p in kube.items(f"/api/v1/namespaces/{namespace}/pods")]
            jobs = [j["metadata"]["name"] for j in kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs")]
        assert left == [] and jobs == [], f"the interrupted trial left pods {left} and Jobs {jobs}"
        before = json.loads((out / "state.json").read_text())["trials"]
        assert [t["state"] for t in before] == ["Succeeded", "EarlyStopped", "Interrupted"]
        learned = before[0]["observations"]["loss"]
        assert learned[-1][0] == 40 and learned[-1][1] < learned[0][1], learned  # step 40's loss below step 2's

        proc2 = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=300, cwd=ROOT)
        print(proc2.stdout, proc2.stderr)
        assert proc2.returncode == 0, proc2.stderr
        after = json.loads((out / "state.json").read_text())["trials"]
        assert [t["state"] for t in after] == ["Succeeded", "EarlyStopped", "Succeeded"]
        assert [t["started"] for t in after[:2]] == [t["started"] for t in before[:2]]  # not run again
        best = min((after[0], after[2]), key=lambda t: t["value"])
        assert f"best: trial {best['index']} loss=" in proc2.stdout
        assert "reproduce: dlcharts run" in proc2.stdout and (out / "best-values.yaml").is_file()
        assert len((out / "trials.csv").read_text().splitlines()) == 4
    finally:
        with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
            delete_namespace(kube, namespace)
