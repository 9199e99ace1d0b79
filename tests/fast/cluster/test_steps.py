"""The embedded cluster's start steps (dlcharts.cluster.steps), in order, without a cluster: each step's start, stop
and clean-up replaced by a recorder."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts.cluster import ClusterConfig, EmbeddedCluster
from dlcharts.cluster.steps import StepContext, addons, control_plane, fake_nodes, real_nodes


def test_steps_start_in_order_and_stop_then_clean_up_in_reverse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    for module in (control_plane, fake_nodes, real_nodes, addons):
        for phase in ("start", "stop", "clean_up"):
            if hasattr(module, phase):
                name = module.__name__.rsplit(".", 1)[1]
                monkeypatch.setattr(module, phase, lambda ctx, what=f"{phase} {name}": calls.append(what))
    cluster = EmbeddedCluster(ClusterConfig(name="steps", cache=tmp_path, real_node=False))
    steps = cluster.steps(StepContext(cluster.config, cluster.layout))
    assert [step.name for step in steps] == ["control-plane", "fake-nodes", "real-nodes", "add-ons"]
    for step in steps:
        step.start()
    assert calls == ["start control_plane", "start fake_nodes", "start real_nodes", "start addons"]
    calls.clear()
    cluster.stop()  # nothing on disk: nothing to stop
    assert calls == []
    cluster.state_dir.mkdir(parents=True)
    cluster.stop()
    assert calls == ["stop addons", "stop real_nodes", "stop control_plane", "clean_up control_plane"]
