"""What the user sees of a sweep: the live table of its trials, the results in ``--out`` (``trials.csv``,
``best-values.yaml``, the plot), the best trial and the command that reproduces it."""

from __future__ import annotations

import copy
import csv
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts.jobs.sweep.spec import substitute, value_text
from dlcharts.jobs.sweep.trials import DONE_STATES, SweepRecord


def table(runner: SweepRecord) -> str:
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

    def __call__(self, runner: SweepRecord) -> None:
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


def write_results(runner: SweepRecord, chart: Path, helm_args: Sequence[str]) -> list[str]:
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


def plot(runner: SweepRecord) -> Path | None:
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
