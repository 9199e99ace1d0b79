"""One file for each blob, however many stores keep it: identical image blobs hard-linked by their sha256.

An image's compressed blobs (its manifest, config and layers) are kept, byte for byte, in up to three kinds of store
under ``$DLCHARTS_CACHE``, each naming a blob by its sha256:

    images/oci/<key>/blobs/sha256/<hex>                                    the built OCI layout (dlcharts.images.oci)
    registry[/clusters/<name>]/storage/docker/registry/v2/blobs/sha256/<xx>/<hex>/data   each registry's storage
    node-images/<name>[.real-<i>]/io.containerd.content.v1.content/blobs/sha256/<hex>   each real node's containerd

Without links, a framework image's layer is a separate file in each of them: once in its layout, once per cluster
registry, once per real node. :func:`dedupe` makes every copy of one blob a hard link to one file. That is safe
because none of these stores ever writes into an existing blob file: each writes a new blob elsewhere and renames it
into place only when the name is free (umoci; distribution's blob writer and ``blobStore.Put`` check first;
containerd's content writer refuses an existing target), and each removes a blob by unlinking its name, which leaves
the other links whole. File mode and times are the link's, shared: the stores only read and unlink their blobs.

Each copy is read and its sha256 compared with its name before it is linked (the name alone is the writer's claim:
a copy damaged on disk, or one a store left truncated, would otherwise become every store's copy). A copy whose
bytes differ from its name is left alone and named (``refused``). Reading costs once per copy: a copy already linked
to the kept file is the same inode and is not read again, so a dedupe of blobs already linked is ``stat`` calls only.
Copies on another file system (``st_dev``), or of another owner, are skipped: a link cannot cross file systems, and
a link would hand one user's store a file of another's. A copy is replaced by linking the kept file to a temporary
name beside it and renaming that over the copy (``os.replace``), so a reader never finds the name missing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from dlcharts.host.system import entries
from dlcharts.utils.digest import sha256_file

#: a registry's blob data, below its storage folder (distribution's filesystem driver)
REGISTRY_BLOBS = Path("docker/registry/v2/blobs/sha256")
#: a containerd root's content blobs
CONTAINERD_BLOBS = Path("io.containerd.content.v1.content/blobs/sha256")


def _is_hex(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


@dataclasses.dataclass(frozen=True)
class Stores:
    """The blob folders under ``cache``, found once: the OCI layouts', each registry's, each real node's."""

    layouts: tuple[Path, ...]
    registries: tuple[Path, ...]
    nodes: tuple[Path, ...]

    @classmethod
    def under(cls, cache: Path) -> Stores:
        layouts = [p / "blobs" / "sha256" for p in entries(cache / "images" / "oci") if p.is_dir()]
        # a layout still being written (<key>.partial) is umoci's to change: left out
        layouts = [p for p in layouts if not p.parent.parent.name.endswith(".partial")]
        registry = cache / "registry"
        roots = [registry, *(p for p in entries(registry / "clusters") if p.is_dir())]
        registries = [r / "storage" / REGISTRY_BLOBS for r in roots]
        nodes = [p / CONTAINERD_BLOBS for p in entries(cache / "node-images") if p.is_dir()]
        return cls(*(tuple(p for p in found if p.is_dir()) for found in (layouts, registries, nodes)))

    def paths(self, hexdigest: str) -> list[Path]:
        """Where a blob of this sha256 is, in every store (only what exists), layouts first."""
        found = [folder / hexdigest for folder in self.layouts]
        found += [folder / hexdigest[:2] / hexdigest / "data" for folder in self.registries]
        found += [folder / hexdigest for folder in self.nodes]
        return [p for p in found if os.path.lexists(p)]

    def all_blobs(self) -> dict[str, list[Path]]:
        """Every blob of every store, by sha256 (hex), in the order of :meth:`paths`."""
        found: dict[str, list[Path]] = {}
        for folder in self.layouts:
            for path in entries(folder):
                if _is_hex(path.name):
                    found.setdefault(path.name, []).append(path)
        for folder in self.registries:
            for prefix in entries(folder):
                for blob in entries(prefix):
                    if _is_hex(blob.name) and os.path.lexists(blob / "data"):
                        found.setdefault(blob.name, []).append(blob / "data")
        for folder in self.nodes:
            for path in entries(folder):
                if _is_hex(path.name):
                    found.setdefault(path.name, []).append(path)
        return found


@dataclasses.dataclass
class Outcome:
    """What a dedupe did (or, dry, would do)."""

    #: copies replaced by a link to the kept file
    linked: int = 0
    #: disk blocks freed: those of each replaced file none of whose links is left
    freed: int = 0
    #: bytes read to check digests
    read: int = 0
    #: blobs looked at
    blobs: int = 0
    seconds: float = 0.0
    #: copies whose bytes differ from their name: left alone
    refused: list[str] = dataclasses.field(default_factory=list)
    #: copies not linked, and why (another file system, another owner, a link refused)
    skipped: list[str] = dataclasses.field(default_factory=list)


def dedupe(
    cache: Path, digests: Iterable[str] | None = None, *, dry_run: bool = False, stores: Stores | None = None
) -> Outcome:
    """Hard-link every copy of each blob in ``digests`` (``sha256:<hex>`` or ``<hex>``; None: every blob of every
    store) under ``cache`` to one file (see the module's docstring)."""
    started = time.monotonic()
    stores = stores or Stores.under(cache)
    outcome = Outcome()
    if digests is None:
        todo = stores.all_blobs()
    else:
        hexes = dict.fromkeys(d.removeprefix("sha256:") for d in digests if d.startswith("sha256:") or _is_hex(d))
        todo = {h: stores.paths(h) for h in hexes if _is_hex(h)}
    for hexdigest, paths in todo.items():
        if len(paths) > 1:
            outcome.blobs += 1
            link_copies(hexdigest, paths, outcome, dry_run=dry_run)
    outcome.seconds = time.monotonic() - started
    return outcome


def _same_device(a: os.stat_result, b: os.stat_result) -> bool:
    """Whether a link from one to the other can be made (a test makes them differ)."""
    return a.st_dev == b.st_dev


def link_copies(hexdigest: str, paths: list[Path], outcome: Outcome, *, dry_run: bool = False) -> None:
    """Make every path of ``paths`` (copies of the blob ``hexdigest``) one file: the copies are grouped by inode, the
    largest group whose bytes match the digest is kept, every other matching copy is replaced by a link to it."""
    groups: dict[tuple[int, int], tuple[os.stat_result, list[Path]]] = {}
    for path in paths:
        try:
            st = path.lstat()
        except OSError:  # removed by its store since it was listed
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        groups.setdefault((st.st_dev, st.st_ino), (st, []))[1].append(path)
    if len(groups) < 2:
        return
    # the inode with the most names is kept (fewest to replace); on a tie the first found: a layout's, then a
    # registry's, then a node's
    order = sorted(groups.values(), key=lambda g: -len(g[1]))
    keeper: tuple[os.stat_result, list[Path]] | None = None
    others = []
    for st, names in order:
        if not _matches(hexdigest, st, names[0], outcome):
            continue
        if keeper is None:
            keeper = (st, names)
        else:
            others.append((st, names))
    if keeper is None:
        return
    kept_st, kept_names = keeper
    for st, names in others:
        if not _same_device(st, kept_st):
            outcome.skipped.append(f"{names[0]}: on another file system than {kept_names[0]} (no link can cross)")
            continue
        if st.st_uid != kept_st.st_uid:
            outcome.skipped.append(
                f"{names[0]}: owned by uid {st.st_uid}, {kept_names[0]} by uid {kept_st.st_uid}; left as it is"
            )
            continue
        replaced = 0
        for name in names:
            if dry_run or _replace(kept_names[0], name, st, outcome):
                replaced += 1
        outcome.linked += replaced
        if replaced == st.st_nlink:  # no name of the old file is left: its blocks are free
            outcome.freed += st.st_blocks * 512


def _matches(hexdigest: str, st: os.stat_result, path: Path, outcome: Outcome) -> bool:
    try:
        have = sha256_file(path)
    except OSError as exc:
        outcome.skipped.append(f"{path}: unreadable ({exc.strerror or exc}); left as it is")
        return False
    outcome.read += st.st_size
    if have != hexdigest:
        outcome.refused.append(
            f"{path}: its sha256 is {have}, not the {hexdigest} its name says; left alone (a damaged copy: remove it "
            "and let its store fetch the blob again)"
        )
        return False
    return True


def _replace(kept: Path, path: Path, was: os.stat_result, outcome: Outcome) -> bool:
    """Put a link to ``kept`` at ``path`` (which was ``was`` when read): linked to a temporary name beside it, then
    renamed over it, so that ``path`` always names a whole blob."""
    temp = path.with_name(f".{path.name}.dedupe-{os.getpid()}")
    try:
        now = path.lstat()
        if (now.st_dev, now.st_ino) != (was.st_dev, was.st_ino):  # its store removed or replaced it since
            return False
        os.link(kept, temp)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if exc.errno == errno.ENOENT:  # removed by its store meanwhile: nothing to link
            return False
        why = {errno.EXDEV: "another file system", errno.EMLINK: "too many links"}.get(exc.errno or 0, exc.strerror)
        outcome.skipped.append(f"{path}: could not link it to {kept} ({why or exc}); left as it is")
        return False
    return True
