"""Running a sweep: at most ``parallelTrials`` trials at once, each a release of the chart in a thread of its own,
until ``maxTrials``, ``maxFailedTrials``, the goal or an interrupt ends it."""

from __future__ import annotations

import contextlib
import copy
import queue
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import ClusterError, DLChartsError
from dlcharts.jobs.sweep.spec import Sweep, substitute
from dlcharts.jobs.sweep.suggestion import Suggester
from dlcharts.jobs.sweep.trials import DONE_STATES, MetricReader, SweepRecord, Trial, median_stop

Write = Callable[[str], None]


class Releases:
    """The trials' releases, each in a thread of its own (:class:`TrialRelease`): ``events`` gets a trial's index
    when its thread ends (and -1 at each poll), ``stop_requests`` (trial index -> why) stops one."""

    def __init__(self, record: SweepRecord, ready: Any, *, keep: bool, poll: float) -> None:
        self.record, self.ready, self.keep, self.poll = record, ready, keep, poll
        self.events: queue.Queue[int] = queue.Queue()
        self.stop_requests: dict[int, str] = {}
        self.threads: dict[int, threading.Thread] = {}

    def start(self, trial: Trial) -> None:
        with self.record.lock:
            trial.state, trial.started, trial.metric = "Running", time.time(), self.record.sweep.metric
        run = TrialRelease(self, trial).run
        thread = threading.Thread(target=run, name=f"trial-{trial.index}", daemon=True)
        self.threads[trial.index] = thread
        thread.start()

    def running(self) -> list[Trial]:
        """Trials whose release exists: running, or ended and being uninstalled (parallelTrials bounds both)."""
        return [
            t
            for t in self.record.trials
            if t.state == "Running" or (t.index in self.threads and self.threads[t.index].is_alive())
        ]

    def wait(self) -> int:
        """The index of a trial whose thread has ended, or -1 once a poll has passed."""
        try:
            return self.events.get(timeout=self.poll)
        except queue.Empty:
            return -1

    def stop_all(self, why: str) -> None:
        for trial in self.running():
            self.stop_requests.setdefault(trial.index, why)
        for thread in list(self.threads.values()):
            thread.join()


class TrialRelease:
    """One trial, in its own thread: its release installed, watched until its Jobs end, it is asked to stop or
    trialTimeoutSeconds pass, then uninstalled unless --keep."""

    def __init__(self, releases: Releases, trial: Trial) -> None:
        self.releases, self.trial = releases, trial
        self.ready, self.sweep = releases.ready, releases.record.sweep
        self.release = self.ready.release(trial.release)

    def run(self) -> None:
        trial, lock = self.trial, self.releases.record.lock
        log = (self.releases.record.out / "trials" / f"{trial.index}.log").open("w")
        reader = MetricReader(trial, lock, log)
        try:
            state, reason = self._install_and_watch(reader)
            with lock:
                trial.state, trial.reason, trial.ended = state, reason, time.time()
        except (ClusterError, DLChartsError) as exc:
            with lock:
                trial.state, trial.reason, trial.ended = "Failed", str(exc).splitlines()[0], time.time()
        finally:
            log.close()
            self._end()
            self.releases.events.put(trial.index)

    def _install_and_watch(self, reader: MetricReader) -> tuple[str, str]:
        """The release installed with the CPU values, then the trial's values, then the helm arguments, its logs read
        until it ends; the trial's state and why."""
        from dlcharts.install import ChartSource, install
        from dlcharts.jobs.run import LogStream, job_verdicts, replace_release

        ready, release = self.ready, self.release
        values = substitute(copy.deepcopy(self.sweep.values), self.trial.params)
        replace_release(ready.kube, release)  # a trial left behind by a killed sweep
        with tempfile.TemporaryDirectory(prefix="dlcharts-sweep-") as tmp:
            cpu, template = Path(tmp) / "cpu-values.yaml", Path(tmp) / "trial-values.yaml"
            cpu.write_text(yaml.safe_dump(ready.values, sort_keys=False))
            template.write_text(yaml.safe_dump(values, sort_keys=False))
            extra_args = tuple(self.releases.record.helm_args)
            source = ChartSource(ready.chart, values_files=(cpu, template), extra_args=extra_args)
            with LogStream(release.kubeconfig, release.namespace, release.name, reader):
                install(ready.kube, release, source)
                return self._watch(lambda: job_verdicts(ready.kube, release.namespace, release.name))

    def _watch(self, jobs: Callable[[], dict[str, str]]) -> tuple[str, str]:
        deadline = time.monotonic() + self.sweep.trial_timeout
        while True:
            states = jobs()  # first: a trial that has ended is judged by its end, not by a late stop
            if states and all(s in ("Complete", "SuccessCriteriaMet") for s in states.values()):
                return "Succeeded", ""
            if failed := sorted(job for job, s in states.items() if s in ("Failed", "FailureTarget")):
                return "Failed", f"Job {failed[0]} failed"
            if (why := self.releases.stop_requests.get(self.trial.index)) is not None:
                return ("Interrupted" if why == "interrupted" else "EarlyStopped" if why.startswith("median")
                        else "Stopped"), why  # fmt: skip
            if time.monotonic() > deadline:
                return "Failed", f"trialTimeoutSeconds ({self.sweep.trial_timeout:g}) passed"
            time.sleep(self.releases.poll)
            self.releases.events.put(-1)  # let the main loop look at the new observations

    def _end(self) -> None:
        """The trial's end in the session; its release uninstalled unless --keep (always once stopped)."""
        from dlcharts.install import namespace_inventory, uninstall, wait_uninstalled

        ready, release = self.ready, self.release
        interrupted = self.releases.stop_requests.get(self.trial.index) == "interrupted"
        with contextlib.suppress(ClusterError, DLChartsError):
            ready.end(release, lambda _line: None)
            if not self.releases.keep or interrupted or self.trial.state in ("EarlyStopped", "Stopped"):
                # what the namespace holds now (other trials' releases) is no leftover of this one
                others = namespace_inventory(ready.kube, release.namespace)
                uninstall(ready.kube, release)
                wait_uninstalled(ready.kube, release.namespace, release.name, others, timeout=120)


class Runner(SweepRecord):
    """Runs the trials of ``sweep`` on a :class:`dlcharts.jobs.run.Session`, keeping ``out/state.json``."""

    def __init__(self, sweep: Sweep, ready: Any, helm_args: Sequence[str], out: Path, *, keep: bool = False,
                 resume: bool = False, write: Write = print, poll: float = 2.0) -> None:  # fmt: skip
        self.suggester = Suggester(sweep)
        super().__init__(sweep, out, chart=ready.chart, namespace=ready.namespace, helm_args=helm_args)
        self.write = write
        self.releases = Releases(self, ready, keep=keep, poll=poll)
        if resume:
            self.resume()
            for trial in self.trials:
                self.suggester.replay(trial)
        self.save()

    def run(self, show: Callable[[Runner], None]) -> int:
        """The sweep to its end: 0 when it found a best trial, 1 when it failed, 130 when interrupted."""
        for trial in self.trials:
            trial.metric = self.sweep.metric
        try:
            code = self._loop(show)
        except KeyboardInterrupt:
            self.write("interrupted: uninstalling the running trials' releases ...")
            with _ignoring_interrupts():
                self.releases.stop_all("interrupted")
                self.verdict = "interrupted"
                self.save()
            return 130
        self.save()
        return code

    def _loop(self, show: Callable[[Runner], None]) -> int:
        finished: set[int] = {t.index for t in self.trials if t.state in DONE_STATES}
        while self._start_trials(show):
            index = self.releases.wait()
            done = self._finish(finished)
            self._stop_early()
            if done or index >= 0:
                self.save()
                show(self)
            if self.verdict:
                self.releases.stop_all("the sweep ended: " + self.verdict)
        show(self)
        failed = sum(1 for t in self.trials if t.state == "Failed")
        return 1 if failed >= self.sweep.max_failed or self.verdict.startswith("error") or self.best() is None else 0

    def _start_trials(self, show: Callable[[Runner], None]) -> bool:
        """Trials started up to parallelTrials (none after a verdict); False once no release and no trial is left."""
        stopping = bool(self.verdict)
        while not stopping and len(self.releases.running()) < self.sweep.parallel and (trial := self._next()):
            self.releases.start(trial)
            show(self)
        return bool(self.releases.running()) or not (stopping or self._next() is None)

    def _finish(self, finished: set[int]) -> list[Trial]:
        """The trials whose threads have ended since the last look, each told to the algorithm and judged."""
        done = [t for t in self.trials if t.index not in finished and t.state in DONE_STATES + ("Interrupted",)
                and not self.releases.threads[t.index].is_alive()]  # fmt: skip
        for trial in done:
            finished.add(trial.index)
            self.suggester.tell(trial)
            self.judge(trial)
        return done

    def _stop_early(self) -> None:
        completed = [t for t in self.trials if t.state == "Succeeded"]
        for trial in self.releases.running():
            if trial.index not in self.releases.stop_requests and (why := median_stop(self.sweep, trial, completed)):
                self.releases.stop_requests[trial.index] = why

    def _next(self) -> Trial | None:
        for trial in self.trials:
            if trial.state == "Pending":
                return trial
        if len(self.trials) >= self.sweep.max_trials:
            return None
        index = len(self.trials)
        trial = Trial(index, self.suggester.suggest(index), f"{self.sweep.name}-{index}", metric=self.sweep.metric)
        self.trials.append(trial)
        return trial


@contextlib.contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
