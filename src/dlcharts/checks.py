"""What a run could not check, recorded where it happens and said where the run ends (never a stray line).

A check that cannot run in this install (``native/k8s-validate`` is not in this wheel, not built in this checkout,
or does not start) is ``not_run``: ``dlcharts validate`` names it in its summary line and exits 1 unless the author
allows it (``--allow-missing-checks``, ``missing-checks = "warning"``), and the pytest plugin's ``assert_valid``
and ``find_problems`` fail (or warn) with the reason. A Kubernetes minor for which no validator of the API server's
rules exists at all (the product links 1.35 and 1.29: dlcharts.apirules.VALIDATORS) is ``schemas_only``:
information, not a failure, since no install could do more.
"""

from __future__ import annotations

import dataclasses
import threading


@dataclasses.dataclass(frozen=True, order=True)
class NotRun:
    """One check that could not run at one Kubernetes minor, and why (with what to do about it)."""

    what: str  # "the API server's rules"
    minor: str  # "1.35"
    tool: str  # "k8s-validate"
    reason: str

    def __str__(self) -> str:
        return f"{self.what} at {self.minor} ({self.tool}: {self.reason})"


_lock = threading.Lock()
_not_run: set[NotRun] = set()
_schemas_only: set[str] = set()


def not_run(what: str, minor: str, tool: str, reason: str) -> NotRun:
    """Record that ``what`` was not checked at ``minor`` because ``tool`` could not be had (``reason``)."""
    entry = NotRun(what, minor, tool, reason)
    with _lock:
        _not_run.add(entry)
    return entry


def schemas_only(minor: str) -> None:
    """Record that objects of Kubernetes ``minor`` got the schema pass only, as no validator holds its rules."""
    with _lock:
        _schemas_only.add(minor)


def missing(minor: str | None = None) -> list[NotRun]:
    """The checks that could not run (at ``minor`` only, when given), sorted."""
    with _lock:
        return sorted(entry for entry in _not_run if minor is None or entry.minor == minor)


def schema_only_minors() -> list[str]:
    """The minors checked with schemas only, oldest first."""
    with _lock:
        return sorted(_schemas_only, key=lambda m: tuple(int(p) for p in m.split(".") if p.isdigit()))


def summary(allowed: bool) -> str:
    """The summary line's tail: ``; NOT CHECKED: ...`` (``; not checked (allowed): ...`` when the author allows
    it) and ``; schemas only at 1.30, 1.31 (...)``; "" when everything ran."""
    out = ""
    not_run_now = missing()
    if not_run_now:
        out += f"; {'not checked (allowed)' if allowed else 'NOT CHECKED'}: " + "; ".join(str(e) for e in not_run_now)
    minors = schema_only_minors()
    if minors:
        out += f"; schemas only at {', '.join(minors)} (no validator of the API server's rules exists for that minor)"
    return out


def reset() -> None:
    """Forget what was recorded (a new run in the same process)."""
    with _lock:
        _not_run.clear()
        _schemas_only.clear()
