"""The package's layers (shared DESIGN.md, "The package's layers"): the core, which `pip install dlcharts` gives
(render, schemas, API rules, policies, findings, snapshots, suite, plugin, CLI, pins), imports neither the cluster
machinery nor the extras' packages; only the entry points (the CLI and the pytest plugin) reach the upper layers,
from inside the functions that dispatch to them."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.support import ROOT

PACKAGE = ROOT / "src" / "dlcharts"
UPPER = ("cluster", "install", "images", "release", "run", "demo", "sweep")
EXTRAS = ("kubernetes", "cryptography", "bcrypt", "yamllint")  # dlcharts[cluster], dlcharts[release]
ENTRY_POINTS = ("cli", "plugin")


def core_modules() -> list[str]:
    return sorted(
        f"dlcharts.{path.stem}" for path in PACKAGE.glob("*.py") if path.stem not in (*UPPER, "__init__", "__main__")
    ) + ["dlcharts"]


def _upper(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "dlcharts" and len(parts) > 1 and parts[1] in UPPER


def test_importing_the_core_loads_no_upper_layer_and_no_extra() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {core_modules()!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = proc.stdout.split('"')
    assert not [m for m in loaded if _upper(m)], [m for m in loaded if _upper(m)]
    assert not [m for m in loaded if m.split(".")[0] in EXTRAS], [m for m in loaded if m.split(".")[0] in EXTRAS]


def _imports(tree: ast.AST, *, top_level_only: bool) -> list[tuple[int, str]]:
    found = []
    nodes = ast.iter_child_nodes(tree) if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module), *((node.lineno, f"{node.module}.{a.name}") for a in node.names)]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif (  # a block at the top level runs at import, except `if TYPE_CHECKING:`
            top_level_only
            and isinstance(node, (ast.If, ast.Try))
            and not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        ):
            found += _imports(node, top_level_only=True)
    return found


def test_core_modules_import_upper_layers_only_from_the_entry_points_functions() -> None:
    wrong = []
    for module in core_modules():
        if module == "dlcharts":
            continue
        stem = module.removeprefix("dlcharts.")
        tree = ast.parse((PACKAGE / f"{stem}.py").read_text())
        imports = _imports(tree, top_level_only=stem in ENTRY_POINTS)
        wrong += [f"{stem}.py:{line}: {name}" for line, name in imports if _upper(name) or name.split(".")[0] in EXTRAS]
    assert not wrong, "core modules importing upper layers or extras:\n" + "\n".join(wrong)


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
