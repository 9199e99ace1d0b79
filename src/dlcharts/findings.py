"""A finding: one thing wrong with one rendered object, wherever it was found.

Every finding is of one of two kinds. An **error** is what the API server or the kubelet would refuse, or what
breaks the workload once installed (a schema or API-rules violation, an object of no known schema, a removed API, a
selector that matches nothing, a name the API server refuses): it is always reported at level ``error``, except
``deprecated-api`` (a warning: the API is still served). A **policy** is an opinion (Pod Security ``restricted``,
NetworkPolicies, resources, image tags): the author's configuration (dlcharts.config) sets its level, ``error``,
``warning`` or ``off``. Each check id's kind is registered here (policies.check registers its own); an id nobody
registered is an error kind, so a new check is never silently demoted to an opinion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

ERROR = "error"  # a kind and a level
POLICY = "policy"  # a kind
WARNING = "warning"  # a level
OFF = "off"  # a level: the check does not run
KINDS = (ERROR, POLICY)
LEVELS = (ERROR, WARNING, OFF)

#: each check id's kind; an id not here is an error kind
_KINDS: dict[str, str] = {
    "schema": ERROR,
    "no-schema": ERROR,
    "api-rules": ERROR,
    "api-server": ERROR,
    "removed-api": ERROR,
    "deprecated-api": ERROR,
}
#: the level of an error-kind check that is not ``error``
_ERROR_LEVELS = {"deprecated-api": WARNING}
#: one line on what each check id finds (the SARIF rules' short descriptions, ``dlcharts validate --help``)
DESCRIPTIONS: dict[str, str] = {
    "schema": "the object does not match its Kubernetes or CRD schema",
    "no-schema": "no schema is known for the object's apiVersion and kind",
    "api-rules": "the API server's own create validation refuses the object",
    "api-server": "a real API server refuses the object (dry-run create)",
    "removed-api": "the apiVersion is no longer served by this Kubernetes version",
    "deprecated-api": "the apiVersion is deprecated in this Kubernetes version",
}


def register(check_id: str, kind: str, description: str = "") -> None:
    """Say which kind of finding ``check_id`` makes (``ERROR`` or ``POLICY``)."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: choose {' or '.join(KINDS)}")
    _KINDS[check_id] = kind
    if description:
        DESCRIPTIONS[check_id] = description


def kind_of(check_id: str) -> str:
    """``error`` or ``policy``; an id nobody registered is an error kind."""
    return _KINDS.get(check_id, ERROR)


def error_level(check_id: str) -> str:
    """The fixed level of an error-kind check: ``error``, or ``warning`` for ``deprecated-api``."""
    return _ERROR_LEVELS.get(check_id, ERROR)


def policy_ids() -> list[str]:
    """Every registered policy-kind check id, in registration order."""
    return [check_id for check_id, kind in _KINDS.items() if kind == POLICY]


@dataclasses.dataclass(frozen=True, order=True)
class Finding:
    source: str  # the template that rendered the object, from `# Source:`
    object: str  # "Kind/name"
    path: str  # field path inside the object, "spec.template.spec.containers[0].image"
    message: str
    check: str  # "schema" or a policy id such as "gpu-limits"
    kube_version: str | None = None
    kind: str = ""  # ERROR or POLICY; "" = the check id's registered kind
    level: str = ""  # ERROR or WARNING; "" = error (a policy's configured level is set by dlcharts.config)

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", kind_of(self.check))
        if not self.level:
            object.__setattr__(self, "level", error_level(self.check) if self.kind == ERROR else ERROR)

    @property
    def is_error(self) -> bool:
        """Whether this finding fails a run (its level is ``error``)."""
        return self.level == ERROR

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


def merged(findings: Iterable[Finding]) -> dict[Finding, list[str]]:
    """Findings made alike on several Kubernetes versions as one (its ``kube_version`` None), with the versions
    each was made on, oldest first; in sorted order."""
    versions: dict[Finding, list[str]] = {}
    for finding in findings:
        seen = versions.setdefault(dataclasses.replace(finding, kube_version=None), [])
        if finding.kube_version and finding.kube_version not in seen:
            seen.append(finding.kube_version)
    return {finding: sorted(versions[finding], key=_version_order) for finding in sorted(versions)}


def report(findings: Sequence[Finding]) -> str:
    """A readable report, grouped by template, for terminals and test failures. A finding made alike on several
    Kubernetes versions is one line naming them all: ``(k8s 1.29.0, 1.30.0)``. A finding below level error is
    marked ``(warning)``."""
    if not findings:
        return "no findings"
    versions = merged(findings)
    lines = [f"{len(versions)} finding(s):"]
    current = None
    for finding, found_on in versions.items():
        if finding.source != current:
            current = finding.source
            lines.append(f"  {current}")
        where = f" @ {finding.path}" if finding.path else ""
        version = f" (k8s {', '.join(found_on)})" if found_on else ""
        level = "" if finding.is_error else f" ({finding.level})"
        lines.append(f"    {finding.object}{where}: {finding.message} [{finding.check}]{version}{level}")
    return "\n".join(lines)


def _version_order(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.lstrip("v").split("."))
