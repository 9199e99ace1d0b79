"""pytest run in a folder of its own, as a chart author runs it in their repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: the plugins installed here for other tiers, left out of an author's run
UNUSED_PLUGINS = ("-p", "no:xdist", "-p", "no:hypothesispytest", "-p", "no:helm-charts")


def run_pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest run in ``folder`` as a chart author runs it in their repository (their pytest.ini and test file
    there; the dlcharts plugin loads itself), on one core, with ``args`` added. The plugins installed here for
    other tiers stay out (hypothesis's alone costs ~0.7 s of start-up a run); the main run has them all loaded."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *UNUSED_PLUGINS, *args]
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, check=False, timeout=300)
