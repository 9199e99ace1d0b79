"""Every pinned version of a Go-built part, read from ``versions.env`` beside this file.

One source of truth: the build tables (dlcharts.native for the harness's helpers, dlcharts.host.binaries for the
cluster's binaries) and the checks (dlcharts.apirules) read it here, so the core never imports the cluster for a pin.
"""

from __future__ import annotations

from pathlib import Path

from dlcharts.errors import DLChartsError

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.env"


def read_versions(path: Path = VERSIONS_FILE, required: tuple[str, ...] = ()) -> dict[str, str]:
    """Parse versions.env (``KEY=value`` lines, ``#`` comments) into a dict; each of ``required`` must be there."""
    versions: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise DLChartsError(f"{path}: line {raw!r} is not KEY=value")
        versions[key.strip()] = value.strip().strip("\"'")
    missing = sorted(set(required) - versions.keys())
    if missing:
        raise DLChartsError(f"{path}: no pin for {', '.join(missing)}")
    return versions


VERSIONS: dict[str, str] = read_versions(required=("KUBERNETES_VERSION", "OLDEST_KUBERNETES_VERSION"))
#: the Kubernetes the embedded control plane runs and whose API rules k8s-validate links
KUBERNETES_VERSION = VERSIONS["KUBERNETES_VERSION"]
#: the oldest minor the charts support (a second control plane and validator, NAME@oldest)
OLDEST_KUBERNETES_VERSION = VERSIONS["OLDEST_KUBERNETES_VERSION"]
OLDEST = "@oldest"
