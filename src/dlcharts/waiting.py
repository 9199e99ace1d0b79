"""Waiting, one way each: poll a check until it holds, with a deadline; wait for a long process, saying at least
once a minute that it still runs (a silent terminal looks like a hang)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

from dlcharts.errors import ClusterError

T = TypeVar("T")


def poll(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.25) -> T:
    """Call ``check`` until it returns something truthy and return that; ClusterError naming ``what`` after
    ``timeout`` s. Other exceptions from ``check`` are retried (and the last one reported on timeout); a
    ClusterError from ``check`` is a verdict and ends the wait at once."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except ClusterError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported on timeout
            last = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last})" if last is not None else ""
            raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


#: seconds between two "still ..." lines while a long process runs
TICK_SECONDS = 60.0


def duration(seconds: float) -> str:
    """``42s``, ``3m00s``, ``1h02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def wait_process(
    proc: subprocess.Popen[bytes] | subprocess.Popen[str],
    doing: str,
    say: Callable[[str], None],
    tick: float = TICK_SECONDS,
) -> int:
    """Wait for ``proc`` and return its exit code; while it runs, ``say("still <doing>: <elapsed>")`` every
    ``tick`` seconds."""
    started = time.monotonic()
    while True:
        elapsed = time.monotonic() - started
        try:
            return proc.wait(timeout=tick - elapsed % tick)
        except subprocess.TimeoutExpired:
            say(f"still {doing}: {duration(time.monotonic() - started)}")
