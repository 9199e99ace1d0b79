#!/usr/bin/env python3
"""Manual probe (not part of `make bench`): is PyPI's helm-python-sdk an in-process stand-in for the pinned helm?

Run it in a throwaway virtualenv, never the project's:

    python3 -m venv /tmp/sdk && /tmp/sdk/bin/pip install helm-python-sdk pyyaml
    /tmp/sdk/bin/python bench/helm_sdk_probe.py

It renders charts/tensorflow-dist with the SDK and with the pinned `helm template`, and prints the SDK's Helm
version, both timings, whether the outputs are byte-identical, and the head of the diff. What it found is
summarised in bench/results.md ("In-process rendering").
"""

from __future__ import annotations

import difflib
import subprocess
import time
from pathlib import Path

import helm_python as helm  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "tensorflow-dist"
HELM = ROOT / ".tools" / "helm-v4.3.1" / "helm"


def main() -> int:
    print(f"helm-python-sdk bundles Helm {helm.helm_sdk_version()} (libhelm_c {helm.helm_c_version()})")
    samples = []
    manifests: dict[str, str] = {}
    for _ in range(5):
        start = time.perf_counter()
        chart = helm.Chart.load(str(CHART))
        manifests = chart.render({}, name="release", namespace="default", is_install=True)
        samples.append(time.perf_counter() - start)
    samples.sort()
    start = time.perf_counter()
    binary = subprocess.run(
        [str(HELM), "template", "release", str(CHART), "--namespace", "default", "--kube-version", "1.35.0"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    process = time.perf_counter() - start
    median = samples[len(samples) // 2]
    print(f"in-process load+render: median {median * 1e3:.0f} ms; helm process {process * 1e3:.0f} ms")
    print("Chart.render() takes name, namespace, revision, is_install, is_upgrade: no kube version, no API versions")
    sdk = "".join(f"---\n# Source: {path}\n{text}" for path, text in sorted(manifests.items()) if text.strip())
    print(f"byte-identical to the pinned helm: {sdk == binary} (binary {len(binary)} bytes, sdk {len(sdk)} bytes)")
    diff = list(difflib.unified_diff(binary.splitlines(True), sdk.splitlines(True), "helm template", "sdk"))
    print("".join(diff[:40]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
