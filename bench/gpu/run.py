"""`python -m bench.gpu run`: each case of the plan twice on this machine's GPU, as its pod would run it (ours) and
bare, with throughput, time to the first step, the GPU, its driver and the framework versions. Standard library
only (and the frameworks, in the programs it starts): the device machine has nothing else.

What a pod would see and this machine cannot give it, and what stands for it here:
- the ConfigMaps it mounts (the chart's program, TF's cluster.json): their files, as rendered, in a folder of the
  run; every mount path in the command, args and env is replaced by that folder;
- an emptyDir (/tmp, where the charts point HOME): a fresh folder of the run; /dev/shm stays /dev/shm;
- the host names of the release's pods (worker 0 hosts the rendezvous or coordinator): 127.0.0.1, in the env, the
  args and the mounted ConfigMaps' files; the peer wait before the program (which composes those names itself and
  looks them up in DNS) gets no pods to wait for (DL_PEER_GROUPS empty);
- the image's programs: `python`, `python3` and `torchrun` are this interpreter (a folder first in PATH);
- the one GPU the device plugin gives it (limits nvidia.com/gpu): CUDA_VISIBLE_DEVICES=0; no GPU (the CPU cases,
  NVIDIA_VISIBLE_DEVICES=void): CUDA_VISIBLE_DEVICES empty;
- the image's own environment: this process's, under the container's.
Every substitution made is recorded in the results. Not reproduced: the uid, the read-only root, the memory limit.
Bare gets this process's environment, a fresh HOME (as the pod's is fresh), the same GPU, and only the variables the
program cannot start without (bench/gpu/plan.py, bare_env).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Any

from bench.gpu import plan

#: the pods the charts' peer wait looks up before the program (dl-common.peers.waitScript)
PEER_GROUPS = "DL_PEER_GROUPS"
VERSIONS = ("torch", "jax", "jaxlib", "jax-cuda12-plugin", "tensorflow", "deepspeed", "cupy-cuda12x", "numpy")


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    substitutions: list[list[str]]  # [where, from, to]


class Substitutor:
    """Replaces mount paths and pod host names (see the module's docstring) and records each replacement made."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.new = dict(pairs)
        # one pass (a replaced path is not replaced again: the run's folders are under /tmp too), the longest first
        # (/opt/dl-charts/x before /opt/dl-charts); a path only where a path may start and end, a host name whole
        self.pattern = re.compile(
            "|".join(
                rf"(?<![\w.-]){re.escape(old)}(?![\w.-])" if old.startswith("/") else rf"\b{re.escape(old)}\b"
                for old in sorted(self.new, key=len, reverse=True)
            )
        )
        self.made: list[list[str]] = []

    def __call__(self, text: str, where: str) -> str:
        found: list[str] = []
        text = self.pattern.sub(lambda m: found.append(m.group(0)) or self.new[m.group(0)], text)
        self.made += [[where, old, self.new[old]] for old in dict.fromkeys(found)]
        return text


def _shims(folder: Path) -> Path:
    """`python`, `python3`, `torchrun`: this interpreter, as the image's would be (first in PATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, run in (("python", ""), ("python3", ""), ("torchrun", "-m torch.distributed.run ")):
        shim = folder / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {run}"$@"\n')
        shim.chmod(0o755)
    return folder


def _gpu_env(gpus: int) -> dict[str, str]:
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(gpus))}


def ours(case: dict[str, Any], work: Path) -> Launch:
    """What the pod runs, with what it sees (the module's docstring), in folders under ``work``."""
    container, volumes = case["container"], {v["name"]: v for v in case["volumes"]}
    pairs = [(h, "127.0.0.1") for h in case["hosts"]] + [(h + ".cluster.local", "127.0.0.1") for h in case["hosts"]]
    files: list[tuple[Path, str, str]] = []
    for mount in container.get("volumeMounts") or []:
        volume, at = volumes[mount["name"]], mount["mountPath"]
        if mount.get("subPath"):
            raise ValueError(f"{case['id']}: mount {at} uses subPath, which bench.gpu does not reproduce")
        if at == "/dev/shm" and "emptyDir" in volume:
            continue
        folder = work / "mounts" / mount["name"]
        folder.mkdir(parents=True)
        pairs.append((at, str(folder)))
        if "configMap" in volume:
            for name, text in case["configmaps"][volume["configMap"]["name"]].items():
                files.append((folder / name, text, f"{at}/{name}"))
        elif "emptyDir" not in volume:
            raise ValueError(f"{case['id']}: volume {mount['name']} ({sorted(volume)}) is not reproduced here")
    sub = Substitutor(pairs)
    for path, text, where in files:
        path.write_text(sub(text, where))
        path.chmod(0o555)  # the charts' defaultMode 365
    env = {**os.environ, **{k: sub(v, f"env {k}") for k, v in case["env"].items()}}
    env["PATH"] = f"{_shims(work / 'bin')}:{env.get('PATH', '/usr/bin:/bin')}"
    env |= _gpu_env(case["gpus"])
    if case["env"].get(PEER_GROUPS):  # the pods the peer wait looks up are this machine: none to wait for
        env[PEER_GROUPS] = ""
        sub.made.append([f"env {PEER_GROUPS}", case["env"][PEER_GROUPS], ""])
    argv = [sub(a, f"argv[{i}]") for i, a in enumerate(case["argv"])]
    return Launch(argv, env, sub.made)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bare(case: dict[str, Any], work: Path, program_dir: Path) -> Launch:
    """The same program and arguments with the framework's plain one-GPU launch (the first .py of the pod's argv
    onwards, read from ``program_dir``, where ours wrote the scripts' ConfigMap)."""
    start = next(i for i, a in enumerate(case["argv"]) if a.endswith(".py"))
    program = [str(program_dir / Path(case["argv"][start]).name), *case["argv"][start + 1 :]]
    launch = {"torchrun": [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1"]}
    home = work / "home"
    home.mkdir(parents=True)
    port = str(_free_port())
    env = {**os.environ, "HOME": str(home), **{k: v.replace("{port}", port) for k, v in case["bare_env"].items()}}
    return Launch([*launch.get(case["bare"], [sys.executable]), *program], env | _gpu_env(case["gpus"]), [])


def execute(launch: Launch, cwd: Path, limit: float) -> dict[str, Any]:
    """Run ``launch`` until it exits or ``limit`` seconds pass; its throughput, first step and the output's end."""
    started = time.monotonic()
    proc = subprocess.Popen(
        launch.argv, env=launch.env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # its own process group: a timeout ends torchrun and its workers too
    )  # fmt: skip
    lines: list[str] = []
    first_step: list[float] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if not first_step and re.search(plan.STEP, line):
                first_step.append(round(time.monotonic() - started, 2))

    # read in a thread: a process that escaped the group may hold the pipe open after the group was killed
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    timed_out = False
    try:
        rc = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc, timed_out = proc.wait(), True
    wall = time.monotonic() - started
    reader.join(10)
    output = "\n".join(lines)
    rate = re.search(plan.THROUGHPUT, output)
    return {
        "rc": rc,
        "timed_out": timed_out,
        "wall_s": round(wall, 2),
        "first_step_s": first_step[0] if first_step else None,
        "samples_per_s": float(rate.group(1)) if rate else None,
        "unit": rate.group(2) if rate else None,
        "output": output,
    }


def run_case(case: dict[str, Any], limit: float) -> list[dict[str, Any]]:
    """Ours, then bare; each a row of the results."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        launch = ours(case, Path(tmp) / "ours")
        scripts = next(Path(tmp, "ours", "mounts", m["name"]) for m in case["container"]["volumeMounts"]
                       if m["mountPath"] == "/opt/dl-charts")  # fmt: skip
        for how, made in (("ours", launch), ("bare", bare(case, Path(tmp) / "bare", scripts))):
            measured = execute(made, Path(tmp), limit)
            ok = measured["rc"] == 0 and measured["samples_per_s"] is not None
            on_gpu = case["cpu"] or re.search(case["gpu_proof"], measured["output"]) is not None
            status = "ok" if ok and on_gpu else "failed"
            if ok and not on_gpu:
                status = f"failed: ran without the GPU (no line matching {case['gpu_proof']!r})"
            elif measured["timed_out"]:
                status = f"failed: stopped after {limit:.0f} s"
            output = measured.pop("output").splitlines()
            rows.append({"id": case["id"], "how": how, "status": status, **measured, "argv": made.argv,
                         "substitutions": made.substitutions, "output_tail": output[-15:]})  # fmt: skip
    return rows


def machine() -> dict[str, Any]:
    gpu = "none (nvidia-smi not found)"
    if shutil.which("nvidia-smi"):
        query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
        gpu = subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip() or "nvidia-smi: none"
    versions = {}
    for name in VERSIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {"gpu": gpu, "python": sys.version.split()[0], "versions": versions, "host": socket.gethostname()}


def run(folder: Path, out: Path, cpu: bool, charts: list[str] | None, budget: float, per_run: float) -> dict[str, Any]:
    deadline = time.monotonic() + budget
    body = plan.load(folder)
    cases = [c for c in body["cases"] if c["cpu"] == cpu and (not charts or c["chart"] in charts)]
    if charts and {c["chart"] for c in cases} != set(charts):
        raise SystemExit(f"bench.gpu: no case of {sorted(set(charts) - {c['chart'] for c in cases})} in the plan")
    rows: list[dict[str, Any]] = []
    for case in cases:
        left = deadline - time.monotonic()
        if util.find_spec(case["module"]) is None:
            rows.append({"id": case["id"], "how": "both", "status": f"not installed ({case['module']})"})
        elif left < 2 * plan.MIN_RUN_S:
            rows.append({"id": case["id"], "how": "both", "status": f"skipped: {left:.0f} s of the budget left"})
        else:
            rows += run_case(case, min(per_run, left / 2))
        print(table(rows[-2:] if rows[-1]["how"] == "bare" else rows[-1:], header=case is cases[0]), flush=True)
    for chart, (module, why) in plan.NOT_RUN.items():
        if not charts or chart in charts:
            found = util.find_spec(module) is not None
            rows.append(
                {"id": chart, "how": "both", "status": f"not run: {why}" if found else f"not installed ({module})"}
            )
    results = {"machine": machine(), "plan": body["made_from"], "helm": body["helm"], "cpu": cpu, "rows": rows,
               "values": {c["id"]: c["values"] for c in cases}}  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / plan.RESULTS_FILE).write_text(json.dumps(results, indent=1) + "\n")
    return results


def table(rows: list[dict[str, Any]], header: bool = True) -> str:
    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    lines = [f"{'case':34} {'how':5} {'samples/s':>10} {'first step s':>12} {'wall s':>7}  status"] if header else []
    for r in rows:
        rate = f"{num(r.get('samples_per_s'))} {r.get('unit') or ''}".strip()
        lines.append(f"{r['id']:34} {r['how']:5} {rate:>10} {num(r.get('first_step_s')):>12} "
                     f"{num(r.get('wall_s')):>7}  {r['status']}")  # fmt: skip
    return "\n".join(lines)
