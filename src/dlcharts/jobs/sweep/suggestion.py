"""The sweep's algorithms: each trial's parameters from the sweep's seed (grid, random) or from the trials that
have finished (tpe: optuna's TPESampler, from the ``sweep`` extra)."""

from __future__ import annotations

import itertools
import random
from typing import Any

from dlcharts.jobs.sweep.spec import Sweep, SweepError
from dlcharts.jobs.sweep.trials import DONE_STATES, Trial


class Suggester:
    """Parameters for trial ``index``, from the sweep's seed (grid, random) or the finished trials (tpe)."""

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep
        self._grid = list(itertools.product(*(p.grid() for p in sweep.parameters))) if sweep.algorithm == "grid" else []
        self._study: Any = None
        self._asked: dict[int, Any] = {}  # trial index -> optuna trial
        if sweep.algorithm == "tpe":
            try:
                import optuna
            except ImportError:
                raise SweepError(
                    "algorithm: tpe needs optuna, which the core install leaves out; install it with: "
                    "pip install 'dlcharts[sweep]' (or use algorithm: random or grid)"
                ) from None
            optuna.logging.set_verbosity(optuna.logging.WARNING)
            sampler = optuna.samplers.TPESampler(seed=sweep.seed, n_startup_trials=min(5, sweep.max_trials // 2 or 1))
            self._study = optuna.create_study(direction="maximize" if sweep.maximize else "minimize", sampler=sampler)

    def _distributions(self) -> dict[str, Any]:
        import optuna.distributions as d

        out: dict[str, Any] = {}
        for p in self.sweep.parameters:
            if p.type == "categorical":
                out[p.name] = d.CategoricalDistribution(list(p.values))
            elif p.type == "int":
                out[p.name] = d.IntDistribution(int(p.min or 0), int(p.max or 0), log=p.log)
            else:
                out[p.name] = d.FloatDistribution(p.min or 0.0, p.max or 0.0, log=p.log)
        return out

    def replay(self, trial: Trial) -> None:
        """Tell TPE about a trial finished before a resume."""
        if self._study is None or trial.state not in DONE_STATES:
            return
        import optuna

        state = optuna.trial.TrialState
        value = trial.value
        complete = trial.state == "Succeeded" and value is not None
        self._study.add_trial(optuna.trial.create_trial(
            params=trial.params, distributions=self._distributions(),
            value=value if complete else None,
            state=state.COMPLETE if complete else state.PRUNED if trial.state == "EarlyStopped" else state.FAIL,
        ))  # fmt: skip

    def suggest(self, index: int) -> dict[str, Any]:
        names = [p.name for p in self.sweep.parameters]
        if self.sweep.algorithm == "grid":
            return dict(zip(names, self._grid[index], strict=True))
        if self.sweep.algorithm == "random":
            rng = random.Random(f"{self.sweep.seed}:{index}")  # trial i's parameters do not depend on the others
            return {p.name: p.sample(rng) for p in self.sweep.parameters}
        asked = self._study.ask(self._distributions())
        self._asked[index] = asked
        return {p.name: p.cast(asked.params[p.name]) for p in self.sweep.parameters}

    def tell(self, trial: Trial) -> None:
        asked = self._asked.pop(trial.index, None)
        if asked is None:
            return
        import optuna

        state = optuna.trial.TrialState
        if trial.state == "Succeeded" and trial.value is not None:
            self._study.tell(asked, trial.value)
        else:
            self._study.tell(asked, state=state.PRUNED if trial.state == "EarlyStopped" else state.FAIL)
