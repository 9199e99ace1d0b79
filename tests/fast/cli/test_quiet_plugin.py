"""The dlcharts plugin loads with every pytest session of the environment it is installed in; a session that uses
none of its fixtures gets nothing from it: no line, no subprocess, no build, no heavy import."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.support.pytest_runs import UNUSED_PLUGINS

PROBE = """\
import sys

def test_nothing_of_dlcharts_is_loaded_but_the_plugin():
    loaded = sorted(m for m in sys.modules if m.startswith("dlcharts"))
    assert loaded == ["dlcharts", "dlcharts.plugin"], loaded
    assert not any(m in sys.modules for m in ("yaml", "jsonschema", "kubernetes_validate")), "heavy import"
"""


def _trap(folder: Path, name: str, marker: Path) -> Path:
    """An executable that records being run, then fails loudly."""
    path = folder / name
    path.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\necho 'dlcharts trap: {name} ran' >&2\nexit 1\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_an_unrelated_project_gets_no_output_no_subprocess_and_no_build(tmp_path):
    project, traps = tmp_path / "project", tmp_path / "traps"
    project.mkdir()
    traps.mkdir()
    marker = tmp_path / "ran"
    (project / "test_probe.py").write_text(PROBE)
    # a go (every build runs it) and a helm that would record being run and fail loudly
    _trap(traps, "go", marker)
    env = {
        **os.environ,
        "HELM_BIN": str(_trap(traps, "helm", marker)),
        "PATH": f"{traps}{os.pathsep}{os.environ['PATH']}",
    }
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *UNUSED_PLUGINS]
    proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not marker.exists(), marker.read_text()
    assert "dlcharts" not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr
