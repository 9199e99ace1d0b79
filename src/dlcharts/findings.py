"""A finding: one thing wrong with one rendered object, wherever it was found."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any


@dataclasses.dataclass(frozen=True, order=True)
class Finding:
    source: str  # the template that rendered the object, from `# Source:`
    object: str  # "Kind/name"
    path: str  # field path inside the object, "spec.template.spec.containers[0].image"
    message: str
    check: str  # "schema" or a policy id such as "gpu-limits"
    kube_version: str | None = None

    def __str__(self) -> str:
        where = f" @ {self.path}" if self.path else ""
        version = f" (k8s {self.kube_version})" if self.kube_version else ""
        return f"[{self.check}] {self.source}: {self.object}{where}: {self.message}{version}"


def format_path(parts: Iterable[Any]) -> str:
    """``["spec", "containers", 0, "image"]`` -> ``spec.containers[0].image``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def report(findings: Sequence[Finding]) -> str:
    """A readable report, grouped by template, for terminals and test failures."""
    if not findings:
        return "no findings"
    lines = [f"{len(findings)} finding(s):"]
    current = None
    for finding in sorted(findings):
        if finding.source != current:
            current = finding.source
            lines.append(f"  {current}")
        where = f" @ {finding.path}" if finding.path else ""
        version = f" (k8s {finding.kube_version})" if finding.kube_version else ""
        lines.append(f"    {finding.object}{where}: {finding.message} [{finding.check}]{version}")
    return "\n".join(lines)
