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

import contextlib
import copy
import csv
import json
import queue
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import ClusterError, DLChartsError
from dlcharts.helm import Helm
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
    "Runner",
    "Suggester",
    "Sweep",
    "SweepError",
    "Trial",
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


Write = Callable[[str], None]


# --- the sweep ------------------------------------------------------------------------------------------------


class Runner:
    """Runs the trials of ``sweep`` on a :class:`dlcharts.jobs.run.Session`, keeping ``out/state.json``."""

    def __init__(self, sweep: Sweep, ready: Any, helm_args: Sequence[str], out: Path, *, keep: bool = False,
                 resume: bool = False, write: Write = print, poll: float = 2.0) -> None:  # fmt: skip
        self.sweep, self.ready, self.helm_args, self.out = sweep, ready, list(helm_args), out
        self.keep, self.write, self.poll = keep, write, poll
        self.lock = threading.Lock()
        self.events: queue.Queue[int] = queue.Queue()
        self.stop_requests: dict[int, str] = {}
        self.threads: dict[int, threading.Thread] = {}
        self.suggester = Suggester(sweep)
        self.trials: list[Trial] = []
        self.verdict = ""
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "trials").mkdir(exist_ok=True)
        if resume:
            self._load()
        self._save()

    @property
    def state_file(self) -> Path:
        return self.out / "state.json"

    def _load(self) -> None:
        data = json.loads(self.state_file.read_text())
        if data.get("digest") != self.sweep.digest():
            raise SweepError(f"{self.state_file} belongs to another sweep (its file has changed since): resume with "
                             f"the same sweep file, or start afresh with another --out")  # fmt: skip
        for item in data["trials"]:
            trial = Trial.from_json(item)
            if trial.state not in DONE_STATES:  # interrupted: runs again with the same parameters
                trial = Trial(trial.index, trial.params, trial.release, metric=self.sweep.metric)
            self.trials.append(trial)
            self.suggester.replay(trial)

    def _save(self) -> None:
        with self.lock:
            data = {
                "digest": self.sweep.digest(), "sweep": self.sweep.spec, "chart": str(self.ready.chart),
                "helm_args": self.helm_args, "namespace": self.ready.namespace, "verdict": self.verdict,
                "trials": [t.to_json() for t in self.trials],
            }  # fmt: skip
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.state_file)

    # one trial, in its own thread
    def _run(self, trial: Trial) -> None:
        from dlcharts.install import ChartSource, install, namespace_inventory, uninstall, wait_uninstalled
        from dlcharts.jobs.run import LogStream, job_verdicts, replace_release

        ready, release = self.ready, self.ready.release(trial.release)
        values = substitute(copy.deepcopy(self.sweep.values), trial.params)
        log = (self.out / "trials" / f"{trial.index}.log").open("w")
        reader = MetricReader(trial, self.lock, log)
        try:
            replace_release(ready.kube, release)  # a trial left behind by a killed sweep
            with tempfile.TemporaryDirectory(prefix="dlcharts-sweep-") as tmp:
                cpu, template = Path(tmp) / "cpu-values.yaml", Path(tmp) / "trial-values.yaml"
                cpu.write_text(yaml.safe_dump(ready.values, sort_keys=False))
                template.write_text(yaml.safe_dump(values, sort_keys=False))
                source = ChartSource(ready.chart, values_files=(cpu, template), extra_args=tuple(self.helm_args))
                with LogStream(release.kubeconfig, release.namespace, release.name, reader):
                    install(ready.kube, release, source)
                    state, reason = self._watch(
                        trial, lambda: job_verdicts(ready.kube, release.namespace, release.name)
                    )
            with self.lock:
                trial.state, trial.reason, trial.ended = state, reason, time.time()
        except (ClusterError, DLChartsError) as exc:
            with self.lock:
                trial.state, trial.reason, trial.ended = "Failed", str(exc).splitlines()[0], time.time()
        finally:
            log.close()
            interrupted = self.stop_requests.get(trial.index) == "interrupted"
            with contextlib.suppress(ClusterError, DLChartsError):
                ready.end(release, lambda _line: None)
                if not self.keep or interrupted or trial.state in ("EarlyStopped", "Stopped"):
                    # what the namespace holds now (other trials' releases) is no leftover of this one
                    others = namespace_inventory(ready.kube, release.namespace)
                    uninstall(ready.kube, release)
                    wait_uninstalled(ready.kube, release.namespace, release.name, others, timeout=120)
            self.events.put(trial.index)

    def _watch(self, trial: Trial, jobs: Callable[[], dict[str, str]]) -> tuple[str, str]:
        deadline = time.monotonic() + self.sweep.trial_timeout
        while True:
            states = jobs()  # first: a trial that has ended is judged by its end, not by a late stop
            if states and all(s in ("Complete", "SuccessCriteriaMet") for s in states.values()):
                return "Succeeded", ""
            if failed := sorted(job for job, s in states.items() if s in ("Failed", "FailureTarget")):
                return "Failed", f"Job {failed[0]} failed"
            if (why := self.stop_requests.get(trial.index)) is not None:
                return ("Interrupted" if why == "interrupted" else "EarlyStopped" if why.startswith("median")
                        else "Stopped"), why  # fmt: skip
            if time.monotonic() > deadline:
                return "Failed", f"trialTimeoutSeconds ({self.sweep.trial_timeout:g}) passed"
            time.sleep(self.poll)
            self.events.put(-1)  # let the main loop look at the new observations

    def _start(self, trial: Trial) -> None:
        with self.lock:
            trial.state, trial.started, trial.metric = "Running", time.time(), self.sweep.metric
        thread = threading.Thread(target=self._run, args=(trial,), name=f"trial-{trial.index}", daemon=True)
        self.threads[trial.index] = thread
        thread.start()

    def _next(self) -> Trial | None:
        for trial in self.trials:
            if trial.state == "Pending":
                return trial
        if len(self.trials) >= self.sweep.max_trials:
            return None
        index = len(self.trials)
        trial = Trial(index, self.suggester.suggest(index), f"{self.sweep.name}-{index}", metric=self.sweep.metric)
        self.trials.append(trial)
        return trial

    def _running(self) -> list[Trial]:
        """Trials whose release exists: running, or ended and being uninstalled (parallelTrials bounds both)."""
        return [t for t in self.trials if t.state == "Running" or (t.index in self.threads
                                                                   and self.threads[t.index].is_alive())]  # fmt: skip

    def _stop_all(self, why: str) -> None:
        for trial in self._running():
            self.stop_requests.setdefault(trial.index, why)
        for thread in list(self.threads.values()):
            thread.join()

    def run(self, show: Callable[[Runner], None]) -> int:
        """The sweep to its end: 0 when it found a best trial, 1 when it failed, 130 when interrupted."""
        for trial in self.trials:
            trial.metric = self.sweep.metric
        try:
            code = self._loop(show)
        except KeyboardInterrupt:
            self.write("interrupted: uninstalling the running trials' releases ...")
            with _ignoring_interrupts():
                self._stop_all("interrupted")
                self.verdict = "interrupted"
                self._save()
            return 130
        self._save()
        return code

    def _loop(self, show: Callable[[Runner], None]) -> int:
        finished: set[int] = {t.index for t in self.trials if t.state in DONE_STATES}
        while True:
            stopping = bool(self.verdict)
            while not stopping and len(self._running()) < self.sweep.parallel and (trial := self._next()):
                self._start(trial)
                show(self)
            if not self._running() and (stopping or self._next() is None):
                break
            try:
                index = self.events.get(timeout=self.poll)
            except queue.Empty:
                index = -1
            done = [t for t in self.trials if t.index not in finished and t.state in DONE_STATES + ("Interrupted",)
                    and not self.threads[t.index].is_alive()]  # fmt: skip
            for trial in done:
                finished.add(trial.index)
                self.suggester.tell(trial)
                self._judge(trial)
            completed = [t for t in self.trials if t.state == "Succeeded"]
            for trial in self._running():
                if trial.index not in self.stop_requests and (why := median_stop(self.sweep, trial, completed)):
                    self.stop_requests[trial.index] = why
            if done or index >= 0:
                self._save()
                show(self)
            if self.verdict:
                self._stop_all("the sweep ended: " + self.verdict)
        show(self)
        failed = sum(1 for t in self.trials if t.state == "Failed")
        return 1 if failed >= self.sweep.max_failed or self.verdict.startswith("error") or self.best() is None else 0

    def _judge(self, trial: Trial) -> None:
        """After a trial ends: the first one's metric check, maxFailedTrials, the goal."""
        if (
            trial.state == "Succeeded"
            and trial.value is None
            and not any(t.value is not None for t in self.trials if t is not trial)
        ):
            names = sorted(trial.observations) or ["none"]
            self.verdict = (
                f"error: trial {trial.index} succeeded but never printed the objective metric "
                f"{self.sweep.metric!r} as {self.sweep.metric}=<number> (its log: {self.out}/trials/{trial.index}.log);"
                f" the metrics it printed: {', '.join(names)}. Name one in objective.metric, or print it"
            )
        elif sum(1 for t in self.trials if t.state == "Failed") >= self.sweep.max_failed:
            self.verdict = f"failed: {self.sweep.max_failed} trials failed (maxFailedTrials)"
        elif trial.value is not None and trial.state == "Succeeded" and self.sweep.reached_goal(trial.value):
            self.verdict = f"goal reached: trial {trial.index} {self.sweep.metric}={trial.value:.6g}"

    def best(self) -> Trial | None:
        scored = [t for t in self.trials if t.state == "Succeeded" and t.value is not None]
        if not scored:
            return None
        return max(scored, key=lambda t: (t.value or 0.0) * (1 if self.sweep.maximize else -1))


@contextlib.contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


# --- what the user sees ---------------------------------------------------------------------------------------


def table(runner: Runner) -> str:
    sweep = runner.sweep
    names = [p.name for p in sweep.parameters]
    header = ["TRIAL", *names, "STATE", sweep.metric.upper(), "STEP", "SECONDS"]
    rows = [header]
    with runner.lock:
        for t in runner.trials:
            seen = t.observations.get(sweep.metric) or []
            took = t.seconds if t.seconds is not None else (time.time() - t.started if t.started else None)
            rows.append([
                str(t.index), *(value_text(t.params[n]) for n in names), t.state,
                f"{seen[-1][1]:.6g}" if seen else "-", f"{seen[-1][0]:g}" if seen else "-",
                "-" if took is None else f"{took:.0f}",
            ])  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)


class LiveTable:
    """The table redrawn in place on a terminal; elsewhere (a CI log) one line per change of a trial's state."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self._height = 0
        self._states: dict[int, str] = {}

    def __call__(self, runner: Runner) -> None:
        if self.tty:
            text = table(runner)
            up = f"\x1b[{self._height}F\x1b[J" if self._height else ""
            self.stream.write(up + text + "\n")
            self._height = text.count("\n") + 1
        else:
            for t in runner.trials:
                if self._states.get(t.index) != t.state:
                    self._states[t.index] = t.state
                    params = " ".join(f"{k}={value_text(v)}" for k, v in t.params.items())
                    value = f" {runner.sweep.metric}={t.value:.6g}" if t.value is not None else ""
                    why = f" ({t.reason})" if t.reason else ""
                    self.stream.write(f"trial {t.index} {t.state}: {params}{value}{why}\n")
        self.stream.flush()


def write_results(runner: Runner, chart: Path, helm_args: Sequence[str]) -> list[str]:
    """trials.csv, best-values.yaml and the plot; the lines that end the sweep's output."""
    sweep, out = runner.sweep, runner.out
    names = [p.name for p in sweep.parameters]
    with (out / "trials.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trial", *names, "state", sweep.metric, "steps", "seconds", "release", "reason"])
        for t in runner.trials:
            seen = t.observations.get(sweep.metric) or []
            took = "" if t.seconds is None else round(t.seconds, 1)
            value = "" if t.value is None else t.value
            writer.writerow(
                [t.index, *(t.params[n] for n in names), t.state, value, len(seen), took, t.release, t.reason]
            )
    lines = []
    counts = {s: sum(1 for t in runner.trials if t.state == s) for s in DONE_STATES + ("Interrupted",)}
    lines.append("trials: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    if runner.verdict:
        lines.append(f"sweep: {runner.verdict}")
    best = runner.best()
    if best is not None:
        values = substitute(copy.deepcopy(sweep.values), best.params)
        (out / "best-values.yaml").write_text(
            f"# trial {best.index} of sweep {sweep.name}: {sweep.metric}={best.value:.6g}\n"
            + yaml.safe_dump(values, sort_keys=False)
        )
        params = ", ".join(f"{k}={value_text(v)}" for k, v in best.params.items())
        lines.append(f"best: trial {best.index} {sweep.metric}={best.value:.6g} with {params}")
        shown = " ".join(helm_args)
        lines.append(f"reproduce: dlcharts run {chart} -f {out / 'best-values.yaml'} {shown}".rstrip())
    if (plotted := plot(runner)) is not None:
        lines.append(f"plot: {plotted}")
    lines.append(f"every trial: {out / 'trials.csv'}, {runner.state_file}")
    return lines


def plot(runner: Runner) -> Path | None:
    """The objective of every trial over steps (matplotlib, from the `sweep` extra), or None without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    sweep = runner.sweep
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for t in runner.trials:
        seen = t.observations.get(sweep.metric) or []
        if seen:
            style = "--" if t.state == "EarlyStopped" else "-"
            ax.plot([s for s, _ in seen], [v for _, v in seen], style, label=f"{t.index} ({t.state})")
    ax.set_xlabel("step")
    ax.set_ylabel(sweep.metric)
    ax.set_title(f"sweep {sweep.name}: {sweep.algorithm}, {len(runner.trials)} trials (dashed: stopped early)")
    if len(runner.trials) <= 16 and ax.lines:
        ax.legend(fontsize=7, ncol=2)
    path = runner.out / (re.sub(r"[^\w.-]", "_", sweep.metric) + ".png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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
        with run.session(
            chart, helm_args, helm=helm, release_name=f"{sweep.name}-0", namespace=namespace, kubeconfig=kubeconfig,
            registry=registry, cluster_name=cluster_name, write=write,
        ) as ready:  # fmt: skip
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
