"""One holder at a time across processes: an exclusive ``flock`` on a file, for a block.

The CLI, pytest's workers and two sessions side by side share the caches and the clusters' state; every build,
start and stop that writes there holds the lock of what it writes."""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO


class LockTimeout(TimeoutError):
    """Another holder kept the lock past the timeout; ``path`` is the lock file (a holder may have written there)."""

    def __init__(self, path: Path, waited: float) -> None:
        super().__init__(f"{path}: held by another process for {waited:.0f} s")
        self.path = path
        self.waited = waited


@contextlib.contextmanager
def locked(
    path: Path, *, timeout: float | None = None, waiting: Callable[[float], None] | None = None, poll: float = 1.0
) -> Iterator[TextIO]:
    """Hold an exclusive lock on ``path`` (created, with its folder) for the block and yield the open file (a holder
    may write who it is there). Another holder makes this wait: ``waiting(seconds waited)`` is called every ``poll``
    seconds meanwhile, and past ``timeout`` seconds LockTimeout is raised. Without either, it simply blocks."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        if timeout is None and waiting is None:
            fcntl.flock(fh, fcntl.LOCK_EX)
        else:
            started = time.monotonic()
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = time.monotonic() - started
                    if timeout is not None and waited >= timeout:
                        raise LockTimeout(path, waited) from None
                    if waiting is not None:
                        waiting(waited)
                    time.sleep(poll)
        try:
            yield fh
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
