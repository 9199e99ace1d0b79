"""The local registry (distribution v3): starts on 127.0.0.1, answers, stops, and leaves no process."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from dlcharts.errors import ClusterError
from dlcharts.host import registry


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


def _get(url: str, ca: Path | None = None, login: tuple[str, str] | None = None) -> int:
    """The HTTP status of GET ``url`` (trusting only ``ca`` for HTTPS, with a Basic login when given)."""
    import base64
    import ssl
    import urllib.error
    import urllib.request

    headers = {"Authorization": "Basic " + base64.b64encode(":".join(login).encode()).decode()} if login else {}
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=context) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_secure_registry_takes_https_with_its_ca_and_login_only(tmp_path: Path) -> None:
    """The production-like registry: HTTPS with a certificate from a CA made at start, whose key is not kept, and
    an htpasswd login; anything else is refused. crane reaches it through the client environment (SSL_CERT_FILE,
    DOCKER_CONFIG). A restart makes a new CA: the old one no longer verifies it."""
    import subprocess
    import urllib.error

    reg = registry.Registry(tmp_path / "registry", secure=True)
    state = reg.start()
    try:
        access = state.access
        assert access is not None and state.running
        base = f"https://{state.address}/v2/"
        assert _get(base, access.ca, (access.username, access.password)) == 200
        assert _get(base, access.ca) == 401
        assert _get(base, access.ca, (access.username, "not-the-password")) == 401
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _get(base)  # the system's CAs do not know it
        assert (
            _get(f"http://{state.address}/v2/") == 400
        )  # plain HTTP: "client sent an HTTP request to an HTTPS server"
        assert "registry: running" in state.describe() and f"trust the CA {access.ca}" in state.describe()

        written = {p.relative_to(reg.root).as_posix() for p in reg.root.rglob("*") if p.is_file()}
        assert written >= {"tls/ca.crt", "tls/server.crt", "tls/server.key", "auth/htpasswd", "auth/password",
                           "auth/docker/config.json", "config.yml"}  # fmt: skip
        keys = [p for p in reg.root.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes()]
        assert keys == [access.key]  # the CA's key was never written
        for secret in (access.key, access.password_file, access.htpasswd):
            assert secret.stat().st_mode & 0o077 == 0, secret
        assert access.htpasswd.read_text().startswith(f"{access.username}:$2b$")

        crane = [str(registry.tool_path("crane")), "catalog", state.address]
        ok = subprocess.run(crane, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **access.client_env()})
        assert ok.returncode == 0, ok.stderr
        anonymous = {"PATH": "/usr/bin:/bin", "SSL_CERT_FILE": str(access.ca), "DOCKER_CONFIG": "/nonexistent"}
        refused = subprocess.run(crane, capture_output=True, text=True, env=anonymous)
        assert refused.returncode != 0 and "UNAUTHORIZED" in refused.stderr

        old_ca = access.ca.read_bytes()
        (tmp_path / "old-ca.crt").write_bytes(old_ca)
        reg.stop()
        again = reg.start()
        assert again.access is not None and again.access.ca.read_bytes() != old_ca
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _get(f"https://{again.address}/v2/", tmp_path / "old-ca.crt")
    finally:
        reg.stop()
    assert _registry_pids(reg.config) == []


def test_a_running_plain_registry_is_restarted_secure(tmp_path: Path) -> None:
    reg = registry.Registry(tmp_path / "registry")
    plain = reg.start()
    try:
        secure = registry.Registry(tmp_path / "registry", secure=True).start()
        assert plain.access is None and secure.access is not None and secure.pid != plain.pid
        assert _registry_pids(reg.config) == [secure.pid]
    finally:
        reg.stop()
