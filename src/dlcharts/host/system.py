"""Host commands and the mount table, as the real node's components use them."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from dlcharts.errors import ClusterError


def run(cmd: list[str], check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; with ``check``, a non-zero exit raises ClusterError with its stderr."""
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    if check and proc.returncode != 0:
        raise ClusterError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc


def mount_points() -> list[str]:
    """Mount points of this mount namespace (from /proc/self/mountinfo, octal escapes undone)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        raw = line.split()[4]
        points.append(raw.encode().decode("unicode_escape"))
    return points


def below(folder: Path) -> Callable[[str], bool]:
    """Picks the mount points under ``folder`` (not ``folder`` itself)."""
    prefix = f"{folder}/"
    return lambda point: point.startswith(prefix)


def unmount(picked: Callable[[str], bool]) -> list[str]:
    """Unmount every mount point ``picked`` selects, deepest first (lazily when busy), in up to five rounds
    (unmounting one can uncover another); return the ones still mounted."""
    for _ in range(5):
        targets = [m for m in mount_points() if picked(m)]
        if not targets:
            return []
        for target in sorted(targets, key=len, reverse=True):
            if run(["umount", target], check=False).returncode != 0:
                run(["umount", "-l", target], check=False)
    return [m for m in mount_points() if picked(m)]
