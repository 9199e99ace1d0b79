"""Step 2, wheels: ``pip download`` on the host (the host's pip configuration is how PyPI is reached) for the
image's Python, glibc and CPU, binary wheels only; ``image.sdists`` are downloaded on the host and built into
wheels in the image's build root (:func:`dlcharts.images.keys.build_root`). The wheelhouse's files are recorded
with their sha256 in ``<key>.json`` beside it."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from dlcharts.images.chroot import chroot, unpacked
from dlcharts.images.definitions import ImageDef
from dlcharts.images.keys import build_root
from dlcharts.images.rootfs import make_rootfs
from dlcharts.images.runner import need_root
from dlcharts.images.store import Workspace
from dlcharts.utils.digest import sha256_file


def verified_wheelhouse(out: Path, image: ImageDef, say: Callable[[str], None]) -> bool:
    """Whether the wheelhouse ``out`` holds exactly its recorded files with their sha256; a damaged one is
    reported (it is replaced by the caller)."""
    meta = out.with_suffix(".json")
    if not (out.is_dir() and meta.is_file()):
        return False
    recorded = json.loads(meta.read_text())["files"]
    actual = {p.name for p in out.iterdir()}
    bad = [n for n, d in recorded.items() if n not in actual or sha256_file(out / n) != d]
    if not bad and actual == set(recorded):
        return True
    say(f"{image.name}: wheelhouse {out.name} is damaged ({', '.join(bad) or 'unexpected files'}); rebuilding")
    return False


def pip_download_command(image: ImageDef, dest: Path) -> list[str]:
    """``pip download`` of binary wheels for the image's Python, glibc and CPU into ``dest`` (requirements follow)."""
    major, minor = image.glibc.split(".")
    platforms = [f"manylinux_{major}_{m}_x86_64" for m in range(int(minor), 4, -1)]
    platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    py = image.python.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(dest), "--only-binary=:all:"]
    cmd += ["--python-version", image.python, "--implementation", "cp", "--abi", f"cp{py}"]
    for platform in platforms:
        cmd += ["--platform", platform]
    return cmd


def make_wheels(ws: Workspace, image: ImageDef, built: list[str]) -> Path:
    """The wheelhouse of the image's requirements, from the cache when it verifies (else made, and "wheels" added
    to ``built``)."""
    out = ws.root / "wheels" / ws.keys.wheels_key(image)
    meta = out.with_suffix(".json")
    if verified_wheelhouse(out, image, ws.say):
        return out
    meta.unlink(missing_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    partial = Path(str(out) + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    cmd = pip_download_command(image, partial)
    binary = [r for r in image.requirements if r not in image.sdists]
    if binary:
        ws.say(f"{image.name}: wheels for Python {image.python}: {' '.join(binary)}")
        ws.runner.run(cmd + binary, image, "wheels")
    if image.sdists:
        build_sdists(ws, image, partial)
    files = {p.name: sha256_file(p) for p in sorted(partial.iterdir())}
    partial.rename(out)
    meta.write_text(json.dumps({"files": files}, indent=1) + "\n")
    built.append("wheels")
    return out


def build_sdists(ws: Workspace, image: ImageDef, wheelhouse: Path) -> None:
    """Download ``image.sdists`` on the host and build each into ``wheelhouse`` in the image's build root."""
    need_root(image, "wheels")
    root = make_rootfs(ws, build_root(image), [])
    with tempfile.TemporaryDirectory(prefix="sdists-", dir=ws.scratch) as src:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary=:all:", "--dest", src]
        ws.say(f"{image.name}: sdists {' '.join(image.sdists)}")
        ws.runner.run([*cmd, *image.sdists], image, "wheels")
        env = " ".join(shlex.quote(e) for e in image.build_env)
        script = (
            f"cd /tmp && for s in /tmp/sdists/*; do env {env} python3 -m pip wheel --no-deps --no-build-isolation "
            '--no-index --wheel-dir /tmp/wheels "$s" || exit 1; done'
        )
        ws.say(f"{image.name}: building {' '.join(image.sdists)} from source ({image.suite}, Python {image.python})")
        with unpacked(root, ws.scratch) as tree:
            chroot(ws.runner, tree, script, image, "wheels", wheels=wheelhouse, writable=True, sdists=Path(src))
