"""`dlcharts run CHART [helm args]`: a training chart's job, for real and on CPU, before GPU hours are spent.

The steps, and what happens to the release afterwards, are in :mod:`~dlcharts.jobs.run.command`'s docstring. Its parts:

- :mod:`~dlcharts.jobs.run.command`: the orchestration: :class:`RunOptions`, a :func:`session` (the cluster, the start
  watch's rights, the namespace, the images) and :func:`run` (`dlcharts run`: one job on it);
- :mod:`~dlcharts.jobs.run.job`: one release on a ready cluster, from install to outcome (:func:`run_job`);
- :mod:`~dlcharts.jobs.run.values`: the CPU values installed first (:func:`cpu_values`) and the local images;
- :mod:`~dlcharts.jobs.run.relay`: the start watch's route to the API server on the real node (:func:`api_relay`);
- :mod:`~dlcharts.jobs.run.logs`: every container's log, streamed (:class:`LogStream`);
- :mod:`~dlcharts.jobs.run.outcome`: the pods', the Jobs' and the run's outcome, and the summary printed;
- :mod:`~dlcharts.jobs.run.rights`: the rights the start watch needs, asked before anything is installed;
- :mod:`~dlcharts.jobs.run.watch`: the start watch after a failure, and suspended at the end of a run.

Every name below is importable from here, as it was before the parts.
"""

from __future__ import annotations

from dlcharts.jobs.run.command import RunOptions, Session, chart_name, prepare_namespace, push_images, run, session
from dlcharts.jobs.run.job import replace_release, run_job
from dlcharts.jobs.run.logs import LogStream, Write
from dlcharts.jobs.run.outcome import (
    COMPONENT_LABEL,
    DELETED,
    SETTLE_SECONDS,
    PodOutcome,
    RunResult,
    is_start_watch,
    job_verdicts,
    parse_time,
    release_pods,
    summary,
)
from dlcharts.jobs.run.relay import api_relay
from dlcharts.jobs.run.rights import START_WATCH_RIGHTS, check_start_watch_rights, may_create
from dlcharts.jobs.run.values import (
    CPU_DEFAULTS,
    SPREAD_OVER_NODES,
    cpu_values,
    local_images,
)
from dlcharts.jobs.run.watch import START_FAILURE, START_WATCH_MARGIN, suspend_start_watch

__all__ = [
    "COMPONENT_LABEL",
    "CPU_DEFAULTS",
    "DELETED",
    "SETTLE_SECONDS",
    "SPREAD_OVER_NODES",
    "START_FAILURE",
    "START_WATCH_MARGIN",
    "START_WATCH_RIGHTS",
    "LogStream",
    "PodOutcome",
    "RunOptions",
    "RunResult",
    "Session",
    "Write",
    "api_relay",
    "chart_name",
    "check_start_watch_rights",
    "cpu_values",
    "is_start_watch",
    "job_verdicts",
    "local_images",
    "may_create",
    "parse_time",
    "prepare_namespace",
    "push_images",
    "release_pods",
    "replace_release",
    "run",
    "run_job",
    "session",
    "summary",
    "suspend_start_watch",
]
