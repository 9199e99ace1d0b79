"""dlcharts.host.preflight: every precondition found at once, each with its fix, before any build."""

from __future__ import annotations

import collections
import socket
from pathlib import Path

import pytest

from dlcharts import gobuild
from dlcharts.errors import ClusterError
from dlcharts.host import preflight
from tests.support import ROOT


def test_host_packages_file_names_a_package_and_a_purpose_for_each_tool() -> None:
    tools = preflight.host_tools()
    assert {"containerd", "runc", "/usr/lib/cni/bridge", "iptables", "ipset", "mmdebstrap", "umoci"} <= {
        t.tool for t in tools
    }
    assert all(t.package and t.purpose for t in tools)
    assert preflight.HOST_PACKAGES_FILE.is_relative_to(ROOT / "src" / "dlcharts")  # package data: pip users too


def test_missing_packages_are_named_once_each(tmp_path: Path) -> None:
    listing = tmp_path / "host-packages.txt"
    listing.write_text(
        "# comment\nsh  dash  the shell\nno-such-tool-1  pkg-a  x\nno-such-tool-2  pkg-a  y\n/no/such/path  pkg-b  z\n"
    )
    assert preflight.missing_packages(preflight.host_tools(listing)) == ["pkg-a", "pkg-b"]
    listing.write_text("lonely-tool\n")
    with pytest.raises(ClusterError, match=r"host-packages.txt:1: want `<tool> <package> <purpose>`"):
        preflight.host_tools(listing)


@pytest.fixture
def ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine that has everything: root, the packages, Go, disk."""
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 0)
    monkeypatch.setattr(preflight, "missing_packages", lambda tools=None: [])
    monkeypatch.delenv("DLCHARTS_REGISTRY_PORT", raising=False)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(preflight.shutil, "disk_usage", lambda path: usage(100 << 30, 10 << 30, 90 << 30))


@pytest.mark.usefixtures("ready")
def test_a_ready_machine_has_no_problem(tmp_path: Path) -> None:
    assert preflight.problems(tmp_path, to_build=["etcd"], images_cached=False) == []


@pytest.mark.usefixtures("ready")
def test_every_problem_is_listed_together_with_its_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(preflight, "missing_packages", lambda tools=None: ["containerd", "umoci"])
    monkeypatch.setattr(gobuild, "find_go", lambda: None)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("DLCHARTS_REGISTRY_PORT", str(taken.getsockname()[1]))
        with pytest.raises(ClusterError) as refused:
            preflight.require(tmp_path, to_build=["kube-apiserver", "etcd"])
    message = str(refused.value)
    assert "needs root: run as root" in message
    assert "the Debian packages containerd, umoci are missing: `make packages` installs them" in message
    assert "apt-get install containerd umoci" in message
    assert "Go 1.26 or newer is needed to build etcd, kube-apiserver" in message
    assert "is taken by another program: unset it" in message
    assert message.count("\n  - ") == 4


@pytest.mark.usefixtures("ready")
def test_go_too_old_and_a_bad_port_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gobuild, "find_go", lambda: "/opt/go/bin/go")
    monkeypatch.setattr(preflight, "go_env", lambda go: {"GOVERSION": "go1.22.5"})
    monkeypatch.setenv("DLCHARTS_REGISTRY_PORT", "50OO")
    found = preflight.problems(tmp_path, to_build=["kwok"])
    assert found[0].startswith("/opt/go/bin/go is go1.22.5; building kwok needs Go 1.26 or newer"), found
    assert found[1] == "DLCHARTS_REGISTRY_PORT='50OO' is not a port number: unset it, or set 1-65535"


@pytest.mark.usefixtures("ready")
def test_disk_need_grows_with_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(preflight.shutil, "disk_usage", lambda path: usage(252 << 30, 240 << 30, 12 << 30))
    assert preflight.problems(tmp_path) == []  # warm: a start needs little
    found = preflight.problems(tmp_path, to_build=["kube-apiserver"], images_cached=False)
    assert len(found) == 1 and found[0].startswith(f"{tmp_path} has 12.0 GiB free"), found
    assert "kubelet stops scheduling below 1% free" in found[0] and "set DLCHARTS_CACHE" in found[0]


def test_make_packages_reads_the_same_list() -> None:
    """The Makefile's install step and the Python check share host-packages.txt (one list)."""
    makefile = (ROOT / "Makefile").read_text()
    assert "HOST_PACKAGES := src/dlcharts/host/host-packages.txt" in makefile
