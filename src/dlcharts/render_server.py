"""The in-process renderer: `helm template` answered by a long-lived process linked to the pinned helm.

A helm process costs its start-up on every render; the server (native/helm-render, Go, one per helm major, linked to
the exact helm version toolchain.py pins) starts once per Python process (once per pytest-xdist worker) and then
renders each request with that helm's own code. It keeps each chart as loaded while the stamps of its files (size,
modification and change times, inode: what chart_digest trusts) stay the same, so an edited chart is seen by the
next render, and compiles each values schema once (values a schema refuses are rendered again with helm's own
validation, for helm's error text). It prints what the binary prints, byte for byte, and fails with the binary's
error text (``pytest --dlcharts-compare-renderers`` compares the two on every render of the test tiers); it also
sends each rendered object decoded, as PyYAML would decode it, so the harness does not parse the YAML again.

dlcharts.native finds the servers: in an installed platform wheel, or in a checkout's tools folder, beside the pinned
helm binaries, where ``dlcharts tools`` (``make tools``) builds them; nothing else builds. Where a server is not
there, or does not start, the helm binary renders, after a one-line notice; ``DLCHARTS_RENDERER=binary`` asks for
the binary.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from dlcharts import native, toolchain
from dlcharts.errors import ToolchainError
from dlcharts.helm import Helm, helm_env

RENDERER_ENV = "DLCHARTS_RENDERER"
RENDERERS = ("server", "binary")
PROTOCOL = 1  # native/helm-render/common/serve.go
SERVER_NAMES = native.RENDER_SERVERS
# Renders compared with the binary in this process (dlcharts.render.Renderer(compare=True)), and how many matched.
COMPARED: collections.Counter[str] = collections.Counter()


def renderer_mode() -> str:
    """``server`` (the default: the in-process renderer where it runs) or ``binary`` (``$DLCHARTS_RENDERER``)."""
    mode = os.environ.get(RENDERER_ENV) or "server"
    if mode not in RENDERERS:
        raise ToolchainError(f"{RENDERER_ENV}={mode!r}: choose {' or '.join(RENDERERS)}, or unset it")
    return mode


@dataclasses.dataclass(frozen=True)
class Reply:
    """What `helm template` printed and its exit status, with each piece of the stream decoded (None where
    PyYAML must decode it, as for every index in ``fallback``)."""

    status: int
    stdout: str
    stderr: str
    objects: list[Any] | None
    fallback: frozenset[int]
    line: bytes  # the reply as the server sent it (the render cache keeps it)

    @classmethod
    def parse(cls, line: bytes) -> Reply:
        data = json.loads(line)
        return cls(
            int(data["status"]), data["stdout"], data["stderr"], data.get("objects"),
            frozenset(data.get("fallback") or ()), line,
        )  # fmt: skip


class RenderServer:
    """One running server: requests go to its stdin, one JSON line each, and its replies come back the same way."""

    def __init__(self, path: Path, helm: Helm) -> None:
        self.path = path
        self.helm = helm
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=helm_env()
        )
        ready = self._read()
        if ready.get("protocol") != PROTOCOL or ready.get("helm") != helm.version:
            self.close()
            raise ToolchainError(
                f"{path} speaks protocol {ready.get('protocol')} for helm {ready.get('helm')}, expected protocol "
                f"{PROTOCOL} for {helm.version}; rebuild it: remove {path.parent} and run dlcharts tools"
            )

    def template(self, args: list[str], objects: bool = True) -> Reply | None:
        """``helm template`` with ``args`` (the argv after ``helm``); None when only the binary can do it."""
        line = self._ask({"args": args, "objects": objects})
        if b'"unsupported":' in line[:20]:
            return None
        return Reply.parse(line)

    def decode(self, text: str) -> tuple[list[Any], frozenset[int]]:
        """The server's decoding of a stream, alone: each piece between ``---`` lines, and which it left to PyYAML."""
        data = json.loads(self._ask({"decode": text}))
        return data["objects"], frozenset(data["fallback"])

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def _ask(self, request: dict[str, Any]) -> bytes:
        with self._lock:
            stdin: IO[bytes] | None = self._proc.stdin
            if stdin is None or self._proc.poll() is not None:
                raise ToolchainError(f"{self.path} is not running (exit status {self._proc.returncode})")
            try:
                stdin.write(json.dumps(request).encode() + b"\n")
                stdin.flush()
            except OSError as exc:
                raise ToolchainError(f"{self.path} stopped taking requests: {exc}") from None
            return self._line()

    def _line(self) -> bytes:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.endswith(b"\n"):
            raise ToolchainError(f"{self.path} stopped (exit status {self._proc.wait()}) before it answered")
        return line

    def _read(self) -> dict[str, Any]:
        data = json.loads(self._line())
        assert isinstance(data, dict)
        return data


def server_name(helm: Helm) -> str:
    return SERVER_NAMES.get(helm.major, f"helm{helm.major}-render")


_servers: dict[Path, RenderServer | None] = {}
_servers_lock = threading.Lock()
_noticed: set[str] = set()


def server_for(helm: Helm) -> RenderServer | None:
    """The running server that renders for ``helm``, started on first use; None where the binary renders, which
    is said once per process on stderr, with the reason (except when ``DLCHARTS_RENDERER=binary`` asks for it)."""
    if renderer_mode() == "binary":
        return None
    with _servers_lock:
        if helm.path in _servers:
            return _servers[helm.path]
        server: RenderServer | None = None
        try:
            if not _is_pinned(helm):
                raise ToolchainError(f"helm {helm.version} at {helm.path} is not a pinned helm")
            name = server_name(helm)
            path = native.locate([name], build=False)[name]
            server = RenderServer(path, helm)
        except (ToolchainError, OSError, ValueError) as exc:
            notice(helm, str(exc))
        _servers[helm.path] = server
        return server


def retire(helm: Helm, problem: str) -> None:
    """Stop using ``helm``'s server after it failed mid-session (the binary renders from here on)."""
    with _servers_lock:
        server = _servers.get(helm.path)
        _servers[helm.path] = None
    if server is not None:
        notice(helm, problem)
        server.close()


def notice(helm: Helm, reason: str) -> None:
    """One line on stderr, once per process and helm: why the helm binary renders instead of the server."""
    if str(helm.path) in _noticed:
        return
    _noticed.add(str(helm.path))
    print(f"dlcharts: in-process renderer unavailable ({reason}); rendering with {helm.path}", file=sys.stderr)


def describe(helm: Helm) -> str:
    """Which renderer ``helm`` renders with in this process, for ``dlcharts tools``."""
    if renderer_mode() == "binary":
        return f"renderer: the helm binary {helm.path} ({RENDERER_ENV}=binary)"
    server = server_for(helm)
    if server is None:
        return f"renderer: the helm binary {helm.path} (the in-process renderer is unavailable; see the line above)"
    return (
        f"renderer: in-process {server.path.name} (helm {helm.version}) at {server.path}; "
        f"{RENDERER_ENV}=binary renders with {helm.path}"
    )


def _is_pinned(helm: Helm) -> bool:
    return any(t.version == helm.version and t.name == "helm" for t in toolchain.TOOLS.values())
