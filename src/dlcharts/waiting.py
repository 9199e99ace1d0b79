"""One way to wait for a cluster to reach a state: poll a check until it holds, with a deadline."""

from __future__ import annotations

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
