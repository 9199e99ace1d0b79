"""A local OCI registry (distribution v3, built from the Go module proxy) on 127.0.0.1.

The images of ``dlcharts images`` are pushed here, and the real node's kubelet pulls from a registry of this
kind (its cluster's own), the way a user's cluster pulls from a mirror. The registry runs as one detached
process; its storage, config, log and pid live under ``$DLCHARTS_CACHE/registry/``
(``~/.cache/dlcharts/registry``), so images and charts survive a restart.

A ``secure`` registry is set up the way a production one is: HTTPS with a certificate from a throwaway CA made
at each start, and htpasswd (bcrypt) logins (dlcharts.host.registry_access). ``dlcharts registry`` runs that
one: the charts of ``make repo-oci`` and the images of ``dlcharts images build --push`` go there. A cluster with
a real node runs its own instance, plain HTTP on 127.0.0.1 without logins, with its state under
``registry/clusters/<name>/`` (dlcharts.cluster.node_registry): containerd and the kubelet pull from it.

    Registry.start()   start it (or reuse the running one) and return its status
    Registry.stop()    stop it (storage is kept)
    Registry.status()  whether it runs, and where

The port is ``$DLCHARTS_REGISTRY_PORT`` (or the ``port`` argument); without one, a free port is taken
and remembered in ``state.json``, so a restart keeps the address when the port is still free.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from dlcharts.errors import ClusterError
from dlcharts.host import procs
from dlcharts.host.binaries import VERSIONS, build_binaries, build_command
from dlcharts.host.registry_access import Access, make_access
from dlcharts.toolchain import cache_root
from dlcharts.utils.flock import locked
from dlcharts.utils.net import free_port, port_free

DISTRIBUTION_VERSION = VERSIONS.get("DISTRIBUTION_VERSION", "")
CRANE_VERSION = VERSIONS.get("CRANE_VERSION", "")
PORT_ENV = "DLCHARTS_REGISTRY_PORT"
_TOOLS = {"registry": "DISTRIBUTION_VERSION", "crane": "CRANE_VERSION"}
#: registries this process started (pid -> process), reaped when stopped
_STARTED: dict[int, subprocess.Popen[bytes]] = {}


def tool_path(name: str, cache: Path | None = None) -> Path:
    """Where the pinned ``registry`` or ``crane`` binary lives: ``bin/<name>-<version>/<name>``."""
    version = VERSIONS.get(_TOOLS[name])
    if not version:
        raise ClusterError(f"versions.env has no {_TOOLS[name]} pin; add it under the '# images' block")
    root = cache if cache is not None else cache_root()
    return root / "bin" / f"{name}-{version}" / name


def require_tool(name: str, cache: Path | None = None, *, build: bool = True) -> Path:
    """The pinned ``registry`` or ``crane`` binary; built (with the other) when missing."""
    path = tool_path(name, cache)
    if path.is_file() and os.access(path, os.X_OK):
        return path
    command = f"{build_command()} images"
    if not build:
        raise ClusterError(f"{name} is not built (expected at {path}); build it with: {command}")
    build_binaries(["images"], cache=cache)
    if not path.is_file():
        raise ClusterError(f"building {name} left nothing at {path}; run it by hand: {command}")
    return path


@dataclasses.dataclass(frozen=True)
class RegistryStatus:
    running: bool
    address: str  # host:port, "" when never started
    pid: int | None
    root: Path  # config, log, pid and state
    storage: Path
    log: Path
    access: Access | None = None  # TLS and login of a secure registry; None: plain HTTP, no login

    def describe(self) -> str:
        state = f"running (pid {self.pid}) at {self.address}" if self.running else "not running"
        text = f"registry: {state}; storage {self.storage}; log {self.log}"
        if self.access is not None and self.running:
            text += (f"\n  HTTPS, trust the CA {self.access.ca}; login {self.access.username}, password in "
                     f"{self.access.password_file}")  # fmt: skip
        return text


class Registry:
    """The local registry with its state under ``root`` (default ``<cache>/registry``); ``port`` None means
    $DLCHARTS_REGISTRY_PORT (unless ``use_env_port`` is off: a cluster's own registry, see
    dlcharts.cluster.node_registry), else the port used last time when it is free, else a free one. ``secure``:
    HTTPS and htpasswd logins (see the module's docstring)."""

    def __init__(
        self, root: Path | None = None, port: int | None = None, *, use_env_port: bool = True, secure: bool = False
    ) -> None:
        self.root = root if root is not None else cache_root() / "registry"
        self.storage = self.root / "storage"
        self.log = self.root / "registry.log"
        self.pidfile = self.root / "registry.pid"
        self.statefile = self.root / "state.json"
        self.config = self.root / "config.yml"
        self.secure = secure
        env_port = os.environ.get(PORT_ENV, "") if use_env_port else ""
        if port is None and env_port:
            if not env_port.isdigit() or not 0 < int(env_port) < 65536:
                raise ClusterError(f"{PORT_ENV}={env_port!r} is not a port number (1-65535)")
            port = int(env_port)
        self.port = port

    # ----- state
    def _state(self) -> dict[str, object]:
        try:
            data = json.loads(self.statefile.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _is_registry(pid) else None

    def status(self) -> RegistryStatus:
        pid = self._pid()
        state = self._state()
        address = str(state.get("address", ""))
        access = Access.under(self.root) if state.get("secure") else None
        running = pid is not None and bool(address) and _responds(address, access)
        return RegistryStatus(running, address, pid, self.root, self.storage, self.log, access)

    # ----- start / stop
    def start(self, timeout: float = 30) -> RegistryStatus:
        with locked(self.root / ".lock"):
            current = self.status()
            if current.running:
                wanted = self.port
                same_kind = (current.access is not None) == self.secure
                if same_kind and (wanted is None or current.address.endswith(f":{wanted}")):
                    return current
                self._stop()
            binary = require_tool("registry")
            port = self.port or _remembered_port(self._state()) or free_port()
            address = f"127.0.0.1:{port}"
            if not port_free(port):
                raise ClusterError(
                    f"port {port} on 127.0.0.1 is taken; free it or choose another with {PORT_ENV}=<port>"
                )
            self.storage.mkdir(parents=True, exist_ok=True)
            access = make_access(self.root, address) if self.secure else None
            self.config.write_text(_config_yaml(address, self.storage, access))
            with self.log.open("ab") as log:
                proc = subprocess.Popen(
                    [str(binary), "serve", str(self.config)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,
                    env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                )
            _STARTED[proc.pid] = proc
            self.pidfile.write_text(f"{proc.pid}\n")
            state = {"address": address, "version": DISTRIBUTION_VERSION, "secure": self.secure}
            self.statefile.write_text(json.dumps(state) + "\n")
            deadline = time.monotonic() + timeout
            while not _responds(address, access):
                if proc.poll() is not None or time.monotonic() > deadline:
                    self._stop()
                    why = f"exited with code {proc.returncode}" if proc.returncode is not None else "did not answer"
                    raise ClusterError(
                        f"the registry {why} on {address} within {timeout:.0f}s; last log lines:\n{_tail(self.log)}"
                    )
                time.sleep(0.1)
            return self.status()

    def stop(self) -> bool:
        """Stop the registry; True when one was running. Storage stays."""
        with locked(self.root / ".lock"):
            return self._stop()

    def _stop(self, timeout: float = 15) -> bool:
        pid = self._pid()
        self.pidfile.unlink(missing_ok=True)
        if pid is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while procs.alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if procs.alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        child = _STARTED.pop(pid, None)
        if child is not None:  # started by this process: reap it, so that no zombie is left behind
            child.wait()
        return True


def _config_yaml(address: str, storage: Path, access: Access | None) -> str:
    # JSON is YAML: no hand-quoting of paths.
    config: dict[str, object] = {
        "version": 0.1,
        "log": {"level": "info", "formatter": "text", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": True}},
        "http": {"addr": address},
    }
    if access is not None:
        config["http"] = {"addr": address, "tls": {"certificate": str(access.certificate), "key": str(access.key)}}
        config["auth"] = {"htpasswd": {"realm": "dl-charts", "path": str(access.htpasswd)}}
    return json.dumps(config, indent=2) + "\n"


def _remembered_port(state: dict[str, object]) -> int | None:
    address = str(state.get("address", ""))
    port = address.rpartition(":")[2]
    if port.isdigit() and port_free(int(port)):
        return int(port)
    return None


def _responds(address: str, access: Access | None = None) -> bool:
    """Whether the registry answers its API's base endpoint (over HTTPS with a login when ``access``)."""
    if access is None:
        request, context = urllib.request.Request(f"http://{address}/v2/"), None
    else:
        if not access.complete():
            return False
        login = base64.b64encode(f"{access.username}:{access.password}".encode()).decode()
        request = urllib.request.Request(f"https://{address}/v2/", headers={"Authorization": f"Basic {login}"})
        context = ssl.create_default_context(cafile=str(access.ca))
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as resp:  # noqa: S310 (our own URL)
            return int(resp.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def _is_registry(pid: int) -> bool:
    """Whether ``pid`` runs a pinned registry binary (guards against pid reuse)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False
    return Path(exe).name == "registry" and procs.alive(pid)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
