"""The local registry (distribution v3): starts on 127.0.0.1, answers, stops, and leaves no process."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from dlcharts.cluster import registry
from dlcharts.errors import ClusterError


def _registry_pids(config: Path) -> list[int]:
    """Processes running a registry binary on ``config`` (what a leaked registry would look like)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(config).encode() in cmdline and any(arg.endswith(b"/registry") for arg in cmdline):
            pids.append(int(proc.name))
    return pids


def test_registry_starts_answers_and_stops_without_leftovers(tmp_path: Path) -> None:
    reg = registry.Registry(tmp_path / "registry")
    assert not reg.status().running

    state = reg.start()
    assert state.running and state.pid is not None
    host, _, port = state.address.rpartition(":")
    assert host == "127.0.0.1" and port.isdigit()
    assert _registry_pids(reg.config) == [state.pid]
    assert os.readlink(f"/proc/{state.pid}/exe") == str(registry.tool_path("registry"))
    assert state.storage.is_dir() and state.log.is_file()

    again = registry.Registry(tmp_path / "registry").start()  # a second start reuses the running one
    assert (again.pid, again.address) == (state.pid, state.address)

    assert reg.stop() is True
    assert _registry_pids(reg.config) == []
    assert not os.path.exists(f"/proc/{state.pid}")
    assert not reg.status().running
    with socket.socket() as sock:  # a server can listen on the port again
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", int(port)))
    assert reg.stop() is False


def test_registry_keeps_its_port_across_restarts(tmp_path: Path) -> None:
    reg = registry.Registry(tmp_path / "registry")
    first = reg.start()
    reg.stop()
    try:
        second = reg.start()
        assert second.address == first.address
    finally:
        reg.stop()


def test_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ClusterError, match=rf"port {port} on 127.0.0.1 is taken.*DLCHARTS_REGISTRY_PORT"):
            registry.Registry(tmp_path / "registry", port=port).start()


def test_bad_port_variable_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLCHARTS_REGISTRY_PORT", "50OO")
    with pytest.raises(ClusterError, match=r"DLCHARTS_REGISTRY_PORT='50OO' is not a port number"):
        registry.Registry(tmp_path / "registry")
