"""The chart catalogue: what the harness, the tests and the benchmarks know about each training chart, in one entry
per chart. A new training chart is one entry here (and its local image in dlcharts.images.definitions).

- ``images``: the local image (a name in ``dlcharts.images.definitions.IMAGES``) that stands for each image value
  of the chart when it runs on the embedded cluster, besides :data:`SHARED_IMAGES`, which every training chart runs;
- ``cpu_values``: what ``dlcharts run`` sets so that the chart's job runs on a few CPU cores: its built-in benchmark
  sized for about a minute instead of GPU-sized batches, or (cntk-dist, whose local image has no CNTK) a program the
  local image can run;
- ``mpi_program``: for the MPI charts (a launcher and sshd workers), the value naming the program every rank runs,
  and ``mpi_program_tail``, what the chart puts after that program.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

# The program cntk-dist's ranks run on CPU. The local cntk-dist image has Open MPI and mpi4py but no CNTK (it has
# no wheel for any current Python; `dlcharts images build --list`), so the default program, which imports cntk,
# would fail there: every rank allreduces instead (argv: steps, seconds between steps), through the chart's
# launcher, mpirun and the workers' sshd, and checks the sum.
MPI4PY_ALLREDUCE = """
import sys, time
from mpi4py import MPI
c = MPI.COMM_WORLD
steps, pause = int(sys.argv[1]), float(sys.argv[2])
print(f"mpi4py: rank {c.rank}/{c.size} on {MPI.Get_processor_name()}", flush=True)
for step in range(1, steps + 1):
    total = c.allreduce(c.rank + step)
    if c.rank == 0:
        print(f"mpi4py: step {step}/{steps} allreduce {total}", flush=True)
    time.sleep(pause)
assert total == sum(r + steps for r in range(c.size)), total
print(f"mpi4py: rank {c.rank} done, allreduce {total}", flush=True)
""".strip()


def mpi4py_program(steps: int = 5, pause: float = 0.2) -> list[str]:
    """:data:`MPI4PY_ALLREDUCE` as a program value (``cntk.python.command``, ``horovod.command``)."""
    return ["python3", "-c", MPI4PY_ALLREDUCE, str(steps), str(pause)]


#: the images every training chart runs: the peer-wait init container (busybox) and the start watch (python)
SHARED_IMAGES: Mapping[str, str] = {"peerWait.image": "busybox", "startWatch.image": "python"}
#: the benchmark size of the charts whose benchmark takes steps, batches of images
_IMAGE_STEPS = {"benchmark": {"steps": 20, "warmupSteps": 2, "batchSize": 8, "imageSize": 32}}


@dataclasses.dataclass(frozen=True)
class TrainingChart:
    """One training chart's entry; see the module's docstring for each field."""

    name: str
    images: Mapping[str, str]
    cpu_values: Mapping[str, Any]
    mpi_program: str | None = None
    mpi_program_tail: tuple[str, ...] = ()

    def local_images(self) -> dict[str, str]:
        """Every image value of the chart with a local image: values path -> image name."""
        return {**SHARED_IMAGES, **self.images}


#: the training charts, in the order tables and tests list them
TRAINING_CHARTS: Mapping[str, TrainingChart] = {
    chart.name: chart
    for chart in (
        TrainingChart("tensorflow-dist", {"defaults.image": "tensorflow"}, _IMAGE_STEPS),
        TrainingChart("pytorch-dist", {"defaults.image": "pytorch"}, _IMAGE_STEPS),
        TrainingChart("mxnet-dist", {"defaults.image": "mxnet"}, _IMAGE_STEPS),
        TrainingChart(
            "horovod-mpi",
            {"defaults.image": "horovod"},
            {
                "benchmark": {
                    "model": "resnet18",
                    "batchSize": 8,
                    "imageSize": 32,
                    "warmupBatches": 2,
                    "batchesPerIter": 5,
                    "iterations": 4,
                }
            },
            mpi_program="horovod.command",
        ),  # fmt: skip
        TrainingChart(
            "cntk-dist",
            {"defaults.image": "cntk"},
            {"cntk": {"activate": "", "python": {"command": mpi4py_program()}}},
            mpi_program="cntk.python.command",
        ),
        TrainingChart("jax-dist", {"defaults.image": "jax"}, {"benchmark": {"steps": 50, "warmupSteps": 2}}),
        TrainingChart(
            "deepspeed-dist",
            {"defaults.image": "deepspeed"},
            {"benchmark": {"hidden": 256, "layers": 4, "warmupSteps": 2, "steps": 30}},
            mpi_program="deepspeed.command",
            mpi_program_tail=("--deepspeed_config", "/opt/dl-charts/ds_config.json"),
        ),
    )
}
#: the MPI charts, in catalogue order
MPI_CHARTS: tuple[str, ...] = tuple(name for name, chart in TRAINING_CHARTS.items() if chart.mpi_program)


def image_values(image: str) -> tuple[str, ...]:
    """``"<chart>:<values path>"`` of every image value the local image ``image`` stands for."""
    return tuple(
        f"{name}:{path}"
        for name, chart in TRAINING_CHARTS.items()
        for path, local in chart.local_images().items()
        if local == image
    )
