"""What the kubelet does to a container's env before the program sees it: resolve the completion-index
fieldRef and expand $(VAR) references. Used to show (demo) and to check (tests) each pod's wiring."""

from __future__ import annotations

import re
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


def main_container(job: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = job["spec"]["template"]["spec"]["containers"]
    return containers[0]
