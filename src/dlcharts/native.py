"""The harness's Go helpers: the render servers (one per helm major) and the API server's rules (one validator per
Kubernetes minor it holds). Their sources are native/ of the dl-charts repository.

An installed platform wheel carries them as package data (``dlcharts/_native/``, written by native/wheels.py, with
``manifest.json`` naming the platform and each helper's version); they are used from there, with no Go and no
checkout. A checkout (an editable install) builds them once with ci/build-control-plane.sh into the tools folder
(``dlcharts tools``, ``make tools``). Nothing is built unless a command asks for it. Where neither has a helper, a
check that needs it cannot run, and the caller says so (see dlcharts.checks).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from dlcharts.errors import ToolchainError
from dlcharts.pins import OLDEST

#: the render server of each pinned helm major
RENDER_SERVERS = {4: "helm4-render", 3: "helm3-render"}
VALIDATOR = "k8s-validate"
#: every helper a platform wheel carries: the render server of each helm of toolchain.HELM_MATRIX, each validator
HELPERS: tuple[str, ...] = (*RENDER_SERVERS.values(), VALIDATOR, VALIDATOR + OLDEST)
LOCATED_ENV = "DLCHARTS_RENDER_SERVERS"  # name=path entries that build_all() found, for child processes
_REPO_ENV = "DLCHARTS_REPO"


def build_script() -> Path:
    """ci/build-control-plane.sh of the checkout this package runs from (``$DLCHARTS_REPO`` overrides)."""
    candidates = []
    if os.environ.get(_REPO_ENV):
        candidates.append(Path(os.environ[_REPO_ENV]))
    candidates.append(Path(__file__).resolve().parents[2])  # src/dlcharts/native.py -> the checkout
    for root in candidates:
        script = root / "ci" / "build-control-plane.sh"
        if script.is_file():
            return script
    raise ToolchainError(
        "this dlcharts is installed outside a dl-charts checkout, so it builds nothing (looked for "
        "ci/build-control-plane.sh under " + ", ".join(str(c) for c in candidates) + f"); set {_REPO_ENV} to a checkout"
    )


def build_command() -> str:
    """The shell command a person runs to build the binaries."""
    try:
        return str(build_script())
    except ToolchainError:
        return "ci/build-control-plane.sh (in a dl-charts checkout)"


def platform_tag() -> str:
    """This machine as Go names it: ``linux/amd64``, ``darwin/arm64``."""
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"{sys.platform.removesuffix('2')}/{arch}"  # sys.platform: linux, darwin


def bundle_manifest() -> dict[str, Any] | None:
    """``dlcharts/_native/manifest.json`` of a platform wheel (platform, each helper's file, version and sha256);
    None for a checkout or the pure-Python wheel."""
    entry = resources.files("dlcharts").joinpath("_native", "manifest.json")
    if not entry.is_file():
        return None
    data = json.loads(entry.read_text())
    return data if isinstance(data, dict) else None


def bundled(name: str) -> Path | None:
    """The helper ``name`` as this installed wheel carries it, when it does and it is for this machine."""
    manifest = bundle_manifest()
    if manifest is None or manifest.get("platform") != platform_tag():
        return None
    helper = (manifest.get("helpers") or {}).get(name)
    if not helper:
        return None
    path = Path(str(resources.files("dlcharts").joinpath("_native", helper["file"])))
    return path if path.is_file() and os.access(path, os.X_OK) else None


def missing_reason(name: str) -> str:
    """Why ``name`` cannot be had in this install, for a message: the wheel's platform, or no checkout."""
    manifest = bundle_manifest()
    if manifest is not None and manifest.get("platform") != platform_tag():
        return f"this wheel's helpers are for {manifest.get('platform')}, and this machine is {platform_tag()}"
    if manifest is not None:
        return f"this wheel ({manifest.get('platform')}) carries no {name}"
    return (
        f"this is the pure-Python dlcharts wheel, which carries no {name}: install a platform wheel (pip picks the one "
        f"for {platform_tag()} where it exists), or run dlcharts from a dl-charts checkout with Go (`dlcharts tools` "
        "builds it there)"
    )


def locate(names: list[str], build: bool) -> dict[str, Path]:
    """Paths of the helpers ``names``: those the installed wheel carries, else from ci/build-control-plane.sh of
    the checkout, built first where missing when ``build`` (minutes, once; file-locked, so parallel callers wait
    for one build), else only checked (sha256 included)."""
    found = {name: path for name in names if (path := located(name) or bundled(name)) is not None}
    wanted = [name for name in names if name not in found]
    if not wanted:
        return found
    try:
        script = build_script()
    except ToolchainError:  # an install outside a checkout: only what the wheel carries
        raise ToolchainError(missing_reason(wanted[0])) from None
    if build:
        print(
            f"dlcharts: building {', '.join(wanted)} with {script} (once: minutes cold, then cached; Go's "
            "output follows) ...",
            file=sys.stderr,
        )
    argv = ["bash", str(script), *([] if build else ["--check"]), *wanted]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=None if build else subprocess.PIPE, text=True,
                          check=False)  # fmt: skip
    for line in proc.stdout.splitlines():
        name, _, where = line.partition(" ")
        if name in wanted and where:
            found[name] = Path(where)
    missing = [name for name in wanted if name not in found]
    if proc.returncode != 0 or missing:
        if not build:
            raise ToolchainError(
                f"{', '.join(missing or wanted)} not built (build once: dlcharts tools, or {script} "
                f"{' '.join(missing or wanted)})"
            )
        raise ToolchainError(f"building {', '.join(missing or wanted)} failed (exit {proc.returncode}; see above)")
    return found


def build_all() -> dict[str, Path]:
    """Find (or, in a checkout, build) every helper a wheel carries: the render server of every pinned helm and the
    validators of both minors, and pass where they are to child processes (pytest-xdist workers), which then start
    them without asking again. For ``dlcharts tools`` and ``make tools``: nothing else builds."""
    names = list(HELPERS)
    try:
        found = locate(names, build=False)
    except ToolchainError:
        found = locate(names, build=True)
    export(found)
    return found


def export(found: dict[str, Path]) -> None:
    """Tell child processes where the helpers ``found`` are."""
    known = {**_located_env(), **{name: str(path) for name, path in found.items()}}
    os.environ[LOCATED_ENV] = os.pathsep.join(f"{name}={path}" for name, path in known.items())


def _located_env() -> dict[str, str]:
    entries = (entry.partition("=") for entry in os.environ.get(LOCATED_ENV, "").split(os.pathsep) if entry)
    return {key: path for key, _, path in entries}


def located(name: str) -> Path | None:
    """Where a parent process found ``name`` (``export``), when that file is there."""
    path = _located_env().get(name)
    return Path(path) if path and Path(path).is_file() else None
