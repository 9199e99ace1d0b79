"""The helper image: built from Debian packages with mmdebstrap and umoci, pushed with crane to the local
registry, read back from it; a second build is a no-op; damaged cache entries are rebuilt, not trusted.

Builds use the shared cache ($DLCHARTS_CACHE/images), so after the first run on a machine they only
verify digests; the damaged-rootfs test works on a copy in a temporary cache.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dlcharts.errors import ImageError
from dlcharts.host import registry
from dlcharts.images import IMAGES, Builder, BuildResult, verify_layout

HELPER = IMAGES["busybox"]


@pytest.fixture(scope="module")
def local_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reg = registry.Registry(tmp_path_factory.mktemp("registry"))
    yield reg.start().address
    reg.stop()


@pytest.fixture(scope="module")
def helper() -> BuildResult:
    return Builder().build(HELPER)


def crane(*args: str) -> str:
    proc = subprocess.run(
        [str(registry.tool_path("crane")), *args],
        capture_output=True,
        text=True,
        check=False,
        env={"DOCKER_CONFIG": "/nonexistent", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_helper_image_is_pushed_with_the_expected_config(helper: BuildResult, local_registry: str) -> None:
    pushed = Builder().push(helper, local_registry)
    ref = f"{local_registry}/busybox:1.37.0"
    assert pushed == f"{ref}@{helper.digest}"
    assert crane("digest", ref).strip() == helper.digest

    manifest: dict[str, Any] = json.loads(crane("manifest", ref))
    assert manifest["schemaVersion"] == 2
    assert manifest["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json"
    assert [layer["mediaType"] for layer in manifest["layers"]] == ["application/vnd.oci.image.layer.v1.tar+gzip"]
    assert helper.size == manifest["config"]["size"] + manifest["layers"][0]["size"]

    config: dict[str, Any] = json.loads(crane("config", ref))
    assert (config["os"], config["architecture"]) == ("linux", "amd64")
    assert config["created"] == "2026-01-01T00:00:00Z"
    assert config["config"]["User"] == "1000:1000"
    assert config["config"]["WorkingDir"] == "/"
    assert config["config"]["Cmd"] == ["sh"]
    assert not config["config"].get("Entrypoint")
    assert "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" in config["config"]["Env"]
    assert not [e for e in config["config"]["Env"] if e.startswith("PIP_")]
    assert len(config["rootfs"]["diff_ids"]) == 1


def test_pulled_image_has_busybox_applets_and_python(helper: BuildResult, local_registry: str, tmp_path: Path) -> None:
    Builder().push(helper, local_registry)
    tar = tmp_path / "fs.tar"
    crane("export", f"{local_registry}/busybox:1.37.0", str(tar))
    with tarfile.open(tar) as fs:
        members = {m.name.removeprefix("./"): m for m in fs.getmembers()}
    assert members["usr/local/bin/nslookup"].linkname == "/usr/bin/busybox"
    assert members["usr/bin/busybox"].isfile()
    assert "usr/bin/python3" in members
    assert not [name for name in members if name.startswith("etc/pip") or name.endswith(".deb")]


def test_push_to_a_secure_registry_logs_in_and_trusts_its_ca(
    helper: BuildResult, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`dlcharts images build --push` goes to the secure registry (HTTPS, login): crane gets its CA and login from
    the registry's Access, and the pushed manifest is the built one."""
    reg = registry.Registry(tmp_path_factory.mktemp("secure-registry"), secure=True)
    state = reg.start()
    try:
        assert state.access is not None
        pushed = Builder().push(helper, state.address, state.access)
        assert pushed == f"{state.address}/busybox:1.37.0@{helper.digest}"
        with pytest.raises(ImageError, match="x509: certificate signed by unknown authority"):  # without its Access
            Builder().push(helper, state.address)
    finally:
        reg.stop()


def test_second_build_is_a_no_op(helper: BuildResult) -> None:
    meta = helper.layout.with_suffix(".json")
    before = meta.stat().st_mtime_ns
    again = Builder().build(HELPER)
    assert again.built == []
    assert again.digest == helper.digest
    assert meta.stat().st_mtime_ns == before


def test_damaged_layer_blob_is_rebuilt(helper: BuildResult) -> None:
    manifest = json.loads((helper.layout / "blobs" / "sha256" / helper.digest.split(":")[1]).read_text())
    blob = helper.layout / "blobs" / "sha256" / manifest["layers"][0]["digest"].split(":")[1]
    # a damaged copy of this layout's own: the blob may be a hard link shared with the registry's and the nodes'
    # stores (dlcharts cache dedupe), which truncating it in place would damage too
    damaged = blob.with_name(blob.name + ".damaged")
    damaged.write_bytes(blob.read_bytes()[: blob.stat().st_size // 2])
    damaged.replace(blob)
    assert "has" in verify_layout(helper.layout, helper.digest)

    messages: list[str] = []
    rebuilt = Builder(say=messages.append).build(HELPER)
    assert any("is damaged" in m for m in messages), messages
    assert rebuilt.built == ["oci"]
    assert verify_layout(rebuilt.layout, rebuilt.digest) == ""
    assert rebuilt.digest == helper.digest  # umoci output is reproducible from the same layers


def test_truncated_rootfs_is_rebuilt(helper: BuildResult, tmp_path: Path) -> None:
    """On a copy of the cache: a truncated rootfs tar (and no finished image) makes mmdebstrap run again."""
    shared = Builder()
    key = shared.rootfs_key(HELPER)
    cache = tmp_path / "cache"
    rootfs = cache / "images" / "rootfs" / f"{key}.tar"
    rootfs.parent.mkdir(parents=True)
    source = shared.rootfs(HELPER)  # cached (the helper fixture built it), verified
    shutil.copyfile(source, rootfs)
    shutil.copyfile(source.with_name(source.name + ".sha256"), rootfs.with_name(rootfs.name + ".sha256"))
    shutil.copytree(shared.root / "debs", cache / "images" / "debs")  # no package download needed
    with rootfs.open("r+b") as fh:
        fh.truncate(1 << 20)

    messages: list[str] = []
    rebuilt = Builder(cache, say=messages.append).build(HELPER)
    assert any("rootfs" in m and "is damaged" in m for m in messages), messages
    assert rebuilt.built == ["rootfs", "oci"]
    # mmdebstrap with SOURCE_DATE_EPOCH is bit-for-bit reproducible for the same package versions: the rebuild
    # equals the shared cache's helper, or, when that one predates a mirror update (which changes the digest), a
    # build from scratch now
    if rebuilt.digest != helper.digest:
        fresh = tmp_path / "fresh"
        shutil.copytree(shared.root / "debs", fresh / "images" / "debs")
        assert rebuilt.digest == Builder(fresh).build(HELPER).digest


def test_venv_layer_from_offline_wheels_and_damaged_wheelhouse(helper: BuildResult, tmp_path: Path) -> None:
    """A small image with a PyPI requirement takes the framework images' path (wheels on the host, offline
    install in a chroot, a second layer at /opt/venv); a changed wheel in the cache is caught and fetched again."""
    small = dataclasses.replace(
        HELPER,
        name="six",
        repository="dl-charts-test/six",
        tag="1.17.0",
        requirements=("six==1.17.0",),
        cmd=("python3",),
        check="python3 -c 'import six; assert six.__version__ == \"1.17.0\"'",
    )
    cache = tmp_path / "cache"
    (cache / "images" / "rootfs").mkdir(parents=True)
    source = Builder().rootfs(HELPER)
    for suffix in ("", ".sha256"):  # the shared rootfs, so only the wheels, the layer and the image are built
        shutil.copyfile(str(source) + suffix, str(cache / "images" / "rootfs" / source.name) + suffix)

    first = Builder(cache).build(small)
    assert first.built == ["wheels", "layer", "oci"]
    manifest = json.loads((first.layout / "blobs" / "sha256" / first.digest.split(":")[1]).read_text())
    assert manifest["layers"][0]["digest"] == helper_layer(helper)  # the root layer is shared with the helper
    with tarfile.open(first.layout / "blobs" / "sha256" / manifest["layers"][1]["digest"].split(":")[1]) as layer:
        names = layer.getnames()
        assert all(n.startswith("opt/venv") for n in names)
        assert any(n.endswith("site-packages/six.py") for n in names)
        assert {m.mtime for m in layer.getmembers()} == {1767225600}
        assert {(m.uid, m.gid) for m in layer.getmembers()} == {(0, 0)}
        cfg = layer.extractfile("opt/venv/pyvenv.cfg")
        assert cfg is not None and b"PIP_" not in cfg.read()

    wheel = next((cache / "images" / "wheels").glob("*/six-*.whl"))
    wheel.write_bytes(wheel.read_bytes()[:-10])
    shutil.rmtree(first.layout)  # no finished image: the build needs (and verifies) its inputs again
    messages: list[str] = []
    again = Builder(cache, say=messages.append).build(small)
    assert any("wheelhouse" in m and "is damaged" in m and "six-" in m for m in messages), messages
    assert again.built == ["wheels", "oci"]  # the layer (keyed by the requirement set) still verifies
    assert again.digest == first.digest


def helper_layer(helper: BuildResult) -> str:
    manifest = json.loads((helper.layout / "blobs" / "sha256" / helper.digest.split(":")[1]).read_text())
    return str(manifest["layers"][0]["digest"])
