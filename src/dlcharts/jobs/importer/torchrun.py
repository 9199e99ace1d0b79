"""torchrun command lines, for the kinds that run PyTorch (PyTorchJob, and TrainJob's torch-distributed runtime):
the manifest's program under the chart's torchrun, and the processes per node (``nprocPerNode``)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from dlcharts.jobs.importer.common import Job
from dlcharts.jobs.importer.writer import Values

#: torchrun flags the chart sets through PET_* variables: from the manifest's command they would override them
TORCHRUN_OWN = {"--nnodes", "--nproc-per-node", "--nproc_per_node", "--node-rank", "--node_rank", "--rdzv-backend",
                "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id", "--master-addr",
                "--master_addr", "--master-port", "--master_port", "--max-restarts", "--max_restarts",
                "--standalone"}  # fmt: skip


def torchrun_args(job: Job, command: list[str], args: list[str], path: str, settings: Values) -> str:
    """The program under the chart's torchrun: ``python [-u] script.py ...`` and ``torchrun ...`` become
    ``args`` (torchrun stays the command and gives the program RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
    MASTER_PORT, as the operator did); any other command is kept as it is, without torchrun. Returns how the
    manifest started it: torchrun, python or as-is; a torchrun --nproc-per-node becomes nprocPerNode."""
    line = [*command, *args]
    head = Path(line[0]).name
    rest = line[1:]
    if head in ("python", "python3") and rest[:2] == ["-m", "torch.distributed.run"]:
        head, rest = "torchrun", rest[2:]
    if head == "torchrun":
        kept, i = [], 0
        while i < len(rest) and rest[i].startswith("-"):
            flag, _, value = rest[i].partition("=")
            takes_value = not value and flag != "--standalone" and i + 1 < len(rest)
            value = value or (rest[i + 1] if takes_value else "")
            if flag in ("--nproc-per-node", "--nproc_per_node"):
                nproc(job, value, f"{path} {flag}")
            elif flag in TORCHRUN_OWN:
                job.drop(f"{path} {flag}", "the chart sets it for torchrun (PET_* variables)")
            else:
                kept += rest[i : i + 1 + takes_value]
            i += 1 + takes_value
        settings["args"] = [*kept, *rest[i:]]
        job.carried.append(f"{path} under the chart's torchrun (args)")
        return "torchrun"
    if head in ("python", "python3") and rest[:1] == ["-u"]:
        settings.setdefault("env", []).append({"name": "PYTHONUNBUFFERED", "value": "1"})
        rest = rest[1:]
        job.carried.append(f"{path} python -u as PYTHONUNBUFFERED=1")
    if head in ("python", "python3") and rest and (not rest[0].startswith("-") or rest[0] == "-m"):
        settings["args"] = rest
        job.carried.append(f"{path} ({shlex.join(line[:3])} ...) under the chart's torchrun, which sets RANK, "
                           "WORLD_SIZE, MASTER_ADDR and MASTER_PORT for it, one process per pod")  # fmt: skip
        return "python"
    settings["command"], settings["args"] = command, args
    job.differs.append(f"{path} runs as it is, without torchrun: the chart sets MASTER_ADDR, MASTER_PORT and "
                       "PET_*, not RANK or WORLD_SIZE as the operator did: start it with torchrun")  # fmt: skip
    return "as-is"


def nproc(job: Job, value: Any, path: str) -> None:
    if value is None:
        return
    text = str(value)
    if text.isdigit():
        job.values["nprocPerNode"] = int(text)
    elif text in ("auto", "gpu", "cpu"):
        job.values["nprocPerNode"] = text
    else:
        job.refuse(path, f"{value!r} is not a count or auto / gpu / cpu")
        return
    job.carried.append(f"{path} as nprocPerNode")
