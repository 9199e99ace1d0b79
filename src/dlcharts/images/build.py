"""Build the local images from Debian packages and PyPI wheels, without Docker, with kept tools.

Steps, each cached under ``$DLCHARTS_CACHE/images/`` by a key that hashes everything it depends on:

1. rootfs  ``mmdebstrap --variant=minbase`` of the image's suite and packages from the Debian mirror of
           this machine's apt sources, written as a tar with ``SOURCE_DATE_EPOCH`` (mmdebstrap then makes
           it bit-for-bit reproducible). Downloaded .debs are kept in ``debs/`` for the next rootfs.
2. wheels  ``pip download`` on the host (the host's pip configuration is how PyPI is reached) for the
           image's Python, glibc and CPU, binary wheels only.
3. layer   the rootfs unpacked in a scratch folder; in a private mount namespace with /dev and /proc
           mounted and the wheels bound read-only, ``chroot`` runs ``python3 -m venv /opt/venv`` and
           ``pip install --no-index --find-links`` with an environment of our own (no PIP_* of the host,
           no pip.conf is read: PIP_CONFIG_FILE=/dev/null). /opt/venv becomes a second layer: a GNU tar
           sorted by name, owner 0, every mtime SOURCE_DATE_EPOCH.
4. oci     ``umoci`` (init, new, raw add-layer, config) writes an OCI image layout with the config (user,
           env, working directory, cmd, no entrypoint, created = SOURCE_DATE_EPOCH, no history).
5. push    ``crane push`` of that layout to the local registry (see dlcharts.host.registry).

A step whose result is in the cache is verified before it is used: every file's sha256 is compared with
the digest recorded when it was made (for an OCI layout: every blob against its own digest). A damaged
entry (truncated tar, missing or changed blob) is reported, deleted and rebuilt, never used. With every
step cached, a build only verifies digests.

Each step is a module of this package: ``rootfs``, ``wheels``, ``layers`` (step 3), ``oci``, ``push``. Their cache
keys are in ``keys``, the cache folder and its verified files in ``store``, the tools run through ``runner`` and
``chroot``. :class:`Builder` runs the steps in order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dlcharts.errors import ImageError
from dlcharts.host.registry_access import Access
from dlcharts.images.definitions import IMAGES, ImageDef
from dlcharts.images.keys import RECIPE_VERSION, SOURCE_DATE_EPOCH, CacheKeys, build_root
from dlcharts.images.layers import make_layer
from dlcharts.images.oci import (
    cached_layout,
    layout_digests,
    layout_path,
    layout_summary,
    make_layout,
    verify_layout,
)
from dlcharts.images.push import push_layout
from dlcharts.images.rootfs import make_rootfs
from dlcharts.images.runner import ToolRunner
from dlcharts.images.store import Workspace, images_dir
from dlcharts.images.wheels import make_wheels
from dlcharts.utils.flock import locked

__all__ = [
    "RECIPE_VERSION",
    "SOURCE_DATE_EPOCH",
    "BuildResult",
    "Builder",
    "build_images",
    "build_root",
    "images_dir",
    "layout_summary",
    "verify_layout",
]


@dataclasses.dataclass(frozen=True)
class BuildResult:
    image: ImageDef
    digest: str  # manifest digest (sha256:...)
    size: int  # compressed: config + layers, what a node pulls
    rootfs_size: int  # uncompressed layers
    seconds: float
    built: list[str]  # the steps that ran (empty: everything came from the cache)
    layout: Path
    step_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    pushed: str = ""  # registry reference with digest, when pushed


class Builder:
    """Builds images into ``<cache>/images`` (tool output goes to ``<cache>/images/logs/<image>.log``)."""

    def __init__(self, cache: Path | None = None, *, say: Callable[[str], None] | None = None) -> None:
        self.root = images_dir(cache)
        self.say = say or (lambda line: print(line, file=sys.stderr))
        self.logs = self.root / "logs"
        self.keys = CacheKeys()
        self.workspace = Workspace(self.root, self.keys, ToolRunner(self.logs, self.say))

    # ----- keys
    def tool_versions(self) -> dict[str, str]:
        return self.keys.tool_versions()

    def rootfs_key(self, image: ImageDef) -> str:
        return self.keys.rootfs_key(image)

    def wheels_key(self, image: ImageDef) -> str:
        return self.keys.wheels_key(image)

    def layer_key(self, image: ImageDef) -> str:
        return self.keys.layer_key(image)

    def image_key(self, image: ImageDef) -> str:
        return self.keys.image_key(image)

    # ----- public
    def build(self, image: ImageDef) -> BuildResult:
        started = time.monotonic()
        built: list[str] = []
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / ".lock"):
            clock = _Clock()
            with clock("verify"):
                cached = cached_layout(self.workspace, image)
            layout, meta = cached if cached is not None else self._steps(image, built, clock)
        return BuildResult(
            image=image,
            digest=meta["digest"],
            size=meta["size"],
            rootfs_size=meta["rootfs_size"],
            seconds=time.monotonic() - started,
            built=built,
            layout=layout,
            step_seconds=clock.seconds,
        )

    def _steps(self, image: ImageDef, built: list[str], clock: _Clock) -> tuple[Path, dict[str, Any]]:
        """The steps in order, each from the cache when its entry verifies (the steps that ran go to ``built``)."""
        with clock("rootfs"):
            rootfs = make_rootfs(self.workspace, image, built)
        layer = None
        if image.requirements:
            with clock("wheels"):
                wheels = make_wheels(self.workspace, image, built)
            with clock("layer"):
                layer = make_layer(self.workspace, image, rootfs, wheels, built)
        with clock("oci"):
            return make_layout(self.workspace, image, rootfs, layer, built)

    def rootfs(self, image: ImageDef) -> Path:
        """The image's root file system tar (mmdebstrap), from the cache when it verifies."""
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / ".lock"):
            return make_rootfs(self.workspace, image, [])

    def push(self, result: BuildResult, registry: str, access: Access | None = None) -> str:
        """Push the built layout to ``registry`` (host:port; ``access``: its CA and login, for a secure one);
        return ``<ref>@<digest>``."""
        pushed = push_layout(self.workspace.runner, result.image, result.layout, result.digest, registry, access)
        self.link_blobs(result)
        return pushed

    def link_blobs(self, result: BuildResult) -> None:
        """Hard-link the copies of the image's blobs that the registries and real nodes under this cache keep to
        one file (dlcharts.host.dedupe): after a push, the registry's new copy; after a pull, the nodes'. Only
        these few blobs are looked at; a copy already linked is not read again. Never fails the caller: what could
        not be linked is said."""
        from dlcharts.host.dedupe import dedupe

        try:
            outcome = dedupe(self.root.parent, layout_digests(result.layout))
        except (OSError, ValueError, KeyError) as exc:
            self.say(f"{result.image.name}: its blobs' copies were not linked: {exc}")
            return
        if outcome.linked:
            self.say(
                f"{result.image.name}: {outcome.linked} copies of its blobs hard-linked to one file "
                f"({outcome.freed / 2**20:.0f} MiB freed, {outcome.seconds:.1f}s)"
            )
        for line in outcome.refused + outcome.skipped:
            self.say(f"{result.image.name}: not linked: {line}")

    def is_cached(self, image: ImageDef) -> bool:
        """Whether a finished layout of ``image`` is in the cache (its blobs are checked when it is used)."""
        layout = layout_path(self.workspace, image)
        return layout.is_dir() and layout.with_suffix(".json").is_file()


class _Clock:
    """``with clock("step"):`` adds the block's wall seconds to ``clock.seconds["step"]``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[step] = round(self.seconds.get(step, 0.0) + time.monotonic() - started, 2)


def build_images(names: Sequence[str], cache: Path | None = None) -> list[BuildResult]:
    unknown = [n for n in names if n not in IMAGES]
    if unknown:
        raise ImageError(f"unknown image {', '.join(unknown)}; known: {', '.join(IMAGES)}")
    builder = Builder(cache)
    return [builder.build(IMAGES[n]) for n in (names or list(IMAGES))]
