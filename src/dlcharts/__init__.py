"""dl-charts: render, validate and install Helm charts from Python."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dlcharts.suite import Scenario

__version__ = "0.2.0"


def scenarios_in(root: Path | str) -> list[Scenario]:
    """Every chart x ci-scenario under ``root`` (a chart or a folder of charts), for ``pytest.mark.parametrize``."""
    from dlcharts.suite import all_scenarios

    return all_scenarios(Path(root))
