"""``dlcharts cache``: what ``$DLCHARTS_CACHE`` holds, part by part and per cluster name, and what ``prune`` removes.

The parts, and who writes them:

    clusters/<name>/            a cluster's state (dlcharts.cluster.cluster_layout); kwokctl removes it at ``down``
    node-images/<name>[.real-<i>]   each real node's containerd store (dlcharts.cluster.node_layout): kept at ``down``
    registry/clusters/<name>/   each cluster's registry, its storage kept at ``down`` (dlcharts.cluster.node_registry)
    registry/ (the rest)        the registry of ``dlcharts registry up``: what a person pushed there
    run/                        locks, kwokctl's log per cluster name, the logs of a failed start
    bin/<name>-<version>/       built binaries (dlcharts.host.binaries, by pinned version)
    build/<folder>/             the generated Go modules they are built from (dlcharts.gobuild)
    images/                     image builds, each entry named by its key (dlcharts.images.keys): rootfs/, wheels/,
                                layers/, oci/; debs/ (apt's cache for the next rootfs), logs/, tmp/ (scratch)
    renders/                    the render cache (dlcharts.render)

Sizes are disk usage by blocks, as ``du`` counts them: a file hard-linked in several places is counted once (in the
first part that holds it), and no mount under the cache is entered.

A cluster runs while any process it recorded is alive: its control plane's and add-ons' (clusters/<name>), its real
nodes' and its registry's. That is wider than ``EmbeddedCluster.is_running`` (an API server that answers): a half-
stopped cluster, or one whose registry outlived it, counts as running, so that ``prune`` never takes a store from a
process that may still use it. A pid that another program reused makes a stopped cluster look running: kept, the
safe side.

``prune`` removes what no running cluster and no current pin uses: every store of a cluster that does not run, the
binaries and Go modules of versions no longer pinned (src/dlcharts/versions.env, of this checkout), image builds
whose key is no longer one of the current images', scratch, and renders not used for ``days`` days. It holds the lock
of what it removes (a cluster's, the binaries', the images'), without waiting: what is busy is skipped and named.
A store with a mount still under it (a node stopped uncleanly: containerd's overlay snapshots, the kubelet's volumes)
is refused, naming the mount; ``dlcharts cluster down --name NAME`` unmounts it. So is a stopped cluster whose real
nodes' state a crash or reboot left: what ``down`` cleans up (network, cgroups) is recorded there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from dlcharts import gobuild
from dlcharts.cluster.cluster_layout import ClusterLayout
from dlcharts.cluster.node_layout import NodeLayout
from dlcharts.cluster.node_registry import registry_for
from dlcharts.errors import DLChartsError, ImageError
from dlcharts.host import binaries, procs, system
from dlcharts.host.system import Mount, entries, read_mounts
from dlcharts.utils.flock import LockTimeout, locked

#: where the mounts are read from (a test points it at a file of its own)
MOUNTINFO = system.MOUNTINFO
#: renders not used for this many days are pruned (the render cache reads each result by its content's hash)
RENDER_DAYS = 30
#: a real node's store beside real-0's: ``<name>.real-<i>`` (dlcharts.cluster.node_layout; a cluster name has no dot)
NODE_STORE = ".real-"


# ------------------------------------------------------------------------------------------------------ disk usage


def read_mounts_here() -> list[Mount]:
    """This namespace's mounts (from MOUNTINFO); empty where they cannot be read."""
    try:
        return read_mounts(MOUNTINFO)
    except OSError:
        return []


def mounts_in(path: Path, mounts: Iterable[Mount]) -> list[Mount]:
    """The mounts at or under ``path``, and the overlays built from a folder under it."""
    root = os.path.realpath(path)

    def inside(target: str) -> bool:
        return target == root or target.startswith(root.rstrip("/") + "/")

    return [m for m in mounts if inside(m.target) or any(inside(layer) for layer in m.layers)]


@dataclasses.dataclass
class Usage:
    #: blocks of what these paths hold, a hard link met before (in this measure or an earlier one) not again
    bytes: int = 0
    #: what removing these paths frees: the blocks of every file all of whose links are among them
    freeable: int = 0
    files: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.bytes + other.bytes, self.freeable + other.freeable, self.files + other.files)


class DiskUsage:
    """``du`` over several parts: a hard-linked file is counted once, in the first part measured that holds it;
    mounts (``mounts``) are not entered, nor another file system (``du -x``)."""

    def __init__(self, mounts: Iterable[Mount] = ()) -> None:
        self.seen: set[tuple[int, int]] = set()
        self.skip = {m.target for m in mounts}

    def of(self, paths: Iterable[Path]) -> Usage:
        usage = Usage()
        links: dict[tuple[int, int], list[int]] = {}  # inode -> [links met here, its link count, its blocks]
        for path in paths:
            for st in self._walk(path):
                usage.files += 1
                size = st.st_blocks * 512
                if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                    key = (st.st_dev, st.st_ino)
                    if key in links:
                        links[key][0] += 1
                        continue
                    links[key] = [1, st.st_nlink, size]
                    if key in self.seen:
                        continue
                    self.seen.add(key)
                else:
                    usage.freeable += size
                usage.bytes += size
        usage.freeable += sum(size for met, nlink, size in links.values() if met >= nlink)
        return usage

    def _walk(self, path: Path) -> Iterator[os.stat_result]:
        try:
            top = path.lstat()
        except OSError:
            return
        yield top
        if not stat.S_ISDIR(top.st_mode):
            return
        todo = [str(path)]
        while todo:
            folder = todo.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:  # unreadable: what it holds is not counted
                continue
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if st.st_dev != top.st_dev or entry.path in self.skip:
                        continue
                    todo.append(entry.path)
                yield st


# ------------------------------------------------------------------------------------------------------ the parts


@dataclasses.dataclass
class Item:
    """One thing in the cache: ``part`` (``node-images``, ``images/rootfs``, ...), ``name`` (a cluster name, a
    binary's folder, an image build's key), its paths and size, and why ``prune`` removes it (``removable``) or
    keeps it (``why``)."""

    part: str
    name: str
    paths: tuple[Path, ...]
    usage: Usage = dataclasses.field(default_factory=Usage)
    removable: bool = False
    why: str = ""
    cluster: str = ""


def cluster_names(cache: Path) -> list[str]:
    """Every cluster name that has something in the cache: state, a node store, a registry or a kwokctl log."""
    names = {p.name for p in entries(cache / "clusters") if p.is_dir()}
    names |= {p.name.partition(NODE_STORE)[0] for p in entries(cache / "node-images")}
    names |= {p.name for p in entries(cache / "registry" / "clusters") if p.is_dir()}
    names |= {p.name.removesuffix(".kwokctl.log") for p in entries(cache / "run") if p.name.endswith(".kwokctl.log")}
    return sorted(names)


def cluster_paths(name: str, cache: Path) -> dict[str, list[Path]]:
    """What the cluster ``name`` keeps in the cache, by part (only what exists). The lock file stays: a process may
    be waiting on it, and a removed lock file would let a second holder in."""
    layout = ClusterLayout(name, cache)
    stores = [NodeLayout.of(layout.state_dir, name, "", cache).image_store]
    stores += sorted((cache / "node-images").glob(f"{name}{NODE_STORE}*"))
    found = {
        "clusters": [layout.state_dir],
        "node-images": stores,
        "registry": [registry_for(name, cache).root],
        "run": [layout.kwokctl_log, layout.run_dir / f"{name}-failed-logs"],
    }
    return {part: [p for p in paths if os.path.lexists(p)] for part, paths in found.items()}


def cluster_processes(name: str, cache: Path) -> dict[str, int]:
    """The processes of cluster ``name`` that are alive, by what they are: its control plane's and add-ons' (pid files
    in its state), each real node's, its registry's."""
    state = ClusterLayout(name, cache).state_dir
    recorded = {**procs.pids(state / "pids"), **procs.pids(state / "addons" / "pids")}
    for index in NodeLayout.indexes_on_disk(state):
        node = NodeLayout.of(state, name, "", cache, index)
        recorded.update({f"{node.name} {part}": pid for part, pid in node.pids().items()})
    recorded.update(procs.pids(registry_for(name, cache).root))
    return {what: pid for what, pid in recorded.items() if procs.alive(pid)}


def running_clusters(cache: Path) -> dict[str, dict[str, int]]:
    """The clusters that run (any process they recorded alive), with those processes."""
    found = {name: cluster_processes(name, cache) for name in cluster_names(cache)}
    return {name: alive for name, alive in found.items() if alive}


def _processes(alive: dict[str, int]) -> str:
    return ", ".join(f"{what} pid {pid}" for what, pid in sorted(alive.items()))


def _by_key(folder: Path) -> dict[str, list[Path]]:
    """An image-cache folder's entries grouped by the key that names them (``<key>``, ``<key>.json``,
    ``<key>.tar.sha256``); an unfinished one (``.partial``) is grouped under ``.partial``."""
    groups: dict[str, list[Path]] = {}
    for path in entries(folder):
        key = ".partial" if path.name.endswith(".partial") else path.name.split(".")[0]
        groups.setdefault(key, []).append(path)
    return groups


def current_image_keys() -> dict[str, set[str]]:
    """The keys of every current image's entries, by folder of ``<cache>/images`` (ImageError: a tool the keys hash
    the version of is missing)."""
    from dlcharts.images.definitions import IMAGES
    from dlcharts.images.keys import CacheKeys, build_root

    keys = CacheKeys()
    found: dict[str, set[str]] = {"rootfs": set(), "wheels": set(), "layers": set(), "oci": set()}
    for image in IMAGES.values():
        found["rootfs"].add(keys.rootfs_key(image))
        if image.sdists:
            found["rootfs"].add(keys.rootfs_key(build_root(image)))
        if image.requirements:
            found["wheels"].add(keys.wheels_key(image))
            found["layers"].add(keys.layer_key(image))
        found["oci"].add(keys.image_key(image))
    return found


def pinned_folders() -> tuple[set[str], set[str]]:
    """The folders of bin/ and build/ that the pins of this checkout's versions.env name."""
    specs = [spec for spec in binaries.TABLE.values() if not spec.tools_folder]
    bins = {spec.path(Path()).parent.name for spec in specs}
    modules = {spec.module.folder for spec in specs if isinstance(spec.module, gobuild.Wrapper | gobuild.Kubernetes)}
    return bins, modules


class Inventory:
    """Everything under ``cache``, measured, each item marked removable or kept (see the module's docstring)."""

    def __init__(
        self,
        cache: Path,
        *,
        days: float = RENDER_DAYS,
        now: float | None = None,
        image_keys: Callable[[], dict[str, set[str]]] | None = None,
    ) -> None:
        self.cache = cache
        self.days = days
        self.now = time.time() if now is None else now
        self.mounts = read_mounts_here()
        self.du = DiskUsage(self.mounts)
        self.running = running_clusters(cache)
        self.image_keys_problem = ""
        try:
            self.image_keys = (image_keys or current_image_keys)()
        except (ImageError, DLChartsError) as exc:
            self.image_keys, self.image_keys_problem = {}, str(exc)
        self.items: list[Item] = []
        self._clusters()
        self._binaries()
        self._images()
        self._renders()
        self._rest()

    def measure(self, item: Item) -> Item:
        item.usage = self.du.of(item.paths)
        self.items.append(item)
        return item

    @property
    def covered(self) -> set[Path]:
        return {p for item in self.items for p in item.paths}

    def _clusters(self) -> None:
        for name in cluster_names(self.cache):
            alive = self.running.get(name)
            why = f"running: {_processes(alive)}" if alive else "stopped"
            for part, paths in cluster_paths(name, self.cache).items():
                if paths:
                    self.measure(Item(part, name, tuple(paths), removable=not alive, why=why, cluster=name))

    def _binaries(self) -> None:
        bins, modules = pinned_folders()
        for part, pinned in (("bin", bins), ("build", modules)):
            for path in entries(self.cache / part):
                if path.name.startswith("."):  # the build lock
                    continue
                if part == "build" and path.name.startswith("out."):  # gobuild's output folder of a build cut short
                    self.measure(Item(part, path.name, (path,), removable=True, why="scratch of a build"))
                elif path.name in pinned:
                    self.measure(Item(part, path.name, (path,), why="pinned"))
                else:
                    self.measure(Item(part, path.name, (path,), removable=True, why="version no longer pinned"))

    def _images(self) -> None:
        images = self.cache / "images"
        for folder in ("rootfs", "wheels", "layers", "oci"):
            current = self.image_keys.get(folder)
            for key, paths in _by_key(images / folder).items():
                if key == ".partial":
                    self.measure(Item(f"images/{folder}", key, tuple(paths), removable=True, why="an unfinished build"))
                elif current is None:
                    why = f"kept: the current keys are unknown ({self.image_keys_problem})"
                    self.measure(Item(f"images/{folder}", key, tuple(paths), why=why))
                elif key in current:
                    self.measure(Item(f"images/{folder}", key, tuple(paths), why="a current image's"))
                else:
                    why = "key no longer current"
                    self.measure(Item(f"images/{folder}", key, tuple(paths), removable=True, why=why))
        scratch = entries(images / "tmp")
        if scratch:
            self.measure(Item("images/tmp", "scratch", tuple(scratch), removable=True, why="scratch"))

    def _renders(self) -> None:
        old: list[Path] = []
        recent: list[Path] = []
        for path in entries(self.cache / "renders"):
            with contextlib.suppress(OSError):
                st = path.lstat()
                # a cached render is only read: the access time (once a day under relatime) is when it was last used
                used = max(st.st_atime, st.st_mtime)
                (old if self.now - used > self.days * 86400 else recent).append(path)
        if old:
            why = f"not used for {self.days:g} days"
            self.measure(Item("renders", "old", tuple(old), removable=True, why=why))
        if recent:
            self.measure(Item("renders", "recent", tuple(recent), why=f"used in the last {self.days:g} days"))

    def _rest(self) -> None:
        """Everything no rule above covers is kept: the registry of ``dlcharts registry up``, run/'s locks, debs/,
        logs/, tools/, ..."""
        covered = self.covered
        holding = {parent for path in covered for parent in path.parents}
        todo = entries(self.cache)
        while todo:
            path = todo.pop(0)
            if path in covered or path.name.endswith(".lock"):  # a lock holds no data; it must stay, for its holder
                continue
            if path in holding:  # a folder holding covered items: its other entries, one by one
                todo += entries(path)
                continue
            rel = path.relative_to(self.cache)
            kind = "/".join(rel.parts[:2]) if rel.parts[0] == "images" else rel.parts[0]  # images/debs, images/logs
            self.measure(Item(kind, str(rel), (path,), why="kept"))

    # ----- views
    def removable(self) -> list[Item]:
        return [i for i in self.items if i.removable]

    def by_part(self) -> dict[str, Usage]:
        parts: dict[str, Usage] = {}
        for item in self.items:
            top = item.part.split("/")[0]
            parts[top] = parts.get(top, Usage()) + item.usage
        return parts


# ------------------------------------------------------------------------------------------------------------ prune


@dataclasses.dataclass
class Outcome:
    """What a prune removed (or, dry, would), what it skipped and why, and what failed."""

    removed: list[tuple[Item, int]] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)

    @property
    def freed(self) -> int:
        return sum(freed for _, freed in self.removed)


def prune(inventory: Inventory, *, dry_run: bool = False) -> Outcome:
    """Remove every removable item of ``inventory`` (each cluster's under its lock, once more checked to be stopped
    and without mounts; bin/ and build/ under the build lock; images/ under the images' lock)."""
    outcome = Outcome()
    todo = inventory.removable()
    clusters = sorted({i.cluster for i in todo if i.cluster})
    for name in clusters:
        items = [i for i in todo if i.cluster == name]
        _remove_cluster(inventory.cache, name, items, outcome, dry_run=dry_run)
    groups = (  # the parts, the lock their builder holds (dlcharts.gobuild, dlcharts.images.build), who holds it
        (("bin", "build"), inventory.cache / "bin" / ".build.lock", "a binary build"),
        (("images",), inventory.cache / "images" / ".lock", "an image build"),
        (("renders",), None, ""),
    )
    for parts, lock, holder in groups:
        items = [i for i in todo if not i.cluster and i.part.split("/")[0] in parts]
        if not items:
            continue
        try:
            with _held(lock, dry_run):
                for item in items:
                    _remove(item, outcome, dry_run=dry_run)
        except LockTimeout as exc:
            outcome.skipped.append(f"{', '.join(parts)}: {holder} is running (lock {exc.path}); prune again after it")
    return outcome


def purge(name: str, cache: Path, *, dry_run: bool = False) -> Outcome:
    """Remove the stores of the cluster ``name`` (``cluster down --purge``): refused while it runs."""
    outcome = Outcome()
    alive = cluster_processes(name, cache)
    du = DiskUsage(read_mounts_here())
    items = []
    for part, paths in cluster_paths(name, cache).items():
        if paths:
            item = Item(part, name, tuple(paths), removable=not alive, why="purged", cluster=name)
            item.usage = du.of(item.paths)
            items.append(item)
    _remove_cluster(cache, name, items, outcome, dry_run=dry_run)
    return outcome


@contextlib.contextmanager
def _held(lock: Path | None, dry_run: bool) -> Iterator[None]:
    if lock is None or dry_run or not lock.parent.is_dir():
        yield
        return
    with locked(lock, timeout=0):
        yield


def _remove_cluster(cache: Path, name: str, items: list[Item], outcome: Outcome, *, dry_run: bool) -> None:
    layout = ClusterLayout(name, cache)
    try:
        with contextlib.nullcontext() if dry_run else layout.lock(timeout=0):
            alive = cluster_processes(name, cache)  # again, under its lock: it may have started since
            if alive:
                outcome.skipped.append(f"cluster {name}: running ({_processes(alive)}); stop it first: dlcharts "
                                       f"cluster down --name {name}")  # fmt: skip
                return
            if NodeLayout.indexes_on_disk(layout.state_dir):
                # a crash or reboot left its state: the node's records (network, cgroups, mounts) are what `down`
                # cleans up from, and would be lost with it
                outcome.failed.append(
                    f"cluster {name}: its real nodes' state is left from a crash or reboot ({layout.state_dir}); "
                    f"clean it up with `dlcharts cluster down --name {name}`, then run this again"
                )
                return
            mounts = read_mounts_here()
            held = [m for item in items for path in item.paths for m in mounts_in(path, mounts)]
            if held:
                outcome.failed.append(
                    f"cluster {name}: {held[0].describe()} is still mounted"
                    + (f" (and {len(held) - 1} more)" if len(held) > 1 else "")
                    + f" under its stores; unmount them with `dlcharts cluster down --name {name}`, then run this again"
                )
                return
            for item in items:
                _remove(item, outcome, dry_run=dry_run)
    except LockTimeout as exc:
        outcome.skipped.append(f"cluster {name}: being started or stopped (lock {exc.path}); run this again after it")


def _remove(item: Item, outcome: Outcome, *, dry_run: bool) -> None:
    if dry_run:
        outcome.removed.append((item, item.usage.freeable))
        return
    errors: list[str] = []
    for path in item.paths:
        _delete(path, errors)
    left = [p for p in item.paths if os.path.lexists(p)]
    freed = item.usage.freeable - (DiskUsage().of(left).freeable if left else 0)
    outcome.removed.append((item, max(freed, 0)))
    if errors:
        outcome.failed.append(f"{errors[0]}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))


def _delete(path: Path, errors: list[str]) -> None:
    def failed(_func: Any, where: str, exc_info: Any) -> None:
        exc = exc_info[1]
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, OSError) and exc.errno in (errno.EPERM, errno.EACCES):
            why += " (owned by another user: run as that user or root; or immutable: `lsattr -d`, `chattr -i`)"
        elif isinstance(exc, OSError) and exc.errno == errno.EBUSY:
            why += " (a mount point: unmount it)"
        errors.append(f"could not remove {where}: {why}")

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, onerror=failed)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            failed(None, str(path), (type(exc), exc, None))


# ---------------------------------------------------------------------------------------------------------- output


def size(n: int) -> str:
    """Bytes as ``du -h`` writes them, in powers of 1024."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - the loop returns


def go_caches() -> list[tuple[str, Path | None, str]]:
    """Go's build and module caches (label, path, a note): not ours, every Go build on the machine shares them."""
    from dlcharts.host.preflight import go_env

    go = gobuild.find_go()
    if go is None:
        return [("Go", None, "no go")]
    env = go_env(Path(go))
    return [(label, Path(env[key]) if env.get(key) else None, "" if env.get(key) else f"`go env {key}` said nothing")
            for label, key in (("Go build cache", "GOCACHE"), ("Go module cache", "GOMODCACHE"))]  # fmt: skip


#: what each part of the cache is, for the report
PARTS = {
    "clusters": "each cluster's state (a stopped cluster leaves none)",
    "node-images": "each real node's containerd store, kept when its cluster stops",
    "registry": "each cluster's registry (registry/clusters/<name>), and that of `dlcharts registry up`",
    "images": "image builds: root file systems, wheels, layers, OCI layouts, .debs, scratch",
    "bin": "built binaries, a folder per version",
    "build": "the Go modules the binaries are built from",
    "renders": "the render cache",
    "run": "locks, kwokctl's log per cluster name, logs of failed starts",
}


def report(inventory: Inventory, go: list[tuple[str, Path | None, str]] | None = None) -> list[str]:
    """``dlcharts cache``: the parts, the kinds, the cluster names, what prune would free; Go's caches when given."""
    parts = inventory.by_part()
    total = sum((u for u in parts.values()), Usage())
    lines = [f"{inventory.cache}: {size(total.bytes)} (disk blocks; a file hard-linked in several places counted once)"]
    for part, usage in sorted(parts.items(), key=lambda kv: -kv[1].bytes):
        lines.append(f"  {part:<12} {size(usage.bytes):>10}  {PARTS.get(part, '')}".rstrip())
    lines.append("by kind (prune: what `dlcharts cache prune` removes):")
    kinds: dict[str, list[Item]] = {}
    for item in inventory.items:
        if not item.cluster:
            kinds.setdefault(item.part, []).append(item)
    for kind, items in sorted(kinds.items()):
        usage = sum((i.usage for i in items), Usage())
        gone = [i for i in items if i.removable]
        pruned = sum((i.usage for i in gone), Usage())
        what = f"{usage.files} files" if kind == "renders" else f"{len(items)} entr{'y' if len(items) == 1 else 'ies'}"
        prune_note = f"prune: {len(gone)}, {size(pruned.freeable)} ({gone[0].why})" if gone else "prune: none"
        lines.append(f"  {kind:<14} {size(usage.bytes):>10}  {what}; {prune_note}")
    names = sorted({i.cluster for i in inventory.items if i.cluster})
    cluster_parts = ("clusters", "node-images", "registry", "run")
    lines.append("per cluster name (running: a process it recorded is alive; prune removes a stopped one's stores):")
    header = "".join(f"{p:>13}" for p in (*cluster_parts, "total"))
    lines.append(f"  {'name':<24}{'':<9}{header}")
    for name in names:
        mine = [i for i in inventory.items if i.cluster == name]
        by = {p: sum((i.usage for i in mine if i.part == p), Usage()) for p in cluster_parts}
        cells = "".join(f"{size(u.bytes) if u.files else '-':>13}" for u in by.values())
        state = "running" if name in inventory.running else "stopped"
        lines.append(f"  {name:<24}{state:<9}{cells}{size(sum(u.bytes for u in by.values())):>13}")
    if not names:
        lines.append("  (none)")
    gone = inventory.removable()
    freed = sum(i.usage.freeable for i in gone)
    lines.append(f"prune would free {size(freed)} ({len(gone)} entries): `dlcharts cache prune --dry-run` lists them")
    if inventory.image_keys_problem:
        lines.append(f"image builds are all kept: their current keys are unknown ({inventory.image_keys_problem})")
    if go is not None:
        lines.append("not ours (Go's own, shared by every Go build on this machine; prune leaves them):")
        du = DiskUsage(inventory.mounts)
        for label, path, note in go:
            if path is None:
                lines.append(f"  {label}: {note}")
            else:
                lines.append(f"  {label:<16} {size(du.of([path]).bytes):>10}  {path}")
    return lines


def outcome_lines(outcome: Outcome, cache: Path, *, dry_run: bool) -> list[str]:
    """One line per item removed (or, dry, to remove), then the skipped and failed ones, then the bytes freed."""
    verb = "would remove" if dry_run else "removed"
    lines = []
    for item, freed in outcome.removed:
        where = ", ".join(str(p.relative_to(cache)) for p in item.paths[:3])
        more = f" and {len(item.paths) - 3} more" if len(item.paths) > 3 else ""
        owner = f"cluster {item.cluster}, " if item.cluster else ""
        lines.append(f"{verb} {where}{more}: {size(freed)} ({owner}{item.why})")
    lines += [f"skipped {line}" for line in outcome.skipped]
    lines += [f"failed: {line}" for line in outcome.failed]
    lines.append(f"{'would free' if dry_run else 'freed'} {size(outcome.freed)} in {cache}")
    return lines
