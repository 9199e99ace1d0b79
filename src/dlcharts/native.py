"""The harness's Go helpers: the render servers (one per helm major) and the API server's rules (one validator per
Kubernetes minor it holds), and their build table. Their sources are native/ of the dl-charts repository.

An installed platform wheel carries them as package data (``dlcharts/_native/``, written by native/wheels.py, with
``manifest.json`` naming the platform and each helper's version); they are used from there, with no Go and no
checkout. A checkout (an editable install) builds them once from its native/ with Go (dlcharts.gobuild) into the tools
folder (``dlcharts tools``, ``make tools``); native/wheels.py builds them for other platforms too. Nothing is built
unless a command asks for it. Where neither has a helper, a check that needs it cannot run, and the caller says so
(see dlcharts.checks).

The table (``specs``): helm4-render and helm3-render, the in-process ``helm template`` (dlcharts.render_server), from
native/helm-render/helm<major> with its committed go.sum, at the helm version its go.mod pins (toolchain's); their
cache version is that helm version and a hash of native/helm-render/common and the server's own folder, so an edit to
a server's source builds a new one beside the old. k8s-validate, the API server's create validation (dlcharts.apirules),
from native/k8s-validate at the pinned Kubernetes, keyed by that version and a hash of its sources;
k8s-validate@oldest, the same source linked with k8s.io/kubernetes at the oldest supported minor, through the
Kubernetes wrapper module that also builds that minor's control plane (dlcharts.host.binaries).
"""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from dlcharts import gobuild, toolchain
from dlcharts.errors import ToolchainError
from dlcharts.gobuild import platform_tag as platform_tag
from dlcharts.pins import KUBERNETES_VERSION, OLDEST, OLDEST_KUBERNETES_VERSION

#: the render server of each pinned helm major
RENDER_SERVERS = {4: "helm4-render", 3: "helm3-render"}
VALIDATOR = "k8s-validate"
#: every helper a platform wheel carries: the render server of each helm of toolchain.HELM_MATRIX, each validator
HELPERS: tuple[str, ...] = (*RENDER_SERVERS.values(), VALIDATOR, VALIDATOR + OLDEST)
LOCATED_ENV = "DLCHARTS_RENDER_SERVERS"  # name=path entries that build_all() found, for child processes
_REPO_ENV = "DLCHARTS_REPO"
#: the Kubernetes commands each version's wrapper module lists (the real node's kubelet at the pinned one only)
KUBERNETES_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def sources() -> Path | None:
    """native/ of the checkout this package runs from (``$DLCHARTS_REPO`` overrides); None outside a checkout."""
    roots = [Path(os.environ[_REPO_ENV])] if os.environ.get(_REPO_ENV) else []
    roots += [root] if (root := toolchain.checkout()) is not None else []
    for root in roots:
        if (root / "native" / "helm-render").is_dir() and (root / "native" / VALIDATOR).is_dir():
            return root / "native"
    return None


def kubernetes_module(version: str) -> gobuild.Kubernetes:
    """The wrapper module that builds Kubernetes at ``version``: the pinned one with the real node's kubelet, the
    oldest with the validator's sources (where this is a checkout)."""
    if version == KUBERNETES_VERSION:
        return gobuild.Kubernetes(version, (*KUBERNETES_COMMANDS, "kubelet"))
    native = sources()
    return gobuild.Kubernetes(version, KUBERNETES_COMMANDS, native / VALIDATOR if native else None)


def specs(names: tuple[str, ...] | list[str] = HELPERS) -> list[gobuild.Spec]:
    """The build table's entries for ``names`` (of HELPERS); a ToolchainError outside a checkout, which has no
    sources to build from."""
    native = sources()
    if native is None:
        raise ToolchainError(missing_reason(names[0] if names else VALIDATOR))
    unknown = [name for name in names if name not in HELPERS]
    if unknown:
        raise ToolchainError(f"unknown helper {', '.join(unknown)}; the harness's helpers: {', '.join(HELPERS)}")
    validator = gobuild.source_hash(native / VALIDATOR, ".")
    table: dict[str, gobuild.Spec] = {}
    for major, name in RENDER_SERVERS.items():
        folder = native / "helm-render"
        table[name] = gobuild.Spec(
            name, f"{_helm_version(folder, major)}-{gobuild.source_hash(folder, 'common', f'helm{major}')}",
            gobuild.Committed(folder / f"helm{major}"), ".", tools_folder=True, cross=True,
        )  # fmt: skip
    table[VALIDATOR] = gobuild.Spec(
        VALIDATOR, f"{KUBERNETES_VERSION}-{validator}", gobuild.Committed(native / VALIDATOR), ".",
        tools_folder=True, cross=True,
    )  # fmt: skip
    table[VALIDATOR + OLDEST] = gobuild.Spec(
        VALIDATOR + OLDEST, f"{OLDEST_KUBERNETES_VERSION}-{validator}", kubernetes_module(OLDEST_KUBERNETES_VERSION),
        "./" + VALIDATOR, tools_folder=True, cross=True,
    )  # fmt: skip
    return [table[name] for name in names]


def _helm_version(folder: Path, major: int) -> str:
    """The helm version native/helm-render/helm<major>/go.mod requires."""
    gomod = folder / f"helm{major}" / "go.mod"
    found = re.search(rf"^\s*helm\.sh/helm/v{major} (v[0-9][^ \n]*)$", gomod.read_text(), re.M)
    if found is None:
        raise ToolchainError(f"{gomod} requires no helm.sh/helm/v{major}")
    return found.group(1)


def build(
    names: tuple[str, ...] | list[str] = HELPERS, *, platform: str | None = None, out: TextIO | None = None
) -> dict[str, Path]:
    """Build (or find in the tools folder) the helpers ``names`` for ``platform`` (GOOS/GOARCH; default this
    machine's, where they run; another's for its wheel, into folders named for it)."""
    return gobuild.build(specs(names), platform=platform, out=out)


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
    """Paths of the helpers ``names``: those the installed wheel carries, else those of the checkout's tools folder,
    built first where missing when ``build`` (minutes, once; file-locked, so parallel callers wait for one build),
    else only checked (sha256 included)."""
    found = {name: path for name in names if (path := located(name) or bundled(name)) is not None}
    wanted = [name for name in names if name not in found]
    if not wanted:
        return found
    table = specs(wanted)  # outside a checkout: what the wheel carries, and no more
    if build:
        found.update(gobuild.build(table))
        return found
    absent = gobuild.missing(table)
    if absent:
        raise ToolchainError(f"{', '.join(s.name for s in absent)} not built (build once: dlcharts tools)")
    return {**found, **{spec.name: spec.path() for spec in table}}


def build_all() -> dict[str, Path]:
    """Find (or, in a checkout, build) every helper a wheel carries: the render server of every pinned helm and the
    validators of both minors, and pass where they are to child processes (pytest-xdist workers), which then start
    them without asking again. For ``dlcharts tools`` and ``make tools``: nothing else builds."""
    found = locate(list(HELPERS), build=True)
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
