"""What bench.gpu runs: the cases (a chart, its values, and how the same program is launched bare), and where the
plan lives. Standard library only: the device machine reads this."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: prepare's output, carried to the device machine (gitignored: it is derived from the charts, so a committed
#: copy would go stale with every chart change; prepare takes seconds)
PLAN_DIR = ROOT / "build" / "bench" / "gpu-plan"
PLAN_FILE = "plan.json"
RESULTS_FILE = "gpu.json"
#: the release as rendered: its pods' host names are <release>-worker-<i>.<release>.<namespace>.svc
RELEASE, NAMESPACE = "bench", "default"
#: seconds: every case together (the device run is allowed 8 minutes, helm-free startup and the report included),
#: one run (ours or bare) at most, and the least a run is started with
BUDGET_S, PER_RUN_S, MIN_RUN_S = 420, 150, 30
RESNET = "bench/gpu/files/resnet101.py"
#: a step line and the throughput line, as every chart's benchmark (and resnet101.py) prints them
STEP = r"(?m)^\S+: step \d+/"
THROUGHPUT = r"total throughput ([0-9.]+) (\w+)/s"
#: charts with a GPU path that one process on one machine cannot run as their pods do
NOT_RUN = {
    "deepspeed-dist": (
        "deepspeed",
        "its launcher starts the workers over MPI and ssh (sshd worker pods), which no single process reproduces",
    ),
}


def _tiny(**values: object) -> tuple[str, ...]:
    return tuple(f"benchmark.{k}={v}" for k, v in values.items())


@dataclass(frozen=True)
class Case:
    """One program of one chart, rendered with one worker pod: on the GPU (``defaults.gpu.count=1``) or, for the
    CPU test, without one (gloo, tiny sizes)."""

    chart: str
    program: str  # "benchmark": the chart's own; "resnet101": bench/gpu/files/resnet101.py as the chart's script
    cpu: bool
    set_values: tuple[str, ...]
    module: str  # what the device must be able to import, else "not installed"
    bare: str  # the framework's plain one-GPU launch: "torchrun" (--standalone) or "python"
    #: a line the program prints only when it runs on the GPU (a JAX without its CUDA plugin would run on the CPU)
    gpu_proof: str
    set_json: tuple[str, ...] = ()
    set_files: tuple[str, ...] = ()
    #: variables the program cannot start without, given to the bare run too ({port}: a free local port)
    bare_env: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.chart}/{self.program}/{'cpu' if self.cpu else 'gpu'}"


def _cases(cpu: bool) -> list[Case]:
    gpu = ("worker=1", f"defaults.gpu.count={0 if cpu else 1}")
    resnet_args = (
        ["--blocks", "1,1,1,1", "--width", "8", "--image-size", "32", "--batch-size", "2", "--steps", "2"]
        + ["--warmup-steps", "1"]
        if cpu
        else ["--steps", "50", "--warmup-steps", "10", "--batch-size", "64", "--image-size", "224"]
    )
    jax_env = {"JAX_COORDINATOR_ADDRESS": "127.0.0.1:{port}", "JAX_NUM_PROCESSES": "1", "JAX_PROCESS_ID": "0"}
    return [
        Case(
            "pytorch-dist", "benchmark", cpu,
            gpu + (_tiny(steps=4, warmupSteps=1, batchSize=4, imageSize=32) if cpu else ()),
            "torch", "torchrun", r"device cuda",
        ),
        Case(
            "pytorch-dist", "resnet101", cpu, gpu, "torch", "torchrun", r"device cuda",
            set_json=(f"defaults.args={json.dumps(resnet_args)}",), set_files=(f"script={RESNET}",),
        ),
        Case(
            "jax-dist", "benchmark", cpu, gpu + (_tiny(steps=4, warmupSteps=1, batchSize=8) if cpu else ()),
            "jax", "python", r"local gpu device", bare_env=jax_env,
        ),
        Case(
            "tensorflow-dist", "benchmark", cpu,
            gpu + (_tiny(steps=4, warmupSteps=1, batchSize=4, imageSize=32) if cpu else ()),
            "tensorflow", "python", r"GPUs [1-9]",
        ),
    ]  # fmt: skip


CASES = _cases(cpu=False) + _cases(cpu=True)


def load(folder: Path) -> dict[str, Any]:
    path = folder / PLAN_FILE
    if not path.is_file():
        raise SystemExit(
            f"bench.gpu: no plan at {path}: run `python -m bench.gpu prepare` on a machine with helm (the checkout's "
            "own, .tools/) and carry build/bench/gpu-plan to this one"
        )
    plan: dict[str, Any] = json.loads(path.read_text())
    return plan
