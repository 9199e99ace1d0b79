"""The matrix the harness proves: charts x scenarios x Kubernetes versions, each render fully checked.

A scenario is one ``ci/NN-<name>-values.yaml`` file of a chart (ct's convention). A values file may start
with directives for the harness in comments, for what a values file cannot say itself::

    # @dlcharts api-versions: monitoring.coreos.com/v1/ServiceMonitor
    # @dlcharts namespace: gpu-operator     (the scenario's namespace; --namespace beats it)
    # @dlcharts release: nvdp               (the scenario's release name; --release beats it)

Other YAML files in ``ci/`` are not scenarios (as for ct); the CLI and the plugin warn about each.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dlcharts.config import Levels
from dlcharts.errors import DLChartsError, RenderError
from dlcharts.findings import Finding, distinct
from dlcharts.policies import CHECKS, SCHEMA_CHECKS, Exemption, run_policies
from dlcharts.render import Rendered, Renderer, RenderRequest, chart_yaml
from dlcharts.schemas import validate_objects

KUBE_VERSIONS = ("1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0")
# Names must fit with a release name this long (Helm allows 53; 40 is what real teams use).
LONG_RELEASE = "a-forty-character-release-name-for-tests"
assert len(LONG_RELEASE) == 40
LONG_RELEASE_HINT = (
    f"hint: names are also checked on a render with the release name {LONG_RELEASE} (Helm allows 53 characters), "
    "and the chart refused that render; it took the release asked for. Values that name a release (such as "
    "<release>-worker) hold for that release only: let the chart derive them from .Release.Name"
)
_DIRECTIVE_RE = re.compile(r"^#\s*@dlcharts\s+([a-z-]+)\s*:\s*(.*)$")


@dataclasses.dataclass(frozen=True)
class Scenario:
    chart: Path
    name: str  # "01-default"; "default" when the chart has no ci/ files
    values_file: Path | None
    api_versions: tuple[str, ...] = ()
    release: str | None = None  # the file's `@dlcharts release:` directive
    namespace: str | None = None  # the file's `@dlcharts namespace:` directive

    @property
    def chart_name(self) -> str:
        return chart_name(self.chart)

    @property
    def id(self) -> str:
        return f"{self.chart_name}/{self.name}"

    def __str__(self) -> str:
        return self.id

    def request(
        self,
        kube_version: str = KUBE_VERSIONS[-1],
        release: str | None = None,
        namespace: str | None = None,
        set_values: tuple[str, ...] = (),
    ) -> RenderRequest:
        """The render of this scenario; a release or namespace given here beats the file's directives."""
        return RenderRequest(
            chart=self.chart,
            values_files=(self.values_file,) if self.values_file else (),
            set_values=set_values,
            release=release or self.release or "release",
            namespace=namespace or self.namespace or "default",
            kube_version=kube_version,
            api_versions=self.api_versions,
        )


def chart_name(chart: Path) -> str:
    return str(chart_meta(chart)["name"])


def chart_meta(chart: Path) -> dict[str, Any]:
    """A chart's Chart.yaml (a copy the caller may change), or a one-line error naming the file."""
    meta = chart_yaml(chart).meta
    if not isinstance(meta, dict) or not meta.get("name"):
        raise DLChartsError(f"{chart / 'Chart.yaml'}: no `name:`; this is not a chart's Chart.yaml")
    return copy.deepcopy(meta)


def discover_charts(root: Path) -> list[Path]:
    """Application charts under ``root``: ``root`` itself when it is a chart, else the charts one level down.

    A path that names none is an error, so a typo cannot turn a check off: a missing path, a file, a folder
    without charts, and a library chart asked for on its own (it renders nothing). Library charts in a
    folder of charts are skipped."""
    if (root / "Chart.yaml").is_file():
        if chart_meta(root).get("type") == "library":
            raise DLChartsError(
                f"{root} is a library chart: nothing to render; name a chart that depends on it, or a folder of charts"
            )
        return [root]
    if not root.exists():
        raise DLChartsError(f"{root}: no such chart or folder")
    if not root.is_dir():
        raise DLChartsError(f"{root} is not a chart (no Chart.yaml) nor a folder of charts")
    found = sorted(p.parent for p in root.glob("*/Chart.yaml"))
    charts = [chart for chart in found if chart_meta(chart).get("type") != "library"]
    if not charts:
        what = "only library charts" if found else "no chart (no <name>/Chart.yaml)"
        raise DLChartsError(f"{root} holds {what}: nothing to render")
    return charts


def scenarios(chart: Path) -> list[Scenario]:
    files = sorted((chart / "ci").glob("*-values.yaml"))
    if not files:
        return [Scenario(chart, "default", None)]
    found = []
    for path in files:
        directives = _directives(path)
        release, namespace = directives.get("release"), directives.get("namespace")
        found.append(
            Scenario(
                chart, path.name[: -len("-values.yaml")], path, directives.get("api-versions", ()),
                release[0] if release else None, namespace[0] if namespace else None,
            )
        )  # fmt: skip
    return found


def ignored_ci_files(chart: Path) -> list[Path]:
    """YAML files in ``<chart>/ci`` that are not scenarios, since only ``*-values.yaml`` are (ct's convention)."""
    ci = chart / "ci"
    return sorted(
        p for p in ci.glob("*") if p.suffix in (".yaml", ".yml") and p.is_file() and not p.name.endswith("-values.yaml")
    )


def ignored_ci_warnings(charts: Iterable[Path]) -> list[str]:
    """One warning per YAML file in a chart's ``ci/`` that is not checked, with the name that would check it."""
    return [
        f"warning: {path} is not a scenario, so it is not checked: only ci/*-values.yaml are (ct's convention); "
        f"rename it to {path.with_suffix('').name.removesuffix('-values')}-values.yaml to check it"
        for chart in charts
        for path in ignored_ci_files(chart)
    ]


_DIRECTIVES = {"api-versions": "any", "release": "one", "namespace": "one"}


def _directives(path: Path) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = _DIRECTIVE_RE.match(line.strip())
        if not match:
            continue
        key, values = match.group(1), tuple(v for v in re.split(r"[,\s]+", match.group(2)) if v)
        if key not in _DIRECTIVES:
            raise DLChartsError(
                f"{path}:{number}: unknown directive `@dlcharts {key}`; known: {', '.join(_DIRECTIVES)}"
            )
        if _DIRECTIVES[key] == "one" and len(values) != 1:
            raise DLChartsError(f"{path}:{number}: `@dlcharts {key}:` takes one name, got {len(values)}")
        found[key] = values
    return found


def all_scenarios(root: Path) -> list[Scenario]:
    return [s for chart in discover_charts(root) for s in scenarios(chart)]


def check_rendered(
    renderer: Renderer,
    rendered: Rendered,
    exemptions: Iterable[Exemption] = (),
    policies: bool = True,
    levels: Levels | None = None,
) -> list[Finding]:
    """Every finding for one render, the verdict every entry point gives (a scenario, ``-f``/``--set`` values, the
    pytest plugin's ``assert_valid`` and ``find_problems``): schema findings for the render's Kubernetes version, plus
    (with ``policies``) the policy findings of ``policy_findings``, all that the exemptions leave, less those another
    makes better (dlcharts.findings.distinct). With ``levels`` (dlcharts.config), each finding gets its level and the
    policies that are off do not run; without, a policy finding is an error."""
    exempt = list(exemptions)
    findings = exempted(validate_objects(rendered, rendered.request.kube_version), exempt)
    if policies:
        findings += policy_findings(renderer, rendered, exempt, _running(levels))
    findings = distinct(findings)
    return levels.apply(findings) if levels is not None else findings


def _running(levels: Levels | None) -> list[str] | None:
    """The checks to run at ``levels`` (None: all)."""
    return None if levels is None else levels.running(CHECKS)


def policy_findings(
    renderer: Renderer, rendered: Rendered, exemptions: Iterable[Exemption] = (), checks: list[str] | None = None
) -> list[Finding]:
    """The findings of ``checks`` (None: every check) on ``rendered`` that the exemptions leave; names (``dns-names``)
    also on the same request rendered with a 40-character release name, so a name that fits with the render's
    release but not with a real team's is caught whatever release the render used."""
    exempt = list(exemptions)
    findings = run_policies(rendered, exempt, checks)
    if checks is None or "dns-names" in checks:
        try:
            long_name = renderer.render(dataclasses.replace(rendered.request, release=LONG_RELEASE))
        except RenderError as exc:
            raise RenderError(exc.chart, exc.inputs, f"{exc.stderr}\n{LONG_RELEASE_HINT}") from None
        own = set(findings)  # what the long release adds: a finding the render's own release has too is not twice
        release = rendered.request.release
        findings += [
            dataclasses.replace(f, message=f"{f.message} (release {LONG_RELEASE})")
            for f in run_policies(long_name, exempt, checks=["dns-names"])
            if dataclasses.replace(
                f, object=f.object.replace(LONG_RELEASE, release), message=f.message.replace(LONG_RELEASE, release)
            )
            not in own
        ]
    return findings


def check_requests(
    renderer: Renderer,
    requests: Sequence[RenderRequest],
    exemptions: Iterable[Exemption] = (),
    server: Callable[[Rendered], list[Finding]] | None = None,
    levels: Levels | None = None,
) -> list[Finding]:
    """Every finding for one chart's values rendered for several Kubernetes versions (``requests``, the newest
    last): ``check_rendered`` on each render, policies on the newest only. ``server``
    (dlcharts.cluster.server_check.ServerCheck.findings) adds an API server's verdict on each render. ``levels`` as
    for ``check_rendered``."""
    exempt = list(exemptions)
    findings: list[Finding] = []
    for number, request in enumerate(requests, 1):
        rendered = renderer.render(request)
        findings += check_rendered(renderer, rendered, exempt, number == len(requests), levels)
        if server is not None:
            found = server(rendered)
            findings += levels.apply(found) if levels is not None else found
    return distinct(findings)  # across the versions too: one problem found at several is one finding


def check_scenario(
    renderer: Renderer,
    scenario: Scenario,
    kube_versions: Iterable[str] = KUBE_VERSIONS,
    exemptions: Iterable[Exemption] = (),
    release: str | None = None,
    namespace: str | None = None,
    server: Callable[[Rendered], list[Finding]] | None = None,
    levels: Levels | None = None,
) -> list[Finding]:
    """Every finding for one scenario (``check_requests`` on its render for each Kubernetes version);
    ``release``/``namespace`` beat the scenario's own."""
    requests = [scenario.request(version, release, namespace) for version in kube_versions]
    return check_requests(renderer, requests, exemptions, server, levels)


def exempted(findings: Iterable[Finding], exemptions: Iterable[Exemption]) -> list[Finding]:
    """The findings no exemption covers (only policy findings and ``no-schema`` ones can be covered)."""
    exempt = list(exemptions)
    return [f for f in findings if not any(e.covers(f) for e in exempt)]


def namespace_hint(error: RenderError) -> str:
    """For a render that failed in the ``default`` namespace with a message about the namespace (a chart that
    refuses ``default``, as node agents and operators often do): how to give the scenario its own."""
    if "namespace=default" not in error.inputs.split() or "namespace" not in error.stderr.lower():
        return ""
    return (
        "hint: the chart seems to refuse the namespace `default`; give one with --namespace NAME (pytest: "
        "render(..., namespace=NAME)), or in the scenario's values file: `# @dlcharts namespace: NAME`"
    )


def stale_exemptions(
    renderer: Renderer,
    scenarios: Iterable[Scenario],
    exemptions: Mapping[str, Iterable[Exemption]],
    known_charts: Iterable[str],
    kube_version: str = KUBE_VERSIONS[-1],
    release: str | None = None,
    namespace: str | None = None,
) -> list[str]:
    """What is stale in an exemptions file, one line each, so it cannot rot into a blanket pass: a chart name
    that is none of ``known_charts``, an exemption that covers no finding of any scenario of its chart (with
    ``objects`` naming only objects that are not there, say). One pattern of several that matches nothing is
    allowed: it may name an object only an option outside the scenarios renders. Only charts with scenarios
    here are judged for coverage, and a chart with a scenario helm refuses is not (that refusal is reported on
    its own)."""
    known = set(known_charts)
    problems = [
        f"exemptions name chart {chart!r}, which is none of the charts checked ({', '.join(sorted(known))})"
        for chart in exemptions
        if chart not in known
    ]
    by_chart: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        by_chart.setdefault(scenario.chart_name, []).append(scenario)
    for chart, chart_scenarios in sorted(by_chart.items()):
        chart_exemptions = list(exemptions.get(chart, ()))
        if not chart_exemptions:
            continue
        try:
            renders = [renderer.render(s.request(kube_version, release, namespace)) for s in chart_scenarios]
            found = [f for rendered in renders for f in policy_findings(renderer, rendered)]
            if any(e.check in SCHEMA_CHECKS for e in chart_exemptions):
                schema = [f for rendered in renders for f in validate_objects(rendered, kube_version)]
                found += [f for f in schema if f.check in SCHEMA_CHECKS]
        except RenderError:
            continue
        names = ", ".join(s.name for s in chart_scenarios)
        for exemption in chart_exemptions:
            if not any(exemption.covers(f) for f in found):
                objects = (
                    f" (objects {list(exemption.objects)} match none of its findings)" if exemption.objects else ""
                )
                problems.append(
                    f"{chart}.{exemption.check} covers no finding in any scenario ({names}){objects}; delete it"
                )
    return problems
