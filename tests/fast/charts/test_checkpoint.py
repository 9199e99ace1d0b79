"""The checkpoint contract of every training chart (dl-common.checkpoint.*): with checkpoint.volume set, every
role's main container mounts it at checkpoint.mountPath and gets DL_CHECKPOINT_DIR (one folder per release) and
DL_CHECKPOINT_EVERY_STEPS; without it nothing of it renders. A volume source that cannot keep a checkpoint is
refused by the schema, naming the value. Resuming for real: tests/cluster/training/test_node_faults.py."""

from __future__ import annotations

import pytest

from tests.support import CHARTS
from tests.support.charts import TRAINING, refusal, training_jobs

CLAIM = ["checkpoint.volume.persistentVolumeClaim.claimName=ckpt", "checkpoint.everySteps=7"]


@pytest.mark.parametrize("chart", TRAINING)
def test_every_role_mounts_the_checkpoint_volume_and_gets_the_contract(chart, render):
    rendered = render(CHARTS / chart, set=[*CLAIM, "checkpoint.mountPath=/data/ckpt"], release="train")
    jobs = training_jobs(rendered)
    assert jobs
    for job in jobs:
        spec = job.body["spec"]["template"]["spec"]
        assert {"name": "checkpoint", "persistentVolumeClaim": {"claimName": "ckpt"}} in spec["volumes"], job.name
        main = spec["containers"][0]
        assert {"name": "checkpoint", "mountPath": "/data/ckpt"} in main["volumeMounts"], job.name
        env = {e["name"]: e.get("value") for e in main["env"]}
        assert env["DL_CHECKPOINT_DIR"] == "/data/ckpt/train" and env["DL_CHECKPOINT_EVERY_STEPS"] == "7", job.name
        others = spec.get("initContainers", []) + spec["containers"][1:]
        assert not any("DL_CHECKPOINT_DIR" in str(c.get("env")) for c in others), job.name  # the program's alone


@pytest.mark.parametrize("chart", TRAINING)
def test_without_a_volume_nothing_of_it_renders(chart, render):
    rendered = render(CHARTS / chart, release="train")
    assert "checkpoint" not in str([job.body for job in training_jobs(rendered)]).lower()


#: (value, what Helm 4 says, what Helm 3 says): both name the value
REFUSED = [
    ("checkpoint.volume.emptyDir.medium=Memory", "at '/checkpoint/volume': additional properties 'emptyDir'",
     "checkpoint.volume: Additional property emptyDir is not allowed"),
    ("checkpoint.mountPath=checkpoints", "at '/checkpoint/mountPath'", "checkpoint.mountPath: Does not match pattern"),
    ("checkpoint.everySteps=0", "at '/checkpoint/everySteps'", "checkpoint.everySteps: Must be greater than or equal"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "helm4", "helm3"), REFUSED)
def test_a_checkpoint_value_that_cannot_work_is_refused_naming_it(value, helm4, helm3, render):
    stderr = refusal(render, "pytorch-dist", set=[*CLAIM, value])
    assert helm4 in stderr or helm3 in stderr, stderr
