"""`python -m bench.gpu run --cpu` for real: pytorch-dist's benchmark and the ResNet script, run as the chart's pod
would and bare, inside the pytorch image's root file system (Debian's torch, a CPU build: gloo, no GPU), from a plan
rendered here. The fast tier has no torch; this is where the run step itself executes. It needs root (chroot, as
`make test-images`) and the pytorch image's rootfs (built once, then from the cache); no cluster.

    sudo .venv/bin/pytest -p no:cacheprovider tests/cluster/images/test_bench_gpu.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bench.gpu import plan
from bench.gpu.prepare import prepare
from dlcharts.images import IMAGES, Builder
from dlcharts.images.chroot import chroot, unpacked
from dlcharts.images.runner import ToolRunner

IMAGE = IMAGES["pytorch"]


def run_in_image(folder: Path, *args: str) -> dict[str, Any]:
    """``python3 -m bench.gpu run --cpu ARGS`` inside the pytorch image's rootfs, with the plan prepared here and
    the checkout's bench package (nothing else of it: the device machine has no more), its results as JSON."""
    plan_dir = prepare(folder / "plan").parent
    with unpacked(Builder().rootfs(IMAGE), folder / "scratch") as tree:
        # a container runtime writes /etc/hosts with the pod's own name, which gloo resolves; the rootfs has localhost
        (tree / "etc" / "hosts").write_text(Path("/etc/hosts").read_text())
        work = tree / "work"
        shutil.copytree(plan.ROOT / "bench", work / "bench", ignore=shutil.ignore_patterns("__pycache__", "data"))
        shutil.copytree(plan_dir, work / "plan")
        run = "python3 -m bench.gpu run --cpu --plan /work/plan --out /work/out " + " ".join(args)
        # the image's own environment (USE_LIBUV=0), as its containers start with it
        chroot(ToolRunner(folder / "logs", print), tree, f"cd /work && export {' '.join(IMAGE.env)} && {run}", IMAGE,
               "bench-gpu")  # fmt: skip
        results: dict[str, Any] = json.loads((work / "out" / plan.RESULTS_FILE).read_text())
    return results


def test_the_pytorch_charts_programs_run_on_cpu_as_the_pod_and_bare(tmp_path: Path) -> None:
    results = run_in_image(tmp_path, "--charts", "pytorch-dist")
    rows = {(r["id"], r["how"]): r for r in results["rows"]}
    cases = ["pytorch-dist/benchmark/cpu", "pytorch-dist/resnet101/cpu"]
    assert sorted(rows) == sorted((case, how) for case in cases for how in ("ours", "bare")), sorted(rows)
    for row in rows.values():
        assert row["status"] == "ok", row
        assert row["samples_per_s"] > 0 and row["unit"] == "images", row
        assert row["first_step_s"] is not None, row
    for case in cases:
        ours, bare = rows[(case, "ours")], rows[(case, "bare")]
        # the pod's command: the peer wait's wrapper (here with no pods to wait for), the chart's restart loop around
        # torchrun, the script from the mounted ConfigMap
        wrapper, program = ours["argv"][:4], ours["argv"][4:]
        assert wrapper[:2] == ["/bin/sh", "-c"] and "peer-wait:" in wrapper[2] and wrapper[3] == "dl-entrypoint"
        assert program[:2] == ["sh", "-c"] and program[3] == "torchrun", program
        assert ["env DL_PEER_GROUPS", "bench-worker:1", ""] in ours["substitutions"]
        assert ["env PET_RDZV_ENDPOINT", "bench-worker-0.bench.default.svc", "127.0.0.1"] in ours["substitutions"]
        assert bare["argv"][1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node"], bare["argv"]
        assert bare["argv"][6:] == program[4:], (bare["argv"], program)  # the same program and arguments
    assert results["machine"]["versions"]["torch"].startswith("2.6.0")
