"""Where an embedded cluster lives on disk, shared by its start steps (a real node's: dlcharts.cluster.node_layout).

$DLCHARTS_CACHE/clusters/<name>/      the state directory: kwokctl's (pki/, pids/, logs/, kubeconfig.yaml) and
                                      ours (dlcharts-cluster.json, the real nodes' node*/, the add-ons' addons/)
$DLCHARTS_CACHE/run/<name>.lock       one start/stop of a cluster name at a time
$DLCHARTS_CACHE/run/<name>.kwokctl.log, <name>-failed-logs/      kwokctl's own log, the logs of a failed start
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any, TextIO

from dlcharts.utils.flock import locked

STATE_FILE = "dlcharts-cluster.json"


class ClusterLayout:
    """The folders and files of the cluster ``name`` under the cache ``cache``."""

    def __init__(self, name: str, cache: Path) -> None:
        self.name = name
        self.cache = cache
        self.clusters_dir = cache / "clusters"
        self.state_dir = self.clusters_dir / name
        self.kubeconfig = self.state_dir / "kubeconfig.yaml"
        self.logs_dir = self.state_dir / "logs"
        #: what a start recorded (the fingerprint, the versions, the real nodes and add-ons it started)
        self.state_file = self.state_dir / STATE_FILE
        #: lock, kwokctl's own log and logs of failed starts: outside clusters/, which kwokctl owns
        self.run_dir = cache / "run"
        self.kwokctl_log = self.run_dir / f"{name}.kwokctl.log"

    def recorded(self) -> dict[str, Any]:
        """The state file's document; empty when there is none."""
        state = self.state_file
        doc: dict[str, Any] = json.loads(state.read_text()) if state.is_file() else {}
        return doc

    def lock(self, name: str | None = None, timeout: float | None = None) -> contextlib.AbstractContextManager[TextIO]:
        """One start/stop of a cluster name at a time (the CLI and pytest workers may race); with ``name``, one
        holder of that machine-wide lock at a time. ``timeout`` (0: do not wait) raises LockTimeout past it."""
        return locked(self.run_dir / f"{name or self.name}.lock", timeout=timeout)

    def keep_logs(self) -> Path:
        dest = self.run_dir / f"{self.name}-failed-logs"
        shutil.rmtree(dest, ignore_errors=True)
        if self.logs_dir.is_dir():
            shutil.copytree(self.logs_dir, dest)
        else:
            dest.mkdir(parents=True)
        if self.kwokctl_log.is_file():
            shutil.copy2(self.kwokctl_log, dest / "kwokctl.log")
        return dest
