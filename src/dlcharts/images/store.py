"""The image cache, ``<cache>/images``: what every step works in, and its single-file entries (a rootfs tar, a
layer tar), each written as ``<name>.partial``, renamed when complete, its sha256 recorded in ``<name>.sha256``
and compared before the entry is used."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from dlcharts.images.definitions import ImageDef
from dlcharts.images.keys import CacheKeys
from dlcharts.images.runner import ToolRunner
from dlcharts.toolchain import cache_root
from dlcharts.utils.digest import sha256_file


def images_dir(cache: Path | None = None) -> Path:
    return (cache if cache is not None else cache_root()) / "images"


@dataclasses.dataclass(frozen=True)
class Workspace:
    """What the steps share: the cache folder ``root``, the entries' keys, and the runner of their tools."""

    root: Path
    keys: CacheKeys
    runner: ToolRunner

    @property
    def say(self) -> Callable[[str], None]:
        return self.runner.say

    @property
    def scratch(self) -> Path:
        """Where root file systems are unpacked and sdists downloaded (each in a folder of its own)."""
        return self.root / "tmp"


def verified_file(path: Path, image: ImageDef, step: str, say: Callable[[str], None]) -> bool:
    """Whether ``path`` is cached with its recorded sha256; a damaged entry is reported and deleted."""
    meta = path.with_name(path.name + ".sha256")
    if not path.is_file() or not meta.is_file():
        return False
    want = meta.read_text().strip()
    have = sha256_file(path)
    if have == want:
        return True
    say(f"{image.name}: cached {step} {path.name} is damaged (sha256 {have[:12]}, recorded {want[:12]}); rebuilding")
    path.unlink()
    meta.unlink()
    return False


def partial(path: Path) -> Path:
    """Where the entry ``path`` is written before it is complete."""
    return path.with_name(path.name + ".partial")


def commit_file(path: Path) -> None:
    """Rename the complete ``<path>.partial`` to ``path`` and record its sha256."""
    written = partial(path)
    digest = sha256_file(written)
    written.rename(path)
    path.with_name(path.name + ".sha256").write_text(digest + "\n")
