"""``dlcharts validate``'s reports for machines: JSON (its own stable structure) and SARIF 2.1.0.

JSON, ``"version": 1`` (keys are only ever added within a version)::

    {"version": 1, "dlcharts": "0.9.0", "config": "/repo/pyproject.toml" | null, "exemptions": "ci/..." | null,
     "kube_versions": ["1.35.0"],
     "summary": {"passed": 2, "failed": 0, "warnings": 3, "exit_code": 1},
     "missing_checks": "error" | "warning",
     "not_checked": [{"check": "the API server's rules", "minor": "1.35", "tool": "k8s-validate", "reason": "..."}],
     "schemas_only": ["1.30"],
     "scenarios": [{"name": "webapp/01-default", "chart": "charts/webapp" | null, "status": "passed" | "failed",
                    "problem": "helm could not render ..." | null,
                    "findings": [{"kind": "error" | "policy", "level": "error" | "warning", "check": "schema",
                                  "object": "Deployment/web", "path": "spec.replicas", "message": "...",
                                  "source": "webapp/templates/deployment.yaml", "kube_versions": ["1.35.0"]}]}]}

A finding made alike on several Kubernetes versions is one entry listing them. ``problem`` is what fails a scenario
other than a finding: a render helm refused, or stale policy exemptions (the ``policy exemptions (<file>)`` entry).

SARIF follows kube-linter's use of it: one run of the tool ``dlcharts``, a rule per check id with a short
description, a result per finding with its ``ruleId``, ``level`` (error or warning), message and a physical
location at the chart's template file (the finding's ``source``, a path relative to the working directory, ``../``
where the chart lies outside it), with the line of the finding's field where the template writes that key on one
line only (a template is not the manifest: a key written twice, or made by a helper, gets the file alone), the
object as a logical location; a render helm refused is
a ``render`` result at the chart's Chart.yaml, a stale exemption a ``stale-exemption`` result at the exemptions file.
A check that could not run is a tool execution notification of the run's invocation (``executionSuccessful`` false
unless the author allows it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dlcharts import __version__, checks
from dlcharts.findings import DESCRIPTIONS, ERROR, Finding, merged

JSON_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_EXTRA_RULES = {
    "render": "helm could not render the scenario",
    "stale-exemption": "a policy exemption covers nothing, or names a chart that is not there",
}


@dataclasses.dataclass(frozen=True)
class Result:
    """One case of a run: a scenario (or custom values) with its findings at their levels, or the exemptions file."""

    name: str
    chart: Path | None
    findings: tuple[Finding, ...] = ()
    problem: str = ""  # a render helm refused, stale exemptions: fails the case
    seconds: float = 0.0
    exemptions: Path | None = None  # for the stale-exemptions case

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.level != ERROR]

    @property
    def failed(self) -> bool:
        return bool(self.problem or self.errors)


@dataclasses.dataclass(frozen=True)
class Run:
    """What ``dlcharts validate`` did, for a report."""

    results: Sequence[Result]
    kube_versions: Sequence[str]
    config: Path | None
    exemptions: Path | None
    missing_checks: str  # "error" or "warning"
    exit_code: int

    @property
    def warning_count(self) -> int:
        return sum(len(merged(r.warnings)) for r in self.results)


def to_json(run: Run) -> str:
    failed = sum(1 for r in run.results if r.failed)
    data = {
        "version": JSON_VERSION,
        "dlcharts": __version__,
        "config": str(run.config) if run.config else None,
        "exemptions": str(run.exemptions) if run.exemptions else None,
        "kube_versions": list(run.kube_versions),
        "summary": {
            "passed": len(run.results) - failed,
            "failed": failed,
            "warnings": run.warning_count,
            "exit_code": run.exit_code,
        },
        "missing_checks": run.missing_checks,
        "not_checked": [
            {"check": e.what, "minor": e.minor, "tool": e.tool, "reason": e.reason} for e in checks.missing()
        ],
        "schemas_only": checks.schema_only_minors(),
        "scenarios": [
            {
                "name": r.name,
                "chart": str(r.chart) if r.chart else None,
                "status": "failed" if r.failed else "passed",
                "problem": r.problem or None,
                "findings": [_finding_json(f, versions) for f, versions in merged(r.findings).items()],
            }
            for r in run.results
        ],
    }
    return json.dumps(data, indent=2) + "\n"


def _finding_json(finding: Finding, versions: list[str]) -> dict[str, Any]:
    return {
        "kind": finding.kind,
        "level": finding.level,
        "check": finding.check,
        "object": finding.object,
        "path": finding.path,
        "message": finding.message,
        "source": finding.source,
        "kube_versions": versions,
    }


def to_sarif(run: Run) -> str:
    rule_ids: list[str] = []  # the rules in the order results first name them; a result points at its index

    def rule(check_id: str) -> int:
        if check_id not in rule_ids:
            rule_ids.append(check_id)
        return rule_ids.index(check_id)

    results: list[dict[str, Any]] = []
    for r in run.results:
        results += [_finding_result(r, f, versions, rule(f.check)) for f, versions in merged(r.findings).items()]
        if r.problem:
            results.append(_problem_result(r, rule))
    missing = checks.missing()
    notifications = [
        {"level": "error" if run.missing_checks == ERROR else "warning", "message": {"text": f"NOT CHECKED: {e}"}}
        for e in missing
    ] + [
        {"level": "note", "message": {"text": f"Kubernetes {m}: schemas only (no validator of its API rules exists)"}}
        for m in checks.schema_only_minors()
    ]
    described = {**_EXTRA_RULES, **DESCRIPTIONS}
    rules = [{"id": c, "shortDescription": {"text": described.get(c) or c}} for c in rule_ids]
    invocation = {
        "executionSuccessful": not (missing and run.missing_checks == ERROR),
        "toolExecutionNotifications": notifications,
    }
    driver = {"name": "dlcharts", "version": __version__, "rules": rules}
    sarif = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "invocations": [invocation], "results": results}],
    }
    return json.dumps(sarif, indent=2) + "\n"


def _finding_result(r: Result, finding: Finding, versions: list[str], rule_index: int) -> dict[str, Any]:
    """One finding as a SARIF result: its template file, and the object and field as a logical location."""
    where = f" @ {finding.path}" if finding.path else ""
    on = f" (k8s {', '.join(versions)})" if versions else ""
    logical = {"name": finding.object, "fullyQualifiedName": f"{finding.object}{where}", "kind": "object"}
    return {
        "ruleId": finding.check,
        "ruleIndex": rule_index,
        "level": "error" if finding.level == ERROR else "warning",
        "message": {"text": f"{finding.object}{where}: {finding.message}{on}"},
        "locations": [{"physicalLocation": _physical(r.chart, finding), "logicalLocations": [logical]}],
        "properties": {"scenario": r.name, "kind": finding.kind, "kubeVersions": versions},
    }


def _problem_result(r: Result, rule: Callable[[str], int]) -> dict[str, Any]:
    """A case that did not get to findings (helm refused the render) or stale exemptions, as a SARIF result."""
    check_id = "stale-exemption" if r.exemptions is not None else "render"
    at = r.exemptions if r.exemptions is not None else (r.chart / "Chart.yaml" if r.chart else None)
    result: dict[str, Any] = {
        "ruleId": check_id,
        "ruleIndex": rule(check_id),
        "level": "error",
        "message": {"text": f"{r.name}: {r.problem}"},
        "properties": {"scenario": r.name},
    }
    if at is not None:
        result["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": _relative(at)}}}]
    return result


def _physical(chart: Path | None, finding: Finding) -> dict[str, Any]:
    """The template file a finding came from (``source``, ``<chart>/templates/x.yaml`` relative to the chart's parent
    folder) relative to the working directory, and the line of its field where the template has it once."""
    if chart is None or not finding.source:
        return {"artifactLocation": {"uri": finding.source}}
    template = chart.parent / finding.source
    physical: dict[str, Any] = {"artifactLocation": {"uri": _relative(template)}}
    line = _line_of(template, finding.path)
    if line is not None:
        physical["region"] = {"startLine": line}
    return physical


def _line_of(template: Path, path: str) -> int | None:
    """The one line of ``template`` that writes the last key of the field ``path`` (``spec.ports[0].targetPort``:
    ``targetPort:``, block or flow style), or None: no such key, or more than one line has it."""
    key = re.fullmatch(r"(?:.*\.)?([A-Za-z_][\w-]*)(?:\[\d+\])*", path)
    if key is None or not template.is_file():
        return None
    written = re.compile(rf"(?:^|[\s{{,-]){re.escape(key[1])}\s*:")
    lines = [n for n, text in enumerate(template.read_text(errors="replace").splitlines(), 1) if written.search(text)]
    return lines[0] if len(lines) == 1 else None


def _relative(path: Path) -> str:
    """``path`` relative to the working directory (with ``..`` where it lies outside), as a SARIF URI."""
    try:
        return Path(os.path.relpath(path.resolve(), Path.cwd())).as_posix()
    except ValueError:  # another drive (Windows)
        return path.resolve().as_posix()
