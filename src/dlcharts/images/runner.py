"""Running a build step's tools: their output appended to ``<images>/logs/<image>.log``, a failure reported with
the log's last lines."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from dlcharts.errors import ImageError
from dlcharts.images.definitions import ImageDef
from dlcharts.waiting import wait_process


class ToolRunner:
    """Runs the tools of the build steps, logging under ``logs``; ``say`` gets progress lines."""

    def __init__(self, logs: Path, say: Callable[[str], None]) -> None:
        self.logs = logs
        self.say = say

    def run(self, cmd: Sequence[str], image: ImageDef, step: str, env: dict[str, str] | None = None) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{image.name}.log"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCE_DATE_EPOCH")}
        if step != "wheels":  # the host's pip configuration is for downloading wheels only
            full_env = {k: v for k, v in full_env.items() if not k.startswith("PIP_")}
        full_env.update(env or {})
        with log.open("a") as fh:
            fh.write(f"\n$ {shlex.join(cmd)}\n")
            fh.flush()
            proc = subprocess.Popen(list(cmd), stdout=fh, stderr=subprocess.STDOUT, env=full_env)
            wait_process(proc, f"building image {image.name}, step {step}", self.say)
        if proc.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise ImageError(
                f"{image.name}: step {step} failed (exit code {proc.returncode}): {shlex.join(cmd)[:300]}\n"
                f"last lines of {log}:\n{tail}"
            )


def need_root(image: ImageDef, step: str) -> None:
    if os.geteuid() != 0:
        raise ImageError(
            f"{image.name}: step {step} needs root (mmdebstrap --mode=root, chroot and mounts in a private "
            "namespace); run `dlcharts images build` as root (CI does)"
        )
