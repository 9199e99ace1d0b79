"""A finding: one thing wrong with one rendered object, wherever it was found.

Every finding is of one of two kinds. An **error** is what the API server or the kubelet would refuse, or what
breaks the workload once installed (a schema or API-rules violation, an object of no known schema, a removed API, a
selector that matches nothing, a name the API server refuses): it is always reported at level ``error``, except
``deprecated-api`` (a warning: the API is still served) and ``api-rules-between`` (a warning: of the two minors'
rules that bracket the target's, one refuses the object and the other takes it). A **policy** is an opinion (Pod
Security ``restricted``, NetworkPolicies, resources, image tags): the author's configuration (dlcharts.config) sets
its level, ``error``, ``warning`` or ``off``. Each check id's kind is registered here (policies.check registers its
own); an id nobody registered is an error kind, so a new check is never silently demoted to an opinion.
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
    "api-rules-between": ERROR,
}
#: the level of an error-kind check that is not ``error``
_ERROR_LEVELS = {"deprecated-api": WARNING, "api-rules-between": WARNING}
#: one line on what each check id finds (the SARIF rules' short descriptions, ``dlcharts validate --help``)
DESCRIPTIONS: dict[str, str] = {
    "schema": "the object does not match its Kubernetes or CRD schema",
    "no-schema": "no schema is known for the object's apiVersion and kind",
    "api-rules": "the API server's own create validation refuses the object",
    "api-server": "a real API server refuses the object (dry-run create)",
    "removed-api": "the apiVersion is no longer served by this Kubernetes version",
    "deprecated-api": "the apiVersion is deprecated in this Kubernetes version",
    "api-rules-between": "the API server's rules of the oldest and newest linked minors disagree on the object, "
    "for a minor between them",
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
    """The fixed level of an error-kind check: ``error``, or ``warning`` for ``deprecated-api`` and
    ``api-rules-between``."""
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


def distinct(findings: Iterable[Finding]) -> list[Finding]:
    """The findings less those that another one makes better, in order: ``dns-names`` judges names, hostnames and
    label values as the API server does, at the field (a label's key, where the API server names the whole map and
    dlcharts.apirules.label_value_fields finds the key), so an ``api-rules`` finding at a field of an object where
    ``dns-names`` made one is that one; and a workload's ``invalid label selector`` is the API server's sequel to its
    error inside that selector. (``merged`` joins one problem found in several fields or versions.)"""
    found = list(findings)
    named = {(f.source, f.object, f.path) for f in found if f.check == "dns-names"}
    inside = {(f.source, f.object, f.kube_version, parent) for f in found for parent in _parents(f.path)}
    return [
        f
        for f in found
        if f.check != "api-rules"
        or not (
            (f.source, f.object, f.path) in named
            or (
                f.message.endswith(": invalid label selector")
                and (f.source, f.object, f.kube_version, f.path) in inside
            )
        )
    ]


def _parents(path: str) -> list[str]:
    """The fields ``path`` is inside: ``a.b[0].c`` -> ``a``, ``a.b``, ``a.b[0]``."""
    return [path[:i] for i, char in enumerate(path) if char in ".[" and i]


def merged(findings: Iterable[Finding]) -> dict[Finding, list[str]]:
    """Each problem once, with the Kubernetes versions it was found on, oldest first (none: the policies, judged
    once), in sorted order. Findings made alike on several versions are one (its ``kube_version`` None); then one
    problem in several fields of an object (one label value on a Deployment's metadata, its selector and its pod
    template), on the same versions, is one finding at the first field found, its message naming the others."""
    versions: dict[Finding, list[str]] = {}
    for finding in findings:
        seen = versions.setdefault(dataclasses.replace(finding, kube_version=None), [])
        if finding.kube_version and finding.kube_version not in seen:
            seen.append(finding.kube_version)
    fields: dict[tuple[Finding, tuple[str, ...]], list[str]] = {}
    for finding, found_on in versions.items():
        key = (dataclasses.replace(finding, path=""), tuple(sorted(found_on, key=_version_order)))
        fields.setdefault(key, []).append(finding.path)
    joined = {
        dataclasses.replace(finding, path=paths[0], message=finding.message + _also_at(paths[1:])): list(found_on)
        for (finding, found_on), paths in fields.items()
    }
    return {finding: joined[finding] for finding in sorted(joined)}


def _also_at(paths: list[str]) -> str:
    return f"; also at {', '.join(paths)}" if paths else ""


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
        lines.append(f"    {line_of(finding, found_on)}")
    return "\n".join(lines)


def line_of(finding: Finding, found_on: Sequence[str] = ()) -> str:
    """One finding as a report's line: object, field, message, check, the versions it was found on, and its level
    when it is not an error."""
    where = f" @ {finding.path}" if finding.path else ""
    version = f" (k8s {', '.join(found_on)})" if found_on else ""
    level = "" if finding.is_error else f" ({finding.level})"
    return f"{finding.object}{where}: {finding.message} [{finding.check}]{version}{level}"


def _version_order(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.lstrip("v").split("."))
