"""The add-ons the config asks for (:mod:`dlcharts.cluster.addons`), after the nodes; a reused cluster gets the ones
it lacks. They stop before the real nodes and the control plane."""

from __future__ import annotations

import contextlib

from dlcharts.cluster.addons import Addons
from dlcharts.cluster.steps import StepContext


def start(ctx: StepContext) -> None:
    with ctx.layout.lock("kwokctl-create") if ctx.config.addons else contextlib.nullcontext():
        # the add-ons take free ports too
        ctx.addons = _addons(ctx).start(ctx.config.addons, ctx.layout.kubeconfig, ctx.config.start_timeout)


def stop(ctx: StepContext) -> None:
    _addons(ctx).stop()


def _addons(ctx: StepContext) -> Addons:
    return Addons(ctx.layout.state_dir, ctx.layout.cache)
