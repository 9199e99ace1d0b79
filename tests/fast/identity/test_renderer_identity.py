"""Identity is the in-process renderer's contract (dlcharts.render_server): under each pinned helm, for every
chart x ci scenario x Kubernetes version and for a sample of the property tier's values, it prints what the helm
binary prints, byte for byte (Secret data aside: generated keys are random by design), fails with the binary's
error text (its items in any order: the binary itself lists schema errors in an order that changes from run to run),
and decodes each object as PyYAML does. A difference fails the test, naming the scenario.

This tier runs the binary beside the server on every render, so it costs what the fast tiers saved; `make test`
runs it once per CI run, and pytest's summary line says how many renders were compared."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings

from dlcharts import toolchain
from dlcharts.errors import RenderError
from dlcharts.helm import find_helm
from dlcharts.render import Renderer, RendererMismatch, RenderRequest
from tests.support.values import mutated_values, schema_charts

# Property-tier values compared per chart and helm: each is one more helm process, so a sample, not all 40.
PROPERTY_SAMPLE = 8


@pytest.fixture(scope="session", params=toolchain.HELM_MATRIX)
def comparing(request: pytest.FixtureRequest) -> Renderer:
    """A Renderer that renders each request with the server and with the binary (no cache) and raises
    RendererMismatch where they differ."""
    return Renderer(find_helm(request.param), compare=True)


def same_as_binary(renderer: Renderer, request: RenderRequest, what: str) -> None:
    try:
        renderer.render(request)
    except RenderError:
        pass  # refused alike: the same exit status and error text (a different one raises RendererMismatch)
    except RendererMismatch as exc:
        pytest.fail(f"{what} under helm {renderer.helm.version}: {exc}", pytrace=False)


def test_every_scenario_renders_as_the_binary_renders_it(comparing, dlcharts_scenario, dlcharts_kube_version):
    request = dlcharts_scenario.request(dlcharts_kube_version)
    same_as_binary(comparing, request, f"{dlcharts_scenario.id} on Kubernetes {dlcharts_kube_version}")


@pytest.mark.parametrize("chart", schema_charts(), ids=lambda c: c.name)
def test_property_values_render_or_fail_as_the_binary_does(comparing, chart: Path, tmp_path: Path):
    @settings(max_examples=PROPERTY_SAMPLE)
    @given(values=mutated_values(chart))
    def prop(values):
        path = tmp_path / "values.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=True))
        same_as_binary(comparing, RenderRequest(chart=chart, values_files=(path,)), f"{chart.name} with {values}")

    prop()
