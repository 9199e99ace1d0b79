"""`dlcharts sweep CHART --sweep FILE [helm args]`: a hyperparameter sweep of a training chart's job, each trial a
real release of the chart, with nothing installed in the cluster for it (no Katib, no Trainer).

The sweep file holds what a Katib Experiment holds, in its own words::

    objective:
      metric: loss              # a name=value the program prints (Katib's stdout format)
      type: minimize            # or maximize
      goal: 0.05                # optional: a trial reaching it ends the sweep
    algorithm: random           # grid, random, or tpe (optuna's TPESampler: pip install 'dlcharts[sweep]')
    seed: 1
    parallelTrials: 3           # at most this many releases at once
    maxTrials: 12
    maxFailedTrials: 3          # this many failed trials fail the sweep
    trialTimeoutSeconds: 1800
    earlyStopping: {rule: median, minTrials: 3, startStep: 4}      # optional
    parameters:
      - {name: lr, type: double, min: 0.001, max: 0.3, log: true}
      - {name: batch, type: categorical, values: [32, 64, 128]}
      - {name: depth, type: int, min: 1, max: 4}
    values:                     # the trial template: the chart's values, each ${name} replaced by the trial's value
      defaults:
        args: [--lr, "${lr}", --batch-size, "${batch}"]

**How parameters reach the program: through the chart's values, only.** A string that is exactly ``${name}``
becomes the parameter's value with its type (``benchmark.batchSize: "${batch}"`` is a number); inside a longer
string it is written out (``"--lr=${lr}"``). So the chart's schema and checks judge every value a trial would
get: before the first trial, each parameter's extremes (min and max, every categorical value) are rendered, and a
refusal names the parameter. To pass an environment variable, write it in ``values`` (``defaults.env: [{name:
LR, value: "${lr}"}]``).

**Metrics** are read from the trial's logs, Katib's way: every ``name=value`` on a line (``step=40 loss=0.31``).
A trial's observations of a metric come from one pod: the first that printed it. A line's ``step=N``
gives the observations' step; without one, the count of earlier observations does. The trial's value is its
last observation. A first trial that ends without printing the objective ends the sweep with the names it did
print: a misspelt metric is found after one trial, not after a sweep of empty results.

**Early stopping** (``earlyStopping.rule: median``, Katib's median stopping rule): a running trial whose best value
by step k is worse than the median of the completed trials' running averages up to step k is stopped (its release
uninstalled), once ``minTrials`` trials have completed and from step ``startStep`` on.

**Concurrency**: at most ``parallelTrials`` trials run at once; this process starts them. Each trial is the
release ``<sweep name>-<index>`` in the namespace (``-n``), installed with the same CPU values as `dlcharts run`,
then ``values`` with the trial's parameters, then the helm arguments. A trial succeeds when every Job of its
release completes; a failed trial (a Job Failed, a refused install, ``trialTimeoutSeconds``) counts against
``maxFailedTrials``. Every release is uninstalled when its trial ends, unless ``--keep``.

**Results**, in ``--out`` (default ``sweep-<name>``): ``state.json`` (the sweep and every trial: parameters,
state, observations, times), ``trials.csv``, ``trials/<index>.log`` (each trial's logs), ``best-values.yaml`` and
``<metric>.png`` (the metric of every trial over steps; with matplotlib). At the end: the best trial, its
parameters and the command that reproduces it.

**Resumable**: Ctrl-C (or SIGTERM/SIGHUP) uninstalls the running trials' releases and keeps ``state.json``;
``--resume`` goes on from it: finished trials stay, interrupted ones run again with their parameters.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dlcharts.helm import Helm
from dlcharts.jobs.sweep.report import LiveTable, plot, table, write_results
from dlcharts.jobs.sweep.runner import Releases, Runner, TrialRelease, Write
from dlcharts.jobs.sweep.spec import (
    ALGORITHMS,
    PLACEHOLDER,
    TOP_KEYS,
    TYPES,
    EarlyStopping,
    Parameter,
    Sweep,
    SweepError,
    check_parameters,
    load,
    placeholder_paths,
    substitute,
    value_text,
)
from dlcharts.jobs.sweep.suggestion import Suggester
from dlcharts.jobs.sweep.trials import (
    DONE_STATES,
    LOG_LINE,
    METRIC,
    MetricReader,
    SweepRecord,
    Trial,
    median_stop,
    running_average_until,
)

__all__ = [
    "ALGORITHMS",
    "DONE_STATES",
    "LOG_LINE",
    "METRIC",
    "PLACEHOLDER",
    "TOP_KEYS",
    "TYPES",
    "EarlyStopping",
    "LiveTable",
    "MetricReader",
    "Parameter",
    "Releases",
    "Runner",
    "Suggester",
    "Sweep",
    "SweepError",
    "SweepRecord",
    "Trial",
    "TrialRelease",
    "Write",
    "check_parameters",
    "load",
    "median_stop",
    "placeholder_paths",
    "plot",
    "running_average_until",
    "substitute",
    "sweep_main",
    "table",
    "value_text",
    "write_results",
]


def sweep_main(
    chart: Path,
    sweep_file: Path,
    helm_args: Sequence[str],
    *,
    helm: Helm,
    namespace: str,
    out: Path | None = None,
    resume: bool = False,
    keep: bool = False,
    kubeconfig: Path | None = None,
    registry: str | None = None,
    cluster_name: str = "dlcharts",
    write: Write = print,
    show: Callable[[Runner], None] | None = None,
) -> int:
    """`dlcharts sweep`: see the module's docstring. Returns the exit code."""
    from dlcharts.jobs import run

    sweep = load(sweep_file)
    name = run.chart_name(chart)
    out = out or Path(f"sweep-{sweep.name}")
    if (out / "state.json").exists() and not resume:
        raise SweepError(f"{out / 'state.json'} exists: a sweep ran there. Go on with it: --resume; or start "
                         f"afresh with another --out (or delete {out})")  # fmt: skip
    if resume and not (out / "state.json").exists():
        raise SweepError(f"--resume: no {out / 'state.json'} to resume (name its folder with --out)")
    Suggester(sweep)  # tpe without optuna: before anything starts
    check_parameters(sweep, chart, helm, run.cpu_values(name), helm_args)
    write(f"sweep {sweep.name}: {sweep.algorithm}, {len(sweep.parameters)} parameters, at most {sweep.max_trials} "
          f"trials, {sweep.parallel} at once; every extreme of every parameter renders")  # fmt: skip
    live = show or LiveTable()
    previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        options = run.RunOptions(
            helm=helm, release_name=f"{sweep.name}-0", namespace=namespace, kubeconfig=kubeconfig,
            registry=registry, cluster_name=cluster_name,
        )  # fmt: skip
        with run.session(chart, helm_args, options, write) as ready:
            runner = Runner(sweep, ready, helm_args, out, keep=keep, resume=resume, write=write)
            code = runner.run(live)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not getattr(live, "tty", False):
        write(table(runner))
    for line in write_results(runner, chart, helm_args):
        write(line)
    if code == 130:
        write(
            f"resume: dlcharts sweep {chart} --sweep {sweep_file} --out {out} --resume {' '.join(helm_args)}".rstrip()
        )
    elif runner.verdict.startswith("error"):
        return 2
    return code


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt
