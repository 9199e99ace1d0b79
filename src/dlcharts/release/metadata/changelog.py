"""``changelog``: CHANGELOG.md (Keep a Changelog) whose newest released entry is the chart's version, dated, with
at least one change."""

from __future__ import annotations

import dataclasses
import re

from dlcharts.release.metadata.chart import ChartUnderCheck
from dlcharts.release.semver import InvalidVersion, Version

CHANGE_KINDS = ("added", "changed", "deprecated", "removed", "fixed", "security")
_VERSION_HEADING = re.compile(r"^##\s+\[(?P<version>[^\]]+)\](?:\s+-\s+(?P<date>\S+))?\s*$")
_KIND_HEADING = re.compile(r"^###\s+(?P<kind>\w+)\s*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclasses.dataclass(frozen=True)
class ChangelogEntry:
    version: str
    date: str | None
    changes: tuple[tuple[str, str], ...]  # (kind, description), kinds lower-case as artifacthub spells them


def parse_changelog(text: str) -> list[ChangelogEntry]:
    """``## [x.y.z] - date`` sections with ``### Added``-style groups of ``- item`` lines, newest first."""
    entries: list[ChangelogEntry] = []
    version: str | None = None
    date: str | None = None
    kind: str | None = None
    changes: list[tuple[str, str]] = []

    def close() -> None:
        if version is not None:
            entries.append(ChangelogEntry(version, date, tuple(changes)))

    for raw in text.splitlines():
        line = raw.rstrip()
        heading = _VERSION_HEADING.match(line)
        if heading:
            close()
            version, date, kind, changes = heading.group("version"), heading.group("date"), None, []
            continue
        sub = _KIND_HEADING.match(line)
        if sub and version is not None:
            kind = sub.group("kind").lower()
            continue
        if line.startswith("## ") or line.startswith("# "):
            close()
            version, kind = None, None
            continue
        if version is None or kind is None:
            continue
        if line.startswith("- ") or line.startswith("* "):
            changes.append((kind, line[2:].strip()))
        elif line.startswith("  ") and line.strip() and changes:  # a wrapped item
            last_kind, last = changes[-1]
            changes[-1] = (last_kind, f"{last} {line.strip()}")
    close()
    return entries


def entry_for(entries: list[ChangelogEntry] | None, version: str) -> ChangelogEntry | None:
    for entry in entries or []:
        if entry.version == version:
            return entry
    return None


def check_changelog(chart: ChartUnderCheck) -> list[ChangelogEntry] | None:
    """The chart's CHANGELOG entries (None without CHANGELOG.md), its problems added to ``chart``."""
    path = chart.chart / "CHANGELOG.md"
    if not path.is_file():
        version = chart.meta.get("version")
        chart.fail("changelog", f"{chart.name}/CHANGELOG.md is missing; start it with a `## [{version}] - YYYY-MM-DD`"
                   " entry (Keep a Changelog)")  # fmt: skip
        return None
    entries = parse_changelog(path.read_text())
    version = str(chart.meta.get("version"))
    released = [e for e in entries if e.version.lower() != "unreleased"]
    entry = entry_for(entries, version)
    if entry is None:
        chart.fail("changelog", f"CHANGELOG.md has no `## [{version}] - YYYY-MM-DD` entry for the chart's version")
        return entries
    if released and released[0] is not entry:
        chart.fail("changelog", f"CHANGELOG.md's newest entry is {released[0].version}, not the chart's {version}; "
                   "newest first")  # fmt: skip
    _check_entry(chart, entry, version)
    _check_order(chart, released)
    return entries


def _check_entry(chart: ChartUnderCheck, entry: ChangelogEntry, version: str) -> None:
    """The chart version's entry is dated and lists changes under Keep a Changelog's headings."""
    if not entry.date or not _DATE.match(entry.date):
        chart.fail("changelog", f"CHANGELOG.md's entry for {version} has no release date (`- YYYY-MM-DD`)")
    if not entry.changes:
        chart.fail("changelog", f"CHANGELOG.md's entry for {version} lists no change under an `### Added`-style "
                   "heading")  # fmt: skip
    for kind, _ in entry.changes:
        if kind not in CHANGE_KINDS:
            chart.fail("changelog", f"CHANGELOG.md heading `### {kind.title()}` is not one of Keep a Changelog's "
                       f"{', '.join(k.title() for k in CHANGE_KINDS)}")  # fmt: skip


def _check_order(chart: ChartUnderCheck, released: list[ChangelogEntry]) -> None:
    """Every released entry's heading is a SemVer version, newest first."""
    seen: list[Version] = []
    for e in released:
        try:
            seen.append(Version.parse(e.version))
        except InvalidVersion as exc:
            chart.fail("changelog", f"CHANGELOG.md heading [{e.version}]: {exc}")
    if seen != sorted(seen, reverse=True):
        chart.fail("changelog", "CHANGELOG.md entries must go newest first")
