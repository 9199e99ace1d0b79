"""The values file of one imported job, and where the files go.

:class:`Imported` is one job converted; :meth:`Imported.text` is its values file: a header naming the chart, the
commands that run it, the mode when the program starts otherwise than the chart's way (the image's own entrypoint),
what was carried over, what was dropped and what behaves differently, then the values, the job's shape first.
:func:`write` puts one job on stdout, or each job in a file.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import DLChartsError

#: a values mapping (and a manifest's objects, as parsed)
Values = dict[str, Any]


@dataclasses.dataclass
class Imported:
    """One job converted: its chart, its values and what the header says about them."""

    where: str  # file (and document number)
    kind: str
    name: str
    namespace: str
    chart: str
    values: Values
    carried: list[str]
    dropped: list[str]
    differs: list[str]
    mode: list[str] = dataclasses.field(default_factory=list)  # how the program starts, when not the chart's way

    def text(self, values_file: str) -> str:
        """The values file: a header naming the chart, the commands, what was carried over, what was dropped and
        what behaves differently; then the values."""
        ns = ["-n", self.namespace] if self.namespace else []
        chart = f"charts/{self.chart}"
        run = shlex.join(["dlcharts", "run", chart, "-f", values_file, "--release", self.name, *ns])
        install = shlex.join(["helm", "install", self.name, chart, *ns, "-f", values_file])
        lines = [
            f"# dlcharts import: {self.kind} {self.name} ({self.where}) as values of the chart {self.chart}",
            f"#   {run}",
            f"#   {install}",
            *(f"# mode: {line}" for line in self.mode),
            "# carried over:",
            *(f"#   - {line}" for line in self.carried),
        ]
        if self.dropped:
            lines += ["# dropped (nothing changes here without them):", *(f"#   - {line}" for line in self.dropped)]
        if self.differs:
            lines += ["# differs from Kubeflow:", *(f"#   - {line}" for line in self.differs)]
        first = [key for key in ORDER if key in self.values]
        ordered = {key: self.values[key] for key in [*first, *(k for k in self.values if k not in first)]}
        body = yaml.dump(ordered, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
        return "\n".join(lines) + "\n" + body


#: the top-level keys of a values file in this order: the job's shape first, then its settings
ORDER = ("chief", "ps", "worker", "evaluator", "nprocPerNode", "port", "elastic", "mpi", "kueue", "gang", "defaults")


class _Dumper(yaml.SafeDumper):
    """YAML with lists of numbers on one line (an ExitCode rule's exit codes), no anchors, and every string that YAML
    1.1 would read as something else quoted (helm's YAML reads ``y``, ``off`` and ``1e3`` as a bool and a number
    where PyYAML writes them bare)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


#: plain scalars a YAML 1.1 reader (helm's) takes for a bool, null or number: quoted when they are strings
_RETYPED = re.compile(
    r"(?:[yYnN~]|yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL"
    r"|[-+]?(?:0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)"
    r"|[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))"
)


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = '"' if _RETYPED.fullmatch(data) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = bool(data) and all(isinstance(item, int) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _list)
_Dumper.add_representer(str, _str)


def file_name(job: Imported) -> str:
    return f"{job.name}.yaml"


def write(jobs: list[Imported], out: Path | None) -> list[tuple[Imported, Path | None, str]]:
    """Where each job's values go: ``out`` (a .yaml file for one job, else a folder, one ``<name>.yaml`` each) or
    stdout (one job). Returns (job, path or None for stdout, text); writes nothing when any target clashes."""
    names = [file_name(job) for job in jobs]
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise DLChartsError(f"several jobs are named alike ({', '.join(twice)}): import them one file at a time")
    if out is None:
        if len(jobs) > 1:
            raise DLChartsError(f"{len(jobs)} jobs: give -o FOLDER for their values files (one per job)")
        return [(jobs[0], None, jobs[0].text(file_name(jobs[0])))]
    if out.suffix in (".yaml", ".yml") and not out.is_dir():
        if len(jobs) > 1:
            raise DLChartsError(f"-o {out}: {len(jobs)} jobs need a folder, one values file each")
        targets = [out]
    else:
        out.mkdir(parents=True, exist_ok=True)
        targets = [out / name for name in names]
    done: list[tuple[Imported, Path | None, str]] = []
    for job, target in zip(jobs, targets, strict=True):
        text = job.text(str(target))
        target.write_text(text, encoding="utf-8")
        done.append((job, target, text))
    return done
