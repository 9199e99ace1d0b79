"""What a chart author writes in their own repository to test a chart with dlcharts (CI runs this file)."""

from pathlib import Path

import pytest

from dlcharts import scenarios_in

CHARTS = Path(__file__).parents[1] / "charts"


@pytest.mark.parametrize("scenario", scenarios_in(CHARTS), ids=str)
def test_every_scenario_is_valid(scenario, render, assert_valid, dlcharts_kube_version):
    assert_valid(render(scenario, kube_version=dlcharts_kube_version))


def test_completions_reach_the_job(render):
    job = render(CHARTS / "hello-batch", values={"completions": 5}).get("Job", "release-hello")
    assert job.body["spec"]["completions"] == 5


def test_a_typo_in_values_is_refused(render):
    from dlcharts.errors import RenderError

    with pytest.raises(RenderError, match="completion"):
        render(CHARTS / "hello-batch", values={"completion": 5})
