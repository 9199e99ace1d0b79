"""Host commands, the mount table and folder listings, as the real node's components and the cache use them."""

from __future__ import annotations

import dataclasses
import re
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


#: the mount table of this process's namespace
MOUNTINFO = Path("/proc/self/mountinfo")


@dataclasses.dataclass(frozen=True)
class Mount:
    target: str
    fstype: str
    #: the folders an overlay is made of (lowerdir, upperdir, workdir): a snapshot in use, though mounted elsewhere
    layers: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"{self.target} ({self.fstype})"


def read_mounts(path: Path = MOUNTINFO) -> list[Mount]:
    """Every mount of a mountinfo file (this namespace's by default), octal escapes undone."""
    found = []
    for line in path.read_text().splitlines():
        before, sep, after = line.partition(" - ")
        fields, rest = before.split(), after.split()
        if not sep or len(fields) < 5 or len(rest) < 3:
            continue
        layers = []
        for option in rest[2].split(","):
            key, _, value = option.partition("=")
            if key in ("lowerdir", "upperdir", "workdir"):
                layers += [_unescape(v) for v in value.split(":") if v]
        found.append(Mount(_unescape(fields[4]), rest[0], tuple(layers)))
    return found


def _unescape(text: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as octal escapes (``\\040``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), text)


def mount_points() -> list[str]:
    """Mount points of this mount namespace."""
    return [mount.target for mount in read_mounts()]


def entries(folder: Path) -> list[Path]:
    """What ``folder`` holds, sorted; nothing where it is missing or cannot be read."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


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
