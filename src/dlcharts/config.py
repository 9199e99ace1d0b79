"""The chart author's configuration: which policies fail a run, which only warn, which do not run.

It lives in the author's repository, in ``pyproject.toml`` under ``[tool.dlcharts]`` or in ``.dlcharts.yaml``
(the same keys at the top level). The nearest one above the validated path is used: each folder from the path up to
the repository's root (the folder holding ``.git``) or the file system's root is looked at, and the first that has
either file configuring dlcharts wins (both in one folder is an error)::

    [tool.dlcharts]
    policies = "warning"            # the level of every policy: "error", "warning" or "off" (default "warning")
    missing-checks = "error"        # a check that cannot run in this install: "error" (default) or "warning"
    exemptions = "ci/policy-exemptions.yaml"   # the exemptions file, relative to this file (optional)

    [tool.dlcharts.policy]          # a level per policy id
    network-policy = "off"

    [tool.dlcharts.charts.gpu-device-plugin]   # per chart (its Chart.yaml name): the same two keys
    policies = "error"
    policy = { host-access = "warning" }

Only policies (opinions: ``resources``, ``image-tag``, ``security-context``, ``host-access``, ``network-policy``)
have a level to set; an error (what the API server or kubelet refuses, or what breaks the workload) always fails,
and is exempted per object with a reason, never turned off. Unknown keys, unknown check ids and bad levels are
errors naming the key, the file and the allowed values.

Without a configuration, errors fail and policies are reported as warnings (a run with warnings alone passes).
Command-line options beat the file: ``--policies LEVEL`` sets every policy (the file's per-policy levels
included), ``--policy ID=LEVEL`` one policy, ``--errors-only`` is ``--policies off``, ``--allow-missing-checks`` is
``missing-checks = "warning"``.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dlcharts import findings
from dlcharts.errors import DLChartsError, read_yaml
from dlcharts.findings import ERROR, OFF, POLICY, WARNING, Finding

YAML_FILE = ".dlcharts.yaml"
PYPROJECT = "pyproject.toml"
#: the level of every policy without a configuration
DEFAULT_POLICIES = WARNING
DEFAULT_MISSING_CHECKS = ERROR
POLICY_LEVELS = (ERROR, WARNING, OFF)
MISSING_LEVELS = (ERROR, WARNING)
_KEYS = ("policies", "policy", "charts", "missing-checks", "exemptions")
_CHART_KEYS = ("policies", "policy")


@dataclasses.dataclass(frozen=True)
class Levels:
    """The level of each check for one chart: an error kind's own level, a policy's configured one."""

    default: str = DEFAULT_POLICIES
    per_check: tuple[tuple[str, str], ...] = ()

    def of(self, check_id: str) -> str:
        if findings.kind_of(check_id) != POLICY:
            return findings.error_level(check_id)
        return dict(self.per_check).get(check_id, self.default)

    def running(self, check_ids: Iterable[str]) -> list[str]:
        """The checks of ``check_ids`` whose level is not ``off``."""
        return [check_id for check_id in check_ids if self.of(check_id) != OFF]

    def apply(self, found: Iterable[Finding]) -> list[Finding]:
        """The findings at their level; those of a check that is off are dropped."""
        out = []
        for finding in found:
            level = self.of(finding.check)
            if level == OFF:
                continue
            out.append(finding if finding.level == level else dataclasses.replace(finding, level=level))
        return out


#: every policy an error: the findings as the checks make them
STRICT = Levels(ERROR)


@dataclasses.dataclass(frozen=True)
class Config:
    """One configuration file's settings (``path`` None: the defaults), with the command line's overrides."""

    path: Path | None = None
    policies: str = DEFAULT_POLICIES
    policy: Mapping[str, str] = dataclasses.field(default_factory=dict)
    charts: Mapping[str, tuple[str | None, Mapping[str, str]]] = dataclasses.field(default_factory=dict)
    missing_checks: str = DEFAULT_MISSING_CHECKS
    exemptions: Path | None = None
    cli_policies: str | None = None  # --policies / --errors-only: beats every level of the file
    cli_policy: Mapping[str, str] = dataclasses.field(default_factory=dict)  # --policy ID=LEVEL

    def levels(self, chart: str | None = None) -> Levels:
        """The levels for the chart named ``chart`` (its Chart.yaml name)."""
        default, per_check = self.policies, dict(self.policy)
        if chart is not None and chart in self.charts:
            chart_default, chart_policy = self.charts[chart]
            default = chart_default or default
            per_check.update(chart_policy)
        if self.cli_policies is not None:
            default, per_check = self.cli_policies, {}
        per_check.update(self.cli_policy)
        return Levels(default, tuple(sorted(per_check.items())))

    @property
    def missing_checks_fail(self) -> bool:
        """Whether a check that cannot run fails the run."""
        return self.missing_checks == ERROR

    def describe(self) -> str:
        """For a run's header: the file used, or that there is none."""
        if self.path is None:
            return "none (errors fail, policies warn)"
        section = " [tool.dlcharts]" if self.path.name == PYPROJECT else ""
        return f"{self.path}{section}"

    def overridden(
        self,
        policies: str | None = None,
        policy: Iterable[str] = (),
        allow_missing_checks: bool = False,
    ) -> Config:
        """This configuration with the command line's options: ``policy`` items are ``ID=LEVEL``."""
        where = "the command line"
        cli_policy = dict(self.cli_policy)
        for item in policy:
            check_id, sep, level = item.partition("=")
            if not sep:
                raise DLChartsError(f"--policy {item!r}: expected ID=LEVEL, such as network-policy=off")
            cli_policy[_policy_id(check_id.strip(), f"--policy {item}", where)] = _level(
                level.strip(), POLICY_LEVELS, f"--policy {item}", where
            )
        return dataclasses.replace(
            self,
            cli_policies=_level(policies, POLICY_LEVELS, "--policies", where) if policies else self.cli_policies,
            cli_policy=cli_policy,
            missing_checks=WARNING if allow_missing_checks else self.missing_checks,
        )


def find(start: Path) -> Path | None:
    """The configuration file nearest above ``start`` (a chart, a folder or a file), or None."""
    folder = start.resolve()
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        found = [path for path in (candidate / YAML_FILE, candidate / PYPROJECT) if _configures(path)]
        if len(found) > 1:
            raise DLChartsError(
                f"{candidate}: both {YAML_FILE} and {PYPROJECT} [tool.dlcharts] configure dlcharts; keep one"
            )
        if found:
            return found[0]
        if (candidate / ".git").exists():  # the repository's root: a file above it is about something else
            return None
    return None


def discover(start: Path) -> Config:
    """The configuration for a run on ``start``: the nearest file's (``find``), else the defaults."""
    path = find(start)
    return load(path) if path is not None else Config()


def _configures(path: Path) -> bool:
    if path.name == YAML_FILE:
        return path.is_file()
    return path.is_file() and _pyproject_section(path) is not None


def _pyproject_section(path: Path) -> Any:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DLChartsError(f"{path}: not valid TOML ({exc})") from None
    return (data.get("tool") or {}).get("dlcharts")


def load(path: Path) -> Config:
    """Read one configuration file; every mistake in it is an error naming the key, the file and what is allowed."""
    if path.name == PYPROJECT:
        data, prefix = _pyproject_section(path), "tool.dlcharts."
    else:
        data, prefix = read_yaml(path), ""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DLChartsError(f"{path}: expected a mapping of settings ({', '.join(_KEYS)}), got {type(data).__name__}")
    _known_keys(data, _KEYS, prefix, path)
    charts: dict[str, tuple[str | None, Mapping[str, str]]] = {}
    chart_table = data.get("charts") or {}
    if not isinstance(chart_table, dict):
        raise DLChartsError(f"{path}: {prefix}charts: expected a table of charts by name, got {chart_table!r}")
    for name, settings in chart_table.items():
        key = f"{prefix}charts.{name}"
        if not isinstance(settings, dict):
            raise DLChartsError(f"{path}: {key}: expected a table with {' and/or '.join(_CHART_KEYS)}")
        _known_keys(settings, _CHART_KEYS, f"{key}.", path)
        default = settings.get("policies")
        charts[str(name)] = (
            None if default is None else _level(default, POLICY_LEVELS, f"{key}.policies", path),
            _policy_table(settings.get("policy"), f"{key}.policy", path),
        )
    exemptions = data.get("exemptions")
    if exemptions is not None and (not isinstance(exemptions, str) or not exemptions):
        raise DLChartsError(f"{path}: {prefix}exemptions: expected a file path, got {exemptions!r}")
    return Config(
        path=path,
        policies=_level(data.get("policies", DEFAULT_POLICIES), POLICY_LEVELS, f"{prefix}policies", path),
        policy=_policy_table(data.get("policy"), f"{prefix}policy", path),
        charts=charts,
        missing_checks=_level(
            data.get("missing-checks", DEFAULT_MISSING_CHECKS), MISSING_LEVELS, f"{prefix}missing-checks", path
        ),
        exemptions=path.parent / exemptions if exemptions else None,
    )


def _known_keys(data: dict[str, Any], known: tuple[str, ...], prefix: str, path: Path | str) -> None:
    for key in data:
        if key not in known:
            raise DLChartsError(f"{path}: {prefix}{key}: unknown key; known keys: {', '.join(known)}")


def _policy_table(table: Any, key: str, path: Path) -> dict[str, str]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise DLChartsError(f"{path}: {key}: expected a table of policy ids and levels, got {table!r}")
    return {
        _policy_id(str(check_id), f"{key}.{check_id}", path): _level(level, POLICY_LEVELS, f"{key}.{check_id}", path)
        for check_id, level in table.items()
    }


def _policy_id(check_id: str, key: str, where: Path | str) -> str:
    from dlcharts import policies  # registers every check's kind

    if check_id in policies.CHECKS and findings.kind_of(check_id) == POLICY:
        return check_id
    known = ", ".join(findings.policy_ids())
    if check_id in policies.CHECKS or findings.kind_of(check_id) == ERROR and check_id in findings.DESCRIPTIONS:
        raise DLChartsError(
            f"{where}: {key}: {check_id} finds what the API server or kubelet refuses, or what breaks the workload: "
            f"it always fails and has no level to set (exempt an object with its reason instead); policies: {known}"
        )
    raise DLChartsError(f"{where}: {key}: unknown policy id {check_id!r}; policies: {known}")


def _level(value: Any, allowed: tuple[str, ...], key: str, where: Path | str) -> str:
    if value is False and OFF in allowed:  # YAML 1.1 (PyYAML) reads a bare `off` as false
        return OFF
    if not isinstance(value, str) or value not in allowed:
        raise DLChartsError(f"{where}: {key}: {value!r} is not a level; choose {', '.join(repr(a) for a in allowed)}")
    return value
