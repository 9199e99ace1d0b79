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


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("checkpoint.volume.emptyDir.medium=Memory", "at '/checkpoint/volume': additional properties 'emptyDir'"),
        ("checkpoint.mountPath=checkpoints", "at '/checkpoint/mountPath'"),
        ("checkpoint.everySteps=0", "at '/checkpoint/everySteps'"),
    ],
)
def test_a_checkpoint_value_that_cannot_work_is_refused_naming_it(value, expected, render):
    stderr = refusal(render, "pytorch-dist", set=[*CLAIM, value])
    assert expected in stderr, stderr
