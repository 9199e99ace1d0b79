"""The sweep file (its format: the docstring of :mod:`dlcharts.jobs.sweep`): reading and checking it, its parameters,
their substitution into the trial template, and the check that the chart takes every parameter's extremes."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import random
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import DLChartsError
from dlcharts.helm import Helm
from dlcharts.utils.digest import json_digest

ALGORITHMS = ("grid", "random", "tpe")
TYPES = ("double", "int", "categorical")
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][\w-]*)\}")
TOP_KEYS = {
    "name", "objective", "algorithm", "seed", "parallelTrials", "maxTrials", "maxFailedTrials",
    "trialTimeoutSeconds", "earlyStopping", "parameters", "values",
}  # fmt: skip


class SweepError(DLChartsError):
    """A sweep file, a parameter or a metric that cannot work; the message names it and the fix."""


@dataclasses.dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    min: float | None = None
    max: float | None = None
    log: bool = False
    step: float | None = None  # grid: the spacing of an int or double range (log: a factor)
    values: tuple[Any, ...] = ()  # categorical

    @property
    def env_name(self) -> str:
        return re.sub(r"\W", "_", self.name).upper()

    def extremes(self) -> list[Any]:
        """The values the schema check renders: every categorical value, else min and max."""
        if self.type == "categorical":
            return list(self.values)
        return [self.cast(self.min), self.cast(self.max)]

    def cast(self, value: Any) -> Any:
        return int(round(value)) if self.type == "int" else float(value) if self.type == "double" else value

    def grid(self) -> list[Any]:
        if self.type == "categorical":
            return list(self.values)
        assert self.min is not None and self.max is not None
        if self.step is None:
            if self.type == "int":
                return list(range(int(self.min), int(self.max) + 1))
            raise SweepError(
                f"parameter {self.name}: a double range needs `step` for the grid algorithm (the spacing; with "
                f"log: true, the factor between points), e.g. step: {(self.max - self.min) / 4:g}"
            )
        points, value = [], self.min
        while value <= self.max * (1 + 1e-9):
            points.append(self.cast(value))
            value = value * self.step if self.log else value + self.step
        return list(dict.fromkeys(points))

    def sample(self, rng: random.Random) -> Any:
        if self.type == "categorical":
            return rng.choice(self.values)
        assert self.min is not None and self.max is not None
        if self.log:
            value = math.exp(rng.uniform(math.log(self.min), math.log(self.max)))
        else:
            value = rng.uniform(self.min, self.max)
        return min(max(self.cast(value), self.cast(self.min)), self.cast(self.max))

    def as_spec(self) -> dict[str, Any]:
        out = {k: v for k, v in dataclasses.asdict(self).items() if v not in (None, False, ())}
        if self.values:
            out["values"] = list(self.values)
        return out


@dataclasses.dataclass(frozen=True)
class EarlyStopping:
    rule: str = "median"
    min_trials: int = 3
    start_step: int = 4


@dataclasses.dataclass(frozen=True)
class Sweep:
    name: str
    metric: str
    maximize: bool
    goal: float | None
    algorithm: str
    seed: int
    parallel: int
    max_trials: int
    max_failed: int
    trial_timeout: float
    early_stopping: EarlyStopping | None
    parameters: tuple[Parameter, ...]
    values: dict[str, Any]
    spec: dict[str, Any]  # the file as read: a resumed sweep must be the same

    def better(self, a: float, b: float) -> bool:
        return a > b if self.maximize else a < b

    def reached_goal(self, value: float) -> bool:
        return self.goal is not None and (value >= self.goal if self.maximize else value <= self.goal)

    def digest(self) -> str:
        return json_digest(self.spec, 16)


def _number(where: str, value: Any, *, integer: bool = False, positive: bool = False) -> Any:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or (positive and value <= 0):
        kind = "a whole number" if integer else "a number"
        raise SweepError(f"{where} is {value!r}: it must be {kind}{' above 0' if positive else ''}")
    return value


def _parameter(where: str, item: Any) -> Parameter:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        raise SweepError(f"{where} is {item!r}: each parameter is a map with a name and a type, e.g. "
                         f"{{name: lr, type: double, min: 0.001, max: 0.1, log: true}}")  # fmt: skip
    name, kind = item["name"], item.get("type")
    where = f"parameter {name}"
    if not re.fullmatch(r"[A-Za-z_][\w-]*", name):
        raise SweepError(f"{where}: a name is letters, digits, _ and - (it is written as ${{{name}}} in values)")
    allowed = {"name", "type"} | ({"values"} if kind == "categorical" else {"min", "max", "log", "step"})
    if kind not in TYPES:
        raise SweepError(f"{where}: type is {kind!r}; one of {', '.join(TYPES)}")
    if unknown := sorted(set(item) - allowed):
        raise SweepError(f"{where}: unknown key {unknown[0]!r} for type {kind}; its keys: {', '.join(sorted(allowed))}")
    if kind == "categorical":
        values = item.get("values")
        if not isinstance(values, list) or not values or any(isinstance(v, (dict, list)) for v in values):
            raise SweepError(f"{where}: values must be a list of numbers or strings, e.g. values: [32, 64, 128]")
        return Parameter(name, kind, values=tuple(values))
    low = _number(f"{where}: min", item.get("min"), integer=kind == "int")
    high = _number(f"{where}: max", item.get("max"), integer=kind == "int")
    log = item.get("log", False)
    if not isinstance(log, bool):
        raise SweepError(f"{where}: log is {log!r}; true or false")
    if low >= high:
        raise SweepError(f"{where}: min ({low}) must be below max ({high})")
    if log and low <= 0:
        raise SweepError(f"{where}: a log range needs min above 0 (it is {low})")
    step = item.get("step")
    if step is not None:
        step = _number(f"{where}: step", step, positive=True)
        if log and step <= 1:
            raise SweepError(f"{where}: with log: true, step is the factor between grid points and must exceed 1")
    return Parameter(name, kind, float(low), float(high), log, None if step is None else float(step))


def _placeholders(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(_placeholders(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_placeholders(v) for v in node)) if node else set()
    return set(PLACEHOLDER.findall(node)) if isinstance(node, str) else set()


def load(path: Path) -> Sweep:
    """Read and check a sweep file; SweepError naming the key and the fix."""
    spec = _read(path)
    metric, maximize, goal = _objective(path, spec)
    algorithm = spec.get("algorithm", "random")
    if algorithm not in ALGORITHMS:
        raise SweepError(f"{path}: algorithm is {algorithm!r}; one of {', '.join(ALGORITHMS)}")
    counts = {key: spec.get(key, default) for key, default in
              (("parallelTrials", 1), ("maxTrials", 10), ("maxFailedTrials", 3), ("seed", 0))}  # fmt: skip
    for key, value in counts.items():
        _number(f"{path}: {key}", value, integer=True, positive=key != "seed")
    timeout = _number(f"{path}: trialTimeoutSeconds", spec.get("trialTimeoutSeconds", 1800), positive=True)
    parameters = _parameters(path, spec)
    values = _values(path, spec, [p.name for p in parameters])
    early = _early_stopping(path, spec)
    name = spec.get("name", path.stem)
    if not isinstance(name, str) or not re.fullmatch(r"[a-z]([-a-z0-9]{0,30}[a-z0-9])?", name):
        raise SweepError(
            f"{path}: the sweep's name {name!r} (name:, else the file's name) must be a DNS label of at most 32 "
            f"characters: its trials are the releases <name>-<index>; set name: in the file"
        )
    sweep = Sweep(
        name, metric, maximize, goal, algorithm, counts["seed"], counts["parallelTrials"],
        counts["maxTrials"], counts["maxFailedTrials"], float(timeout), early, parameters, values, spec,
    )  # fmt: skip
    if algorithm == "grid":
        size = math.prod(len(p.grid()) for p in parameters)
        if size < sweep.max_trials:
            sweep = dataclasses.replace(sweep, max_trials=size)
    return sweep


def _read(path: Path) -> dict[str, Any]:
    """The sweep file as a map with only the keys a sweep file has."""
    try:
        spec = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise SweepError(f"--sweep {path}: no such file") from None
    except yaml.YAMLError as exc:
        raise SweepError(f"--sweep {path}: not YAML ({exc})") from None
    if not isinstance(spec, dict):
        raise SweepError(f"--sweep {path}: a sweep file is a map (objective, algorithm, parameters, values, ...)")
    if unknown := sorted(set(spec) - TOP_KEYS):
        raise SweepError(f"{path}: unknown key {unknown[0]!r}; the keys of a sweep file: {', '.join(sorted(TOP_KEYS))}")
    return spec


def _objective(path: Path, spec: dict[str, Any]) -> tuple[str, bool, float | None]:
    """The objective's metric, whether it is maximized, and its goal."""
    objective = spec.get("objective")
    if not isinstance(objective, dict) or not isinstance(objective.get("metric"), str):
        raise SweepError(f"{path}: objective needs a metric, e.g. objective: {{metric: loss, type: minimize}}")
    if unknown := sorted(set(objective) - {"metric", "type", "goal"}):
        raise SweepError(f"{path}: objective: unknown key {unknown[0]!r}; its keys: metric, type, goal")
    direction = objective.get("type", "minimize")
    if direction not in ("minimize", "maximize"):
        raise SweepError(f"{path}: objective.type is {direction!r}; minimize or maximize")
    goal = objective.get("goal")
    if goal is not None:
        _number(f"{path}: objective.goal", goal)
    return objective["metric"], direction == "maximize", goal


def _parameters(path: Path, spec: dict[str, Any]) -> tuple[Parameter, ...]:
    raw = spec.get("parameters")
    if not isinstance(raw, list) or not raw:
        raise SweepError(f"{path}: parameters must be a list of at least one parameter")
    parameters = tuple(_parameter(f"parameters[{i}]", item) for i, item in enumerate(raw))
    names = [p.name for p in parameters]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise SweepError(f"{path}: parameter {dupes[0]} is defined twice")
    return parameters


def _values(path: Path, spec: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The trial template, where every parameter and nothing else is written as ${name}."""
    values = spec.get("values")
    if not isinstance(values, dict) or not values:
        raise SweepError(f"{path}: values (the trial template: the chart's values with ${{name}} where a parameter "
                         f"goes) must be a map")  # fmt: skip
    used = _placeholders(values)
    if unknown := sorted(used - set(names)):
        raise SweepError(f"{path}: values use ${{{unknown[0]}}}, which is no parameter; the parameters: "
                         f"{', '.join(names)}")  # fmt: skip
    if unused := [n for n in names if n not in used]:
        raise SweepError(f"{path}: parameter {unused[0]} reaches no value: write ${{{unused[0]}}} where it goes in "
                         f"values (e.g. defaults.args or defaults.env)")  # fmt: skip
    return values


def _early_stopping(path: Path, spec: dict[str, Any]) -> EarlyStopping | None:
    stopping = spec.get("earlyStopping")
    if stopping is None:
        return None
    if not isinstance(stopping, dict) or stopping.get("rule", "median") != "median":
        raise SweepError(f"{path}: earlyStopping is {stopping!r}; the rule is median: "
                         f"{{rule: median, minTrials: 3, startStep: 4}}")  # fmt: skip
    if unknown := sorted(set(stopping) - {"rule", "minTrials", "startStep"}):
        raise SweepError(f"{path}: earlyStopping: unknown key {unknown[0]!r}; its keys: rule, minTrials, startStep")
    return EarlyStopping(
        min_trials=_number(f"{path}: earlyStopping.minTrials", stopping.get("minTrials", 3), integer=True,
                           positive=True),
        start_step=_number(f"{path}: earlyStopping.startStep", stopping.get("startStep", 4), integer=True,
                           positive=True),
    )  # fmt: skip


def substitute(values: Any, params: dict[str, Any]) -> Any:
    """``values`` with each ``${name}``: a whole string becomes the value itself, a part of one its text."""
    if isinstance(values, dict):
        return {k: substitute(v, params) for k, v in values.items()}
    if isinstance(values, list):
        return [substitute(v, params) for v in values]
    if isinstance(values, str):
        whole = PLACEHOLDER.fullmatch(values)
        if whole:
            return params[whole.group(1)]
        return PLACEHOLDER.sub(lambda m: value_text(params[m.group(1)]), values)
    return values


def placeholder_paths(values: Any, pointer: str = "", dotted: str = "") -> dict[str, list[tuple[str, str]]]:
    """Where each ``${name}`` stands in ``values``: its JSON pointer (as helm's schema errors say it) and dotted
    path (as the charts' own refusals do)."""
    found: dict[str, list[tuple[str, str]]] = {}
    items = values.items() if isinstance(values, dict) else enumerate(values) if isinstance(values, list) else ()
    for key, child in items:
        deeper = f"{dotted}[{key}]" if isinstance(values, list) else f"{dotted}.{key}" if dotted else str(key)
        for name, where in placeholder_paths(child, f"{pointer}/{key}", deeper).items():
            found.setdefault(name, []).extend(where)
    if isinstance(values, str):
        for name in PLACEHOLDER.findall(values):
            found.setdefault(name, []).append((pointer, dotted))
    return found


def value_text(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


# --- before any trial -----------------------------------------------------------------------------------------


def check_parameters(
    sweep: Sweep, chart: Path, helm: Helm, base_values: dict[str, Any], helm_args: Sequence[str]
) -> None:
    """Render the chart with every parameter at its first extreme, then each parameter at each of its other
    extremes: a value the chart refuses is a SweepError naming the parameter and the value, before any trial."""
    from dlcharts.install import ChartSource

    with tempfile.TemporaryDirectory(prefix="dlcharts-sweep-") as tmp:
        cpu, trial = Path(tmp) / "cpu-values.yaml", Path(tmp) / "trial-values.yaml"
        cpu.write_text(yaml.safe_dump(base_values, sort_keys=False))

        def refusal(params: dict[str, Any]) -> str:
            trial.write_text(yaml.safe_dump(substitute(copy.deepcopy(sweep.values), params), sort_keys=False))
            source = ChartSource(chart, values_files=(cpu, trial), extra_args=tuple(helm_args))
            proc = helm.run(["template", "sweep-check", *source.args(helm)], check=False, timeout=120)
            return "" if proc.returncode == 0 else "\n".join(proc.stderr.strip().splitlines()[-6:])

        def refuse(parameter: Parameter, params: dict[str, Any], why: str) -> SweepError:
            if "want string" in why:
                placeholder = f"${{{parameter.name}}}"
                why += (f"\n(a value that is exactly {placeholder} takes the parameter's type; where text is wanted, "
                        f"write it in a longer string, e.g. --{parameter.name}={placeholder})")  # fmt: skip
            values = json.dumps(substitute(copy.deepcopy(sweep.values), params), default=str)
            return SweepError(
                f"parameter {parameter.name} = {value_text(params[parameter.name])} is refused by {chart} (the trial's "
                f"values: {values}):\n{why}\nNarrow {parameter.name}'s range or values in the sweep file, or change "
                f"where ${{{parameter.name}}} goes. No trial was started."
            )

        base = {p.name: p.extremes()[0] for p in sweep.parameters}
        if why := refusal(base):  # the parameter at a value the refusal names, else the one whose other extreme renders
            paths = placeholder_paths(sweep.values)
            for parameter in sweep.parameters:
                if any(f"'{pointer}'" in why or dotted in why for pointer, dotted in paths.get(parameter.name, [])):
                    raise refuse(parameter, base, why)
            for parameter in sweep.parameters:
                if any(not refusal({**base, parameter.name: v}) for v in parameter.extremes()[1:]):
                    raise refuse(parameter, base, why)
            shown = json.dumps(substitute(copy.deepcopy(sweep.values), base), default=str)
            raise SweepError(f"{chart} refuses the sweep's values with every parameter at its min (or first value): "
                             f"{shown}:\n{why}")  # fmt: skip
        for parameter in sweep.parameters:
            for value in parameter.extremes()[1:]:
                if why := refusal({**base, parameter.name: value}):
                    raise refuse(parameter, {**base, parameter.name: value}, why)
