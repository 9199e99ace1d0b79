"""The charts the chart-level tests share: which are training charts, and how a refused render is read."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from dlcharts.catalogue import MPI_CHARTS, TRAINING_CHARTS
from dlcharts.errors import RenderError
from tests.support import CHARTS

#: the training charts present in this tree
TRAINING = [c for c in TRAINING_CHARTS if (CHARTS / c).is_dir()]
#: the MPI charts (a launcher and sshd workers) present in this tree
MPI = [c for c in MPI_CHARTS if c in TRAINING]

#: what helm prints when a template dereferences something that is not there: a chart bug, never a refusal
PANIC = ("nil pointer", "panic", "can't evaluate", "<nil>")


def training_jobs(rendered: Any) -> list[Any]:
    """The rendered Jobs of the training roles: every Job but the start watch's (dl-common.startWatch)."""
    return [job for job in rendered.of_kind("Job") if not job.name.endswith("-start-watch")]


def refusal(render: Any, chart: str, **kwargs: Any) -> str:
    """helm's stderr for a render of ``chart`` (with the ``render`` fixture) that must be refused; never a
    template panic."""
    with pytest.raises(RenderError) as info:
        render(CHARTS / chart, **kwargs)
    stderr = info.value.stderr
    assert not any(marker in stderr for marker in PANIC), stderr
    return stderr


#: a template that turns dl-common.validate.references off: a define in the chart's own templates wins over the
#: library's (Helm parses a subchart's templates first), which the charts never do; only tests use it
_REFERENCES_OFF = '{{- define "dl-common.validate.references" -}}{{- toJson (.errors | default list) -}}{{- end -}}\n'


def without_reference_checks(chart: Path, folder: Path) -> Path:
    """A copy of ``chart`` (and its library chart) under ``folder`` whose render skips dl-common.validate.references:
    what the chart would render if it did not check its values' cross-references, for the verdict of the API server
    (or the offline validator) on exactly those objects. Made once per folder."""
    copy = folder / "charts" / chart.name
    if not copy.is_dir():
        for source in (chart, chart.parent / "dl-common"):
            if not (folder / "charts" / source.name).is_dir():
                shutil.copytree(source, folder / "charts" / source.name, symlinks=True)
        (copy / "templates" / "_references_off.tpl").write_text(_REFERENCES_OFF)
    return copy
