"""bench.operators.verdicts: when our release's Jobs gave their verdict, as the Job controller decided it."""

from __future__ import annotations

import datetime
from typing import Any

from bench.operators.verdicts import jobs_verdict


class Jobs:
    """The release's Jobs as the API server lists them (what jobs_verdict reads)."""

    def __init__(self, *jobs: dict[str, Any]) -> None:
        self.jobs = list(jobs)

    def items(self, path: str) -> list[dict[str, Any]]:
        assert path == "/apis/batch/v1/namespaces/ns/jobs"
        return self.jobs


def job(component: str, **conditions: str) -> dict[str, Any]:
    status = [{"type": kind, "status": "True", "lastTransitionTime": at} for kind, at in conditions.items()]
    return {"metadata": {"labels": {"app.kubernetes.io/component": component}}, "status": {"conditions": status}}


def at(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_a_failure_counts_from_the_controllers_decision_before_failed_is_added() -> None:
    # FailureTarget is the decision; Failed comes once the pods it ends are gone (or not yet, when the bench reads)
    deciding = Jobs(job("worker", FailureTarget="2026-11-29T08:00:05Z"), job("start-watch"))
    assert jobs_verdict(deciding, "ns") == at("2026-11-29T08:00:05Z")
    done = Jobs(job("worker", FailureTarget="2026-11-29T08:00:05Z", Failed="2026-11-29T08:00:09Z"))
    assert jobs_verdict(done, "ns") == at("2026-11-29T08:00:05Z")


def test_success_is_the_last_training_jobs_and_waits_for_every_one() -> None:
    launcher = job("launcher", Complete="2026-11-29T08:00:03Z")
    both = Jobs(launcher, job("worker", SuccessCriteriaMet="2026-11-29T08:00:07Z"),
                job("start-watch", Complete="2026-11-29T08:00:30Z"))  # fmt: skip
    assert jobs_verdict(both, "ns") == at("2026-11-29T08:00:07Z")
    assert jobs_verdict(Jobs(launcher, job("worker")), "ns") is None
