"""``dlcharts cache dedupe`` and the links made after a push (dlcharts.host.dedupe) on a fake cache tree: copies
of one blob in an OCI layout, two cluster registries and two real nodes' containerd stores become one inode; a copy
whose bytes differ from its name, one on another file system and one of another owner are left alone; a second run
changes nothing and reads nothing."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from dlcharts import cli
from dlcharts.host import dedupe

REGISTRY = "storage/docker/registry/v2/blobs/sha256"
CONTENT = "io.containerd.content.v1.content/blobs/sha256"


def places(cache: Path, hexdigest: str) -> list[Path]:
    """Where the stores keep a blob: a layout, two cluster registries, the registry of `registry up`, two nodes."""
    return [
        cache / "images/oci" / ("a" * 32) / "blobs/sha256" / hexdigest,
        cache / "registry/clusters/one" / REGISTRY / hexdigest[:2] / hexdigest / "data",
        cache / "registry/clusters/two" / REGISTRY / hexdigest[:2] / hexdigest / "data",
        cache / "registry" / REGISTRY / hexdigest[:2] / hexdigest / "data",
        cache / "node-images/one" / CONTENT / hexdigest,
        cache / "node-images/one.real-1" / CONTENT / hexdigest,
    ]


def blob(cache: Path, data: bytes, where: slice = slice(None)) -> tuple[str, list[Path]]:
    """``data`` written as a separate file (its own inode) in each of ``places``[where]."""
    hexdigest = hashlib.sha256(data).hexdigest()
    paths = places(cache, hexdigest)[where]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return hexdigest, paths


def inodes(paths: list[Path]) -> set[int]:
    return {p.stat().st_ino for p in paths}


def test_every_copy_becomes_one_inode_and_a_second_run_reads_nothing(tmp_path: Path) -> None:
    data = os.urandom(300_000)
    hexdigest, paths = blob(tmp_path, data)
    _, other_paths = blob(tmp_path, os.urandom(5000), slice(0, 2))
    assert len(inodes(paths)) == len(paths)

    outcome = dedupe.dedupe(tmp_path)

    assert len(inodes(paths)) == 1 and len(inodes(other_paths)) == 1
    assert all(p.read_bytes() == data for p in paths)
    assert paths[0].stat().st_nlink == len(paths)
    assert outcome.linked == (len(paths) - 1) + (len(other_paths) - 1) and outcome.blobs == 2
    assert outcome.freed >= (len(paths) - 1) * 300_000  # the replaced files' blocks
    assert not outcome.refused and not outcome.skipped
    assert not list(tmp_path.rglob(".*dedupe*"))  # no temporary name left behind

    again = dedupe.dedupe(tmp_path)
    assert (again.linked, again.freed, again.read) == (0, 0, 0)


def test_only_the_digests_named_are_linked(tmp_path: Path) -> None:
    hexdigest, paths = blob(tmp_path, b"layer one")
    _, untouched = blob(tmp_path, b"layer two")
    outcome = dedupe.dedupe(tmp_path, [f"sha256:{hexdigest}"])
    assert len(inodes(paths)) == 1
    assert len(inodes(untouched)) == len(untouched)
    assert outcome.blobs == 1


def test_a_copy_whose_bytes_differ_from_its_name_is_left_alone_and_named(tmp_path: Path) -> None:
    hexdigest, paths = blob(tmp_path, b"the real layer")
    damaged = paths[4]
    damaged.write_bytes(b"the real laye!")  # same size, other bytes: a size check alone would link it
    outcome = dedupe.dedupe(tmp_path)
    assert damaged.read_bytes() == b"the real laye!"
    assert damaged.stat().st_ino not in inodes([p for p in paths if p != damaged])
    assert len(inodes([p for p in paths if p != damaged])) == 1
    assert len(outcome.refused) == 1 and str(damaged) in outcome.refused[0] and hexdigest in outcome.refused[0]


def test_when_the_most_linked_copy_is_damaged_a_good_one_is_kept(tmp_path: Path) -> None:
    hexdigest, paths = blob(tmp_path, b"good bytes")
    # the two nodes' copies are one damaged file: the largest group, which must not become everyone's copy
    paths[4].write_bytes(b"bad  bytes")
    paths[5].unlink()
    os.link(paths[4], paths[5])
    dedupe.dedupe(tmp_path)
    assert all(p.read_bytes() == b"good bytes" for p in paths[:4])
    assert paths[4].read_bytes() == paths[5].read_bytes() == b"bad  bytes"


def test_a_copy_on_another_file_system_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hexdigest, paths = blob(tmp_path, b"some layer")
    far = paths[5].stat().st_ino
    # what st_dev would say of a node store on another disk
    monkeypatch.setattr(dedupe, "_same_device", lambda a, b: far not in (a.st_ino, b.st_ino))
    outcome = dedupe.dedupe(tmp_path)
    assert paths[5].stat().st_ino == far
    assert len(inodes(paths[:5])) == 1
    assert len(outcome.skipped) == 1 and str(paths[5]) in outcome.skipped[0] and "file system" in outcome.skipped[0]


def test_a_link_refused_by_the_kernel_is_skipped_and_the_copy_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hexdigest, paths = blob(tmp_path, b"a layer")
    before = inodes(paths)

    def refuse(src: Path, dst: Path) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(dedupe.os, "link", refuse)
    outcome = dedupe.dedupe(tmp_path)
    assert inodes(paths) == before and all(p.read_bytes() == b"a layer" for p in paths)
    assert outcome.linked == 0 and "another file system" in outcome.skipped[0]
    assert not list(tmp_path.rglob(".*dedupe*"))


def test_dry_run_links_nothing(tmp_path: Path) -> None:
    _, paths = blob(tmp_path, b"x" * 10_000)
    outcome = dedupe.dedupe(tmp_path, dry_run=True)
    assert outcome.linked == len(paths) - 1
    assert len(inodes(paths)) == len(paths)


def test_a_layout_being_written_is_left_to_umoci(tmp_path: Path) -> None:
    hexdigest, paths = blob(tmp_path, b"partial", slice(0, 2))
    partial = tmp_path / "images/oci" / (("b" * 32) + ".partial") / "blobs/sha256" / hexdigest
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"partial")
    dedupe.dedupe(tmp_path)
    assert partial.stat().st_nlink == 1 and paths[0].stat().st_nlink == 2


def test_cache_dedupe_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DLCHARTS_CACHE", str(tmp_path))
    _, paths = blob(tmp_path, os.urandom(100_000))
    assert cli.main(["cache", "dedupe"]) == 0
    out = capsys.readouterr().out
    assert f"linked {len(paths) - 1} copies of 1 blobs" in out
    assert len(inodes(paths)) == 1
    paths[1].unlink()
    paths[1].write_bytes(b"not it")
    assert cli.main(["cache", "dedupe"]) == 1  # a damaged copy: named, and the exit says so
    assert str(paths[1]) in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_copy_of_another_owner_is_skipped(tmp_path: Path) -> None:
    _, paths = blob(tmp_path, b"owned")
    os.chown(paths[3], 4321, 4321)
    outcome = dedupe.dedupe(tmp_path)
    assert paths[3].stat().st_uid == 4321 and paths[3].stat().st_nlink == 1
    assert len(inodes([p for p in paths if p != paths[3]])) == 1
    assert str(paths[3]) in outcome.skipped[0] and "uid 4321" in outcome.skipped[0]


def test_a_push_links_the_registrys_new_copies_of_that_image_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dlcharts.images import build
    from dlcharts.images.definitions import IMAGES

    def put(data: bytes) -> dict[str, object]:
        hexdigest, _ = blob(tmp_path, data, slice(0, 2))  # the layout's copy and registry one's
        return {"digest": f"sha256:{hexdigest}", "size": len(data)}

    config, layer = put(b"{}"), put(os.urandom(20_000))
    manifest = json.dumps({"config": config, "layers": [layer]}).encode()
    top = put(manifest)
    layout = places(tmp_path, "0" * 64)[0].parents[2]
    (layout / "index.json").write_text(json.dumps({"manifests": [{"digest": top["digest"]}]}))
    _, unrelated = blob(tmp_path, b"another image's layer", slice(0, 2))
    monkeypatch.setattr(build, "push_layout", lambda *args: "pushed")
    builder = build.Builder(tmp_path, say=lambda line: None)
    result = build.BuildResult(IMAGES["busybox"], str(top["digest"]), 0, 0, 0.0, [], layout)

    assert builder.push(result, "127.0.0.1:5000") == "pushed"

    for desc in (top, config, layer):
        assert len(inodes(places(tmp_path, str(desc["digest"]).removeprefix("sha256:"))[:2])) == 1
    assert len(inodes(unrelated)) == 2
