"""The values `dlcharts run` installs first (the user's helm arguments come after them, so they win): CPU pod
settings, each chart's small benchmark, the local images standing for the chart's image values, the real nodes'
placement; and the file helm reads them from."""

from __future__ import annotations

import contextlib
import copy
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from dlcharts.cluster import node
from dlcharts.images.definitions import IMAGES, ImageDef

#: pod settings of every role on a CPU-only machine (the dl-common values layout every training chart shares)
CPU_DEFAULTS: dict[str, Any] = {
    "gpu": {"count": 0},
    "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "3Gi"}},
    "shm": {"sizeLimit": "512Mi"},
}
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


#: what each chart runs on a few CPU cores: its built-in benchmark sized for about a minute instead of GPU-sized
#: batches, or (cntk-dist, whose local image has no CNTK) an MPI program the local image can run
SMALL_BENCHMARK: dict[str, dict[str, Any]] = {
    "tensorflow-dist": {"benchmark": {"steps": 20, "warmupSteps": 2, "batchSize": 8, "imageSize": 32}},
    "pytorch-dist": {"benchmark": {"steps": 20, "warmupSteps": 2, "batchSize": 8, "imageSize": 32}},
    "mxnet-dist": {"benchmark": {"steps": 20, "warmupSteps": 2, "batchSize": 8, "imageSize": 32}},
    "horovod-mpi": {
        "benchmark": {
            "model": "resnet18",
            "batchSize": 8,
            "imageSize": 32,
            "warmupBatches": 2,
            "batchesPerIter": 5,
            "iterations": 4,
        },
    },
    "cntk-dist": {"cntk": {"activate": "", "python": {"command": mpi4py_program()}}},
    "jax-dist": {"benchmark": {"steps": 50, "warmupSteps": 2}},
    "deepspeed-dist": {"benchmark": {"hidden": 256, "layers": 4, "warmupSteps": 2, "steps": 30}},
}  # fmt: skip


def local_images(chart: str) -> list[tuple[ImageDef, str]]:
    """The local images standing for image values of ``chart``: (image, values path such as ``defaults.image``)."""
    found = []
    for image in IMAGES.values():
        for entry in image.values:
            name, _, path = entry.partition(":")
            if name == chart:
                found.append((image, path))
    return found


#: each role's pods on as many nodes as there are (the charts default a constraint's labelSelector to the role's pods);
#: a node that is tainted (down, unreachable) no longer counts, so a replacement pod is not held for it
SPREAD_OVER_NODES: dict[str, Any] = {
    "maxSkew": 1,
    "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "DoNotSchedule",
    "nodeTaintsPolicy": "Honor",
}


def cpu_values(
    chart: str,
    registry: str | None = None,
    real_node: bool = True,
    api_server: str | None = None,
    spread: bool = False,
) -> dict[str, Any]:
    """Values that run ``chart`` on CPU: :data:`CPU_DEFAULTS` and :data:`SMALL_BENCHMARK`; with ``registry``
    every image from there (``global.imageRegistry``) with the local images' tags, pulled Always; with ``real_node`` the
    embedded cluster's real nodes' selector and toleration, and the start watch at ``api_server`` (an
    :func:`api_relay`'s URL: the real nodes' pods have no route to the API server), or without the start watch
    when there is none; with ``spread`` :data:`SPREAD_OVER_NODES`."""
    values: dict[str, Any] = {"defaults": copy.deepcopy(CPU_DEFAULTS), **copy.deepcopy(SMALL_BENCHMARK.get(chart, {}))}
    if registry:
        values["global"] = {"imageRegistry": registry}
        for image, path in local_images(chart):
            target = values
            for key in path.split("."):
                target = target.setdefault(key, {})
            # Always: a rebuilt image keeps its tag, and a node holding the old one would run it with IfNotPresent
            target.update(tag=image.tag, pullPolicy="Always")
    if real_node:
        values["defaults"]["nodeSelector"] = dict(node.NODE_SELECTOR)
        values["defaults"]["tolerations"] = [dict(node.TOLERATION)]
        values["startWatch"] = {"apiServer": api_server} if api_server else {"enabled": False}
    if spread:
        values["defaults"]["topologySpreadConstraints"] = [dict(SPREAD_OVER_NODES)]
    return values


@contextlib.contextmanager
def values_file(values: dict[str, Any]) -> Iterator[Path]:
    """``values`` in a YAML file for helm (``-f``), removed after the block."""
    with tempfile.TemporaryDirectory(prefix="dlcharts-run-") as tmp:
        path = Path(tmp) / "cpu-values.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False))
        yield path
