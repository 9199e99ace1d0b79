"""`dlcharts sweep` without a cluster: the sweep file and its refusals, the algorithms, the metrics read from logs,
the median stopping rule, the schema check of every parameter before a trial, the state a resume starts from, the
results (tests/cluster/cli/test_sweep.py runs sweeps for real)."""

from __future__ import annotations

import io
import json
import math
import threading
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from dlcharts.cli import main
from dlcharts.helm import find_helm
from dlcharts.jobs import run, sweep
from tests.support import CHARTS, ROOT

LENET = ROOT / "bench" / "sweeps" / "lenet.yaml"


def write(tmp_path: Path, spec: dict[str, Any], name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec))
    return path


def spec(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "t",
        "objective": {"metric": "loss", "type": "minimize"},
        "algorithm": "random",
        "maxTrials": 4,
        "parameters": [
            {"name": "lr", "type": "double", "min": 0.001, "max": 0.1, "log": True},
            {"name": "batch", "type": "categorical", "values": [16, 32]},
        ],
        "values": {"defaults": {"args": ["--lr=${lr}"]}, "benchmark": {"batchSize": "${batch}"}},
    }
    base.update(changes)
    return base


def test_the_talks_experiment_file_loads() -> None:
    lenet = sweep.load(LENET)
    assert (lenet.parallel, lenet.max_trials, lenet.max_failed) == (3, 12, 3)
    assert [p.name for p in lenet.parameters] == ["lr", "batch"] and lenet.parameters[0].log
    assert lenet.early_stopping == sweep.EarlyStopping(min_trials=3, start_step=20)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"paralelTrials": 2}, "unknown key 'paralelTrials'"),
        ({"algorithm": "bayes"}, "algorithm is 'bayes'; one of grid, random, tpe"),
        ({"objective": {"metric": "loss", "type": "lowest"}}, "objective.type is 'lowest'; minimize or maximize"),
        ({"objective": {"type": "minimize"}}, "objective needs a metric"),
        ({"maxTrials": 0}, "maxTrials is 0: it must be a whole number above 0"),
        ({"parameters": [{"name": "lr", "type": "float", "min": 0, "max": 1}]}, "type is 'float'"),
        ({"parameters": [{"name": "lr", "type": "double", "min": 1, "max": 0.1}]}, "min (1) must be below max"),
        ({"parameters": [{"name": "lr", "type": "double", "min": 0, "max": 1, "log": True}]}, "needs min above 0"),
        (
            {"parameters": [{"name": "lr", "type": "double", "min": 0.1, "max": 1, "values": [1]}]},
            "unknown key 'values' for type double",
        ),
        ({"parameters": [{"name": "batch", "type": "categorical", "values": []}]}, "values must be a list"),
        ({"values": {"x": "${lr}"}}, "parameter batch reaches no value"),
        ({"values": {"x": "${lr} ${batch} ${depth}"}}, "values use ${depth}, which is no parameter"),
        ({"name": "My_Sweep"}, "must be a DNS label"),
        ({"earlyStopping": {"rule": "truncation"}}, "the rule is median"),
    ],
)
def test_a_bad_sweep_file_is_refused_naming_the_key(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(sweep.SweepError, match=None) as caught:
        sweep.load(write(tmp_path, spec(**changes)))
    assert message in str(caught.value)


def test_a_missing_sweep_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(sweep.SweepError, match="no such file"):
        sweep.load(tmp_path / "nope.yaml")


def test_substitution_keeps_a_whole_placeholders_type_and_writes_out_a_partial_one() -> None:
    values = {"a": "${lr}", "b": ["--lr=${lr}", "${batch}"], "c": {"d": "x${batch}y"}, "e": 3}
    assert sweep.substitute(values, {"lr": 0.0123456789, "batch": 32}) == {
        "a": 0.0123456789, "b": ["--lr=0.0123457", 32], "c": {"d": "x32y"}, "e": 3,
    }  # fmt: skip


def test_grid_enumerates_every_combination_once_and_caps_max_trials(tmp_path: Path) -> None:
    grid = spec(algorithm="grid", maxTrials=50, parameters=[
        {"name": "lr", "type": "double", "min": 0.001, "max": 0.1, "log": True, "step": 10},
        {"name": "batch", "type": "categorical", "values": [16, 32]},
    ])  # fmt: skip
    loaded = sweep.load(write(tmp_path, grid))
    assert loaded.max_trials == 6
    suggester = sweep.Suggester(loaded)
    picks = [suggester.suggest(i) for i in range(6)]
    assert {(round(p["lr"], 6), p["batch"]) for p in picks} == {(lr, b) for lr in (0.001, 0.01, 0.1) for b in (16, 32)}


def test_grid_of_a_double_range_without_step_is_refused(tmp_path: Path) -> None:
    with pytest.raises(sweep.SweepError, match="a double range needs `step`"):
        sweep.load(write(tmp_path, spec(algorithm="grid")))


def test_random_search_is_reproducible_per_trial_and_stays_in_range(tmp_path: Path) -> None:
    loaded = sweep.load(write(tmp_path, spec(seed=7, parameters=[
        {"name": "lr", "type": "double", "min": 0.001, "max": 0.1, "log": True},
        {"name": "batch", "type": "int", "min": 8, "max": 12},
    ], values={"x": "${lr} ${batch}"})))  # fmt: skip
    first = [sweep.Suggester(loaded).suggest(i) for i in range(200)]
    assert first[5] == sweep.Suggester(loaded).suggest(5)  # trial 5's parameters do not depend on trials 0-4
    lrs = [p["lr"] for p in first]
    assert all(0.001 <= lr <= 0.1 for lr in lrs) and all(isinstance(p["batch"], int) and 8 <= p["batch"] <= 12
                                                          for p in first)  # fmt: skip
    below = sum(1 for lr in lrs if lr < 0.01)  # log-uniform: half the draws below the geometric middle
    assert 70 < below < 130, below
    assert math.isclose(sum(math.log(lr) for lr in lrs) / len(lrs), math.log(0.01), rel_tol=0.1)


def test_tpe_asks_within_the_space_and_learns_from_what_it_is_told(tmp_path: Path) -> None:
    loaded = sweep.load(write(tmp_path, spec(algorithm="tpe", maxTrials=30, seed=1)))
    suggester = sweep.Suggester(loaded)
    for index in range(30):
        params = suggester.suggest(index)
        assert 0.001 <= params["lr"] <= 0.1 and params["batch"] in (16, 32)
        trial = sweep.Trial(index, params, f"t-{index}", state="Succeeded", metric="loss")
        trial.observations["loss"] = [(1.0, abs(math.log10(params["lr"]) + 2))]  # best at lr = 0.01
        suggester.tell(trial)
    best = suggester._study.best_params
    assert 0.003 < best["lr"] < 0.03


def test_metrics_come_from_katib_style_lines_of_the_first_pod_that_prints_them() -> None:
    trial = sweep.Trial(0, {}, "t-0", state="Running", metric="loss")
    reader = sweep.MetricReader(trial, threading.Lock(), io.StringIO())
    for line in [
        "[t-0-worker-0-abc/worker] step=5 loss=2.25 lr=0.1",
        "[t-0-worker-1-def/worker] step=5 loss=9.0",  # another pod: its loss is not the trial's
        "[t-0-worker-0-abc/worker] loss=1.5e-1 accuracy=0.9",  # no step: the count of observations
        '[t-0-worker-0-abc/worker] fwbench {"loss": 3}',  # JSON is no name=value
        "not a pod line loss=7",
        "[t-0-worker-0-abc/worker] version=2.6.0 tokens=abc",  # 2.6.0 is no number; abc neither
    ]:
        reader(line)
    assert trial.observations["loss"] == [(5.0, 2.25), (2.0, 0.15)]
    assert trial.observations["lr"] == [(5.0, 0.1)] and trial.observations["accuracy"] == [(1.0, 0.9)]
    assert "version" not in trial.observations and "tokens" not in trial.observations
    assert trial.value == 0.15
    trial.state = "EarlyStopped"  # a stopped trial's pods print on until they are gone: that does not count
    reader("[t-0-worker-0-abc/worker] step=60 loss=0.01")
    assert trial.value == 0.15


def _trial(index: int, losses: list[float], state: str = "Succeeded") -> sweep.Trial:
    trial = sweep.Trial(index, {}, f"t-{index}", state=state, metric="loss")
    trial.observations["loss"] = [(float(step), loss) for step, loss in enumerate(losses, start=1)]
    return trial


def test_the_median_rule_stops_a_trial_worse_than_the_completed_ones_median(tmp_path: Path) -> None:
    loaded = sweep.load(write(tmp_path, spec(earlyStopping={"rule": "median", "minTrials": 2, "startStep": 3})))
    done = [_trial(0, [2.0, 1.0, 0.5, 0.2]), _trial(1, [2.0, 1.2, 0.8, 0.4])]
    slow = _trial(2, [2.3, 2.3, 2.2], state="Running")
    assert "worse than the median" in sweep.median_stop(loaded, slow, done)
    assert sweep.median_stop(loaded, _trial(3, [2.3, 2.3], state="Running"), done) == ""  # before startStep
    assert sweep.median_stop(loaded, slow, done[:1]) == ""  # fewer completed trials than minTrials
    assert sweep.median_stop(loaded, _trial(4, [2.0, 0.9, 0.4], state="Running"), done) == ""  # better
    without = sweep.load(write(tmp_path, spec(), "plain.yaml"))
    assert sweep.median_stop(without, slow, done) == ""


def test_a_parameter_the_chart_refuses_is_named_before_any_trial() -> None:
    helm = find_helm()
    bad = sweep.load(LENET)
    bad = type(bad)(
        **{**bad.__dict__, "values": {"benchmark": {"batchSize": "${batch}"}, "defaults": {"args": ["--lr=${lr}"]}}}
    )
    sweep.check_parameters(bad, CHARTS / "pytorch-dist", helm, run.cpu_values("pytorch-dist"), [])  # 16..128: ok
    typed = type(bad)(**{**bad.__dict__, "values": {"defaults": {"args": ["--lr", "${lr}", "--batch-size=${batch}"]}}})
    with pytest.raises(sweep.SweepError) as caught:
        sweep.check_parameters(typed, CHARTS / "pytorch-dist", helm, run.cpu_values("pytorch-dist"), [])
    message = str(caught.value)
    assert "parameter lr = 0.001 is refused by" in message and "want string" in message
    assert "e.g. --lr=${lr}" in message and "No trial was started" in message


def test_a_parameter_outside_the_schemas_range_is_refused(tmp_path: Path) -> None:
    loaded = sweep.load(write(tmp_path, spec(parameters=[
        {"name": "lr", "type": "double", "min": 0.001, "max": 0.1},
        {"name": "batch", "type": "int", "min": 0, "max": 64},
    ])))  # fmt: skip
    with pytest.raises(sweep.SweepError, match=r"parameter batch = 0 is refused"):
        sweep.check_parameters(loaded, CHARTS / "pytorch-dist", find_helm(), run.cpu_values("pytorch-dist"), [])


def _runner(tmp_path: Path, loaded: sweep.Sweep, resume: bool = False) -> sweep.Runner:
    ready = types.SimpleNamespace(chart=CHARTS / "pytorch-dist", namespace="ns")  # a Session's fields the state needs
    return sweep.Runner(loaded, ready, ["--set", "worker=2"], tmp_path / "out", resume=resume, write=lambda _: None)


def test_a_resume_keeps_finished_trials_and_reruns_interrupted_ones_with_their_parameters(tmp_path: Path) -> None:
    loaded = sweep.load(write(tmp_path, spec()))
    first = _runner(tmp_path, loaded)
    first.trials = [_trial(0, [1.0]), _trial(1, [2.0], state="EarlyStopped"), _trial(2, [3.0], state="Interrupted")]
    first.trials[2].params = {"lr": 0.05, "batch": 32}
    first.save()
    again = _runner(tmp_path, loaded, resume=True)
    assert [t.state for t in again.trials] == ["Succeeded", "EarlyStopped", "Pending"]
    assert again.trials[0].observations == {"loss": [(1.0, 1.0)]}
    assert again.trials[2].params == {"lr": 0.05, "batch": 32} and again.trials[2].observations == {}
    assert again._next() is again.trials[2]
    changed = sweep.load(write(tmp_path, spec(maxTrials=5)))
    with pytest.raises(sweep.SweepError, match="belongs to another sweep"):
        _runner(tmp_path, changed, resume=True)


def test_results_name_the_best_trial_and_the_command_that_reproduces_it(tmp_path: Path) -> None:
    loaded = sweep.load(write(tmp_path, spec()))
    runner = _runner(tmp_path, loaded)
    runner.trials = [_trial(0, [2.0, 1.0]), _trial(1, [2.0, 0.5]), _trial(2, [3.0], state="Failed")]
    for trial, params in zip(runner.trials, [{"lr": 0.01, "batch": 16}, {"lr": 0.02, "batch": 32}, {}], strict=True):
        trial.params = params or {"lr": 0.1, "batch": 16}
    lines = sweep.write_results(runner, CHARTS / "pytorch-dist", ["--set", "worker=2"])
    assert "best: trial 1 loss=0.5 with lr=0.02, batch=32" in lines
    assert any(line.startswith("reproduce: dlcharts run") and "best-values.yaml --set worker=2" in line
               for line in lines)  # fmt: skip
    best = yaml.safe_load((runner.out / "best-values.yaml").read_text())
    assert best == {"defaults": {"args": ["--lr=0.02"]}, "benchmark": {"batchSize": 32}}
    rows = (runner.out / "trials.csv").read_text().splitlines()
    assert rows[0].startswith("trial,lr,batch,state,loss") and len(rows) == 4
    assert (runner.out / "loss.png").stat().st_size > 1000
    table = sweep.table(runner)
    assert "Failed" in table and table.splitlines()[0].split() == ["TRIAL", "lr", "batch", "STATE", "LOSS", "STEP",
                                                                  "SECONDS"]  # fmt: skip
    runner.save()
    state = json.loads(runner.state_file.read_text())
    assert [t["value"] for t in state["trials"]] == [1.0, 0.5, 3.0]


def test_cli_refuses_a_second_sweep_into_the_same_folder_and_a_resume_of_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = write(tmp_path, spec())
    out = tmp_path / "out"
    assert main(["sweep", str(CHARTS / "pytorch-dist"), "--sweep", str(file), "--out", str(out), "--resume"]) == 2
    assert "--resume: no" in capsys.readouterr().err
    out.mkdir()
    (out / "state.json").write_text("{}")
    assert main(["sweep", str(CHARTS / "pytorch-dist"), "--sweep", str(file), "--out", str(out)]) == 2
    assert "a sweep ran there. Go on with it: --resume" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path), "--sweep", str(file)]) == 2
    assert "is not a chart folder" in capsys.readouterr().err


def test_a_first_trial_without_the_objective_ends_the_sweep_naming_what_it_printed(tmp_path: Path) -> None:
    loaded = sweep.load(write(tmp_path, spec(objective={"metric": "los", "type": "minimize", "goal": 0.1})))
    runner = _runner(tmp_path, loaded)
    first = _trial(0, [2.0, 1.0])
    first.metric = "los"
    runner.trials = [first]
    runner.judge(first)
    assert runner.verdict.startswith("error: trial 0 succeeded but never printed the objective metric 'los'")
    assert "the metrics it printed: loss" in runner.verdict and "trials/0.log" in runner.verdict


def test_max_failed_trials_fails_the_sweep_and_a_goal_reached_ends_it(tmp_path: Path) -> None:
    loaded = sweep.load(write(tmp_path, spec(maxFailedTrials=2, objective={"metric": "loss", "goal": 0.1})))
    runner = _runner(tmp_path, loaded)
    runner.trials = [_trial(0, [1.0]), _trial(1, [], state="Failed")]
    runner.judge(runner.trials[1])
    assert runner.verdict == ""
    runner.trials.append(_trial(2, [], state="Failed"))
    runner.judge(runner.trials[2])
    assert runner.verdict == "failed: 2 trials failed (maxFailedTrials)"
    runner.verdict, runner.trials = "", [_trial(0, [1.0, 0.05])]
    runner.judge(runner.trials[0])
    assert runner.verdict == "goal reached: trial 0 loss=0.05"
