"""Every chart x ci scenario: strict schemas on every Kubernetes version, policies, names with a long
release, helm lint --strict, golden snapshots, and the same render under Helm 3 and Helm 4."""

from __future__ import annotations

import json

import pytest

from dlcharts import toolchain
from dlcharts.findings import report
from dlcharts.helm import find_helm
from dlcharts.render import ObjectKey, Rendered, Renderer
from dlcharts.snapshots import diff, normalize, serialize
from dlcharts.suite import KUBE_VERSIONS, all_scenarios, check_scenario, discover_charts, stale_exemptions
from tests.support import CHARTS


def test_every_chart_has_scenarios():
    charts = discover_charts(CHARTS)
    assert charts, "no charts found"
    for chart in charts:
        assert list((chart / "ci").glob("*-values.yaml")), f"{chart.name} has no ci/*-values.yaml scenarios"


def test_scenario_is_clean_on_every_kubernetes_version(dlcharts_scenario, chart_renderer, exemptions):
    findings = check_scenario(
        chart_renderer, dlcharts_scenario, KUBE_VERSIONS, exemptions.get(dlcharts_scenario.chart_name, [])
    )  # noqa: E501
    assert not findings, report(findings)


def test_helm_lint_strict(dlcharts_scenario, helm, chart_renderer):
    chart_renderer.ensure_dependencies(dlcharts_scenario.chart)
    args = ["lint", "--strict", str(dlcharts_scenario.chart), "--kube-version", KUBE_VERSIONS[-1]]
    if dlcharts_scenario.values_file:
        args += ["--values", str(dlcharts_scenario.values_file)]
    proc = helm.run(args, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_golden_snapshot(dlcharts_scenario, render, snapshot):
    snapshot(render(dlcharts_scenario), dlcharts_scenario.id)


def test_helm3_and_helm4_render_the_same_objects(dlcharts_scenario, chart_renderer):
    other_key = next(k for k in toolchain.HELM_MATRIX if toolchain.TOOLS[k].version != chart_renderer.helm.version)
    other = Renderer(find_helm(other_key), cache_dir=chart_renderer.cache_dir)
    request = dlcharts_scenario.request()
    theirs, ours = other.render(request), chart_renderer.render(request)
    a, b = comparable(theirs), comparable(ours)
    if a != b:  # the snapshot texts only to show where (dumping YAML costs more than the render)
        differ = sorted((key for key in set(a) | set(b) if a.get(key) != b.get(key)), key=str)
        # diff() misses what Python finds equal and YAML does not (1 and 1.0, true and 1): then both texts
        both = "\n".join(f"{k}:\n  {a.get(k)}\n  {b.get(k)}" for k in differ)
        where = diff(serialize(theirs), serialize(ours)) or both
        pytest.fail(f"helm {other.helm.version} vs {chart_renderer.helm.version}:\n{where}")


def comparable(rendered: Rendered) -> dict[ObjectKey, str]:
    """What a snapshot holds of each object (source, normalized body), where 1 and 1.0 or true and 1 differ."""
    return {key: json.dumps([obj.source, normalize(obj.body)], sort_keys=True) for key, obj in rendered.objects.items()}


def test_same_release_name_in_two_namespaces_shares_no_cluster_scoped_object(chart_renderer):
    """helm refuses to install an object another release owns, so a cluster-scoped name (ClusterRole, ...)
    without the namespace in it would let only one team per cluster use a release name."""
    checked = 0
    for scenario in all_scenarios(CHARTS):
        first = {o.ref() for o in chart_renderer.render(scenario.request()) if o.key.namespace is None}
        if not first:
            continue
        second = {
            o.ref() for o in chart_renderer.render(scenario.request(namespace="team-b")) if o.key.namespace is None
        }
        assert not first & second, f"{scenario.id}: both namespaces render {sorted(first & second)}"
        checked += 1
    assert checked, "no scenario renders a cluster-scoped object; this test checks nothing"


def test_no_exemption_is_stale(chart_renderer, exemptions):
    """An exemption must still cover a finding in some scenario of its chart, or it should be deleted (the
    `exemptions` fixture already fails on this; here it is said once, by name)."""
    found = all_scenarios(CHARTS)
    assert exemptions, "no exemptions loaded; this test checks nothing"
    assert stale_exemptions(chart_renderer, found, exemptions, {s.chart_name for s in found}) == []


@pytest.fixture(scope="module", autouse=True)
def _helm_version_banner(helm):
    """Make the helm under test visible in the report header of each module."""
    print(f"\nrendering with {helm.path} ({helm.version})")
