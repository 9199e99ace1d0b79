"""``dlcharts cache``, ``cache prune`` and ``cluster down --purge`` (dlcharts.cluster.cache) on a fake cache tree:
sizes per kind and cluster name, hard links counted once, what prune removes and what it must keep."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from dlcharts import cli, gobuild
from dlcharts.cluster import cache
from dlcharts.host import binaries

MIB = 1 << 20
#: an image build key that is current in these tests, and one that is not
CURRENT, OLD = "c" * 32, "0" * 32


def write(path: Path, size: int = MIB) -> Path:
    """A file of ``size`` bytes that are really written (not sparse: du counts its blocks)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return path


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache with: a running cluster ``live`` (a pid file with this test's pid, as kwokctl writes them) and a
    stopped one ``gone`` (its stores, no state), each with a node store and a registry; a pinned and an unpinned
    binary; a current and an old OCI layout; no Go."""
    root = tmp_path / "cache"
    monkeypatch.setenv("DLCHARTS_CACHE", str(root))
    monkeypatch.setattr(gobuild, "find_go", lambda: None)
    monkeypatch.setattr(cache, "current_image_keys", lambda: {"rootfs": set(), "wheels": set(), "layers": set(),
                                                              "oci": {CURRENT}})  # fmt: skip
    monkeypatch.setattr(cache, "MOUNTINFO", tmp_path / "mountinfo")
    (tmp_path / "mountinfo").write_text("")
    (root / "clusters" / "live" / "pids").mkdir(parents=True)
    (root / "clusters" / "live" / "pids" / "kube-apiserver.pid").write_text(f"{os.getpid()}\n")
    for name in ("live", "gone"):
        write(root / "node-images" / name / "content" / "blob", 2 * MIB)
        write(root / "node-images" / f"{name}.real-1" / "content" / "blob", MIB)
        write(root / "registry" / "clusters" / name / "storage" / "blob", MIB)
    write(root / "bin" / f"etcd-{binaries.ETCD_VERSION}" / "etcd")
    write(root / "bin" / "etcd-v3.0.0" / "etcd")
    write(root / "images" / "oci" / CURRENT / "blobs" / "a")
    write(root / "images" / "oci" / OLD / "blobs" / "a")
    (root / "images" / "oci" / f"{OLD}.json").write_text("{}")
    return root


def sizes(lines: list[str], first: str) -> list[str]:
    """The cells of the report line that starts with ``first`` (after its indent)."""
    found = [line.split() for line in lines if line.strip().startswith(first + " ")]
    assert len(found) == 1, (first, lines)
    return found[0]


def test_report_sizes_each_kind_and_cluster_name(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # live: node-images 3 MiB (2 on real-0, 1 on real-1), registry 1 MiB; the folders' own blocks add a few KiB
    live = sizes(lines, "live")
    assert live[1] == "running" and live[3] == "KiB", live  # clusters/live: the pid file and its folders
    assert live[4:6] == ["3.0", "MiB"] and live[6:8] == ["1.0", "MiB"], live
    gone = sizes(lines, "gone")
    assert gone[1] == "stopped" and gone[2] == "-" and gone[3:5] == ["3.0", "MiB"], gone
    assert sizes(lines, "node-images")[1:3] == ["6.0", "MiB"]
    assert sizes(lines, "images/oci")[1:3] == ["2.0", "MiB"]
    assert "  Go: no go" in lines
    # what prune would free: gone's 4 MiB, the unpinned binary's and the old layout's 1 MiB each
    assert any(line.startswith("prune would free 6.0 MiB") for line in lines), lines


def test_a_hard_linked_file_is_counted_once(tmp_path: Path) -> None:
    blob = write(tmp_path / "images" / "oci" / "k" / "blob", 4 * MIB)
    (tmp_path / "registry").mkdir()
    os.link(blob, tmp_path / "registry" / "blob")
    du = cache.DiskUsage()
    first, second = du.of([tmp_path / "images"]), du.of([tmp_path / "registry"])
    assert 4 * MIB <= first.bytes < 4 * MIB + 64 * 1024, first
    assert second.bytes < 64 * 1024, second  # the same blocks: met in images/ first
    # removing one of the two places frees nothing of the blob; removing both frees it
    alone = cache.DiskUsage().of([tmp_path / "registry"])
    assert alone.bytes >= 4 * MIB and alone.freeable < 64 * 1024, alone
    both = cache.DiskUsage().of([tmp_path / "images", tmp_path / "registry"])
    assert 4 * MIB <= both.freeable == both.bytes < 4 * MIB + 64 * 1024, both


def test_prune_removes_a_stopped_clusters_stores_and_an_unpinned_version_and_keeps_the_running_ones(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["cache", "prune"]) == 0
    out = capsys.readouterr().out
    for gone in ("node-images/gone", "node-images/gone.real-1", "registry/clusters/gone", "bin/etcd-v3.0.0",
                 f"images/oci/{OLD}", f"images/oci/{OLD}.json"):  # fmt: skip
        assert not (root / gone).exists(), gone
        assert gone in out, out
    for kept in ("node-images/live", "node-images/live.real-1", "registry/clusters/live", "clusters/live",
                 f"bin/etcd-{binaries.ETCD_VERSION}/etcd", f"images/oci/{CURRENT}/blobs/a"):  # fmt: skip
        assert (root / kept).exists(), kept
    assert "kept cluster live's stores: it runs (kube-apiserver)" in out
    freed = [line for line in out.splitlines() if line.startswith("freed ")]
    assert freed and freed[0].startswith("freed 6.0 MiB"), out


def test_a_cluster_whose_registry_still_runs_is_kept(root: Path) -> None:
    (root / "registry" / "clusters" / "gone" / "registry.pid").write_text(f"{os.getpid()}\n")
    outcome = cache.prune(cache.Inventory(root))
    assert (root / "node-images" / "gone").is_dir()
    assert not [item for item, _ in outcome.removed if item.cluster]


def test_dry_run_lists_and_removes_nothing(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    assert cli.main(["cache", "prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove node-images/gone, node-images/gone.real-1: 3.0 MiB (cluster gone, stopped)" in out, out
    assert "would remove bin/etcd-v3.0.0: 1.0 MiB (version no longer pinned)" in out, out
    assert "would free 6.0 MiB" in out
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_prune_refuses_a_store_with_a_mount_under_it(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node stopped uncleanly leaves a container's overlay mounted: its lower layer is a snapshot in the store."""
    snapshot = root / "node-images" / "gone" / "snapshots" / "7" / "fs"
    snapshot.mkdir(parents=True)
    (tmp_path / "mountinfo").write_text(
        f"812 30 0:97 / /run/ctr/rootfs rw,relatime shared:1 - overlay overlay rw,lowerdir={snapshot},"
        f"upperdir=/tmp/u,workdir=/tmp/w\n"
    )
    assert cli.main(["cache", "prune"]) == 1
    err = capsys.readouterr().err
    assert "cluster gone: /run/ctr/rootfs (overlay) is still mounted under its stores" in err, err
    assert "dlcharts cluster down --name gone" in err
    assert snapshot.is_dir() and (root / "registry" / "clusters" / "gone").is_dir()
    assert not (root / "bin" / "etcd-v3.0.0").exists()  # the rest is pruned all the same


def test_prune_refuses_a_crashed_clusters_node_state(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its node.json records what `cluster down` cleans up (network, cgroups): prune leaves that to `down`."""
    (root / "clusters" / "gone" / "node").mkdir(parents=True)
    assert cli.main(["cache", "prune"]) == 1
    assert "clean it up with `dlcharts cluster down --name gone`" in capsys.readouterr().err
    assert (root / "clusters" / "gone" / "node").is_dir() and (root / "node-images" / "gone").is_dir()


def test_mountinfo_paths_are_unescaped(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text("36 35 98:0 / /mnt/a\\040b rw - ext4 /dev/vda rw\n")
    assert cache.mounts_in(Path("/mnt/a b/c").parent, cache.read_mounts(info)) == [cache.Mount("/mnt/a b", "ext4")]
    assert cache.mounts_in(Path("/mnt/a"), cache.read_mounts(info)) == []


def test_renders_unused_for_days_are_pruned(root: Path) -> None:
    old, recent = write(root / "renders" / "old.json", 4096), write(root / "renders" / "new.json", 4096)
    month = time.time() - 31 * 86400
    os.utime(old, (month, month))
    cache.prune(cache.Inventory(root, days=30))
    assert not old.exists() and recent.exists()


def test_down_purge_removes_that_clusters_stores(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cluster", "down", "--name", "gone", "--purge"]) == 0
    out = capsys.readouterr().out
    assert not any((root / "node-images").glob("gone*")) and not (root / "registry" / "clusters" / "gone").exists()
    assert "removed node-images/gone, node-images/gone.real-1: 3.0 MiB" in out, out
    assert (root / "node-images" / "live").is_dir() and (root / "bin" / "etcd-v3.0.0").is_dir()


def test_purge_refuses_a_running_cluster(root: Path) -> None:
    outcome = cache.purge("live", root)
    assert not outcome.removed and "cluster live: running (kube-apiserver pid" in outcome.skipped[0]
    assert (root / "node-images" / "live").is_dir()
