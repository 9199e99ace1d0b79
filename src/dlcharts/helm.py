"""Locating and running the helm binary."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from dlcharts import toolchain
from dlcharts.errors import ToolchainError

_VERSION_RE = re.compile(r'Version:"(v\d+\.\d+\.\d+[^"]*)"')
# The help of every option that picks a pinned helm (dlcharts --helm, pytest --dlcharts-helm).
HELM_OPTION_HELP = (
    f"pinned helm to use: {', '.join(toolchain.HELM_MATRIX)}; beats $HELM_BIN, which beats $DLCHARTS_HELM "
    f"(default {toolchain.DEFAULT_HELM})"
)


@dataclasses.dataclass(frozen=True)
class Helm:
    """A verified helm binary and its version (``v4.3.1``)."""

    path: Path
    version: str

    @property
    def major(self) -> int:
        return int(self.version.lstrip("v").split(".")[0])

    def run(
        self, args: list[str], *, check: bool = True, timeout: float = 300, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``helm ARGS`` with an argv list (never a shell string); raises on failure when ``check``.
        ``env`` adds to (or overrides) the environment, e.g. a cluster's KUBECONFIG."""
        proc = subprocess.run(
            [str(self.path), *args], capture_output=True, text=True, check=False, timeout=timeout,
            env={**helm_env(), **(env or {})},
        )  # fmt: skip
        proc.stderr = without_link_notices(proc.stderr)
        if check and proc.returncode != 0:
            raise ToolchainError(f"helm {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
        return proc


# Helm 4 ("level=INFO msg=\"found symbolic link in path...") and Helm 3 ("walk.go:75: found symbolic link in
# path: ...") say on stderr that they followed a link, each time they load a chart whose charts/ links dl-common.
_LINK_NOTICE_RE = re.compile(r"^.*found symbolic link in path.*\n?", re.MULTILINE)


def without_link_notices(stderr: str) -> str:
    """helm's stderr without its notices about followed links, which say nothing about the user's input."""
    return _LINK_NOTICE_RE.sub("", stderr)


def helm_env() -> dict[str, str]:
    # Keep helm away from the user's repositories and plugins so renders are reproducible.
    env = dict(os.environ)
    env.setdefault("HELM_PLUGINS", os.devnull)
    env["HELM_DEBUG"] = "false"
    return env


def probe_version(path: Path) -> str:
    try:
        proc = subprocess.run([str(path), "version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as exc:
        raise ToolchainError(f"cannot run helm at {path}: {exc}") from None
    match = _VERSION_RE.search(proc.stdout)
    if proc.returncode != 0 or not match:
        raise ToolchainError(f"{path} does not look like helm (`helm version` said: {proc.stdout or proc.stderr!r})")
    return match.group(1)


@functools.cache
def find_helm(key: str | None = None) -> Helm:
    """The helm to use. First match wins: the pinned binary ``key`` (``--helm``), ``$HELM_BIN``, the pinned
    binary ``$DLCHARTS_HELM``, the pinned Helm 4 (``toolchain.DEFAULT_HELM``).

    A pinned binary that is missing is installed into the tools folder first (``toolchain.install``, what ``dlcharts
    tools`` runs), saying so on stderr; where that fails, the error names the fixes. ``$HELM_BIN`` is used as it is
    (nothing is installed for it); one older than helm 3.18 is refused, because values.schema.json features we rely
    on need it.
    """
    override = os.environ.get("HELM_BIN")
    if override and key is None:
        resolved = shutil.which(override) or override
        path = Path(resolved)
        if not path.is_file():
            raise ToolchainError(f"HELM_BIN={override!r} is not a file; unset it or point it at a helm binary")
        version = probe_version(path)
        if _version_tuple(version) < (3, 18, 0):
            raise ToolchainError(f"HELM_BIN={override} is helm {version}; dl-charts needs helm >= v3.18.0")
        return Helm(path, version)
    named = key or (f"DLCHARTS_HELM={os.environ['DLCHARTS_HELM']}" if os.environ.get("DLCHARTS_HELM") else None)
    key = key or os.environ.get("DLCHARTS_HELM") or toolchain.DEFAULT_HELM
    tool = toolchain.TOOLS.get(key)
    if tool is None or tool.name != "helm":
        raise ToolchainError(f"unknown helm {named!r}; choose one of: {', '.join(toolchain.HELM_MATRIX)}")
    path = toolchain.binary_path(key)
    if not path.is_file():
        _install(key, path)
    version = probe_version(path)
    if version != tool.version:
        raise ToolchainError(f"{path} reports {version}, expected {tool.version}; reinstall it: `dlcharts tools {key}`")
    return Helm(path, version)


def _install(key: str, path: Path) -> None:
    """Install the pinned helm ``key`` at ``path`` as ``dlcharts tools KEY`` does, on a first run (pre-commit installs
    its hooks so); where that fails (offline), an error naming what was tried and the fixes."""
    try:
        toolchain.install([key])
    except (ToolchainError, OSError) as exc:
        raise ToolchainError(
            f"{key} is not installed at {path}, and installing it failed: {exc}; install it with "
            f"`dlcharts tools {key}` where pip reaches its index (PyPI, or a mirror in PIP_INDEX_URL), or set "
            f"DLCHARTS_TOOLS_DIR to a folder that holds {key}/helm, or HELM_BIN to a helm binary (>= v3.18.0)"
        ) from None


def _version_tuple(version: str) -> tuple[int, ...]:
    core = version.lstrip("v").split("-")[0].split("+")[0]
    return tuple(int(p) for p in core.split("."))
