"""The shell scripts of dl-common live as files (charts/dl-common/scripts/*.sh, shellchecked by `make lint`) and
are rendered into templates/_shell.tpl by charts/dl-common/scripts/build.py: the committed template must not
drift from the scripts, and the lines meant for the tools never reach a pod."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import CHARTS

LIBRARY = CHARTS / "dl-common"
FIX = "python charts/dl-common/scripts/build.py"


def build(library: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(library / "scripts" / "build.py"), *args], capture_output=True,
                          text=True, check=False)  # fmt: skip


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A copy of dl-common whose scripts a test may change."""
    return Path(shutil.copytree(LIBRARY, tmp_path / "dl-common"))


def test_the_shell_template_matches_the_scripts():
    proc = build(LIBRARY, "--check")
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\nFix: {FIX}"


def test_every_script_is_a_define_without_the_tools_lines():
    text = (LIBRARY / "templates" / "_shell.tpl").read_text()
    bodies = re.findall(r'\{\{- define "([^"]+)" -\}\}\n(.*?)\n\{\{- end -\}\}', text, re.S)
    scripts = [*(LIBRARY / "scripts").glob("*.sh"), *(LIBRARY / "scripts").glob("*.py")]
    assert len(bodies) == len(scripts) - 1  # build.py renders, it is not rendered
    for name, body in bodies:
        assert not re.search(r"^\s*(#:|#@|# shellcheck )", body, re.M), name
        assert not re.search(r"@[a-z_]+@", body), name
    assert "port={{ int .context.Values.mpi.sshPort }}" in dict(bodies)["dl-common.mpi.discoverHostsScript"]


def test_a_changed_script_is_drift_until_rebuilt(library):
    script = library / "scripts" / "watchdog.sh"
    script.write_text(script.read_text() + 'echo "watchdog: done"\n')
    proc = build(library, "--check")
    assert proc.returncode == 1
    assert "_shell.tpl: differs from" in proc.stdout and FIX in proc.stdout
    assert build(library).returncode == 0
    assert 'echo "watchdog: done"\n{{- end -}}' in (library / "templates" / "_shell.tpl").read_text()
    assert build(library, "--check").returncode == 0


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["port={{ .Values.port }}"], "'{{' would start a template action; use a placeholder"),
        (["port=@port@"], "placeholders used but not declared with '#@': ['port']"),
        (["#@ port = {{ 2222 }}", "port=2222"], "declared but not used: ['port']"),
        (["#@port {{ 2222 }}"], "is not a placeholder; write '#@ <name> = <template text>'"),
        (["#: a comment that ends */ early"], "'*/' would end the define's comment early"),
    ],
)
def test_a_script_the_template_cannot_carry_is_refused(library, lines, message):
    script = library / "scripts" / "zz-new.sh"
    script.write_text("\n".join(["#!/bin/sh", "#: dl-common.test.newScript: a test script.", *lines, "true", ""]))
    proc = build(library)
    assert proc.returncode == 2
    assert "zz-new.sh" in proc.stderr and message in proc.stderr


def test_a_script_without_its_define_name_is_refused(library):
    (library / "scripts" / "zz-new.sh").write_text("#!/bin/sh\n#: a script that names no define\ntrue\n")
    proc = build(library)
    assert proc.returncode == 2
    assert "its first '#:' line must start with the define's name and a colon" in proc.stderr
