"""Running a script inside an image's root file system: the rootfs tar unpacked in a scratch folder, ``chroot``
in a private mount and pid namespace with /dev and /proc mounted and an environment of our own."""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dlcharts.images.definitions import ImageDef
from dlcharts.images.keys import SOURCE_DATE_EPOCH
from dlcharts.images.runner import ToolRunner


@contextlib.contextmanager
def unpacked(rootfs: Path, scratch: Path) -> Iterator[Path]:
    """``rootfs`` (a tar) unpacked in a fresh folder under ``scratch``, removed afterwards."""
    scratch.mkdir(parents=True, exist_ok=True)
    tree = Path(tempfile.mkdtemp(prefix="rootfs-", dir=scratch))
    try:
        subprocess.run(["tar", "-xf", str(rootfs), "-C", str(tree), "--numeric-owner"], check=True)
        yield tree
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def chroot(
    runner: ToolRunner,
    tree: Path,
    script: str,
    image: ImageDef,
    step: str,
    wheels: Path | None = None,
    writable: bool = False,
    sdists: Path | None = None,
) -> None:
    """Run ``script`` with sh in ``tree``, in a private mount and pid namespace (mounts end with it):
    ``wheels`` at /tmp/wheels (read-only unless ``writable``), ``sdists`` read-only at /tmp/sdists."""
    t = shlex.quote(str(tree))
    # the rootfs tar has no /dev entries (mmdebstrap --skip=output/dev): the runtime provides them
    mounts = f"mkdir -p {t}/dev {t}/proc && mount --rbind /dev {t}/dev && mount -t proc proc {t}/proc"
    for host, at, ro in ((wheels, "wheels", not writable), (sdists, "sdists", True)):
        if host is not None:
            mode = "-o ro " if ro else ""
            mounts += f" && mkdir -p {t}/tmp/{at} && mount --bind {mode}{shlex.quote(str(host))} {t}/tmp/{at}"
    env = [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME=/root",
        "LANG=C.UTF-8",
        f"SOURCE_DATE_EPOCH={SOURCE_DATE_EPOCH}",
        "PIP_CONFIG_FILE=/dev/null",
        "PIP_DISABLE_PIP_VERSION_CHECK=1",
        "PYTHONHASHSEED=0",
    ]
    inner = f"{mounts} && exec chroot {t} /usr/bin/env -i {' '.join(env)} /bin/sh -c {shlex.quote(script)}"
    runner.run(["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c", inner], image, step)
