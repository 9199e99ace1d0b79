"""Step 3, layer: the rootfs unpacked in a scratch folder; in a private mount namespace with /dev and /proc
mounted and the wheels bound read-only, ``chroot`` runs ``python3 -m venv /opt/venv`` and ``pip install
--no-index --find-links`` with an environment of our own (no PIP_* of the host, no pip.conf is read:
PIP_CONFIG_FILE=/dev/null). /opt/venv becomes a second layer: a GNU tar sorted by name, owner 0, every mtime
SOURCE_DATE_EPOCH."""

from __future__ import annotations

import shlex
from pathlib import Path

from dlcharts.images.chroot import chroot, unpacked
from dlcharts.images.definitions import VENV, ImageDef
from dlcharts.images.keys import SOURCE_DATE_EPOCH
from dlcharts.images.runner import need_root
from dlcharts.images.store import Workspace, commit_file, partial, verified_file


def tar_create(out: Path, tree: Path) -> list[str]:
    """GNU tar arguments for a reproducible layer of paths under ``tree`` (names follow)."""
    return [
        "tar",
        "--create",
        f"--file={out}",
        f"--directory={tree}",
        "--sort=name",
        "--format=posix",
        "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
        f"--mtime=@{SOURCE_DATE_EPOCH}",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
    ]


def install_script(image: ImageDef) -> str:
    """The shell script that makes the venv at VENV from the wheels at /tmp/wheels, offline, and checks it."""
    reqs = " ".join(shlex.quote(r) for r in image.requirements)
    script = (
        f"python3 -m venv {'--system-site-packages ' if image.system_site_packages else ''}{VENV} && "
        f"{VENV}/bin/pip install --quiet --no-index --find-links /tmp/wheels --no-cache-dir {reqs}"
    )
    if image.check:
        script += f" && PATH={VENV}/bin:$PATH sh -c {shlex.quote(image.check)}"
    return script


def make_layer(ws: Workspace, image: ImageDef, rootfs: Path, wheels: Path, built: list[str]) -> Path:
    """The venv layer tar, from the cache when it verifies (else made, and "layer" added to ``built``)."""
    out = ws.root / "layers" / f"{ws.keys.layer_key(image)}.tar"
    if verified_file(out, image, "layer", ws.say):
        return out
    need_root(image, "layer")
    out.parent.mkdir(parents=True, exist_ok=True)
    script = install_script(image)
    ws.say(f"{image.name}: installing {' '.join(image.requirements)} offline into {VENV}")
    with unpacked(rootfs, ws.scratch) as tree:
        chroot(ws.runner, tree, script, image, "layer", wheels=wheels)
        ws.runner.run([*tar_create(partial(out), tree), VENV.lstrip("/")], image, "layer")
    commit_file(out)
    built.append("layer")
    return out
