"""Step 4, oci: ``umoci`` (init, new, raw add-layer, config) writes an OCI image layout with the config (user,
env, working directory, cmd, no entrypoint, created = SOURCE_DATE_EPOCH, no history). A cached layout is used
only when every blob checks against its own digest; ``<key>.json`` beside it records the manifest digest and
sizes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from dlcharts.images.chroot import chroot, unpacked
from dlcharts.images.definitions import ImageDef
from dlcharts.images.keys import config_args
from dlcharts.images.store import Workspace
from dlcharts.utils.digest import sha256_file


def blob(layout: Path, digest: str) -> Path:
    algo, _, hexdigest = digest.partition(":")
    return layout / "blobs" / algo / hexdigest


def read_manifest(layout: Path) -> tuple[str, dict[str, Any]]:
    """(digest, manifest) of the layout's one image."""
    index = json.loads((layout / "index.json").read_text())
    manifests = index.get("manifests", [])
    if len(manifests) != 1:
        raise ValueError(f"index.json lists {len(manifests)} manifests, expected 1")
    digest = manifests[0]["digest"]
    return digest, json.loads(blob(layout, digest).read_text())


def verify_layout(layout: Path, digest: str) -> str:
    """'' when every blob the layout's image needs is there with its digest and size; else what is wrong."""
    try:
        have, manifest = read_manifest(layout)
        if have != digest:
            return f"index.json names {have}, recorded {digest}"
        blobs: list[dict[str, Any]] = [{"digest": digest, "size": blob(layout, digest).stat().st_size}]
        blobs += [manifest["config"], *manifest["layers"]]
        for desc in blobs:
            path = blob(layout, desc["digest"])
            if not path.is_file():
                return f"blob {desc['digest']} is missing"
            if path.stat().st_size != desc["size"]:
                return f"blob {desc['digest']} has {path.stat().st_size} bytes, not {desc['size']}"
            if "sha256:" + sha256_file(path) != desc["digest"]:
                return f"blob {desc['digest']} does not match its digest"
    except (OSError, ValueError, KeyError) as err:
        return f"unreadable: {err}"
    return ""


def layout_digests(layout: Path) -> list[str]:
    """The digests of every blob the layout's image is made of: its manifest, config and layers."""
    digest, manifest = read_manifest(layout)
    return [digest, manifest["config"]["digest"], *(layer["digest"] for layer in manifest["layers"])]


def layout_summary(layout: Path) -> tuple[str, int]:
    """(manifest digest, compressed size of config + layers: what a node pulls)."""
    digest, manifest = read_manifest(layout)
    return digest, manifest["config"]["size"] + sum(layer["size"] for layer in manifest["layers"])


def layout_path(ws: Workspace, image: ImageDef) -> Path:
    return ws.root / "oci" / ws.keys.image_key(image)


def cached_layout(ws: Workspace, image: ImageDef) -> tuple[Path, dict[str, Any]] | None:
    """The finished layout when it is cached and every blob checks out (then no input is needed)."""
    layout = layout_path(ws, image)
    meta_path = layout.with_suffix(".json")
    if not (layout.is_dir() and meta_path.is_file()):
        return None
    meta: dict[str, Any] = json.loads(meta_path.read_text())
    problem = verify_layout(layout, meta.get("digest", ""))
    if not problem:
        return layout, meta
    ws.say(f"{image.name}: cached OCI layout {layout.name} is damaged ({problem}); rebuilding")
    meta_path.unlink()
    shutil.rmtree(layout)
    return None


def make_layout(
    ws: Workspace, image: ImageDef, rootfs: Path, layer: Path | None, built: list[str]
) -> tuple[Path, dict[str, Any]]:
    """The OCI layout of ``rootfs`` and ``layer`` with the image's config, and its recorded summary ("oci" is
    added to ``built``). An image without a venv layer runs its check in the rootfs first."""
    layout = layout_path(ws, image)
    meta_path = layout.with_suffix(".json")
    if not layer and image.check:
        with unpacked(rootfs, ws.scratch) as tree:
            chroot(ws.runner, tree, image.check, image, "check")
    meta_path.unlink(missing_ok=True)
    shutil.rmtree(layout, ignore_errors=True)
    partial = Path(str(layout) + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    target = f"{partial}:{image.tag}"
    ws.say(f"{image.name}: OCI image {image.reference} (umoci)")
    run = ws.runner.run
    run(["umoci", "init", "--layout", str(partial)], image, "oci")
    run(["umoci", "new", "--image", target], image, "oci")
    for tar in (rootfs, layer):
        if tar is not None:
            run(["umoci", "raw", "add-layer", "--no-history", "--image", target, str(tar)], image, "oci")
    run(["umoci", "config", "--image", target, *config_args(image)], image, "oci")
    run(["umoci", "gc", "--layout", str(partial)], image, "oci")
    digest, size = layout_summary(partial)
    rootfs_size = sum(tar.stat().st_size for tar in (rootfs, layer) if tar is not None)
    partial.rename(layout)
    meta = {"digest": digest, "size": size, "rootfs_size": rootfs_size, "reference": image.reference}
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    built.append("oci")
    return layout, meta
