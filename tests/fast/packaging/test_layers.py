"""The package's layers (shared DESIGN.md, "The package's layers"), checked for every module and every import in
it, lazy ones included:

    core      render, schemas, API rules, policies, findings, snapshots, suite, plugin, CLI, toolchain, pins, the
              chart catalogue, utils/ (what `pip install dlcharts` gives)
    install   host                 releases on any cluster | pinned binaries, processes, PKI, local registry, preflight
    images    release              local images | chart repository and OCI
    cluster                        the embedded cluster and its add-ons (the `cluster` extra)
    jobs                           dlcharts run, sweep, import, demo

A module imports its own layer and the levels below it, never a level above nor a neighbour on its own level. The
entry points (cli.py, plugin.py) reach the upper layers only inside the functions that dispatch to them. No module
uses another module's ``_private`` names (tests and benchmarks included). The core loads no extra's package."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT

SRC = ROOT / "src"
#: the levels, lowest first; the layers on one level do not import each other
LEVELS: tuple[tuple[str, ...], ...] = (("core",), ("install", "host"), ("images", "release"), ("cluster",), ("jobs",))
LEVEL = {layer: n for n, layers in enumerate(LEVELS) for layer in layers}
ENTRY_POINTS = ("dlcharts.cli", "dlcharts.plugin")
#: the packages the extras bring (pyproject.toml's optional-dependencies): never imported by the core
EXTRAS = ("kubernetes", "cryptography", "bcrypt", "yamllint", "optuna", "matplotlib")


def layer_of(module: str) -> str:
    """``dlcharts.cluster.addons.kueue`` -> ``cluster``; a module of none of the named packages is the core's."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LEVEL else "core"


def package_modules() -> dict[str, Path]:
    modules = {}
    for path in sorted((SRC / "dlcharts").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = package_modules()


def imports(tree: ast.AST, module: str, *, top_level_only: bool = False) -> Iterator[tuple[int, str, str | None]]:
    """(line, imported module, imported name or None) of every import in ``tree``; with ``top_level_only``, those
    that run at import (module level, and inside module-level ``if``/``try`` other than ``if TYPE_CHECKING:``)."""
    nodes = ast.iter_child_nodes(tree) if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield (node.lineno, full, None) if full in MODULES else (node.lineno, base, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif (
            top_level_only
            and isinstance(node, (ast.If, ast.Try))
            and not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        ):
            yield from imports(node, module, top_level_only=True)


def layer_violations(module: str, source: str) -> list[str]:
    """What ``module`` (whose text is ``source``) imports against the layers."""
    own = layer_of(module)
    entry = module in ENTRY_POINTS
    checked = imports(ast.parse(source), module, top_level_only=entry)
    wrong = []
    for line, target, _ in checked:
        if target.split(".")[0] in EXTRAS and own == "core":
            wrong.append(f"{module}:{line}: the core imports {target}, a package of an extra")
        if not target.startswith("dlcharts."):
            continue
        theirs = layer_of(target)
        if theirs != own and LEVEL[theirs] >= LEVEL[own]:
            where = "beside it" if LEVEL[theirs] == LEVEL[own] else "above it"
            wrong.append(f"{module}:{line}: {own} imports {target} ({theirs}, {where})")
    return wrong


def test_every_module_is_in_a_layer_of_the_table() -> None:
    packages = {m.split(".")[1] for m in MODULES if m.count(".") >= 1 and (SRC / m.replace(".", "/")).is_dir()}
    unknown = packages - set(LEVEL) - {"crds", "utils", "data"}
    assert not unknown, f"packages in no layer (add them to LEVELS and DESIGN.md's table): {sorted(unknown)}"


def test_every_import_points_down_the_layers() -> None:
    wrong = [problem for module, path in MODULES.items() for problem in layer_violations(module, path.read_text())]
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    ("module", "planted", "expected"),
    [
        (
            "dlcharts.images.build",
            "from dlcharts.cluster.config import ClusterConfig",
            "images imports dlcharts.cluster",
        ),
        ("dlcharts.install.waits", "def f():\n    from dlcharts.host import procs", "install imports dlcharts.host"),
        ("dlcharts.render", "import kubernetes", "the core imports kubernetes"),
        ("dlcharts.cli", "from dlcharts.jobs import run", "core imports dlcharts.jobs.run"),
    ],
)
def test_a_planted_upward_import_is_caught(module: str, planted: str, expected: str) -> None:
    source = MODULES[module].read_text() + "\n" + planted + "\n"
    assert any(expected in problem for problem in layer_violations(module, source)), layer_violations(module, source)


def test_the_entry_points_reach_up_only_inside_functions() -> None:
    dispatching = "def main():\n    from dlcharts.jobs import run\n"
    assert layer_violations("dlcharts.cli", MODULES["dlcharts.cli"].read_text() + dispatching) == []


def test_no_two_modules_import_each_other() -> None:
    graph = {
        module: {t for _, t, _ in imports(ast.parse(path.read_text()), module) if t in MODULES and t != module}
        for module, path in MODULES.items()
    }
    cycles = sorted({tuple(sorted((a, b))) for a, targets in graph.items() for b in targets if a in graph.get(b, ())})
    assert not cycles, f"modules that import each other: {cycles}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(path: Path, text: str) -> list[str]:
    """Uses in ``text`` of another dlcharts module's ``_private`` names: imported by name, or read as an attribute of
    an imported module."""
    found = []
    tree = ast.parse(text)
    own = ".".join(path.relative_to(SRC).with_suffix("").parts) if path.is_relative_to(SRC) else ""
    modules: dict[str, str] = {}  # local name -> dlcharts module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dlcharts"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in MODULES:
                    modules[alias.asname or alias.name] = full
                elif _private(alias.name) and node.module != own.removesuffix(".__init__"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            modules.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("dlcharts")})
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and _private(node.attr)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {modules[node.value.id]}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    paths = [p for folder in ("src", "tests", "bench", "examples") for p in sorted((ROOT / folder).rglob("*.py"))]
    found = [use for path in paths for use in private_uses(path, path.read_text())]
    assert not found, "private names used across modules (make them public, or keep the use inside):\n" + "\n".join(
        found
    )


def test_a_planted_private_use_is_caught() -> None:
    planted = "from dlcharts import schemas\nfrom dlcharts.render import _x\nschemas._cache.clear()\n"
    found = private_uses(ROOT / "bench" / "planted.py", planted)
    assert found == [
        "bench/planted.py:2: from dlcharts.render import _x",
        "bench/planted.py:3: dlcharts.schemas._cache",
    ]


def test_importing_the_core_loads_no_upper_layer_and_no_extra() -> None:
    core = sorted(m for m in MODULES if layer_of(m) == "core" and not m.endswith("__main__"))
    code = (
        "import importlib, json, sys\n"
        f"for name in {core!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = [m.strip('", []') for m in proc.stdout.split(",")]
    upper = [m for m in loaded if m.startswith("dlcharts.") and layer_of(m) != "core"]
    extras = [m for m in loaded if m.split(".")[0] in EXTRAS]
    assert not upper and not extras, (upper, extras)


def test_the_public_import_paths_keep_working() -> None:
    """The names README.md, DESIGN.md and the package docstrings show users."""
    from dlcharts import scenarios_in
    from dlcharts.cluster import ClusterConfig, ClusterHandle, EmbeddedCluster, NodePool, build_binaries
    from dlcharts.errors import DLChartsError, RenderError
    from dlcharts.install import ChartSource, Kube, Release, install, wait_ready
    from dlcharts.release import build_repository, check_metadata, check_version_bumps

    assert all(
        callable(x)
        for x in (scenarios_in, ClusterConfig, ClusterHandle, EmbeddedCluster, NodePool, build_binaries, DLChartsError)
    )
    assert all(callable(x) for x in (RenderError, ChartSource, Kube, Release, install, wait_ready, build_repository))
    assert callable(check_metadata) and callable(check_version_bumps)


def test_a_command_that_needs_an_extra_names_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlcharts import cli
    from dlcharts.cluster import cli as cluster_cli

    def needs_kubernetes(args: object) -> int:
        raise ModuleNotFoundError("No module named 'kubernetes'", name="kubernetes")

    monkeypatch.setattr(cluster_cli, "cmd_cluster", needs_kubernetes)
    assert cli.main(["cluster", "status"]) == 2
    assert "pip install 'dlcharts[cluster]'" in capsys.readouterr().err
