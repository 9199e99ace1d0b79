"""The trials of a sweep: their records and states, the metrics read from their logs, the median stopping rule,
and the sweep's record in ``state.json``, which a resume starts from."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import statistics
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlcharts.jobs.sweep.spec import Sweep, SweepError

#: trial states; the ones a resumed sweep keeps
DONE_STATES = ("Succeeded", "Failed", "EarlyStopped", "Stopped")
#: Katib's stdout metrics format: name=value anywhere on a line
METRIC = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)=([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.])")
LOG_LINE = re.compile(r"^\[(?P<pod>[^/\]]+)/[^\]]+\] (?P<line>.*)$")


@dataclasses.dataclass
class Trial:
    index: int
    params: dict[str, Any]
    release: str
    state: str = "Pending"  # Running, Succeeded, Failed, EarlyStopped, Stopped, Interrupted
    #: metric -> [(step, value)], from the pod that first printed it
    observations: dict[str, list[tuple[float, float]]] = dataclasses.field(default_factory=dict)
    reason: str = ""
    started: float | None = None  # epoch seconds
    ended: float | None = None
    metric: str = ""

    @property
    def value(self) -> float | None:
        seen = self.observations.get(self.metric)
        return seen[-1][1] if seen else None

    @property
    def seconds(self) -> float | None:
        return None if self.started is None or self.ended is None else self.ended - self.started

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["observations"] = {k: [list(o) for o in v] for k, v in self.observations.items()}
        out["value"] = self.value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Trial:
        fields = {f.name for f in dataclasses.fields(cls)}
        trial = cls(**{k: v for k, v in data.items() if k in fields})
        trial.observations = {k: [(float(s), float(v)) for s, v in obs] for k, obs in trial.observations.items()}
        return trial


class MetricReader:
    """Turns a trial's log lines (``[pod/container] text``) into observations (see the module's docstring)."""

    def __init__(self, trial: Trial, lock: threading.Lock, log: Any) -> None:
        self.trial, self.lock, self.log = trial, lock, log
        self._pod_of: dict[str, str] = {}  # metric -> the pod whose observations count

    def __call__(self, text: str) -> None:
        with contextlib.suppress(ValueError):  # a follower's last words after the trial ended and closed its log
            self.log.write(text + "\n")
            self.log.flush()
        match = LOG_LINE.match(text)
        if not match:
            return
        pod, pairs = match.group("pod"), METRIC.findall(match.group("line"))
        if not pairs:
            return
        found = {name: float(value) for name, value in pairs}
        step = found.get("step")
        with self.lock:
            if self.trial.state != "Running":  # stopped: what its pods print until they are gone does not count
                return
            for name, value in found.items():
                if name == "step" or self._pod_of.setdefault(name, pod) != pod:
                    continue
                seen = self.trial.observations.setdefault(name, [])
                seen.append((step if step is not None else float(len(seen) + 1), value))


def running_average_until(observations: list[tuple[float, float]], step: float) -> float | None:
    values = [v for s, v in observations if s <= step]
    return sum(values) / len(values) if values else None


def median_stop(sweep: Sweep, trial: Trial, completed: Sequence[Trial]) -> str:
    """Katib's median stopping rule: why ``trial`` should stop now, or ""."""
    rule = sweep.early_stopping
    seen = trial.observations.get(sweep.metric) or []
    if rule is None or len(completed) < rule.min_trials or not seen:
        return ""
    step = seen[-1][0]
    if step < rule.start_step:
        return ""
    averages = [a for t in completed if (a := running_average_until(t.observations.get(sweep.metric, []), step))
                is not None]  # fmt: skip
    if len(averages) < rule.min_trials:
        return ""
    median = statistics.median(averages)
    best = max(v for _, v in seen) if sweep.maximize else min(v for _, v in seen)
    if sweep.better(median, best):
        return (f"median rule: best {sweep.metric} {best:.4g} by step {step:g} is worse than the median {median:.4g} "
                f"of {len(averages)} completed trials' running averages")  # fmt: skip
    return ""


# --- the sweep's record ---------------------------------------------------------------------------------------


class SweepRecord:
    """The trials of ``sweep`` and its verdict, kept in ``out/state.json`` (each trial's logs in
    ``out/trials/<index>.log``): what a resume starts from and the report reads."""

    def __init__(self, sweep: Sweep, out: Path, *, chart: Path, namespace: str, helm_args: Sequence[str]) -> None:
        self.sweep, self.out, self.helm_args = sweep, out, list(helm_args)
        self.chart, self.namespace = chart, namespace
        self.lock = threading.Lock()
        self.trials: list[Trial] = []
        self.verdict = ""
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "trials").mkdir(exist_ok=True)

    @property
    def state_file(self) -> Path:
        return self.out / "state.json"

    def resume(self) -> None:
        """The trials of ``state.json``: the finished ones as they ended, the others to run again."""
        data = json.loads(self.state_file.read_text())
        if data.get("digest") != self.sweep.digest():
            raise SweepError(f"{self.state_file} belongs to another sweep (its file has changed since): resume with "
                             f"the same sweep file, or start afresh with another --out")  # fmt: skip
        for item in data["trials"]:
            trial = Trial.from_json(item)
            if trial.state not in DONE_STATES:  # interrupted: runs again with the same parameters
                trial = Trial(trial.index, trial.params, trial.release, metric=self.sweep.metric)
            self.trials.append(trial)

    def save(self) -> None:
        with self.lock:
            data = {
                "digest": self.sweep.digest(), "sweep": self.sweep.spec, "chart": str(self.chart),
                "helm_args": self.helm_args, "namespace": self.namespace, "verdict": self.verdict,
                "trials": [t.to_json() for t in self.trials],
            }  # fmt: skip
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.state_file)

    def judge(self, trial: Trial) -> None:
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
