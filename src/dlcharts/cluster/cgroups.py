"""The real node's cgroups: the kubelet's ``cgroupRoot`` ``/dlcharts-<cluster>``, in every hierarchy.

``up`` makes it (cgroup v1 here: one folder per mounted hierarchy, with the root's cpuset copied in, since an
empty cpuset takes no task); ``down`` removes it and everything the kubelet and runc made below it, deepest
first, once no task is left in them.
"""

from __future__ import annotations

import contextlib
from pathlib import Path


def hierarchies() -> list[Path]:
    """Where the cgroup (v1 or v2) hierarchies are mounted."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        if post.split()[0] in ("cgroup", "cgroup2"):
            mounts.append(Path(pre.split()[4]))
    return mounts


def up(name: str) -> None:
    """Make the cgroup ``name`` at the top of every hierarchy."""
    for mount in hierarchies():
        path = mount / name
        path.mkdir(exist_ok=True)
        for setting in ("cpuset.cpus", "cpuset.mems"):  # an empty cpuset takes no task
            if (path / setting).is_file() and not (path / setting).read_text().strip():
                (path / setting).write_text((mount / setting).read_text())


def down(name: str) -> None:
    """Remove the cgroup ``name`` and its children from every hierarchy (those with tasks left stay)."""
    for mount in hierarchies():
        top = mount / name
        if not top.is_dir():
            continue
        dirs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        for d in [*dirs, top]:
            with contextlib.suppress(OSError):
                d.rmdir()
