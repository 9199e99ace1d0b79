"""Section 16 of bench/results.md (bench/data/16-operators.json): the tables of ``python -m bench.operators real``,
``scale`` and ``faults`` (a rerun of some rows keeps the others) and bench/plots/operators.png."""

from __future__ import annotations

from typing import Any

from bench import common, model, results
from bench.operators.jobs import JOBS, SYSTEMS

SECTION = "16-operators"
TITLE = "Side by side with the training operators (issue 33)"

REAL_COLUMNS = [
    model.column("job", align="left"),
    model.column("system", align="left"),
    model.column("ok"),
    model.column("wall s", "{:.0f}"),
    model.column("all started s", "{:.0f}"),
    model.column("first step s", "{:.0f}"),
    model.column("last exit after verdict s", "{}"),
    model.column("objects left", align="left"),
    model.column("bytes (JSON)", "{:,}"),
    model.column("load 1m before → after", "{:.1f} → {:.1f}", align="left"),
]


def real_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            f"{r['job']} ({r['workers']} workers)", f"{r['system']} ({r['kind']})", r["ok"], r["wall_s"],
            r["all_started_s"], r["first_step_s"], r["last_exit_after_verdict_s"],
            ", ".join(f"{k} {v}" for k, v in r["objects"].items()), r["bytes"],
            [r["load_before"]["1m"], r["load_after"]["1m"]],
        ]
        for r in runs
    ]  # fmt: skip


def merged(block_id: str, new: list[list[Any]], key: int, added: int = 0) -> list[list[Any]]:
    """The rows of table ``block_id`` in section 16 with ``new`` in place of those with the same first ``key``
    cells (a rerun of some keeps the others; rows of an older layout, of another width, go, but those that lack only
    the last ``added`` columns, which get None: not measured then), sorted by those cells, the systems in the order
    of SYSTEMS."""
    path = model.path_of(SECTION)
    old: list[list[Any]] = []
    if path.is_file():
        old = next((b["rows"] for b in model.load(path)["blocks"] if b.get("id") == block_id), [])
    width = len(new[0]) if new else None
    if width is not None:
        old = [[*r, *[None] * (width - len(r))] for r in old if width - added <= len(r) <= width]
    rows = model.merge_rows(old, new, key=key)
    order = {system: f"~{i}" for i, system in enumerate(SYSTEMS)}  # a system sorts by its place in SYSTEMS
    rows.sort(key=lambda r: [order.get(str(c).split(" ")[0], f"{c:>9}" if isinstance(c, int) else str(c))
                             for c in r[:key]])  # fmt: skip
    return rows


def report_real(runs: list[dict[str, Any]]) -> None:
    caption = (
        "`python -m bench.operators real` on one embedded cluster with 2 real nodes (on one machine: 2 CPU cores, "
        "see the load column), one run after another; the operators' jobs run our chart's program, image, "
        "resources and processes (one per pod: PyTorchJob with nprocPerNode 1, TrainJob numProcPerNode 1). "
        "Times from the job's create in a namespace that exists: ours from `dlcharts run`'s job (its check for an "
        "earlier release, helm install), the operators' from the resource's POST. "
        "Trainer v2 has no TensorFlow runtime (kubeflow/trainer issue 2443)."
    )
    block = model.table("real", REAL_COLUMNS, merged("real", real_rows(runs), key=2), caption=caption)
    model.update(SECTION, [block], title=TITLE, by="`python -m bench.operators`")
    results.write()


SCALE_COLUMNS = [
    model.column("system", align="left"),
    model.column("workers", "{:,}"),
    model.column("all Running s", "{}"),
    model.column("control-plane CPU ms per pod", "{}"),
    model.column("peak RSS MiB", "{}"),
    model.column("objects", "{:,}"),
    model.column("largest object", align="left"),
]


def scale_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for r in runs:
        if "error" in r:
            rows.append([r["system"], r["workers"], f"failed: {r['error'][:120]}", None, None, None, ""])
            continue
        running = r["seconds"].get("running", f"not all in {r['seconds'].get('timed_out')} s")
        largest = f"{r['largest']['kind']} {r['largest']['bytes']:,} B"
        rows.append([f"{r['system']} ({r['kind']})", r["workers"], running, r["cpu_ms_per_pod"], r["rss_peak_mib"],
                     r["object_count"], largest])  # fmt: skip
    return rows


def report_scale(runs: list[dict[str, Any]]) -> None:
    caption = (
        "`python -m bench.operators scale`: PyTorch DDP with one GPU per pod on kwok's fake nodes, each system on a "
        "fresh cluster of its own with only its operator; CPU and memory count the API server, etcd, "
        "controller-manager, scheduler, kwok and the operator."
    )
    rows = merged("scale", scale_rows(runs), key=2)
    blocks = [model.table("scale", SCALE_COLUMNS, rows, caption=caption)]
    done = [r for r in rows if isinstance(r[2], (int, float))]  # the table's rows, earlier runs' too
    plt = common.pyplot() if done else None
    if plt is not None:
        fig, (running, cpu) = plt.subplots(1, 2, figsize=(10, 4))
        for system in dict.fromkeys(r[0] for r in done):
            mine = sorted((r for r in done if r[0] == system), key=lambda r: r[1])
            running.plot([r[1] for r in mine], [r[2] for r in mine], marker="o", label=system)
            cpu.plot([r[1] for r in mine], [r[3] for r in mine], marker="o", label=system)
        running.set(xlabel="workers (pods)", ylabel="seconds until every pod Running")
        cpu.set(xlabel="workers (pods)", ylabel="control-plane CPU ms per pod")
        running.legend()
        fig.tight_layout()
        fig.savefig(common.PLOTS / "operators.png", dpi=100)
        blocks.append(model.image("scale-plot", "plots/operators.png", "time to all Running and CPU per pod"))
    model.update(SECTION, blocks, title=TITLE, by="`python -m bench.operators`")
    results.write()


FAULT_COLUMNS = [
    model.column("case", align="left"),
    model.column("job", align="left"),
    model.column("system", align="left"),
    model.column("verdict", align="left"),
    model.column("verdict after fault s", "{}"),
    model.column("every pod ended after fault s", "{}"),
    model.column("pods created", "{}"),
    model.column("pods still running at the end", "{}"),
    model.column("training again after fault s", "{}"),
    model.column("resumed from step", "{}"),
]


def report_faults(runs: list[dict[str, Any]]) -> None:
    """The fault table of section 16 (rows of the same case, job and system replaced)."""
    rows = [[r["case"], f"{r['job']} ({JOBS[r['job']].workers} workers)", f"{r['system']} ({r['kind']})",
             r["verdict"], r["verdict_after_fault_s"], r["ended_after_fault_s"], r["pods_made"],
             r["pods_left_running"], r.get("again_after_fault_s"), r.get("resumed_from")] for r in runs]  # fmt: skip
    caption = (
        "`python -m bench.operators faults` on 2 real nodes: worker-deleted and node-lost at the first training "
        "step (a worker pod other than rank 0's: our and TrainJob's completion index 1, PyTorchJob's and MPIJob's "
        "worker-0, TFJob's worker-1; with ours-spare the pod that runs rank 1), deleted with grace period 0, or its "
        "node lost (never the first real node, which relays the start watch's API calls: then the node of another "
        "pod of the job); mxnet with 2 servers too; mxnet, jax and deepspeed ours alone (no operator runs them); "
        "image-missing (the workers' image tag absent; ours with peerWait.timeoutSeconds=60) and launcher-failing "
        "(every rank exits 3) from the create. Each system's defaults otherwise (ours-spare: ours with one hot spare "
        "worker, `spareWorkers=1` / `mpi.spareWorkers=1`); times from the fault, a run capped at `--cap` seconds. "
        "Training again: the first step logged after the fault by a container started after it (ours from the "
        "streamed log, the operators' polled twice a second); resumed from: the checkpoint's step (0: none kept). "
        "Cases marked (checkpoint): `faults --checkpoint`, every system's job with the chart's checkpoint volume "
        "(a claim both real nodes see) and DL_CHECKPOINT_* (the MPIJob's mpirun passes them on with -x), the fault "
        "once checkpoints exist (pytorch at step 60 of 200, saving every 20; horovod at iteration 3 of 10, saving "
        "every iteration), ours 1 s after that line as the operators' (their logs read each second)."
    )
    table = model.table("faults", FAULT_COLUMNS, merged("faults", rows, key=3, added=2), caption=caption)
    model.update(SECTION, [table], title=TITLE, by="`python -m bench.operators`")
    results.write()
