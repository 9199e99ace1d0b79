"""What each build step's cache entry is keyed by, and the fixed inputs of the recipe those keys hash.

A key hashes everything its step's result depends on (suite, packages, requirements, mirror, the tools' versions,
the recipe), so a changed input makes a new entry and an unchanged one is reused. The keys name the entries under
``<cache>/images``: changing what a key hashes, or how, rebuilds every image.
"""

from __future__ import annotations

import dataclasses
import datetime
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from dlcharts.errors import ImageError
from dlcharts.images.definitions import VENV, ImageDef
from dlcharts.images.mirror import debian_mirror
from dlcharts.utils.digest import json_digest

#: every timestamp inside the images (2026-01-01T00:00:00Z)
SOURCE_DATE_EPOCH = 1767225600
#: bumped when this package changes how an image is made, so old cache entries are not reused
RECIPE_VERSION = "1"


def key_hash(data: Any) -> str:
    return json_digest(data, 32)


def tool_version(cmd: Sequence[str]) -> str:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise ImageError(f"{cmd[0]} is not usable ({err}); install it (Debian: apt-get install {cmd[0]})") from err
    return out.strip().splitlines()[0] if out.strip() else ""


def build_root(image: ImageDef) -> ImageDef:
    """The root file system ``image.sdists`` are built in: the image's, plus its ``build_packages``."""
    return dataclasses.replace(image, name=f"{image.name}-build", packages=(*image.packages, *image.build_packages))


def config_args(image: ImageDef) -> list[str]:
    """``umoci config`` arguments of the image's config (part of the image's key)."""
    created = datetime.datetime.fromtimestamp(SOURCE_DATE_EPOCH, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    args = ["--no-history", f"--created={created}", "--author=dl-charts", f"--config.user={image.user}"]
    args += [f"--config.workingdir={image.workdir}", "--clear=config.entrypoint", "--clear=config.env"]
    args += [f"--config.env={e}" for e in image.config_env()]
    args += [f"--config.cmd={c}" for c in image.cmd]
    args += [f"--config.label=org.opencontainers.image.description={image.differs or image.reference}"]
    return args


class CacheKeys:
    """The key of every step's cache entry; the tools' versions (part of the keys) are asked once."""

    def __init__(self) -> None:
        self._versions: dict[str, str] = {}

    def tool_versions(self) -> dict[str, str]:
        if not self._versions:
            self._versions = {
                "mmdebstrap": tool_version(["mmdebstrap", "--version"]),
                "umoci": tool_version(["umoci", "--version"]),
                "pip": tool_version([sys.executable, "-m", "pip", "--version"]).split(" from ")[0],
                "recipe": RECIPE_VERSION,
            }
        return self._versions

    def rootfs_key(self, image: ImageDef) -> str:
        return key_hash(
            {
                "suite": image.suite,
                "packages": sorted(image.packages),
                "hooks": list(image.hooks),
                "mirror": debian_mirror(),
                "mmdebstrap": self.tool_versions()["mmdebstrap"],
                "epoch": SOURCE_DATE_EPOCH,
                "recipe": RECIPE_VERSION,
            }
        )

    def wheels_key(self, image: ImageDef) -> str:
        return key_hash(
            {
                "requirements": sorted(image.requirements),
                "sdists": sorted(image.sdists),
                "build": (self.rootfs_key(build_root(image)), sorted(image.build_env)) if image.sdists else None,
                "python": image.python,
                "glibc": image.glibc,
                "pip": self.tool_versions()["pip"],
                "recipe": RECIPE_VERSION,
            }
        )

    def layer_key(self, image: ImageDef) -> str:
        return key_hash(
            {
                "rootfs": self.rootfs_key(image),
                "wheels": self.wheels_key(image),
                "check": image.check,
                "venv": VENV,
                "system_site_packages": image.system_site_packages,
            }
        )

    def image_key(self, image: ImageDef) -> str:
        return key_hash(
            {
                "rootfs": self.rootfs_key(image),
                "layer": self.layer_key(image) if image.requirements else None,
                "check": image.check,
                "config": config_args(image),
                "tag": image.tag,
                "tools": self.tool_versions(),
            }
        )
