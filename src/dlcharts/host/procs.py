"""Detached host processes of the real node (containerd, kubelet, CoreDNS): start with a pid file and a log,
find, and stop them. Pid files live in ``<cluster>/node/pids/<name>.pid``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def spawn(
    name: str, argv: list[str], pid_dir: Path, log: Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> int:
    """Start ``argv`` in its own session, stdout and stderr appended to ``log``; record and return its pid."""
    pid_dir.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n".encode())
        fh.flush()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=fh,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    (pid_dir / f"{name}.pid").write_text(f"{proc.pid}\n")
    return proc.pid


def pids(pid_dir: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for pidfile in sorted(pid_dir.glob("*.pid")):
        with contextlib.suppress(ValueError, OSError):
            found[pidfile.stem] = int(pidfile.read_text().strip())
    return found


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def all_pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def children(parents: set[int]) -> set[int]:
    """Every descendant of ``parents`` (from /proc/<pid>/stat's ppid)."""
    tree: dict[int, list[int]] = {}
    for pid in all_pids():
        with contextlib.suppress(OSError, IndexError, ValueError):
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(parents)
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def stop(pid: int, expect: str, timeout: float = 15) -> None:
    """SIGTERM ``pid`` if it still runs ``expect`` (a substring of argv[0], against pid reuse), SIGKILL after
    ``timeout`` seconds, and wait until it is gone."""
    argv = cmdline(pid)
    if not alive(pid) or not argv or expect not in argv[0]:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.1)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
    _reap(pid)


def kill(pids: set[int]) -> None:
    """SIGKILL every pid and wait (up to 10 s) until they are gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        for pid in pids:
            _reap(pid)
        time.sleep(0.05)


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is our child (the process that started the cluster is still running)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
