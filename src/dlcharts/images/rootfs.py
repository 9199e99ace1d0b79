"""Step 1, rootfs: ``mmdebstrap --variant=minbase`` of the image's suite and packages from the Debian mirror of
this machine's apt sources, written as a tar with ``SOURCE_DATE_EPOCH`` (mmdebstrap then makes it bit-for-bit
reproducible). Downloaded .debs are kept in ``<images>/debs/`` for the next rootfs."""

from __future__ import annotations

import shlex
from pathlib import Path

from dlcharts.images.definitions import ImageDef
from dlcharts.images.keys import SOURCE_DATE_EPOCH
from dlcharts.images.mirror import debian_mirror
from dlcharts.images.runner import need_root
from dlcharts.images.store import Workspace, commit_file, partial, verified_file


def mmdebstrap_command(image: ImageDef, debs: Path, out: Path, mirror: str) -> list[str]:
    """The mmdebstrap command writing ``image``'s root file system tar to ``out``, with ``debs`` as its .deb cache."""
    archives = '"$1"/var/cache/apt/archives'
    q = shlex.quote(str(debs))
    return [
        "mmdebstrap",
        "--quiet",
        "--mode=root",
        "--variant=minbase",
        "--format=tar",
        f"--include={','.join(sorted(image.packages))}",
        # keep the downloaded .debs between builds: apt reuses a cached .deb only when its hash matches
        "--skip=download/empty",
        "--skip=output/dev",
        f"--setup-hook=mkdir -p {archives} && find {q} -maxdepth 1 -name '*.deb' -exec cp -t {archives} {{}} +",
        f"--customize-hook=find {archives} -maxdepth 1 -name '*.deb' -exec cp -t {q} {{}} + && rm -f {archives}/*.deb",
        *(f"--customize-hook={hook}" for hook in image.hooks),
        image.suite,
        str(out),
        mirror,
    ]


def make_rootfs(ws: Workspace, image: ImageDef, built: list[str]) -> Path:
    """The image's root file system tar, from the cache when it verifies (else made, and "rootfs" added to
    ``built``)."""
    out = ws.root / "rootfs" / f"{ws.keys.rootfs_key(image)}.tar"
    if verified_file(out, image, "rootfs", ws.say):
        return out
    need_root(image, "rootfs")
    mirror = debian_mirror()
    debs = ws.root / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    cmd = mmdebstrap_command(image, debs, partial(out), mirror)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial(out).unlink(missing_ok=True)  # left by a failed run
    ws.say(f"{image.name}: rootfs {image.suite} [{' '.join(sorted(image.packages))}] from {mirror}")
    ws.runner.run(cmd, image, "rootfs", env={"SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)})
    commit_file(out)
    built.append("rootfs")
    return out
