"""What the kubelet does to a container's env before the program sees it: resolve the completion-index
fieldRef and expand $(VAR) references; and what the charts' entrypoint wrapper then adds at container start
(variables composed from the mounted cluster ConfigMap, such as TF_CONFIG). Used to show (demo) and to check
(tests) each pod's wiring."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
COMPLETION_INDEX_PATHS = (
    "metadata.annotations['batch.kubernetes.io/job-completion-index']",
    "metadata.labels['batch.kubernetes.io/job-completion-index']",
)


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: defined names are replaced, $$ escapes, unknown references stay."""

    def repl(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REF.sub(repl, value)


def container_env(container: dict[str, Any], index: int) -> dict[str, str]:
    """The environment of one container of pod ``index`` of an Indexed Job, in order, expanded."""
    env: dict[str, str] = {"JOB_COMPLETION_INDEX": str(index)}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = expand(str(item["value"]), env)
        elif (item.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath") in COMPLETION_INDEX_PATHS:
            env[item["name"]] = str(index)
    return env


#: the pod annotation naming the container ``kubectl logs`` shows by default: a role that runs its image's own
#: entrypoint beside the watchdog has its program there, in a native sidecar (dl-common.pod.watchSidecar)
DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"


def main_container(job: dict[str, Any]) -> dict[str, Any]:
    """The container of a Job's pods that runs the role's program: the first, or the one the default-container
    annotation names (then possibly a native sidecar among the init containers)."""
    template = job["spec"]["template"]
    spec = template["spec"]
    containers: list[dict[str, Any]] = spec["containers"]
    named = ((template.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER)
    candidates: list[dict[str, Any]] = [*containers, *(spec.get("initContainers") or [])] if named else []
    return next((c for c in candidates if c.get("name") == named), containers[0])


CLUSTER_DIR_ENV = "DL_CLUSTER_DIR"  # where a pod finds the release's cluster ConfigMap (dl-common.cluster.*)
ENTRYPOINT_NAME = "dl-entrypoint"  # $0 of the charts' entrypoint wrapper (dl-common.pod.command)
PEER_GROUPS_ENV = "DL_PEER_GROUPS"  # the pods the peer wait (dl-common.peers.waitScript) waits for

# Stands in for the program the wrapper execs: writes its environment and arguments as JSON to argv[1].
_PROBE = "\n".join(
    [
        "import json, os, sys",
        "report = {'env': dict(os.environ), 'argv': sys.argv[2:]}",
        "open(sys.argv[1], 'w').write(json.dumps(report))",
    ]
)


@dataclass(frozen=True)
class Started:
    """What the program of a container gets once the entrypoint wrapper has run: its environment, its
    argv (after the wrapper, so starting with the watchdog's ``/bin/sh -c`` for a watched role) and what
    the wrapper logged."""

    env: dict[str, str]
    argv: list[str]
    log: str


def has_entrypoint(container: dict[str, Any]) -> bool:
    """Whether the container starts with the charts' entrypoint wrapper (``/bin/sh -c <script> dl-entrypoint``)."""
    command = container.get("command") or []
    return len(command) >= 4 and command[:2] == ["/bin/sh", "-c"] and command[3] == ENTRYPOINT_NAME


def start_container(container: dict[str, Any], index: int, cluster_files: dict[str, str]) -> Started:
    """Run the entrypoint wrapper of ``container`` (pod ``index`` of an Indexed Job) here, as the container
    would start: with the container's expanded env, the cluster ConfigMap's ``cluster_files`` (name -> text)
    in a folder that stands for its mount, no peers for its peer wait, and a probe in place of the program that the
    wrapper execs. The wrapper's own shell code runs unchanged (POSIX sh), so this shows what the program really
    receives."""
    if not has_entrypoint(container):
        raise ValueError(f"container {container.get('name')!r} has no entrypoint wrapper")
    env = container_env(container, index)
    command = container["command"]
    args = [expand(str(a), env) for a in container.get("args") or []]
    with tempfile.TemporaryDirectory(prefix="dlcharts-entrypoint-") as tmp:
        folder = Path(tmp) / "cluster"
        folder.mkdir()
        for name, text in cluster_files.items():
            (folder / name).write_text(text)
        env[CLUSTER_DIR_ENV] = str(folder)
        if PEER_GROUPS_ENV in env:  # the wrapper's peer wait has no pods to wait for here: it ends at once
            env[PEER_GROUPS_ENV] = ""
        env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
        out = Path(tmp) / "probe.json"
        argv = ["/bin/sh", "-c", command[2], ENTRYPOINT_NAME, sys.executable, "-c", _PROBE, str(out),
                *command[4:], *args]  # fmt: skip
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(
                f"the entrypoint of {container.get('name')!r} (index {index}) exited {proc.returncode}:\n"
                f"{proc.stdout}{proc.stderr}"
            )
        probe = json.loads(out.read_text())
    return Started(env=dict(probe["env"]), argv=list(probe["argv"]), log=proc.stdout + proc.stderr)
