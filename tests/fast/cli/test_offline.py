"""Validation needs no network: the CLI validates charts inside a network namespace with no interfaces up."""

from __future__ import annotations

import shutil
import subprocess
import sys

from tests.support import ROOT


def test_validate_runs_with_the_network_unreachable(tmp_path):
    unshare = shutil.which("unshare")
    assert unshare, "util-linux unshare is needed for this test (Debian package util-linux)"
    probe = subprocess.run([unshare, "--net", "--map-root-user", "true"], capture_output=True, text=True, check=False)
    assert probe.returncode == 0, f"cannot create a network namespace here: {probe.stderr}"
    cmd = [
        unshare, "--net", "--map-root-user", sys.executable, "-m", "dlcharts.cli", "validate",
        str(ROOT / "examples" / "chart-author" / "charts"), "--no-cache",
        "--kube-version", "1.29.0", "--kube-version", "1.32.0", "--kube-version", "1.35.0",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("Kubernetes 1.29.0, 1.32.0, 1.35.0;"), proc.stdout
    assert "PASS hello-batch/01-three\n1 passed, 0 failed" in proc.stdout
