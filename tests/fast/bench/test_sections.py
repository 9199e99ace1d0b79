"""Each bench tool's section: from a raw run (made up here, small) to the blocks and targets results.md shows."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from bench import model, results

BENCH = Path(results.__file__).parent
LOAD = {"1m": 1.5, "5m": 1.0, "15m": 0.5}


def blocks_by_id(blocks: list[model.Block]) -> dict[str, model.Block]:
    return {b["id"]: b for b in blocks}


def shown(blocks: list[model.Block]) -> str:
    return "\n".join(line for b in blocks for line in results.block_lines(b))


#: bench's modules, and those of its packages (bench/operators/; their __main__.py runs the tool, so not imported)
MODULES = [*BENCH.glob("*.py"), *(p for p in BENCH.glob("*/*.py") if (p.parent / "__init__.py").is_file())]


@pytest.mark.parametrize(
    "path", sorted(p for p in MODULES if p.name != "__main__.py"), ids=lambda p: str(p.relative_to(BENCH))
)
def test_every_bench_module_imports_as_part_of_the_package(path: Path) -> None:
    assert "sys.path.insert" not in path.read_text()
    parts = path.relative_to(BENCH).with_suffix("").parts
    importlib.import_module(".".join(["bench", *(parts[:-1] if parts[-1] == "__init__" else parts)]))


def test_validation_section() -> None:
    from bench import validation

    e2e = {
        "kubeconform -n 1, 1 core": {"samples": [2.0, 2.0, 2.0], "load_1m": [1.0, 1.1, 1.2], "breakdown": []},
        "kubeconform default -n 4, 2 cores": {"samples": [1.0], "load_1m": [1.0], "breakdown": []},
        "ours, 1 core": {
            "samples": [1.0, 1.0, 4.0],
            "load_1m": [1.0, 1.0, 1.0],
            "breakdown": [{"import": 0.1, "parse": 0.5, "validate": 0.4}] * 3,
        },
        "ours, 2 cores": {"samples": [2.0], "load_1m": [1.0], "breakdown": []},
    }
    raw = {
        "kubeconform": {"version": "v0.8.0"},
        "corpus": {
            "objects": 10000,
            "bytes": 2 * 2**20,
            "renders": 100,
            "worker_cycle": [1, 2],
            "worker_rounds": 3,
            "refused_count": 1,
            "helm_renders_run": 2,
            "render_seconds": 5.0,
        },
        "equal_work": {
            "seeded": 100,
            "kubeconform": {"summary": {"invalid": 100, "valid": 9900, "errors": 0, "skipped": 0}, "errors": 100},
            "ours": {"invalid": 100, "findings": 100},
            "ours_python_engine": {"invalid": 100, "findings": 100},
            "same_errors": True,
            "engines_agree": True,
        },
        "agreement": {
            "mutated": 50,
            "agree": 50,
            "rs_accepts_jsonschema_rejects": 0,
            "rs_rejects_jsonschema_accepts": 0,
        },
        "end_to_end": e2e,
        "engines": {"kubeconform": {"validate": 0.5, "decode": [3.0]}, "ours": {"samples": [0.25]}},
        "before": {"objects": 10000, "validate_seconds": 10.0},
        "commands": {"kubeconform": "kubeconform ...", "ours": "python -m bench.validation ours-e2e ..."},
    }
    blocks, targets = validation.section(raw)
    by = blocks_by_id(blocks)
    assert by["end-to-end"]["rows"][2][:4] == ["ours, 1 core", 1.0, 10000.0, 2.0]
    assert "| ours, 1 core | 1.00 | 10,000 | 2.00x | 1.00, 1.00, 1.00 |" in shown(blocks)
    assert "| ours (jsonschema-rs, then jsonschema for the failures) | 100 | 100 | yes | — |" in shown(blocks)
    assert "| kubeconform `-strict` | 100 | 100 | yes | valid 9,900, errors 0, skipped 0 |" in shown(blocks)
    assert [t["met"] for t in targets] == ["yes", "yes", "no"]
    assert targets[1]["measured"] == "ours 10,000 vs kubeconform -n 1 5,000 objects/s (2.00x)"


def test_render_validate_section_sums_the_scenarios() -> None:
    from bench import render_validate

    row = {
        "scenario": "c/01",
        "objects": 4,
        "cold": 0.1,
        "memory": 0.003,
        "disk": 0.006,
        "schema": 0.00004,
        "policies": 0.0002,
        "load_1m": 1.0,
    }
    raw = {"rows": [row, {**row, "scenario": "c/02"}], "repeat": 3, "kube_version": "1.35.0", "helm": "v4.3.1"}
    text = shown(render_validate.section(raw))
    assert "| c/02 | 4 | 100 | 3.00 | 6.00 | 0.04 | 0.20 | 1.00 |" in text
    assert "| cold renders, s | 0.20 |" in text
    assert "| schema validation per object, µs | 10 |" in text


def scale_row(chart: str, workers: int, seconds: float, kinds: dict[str, int]) -> dict[str, Any]:
    ours = {
        "kinds": kinds,
        "rendered": sum(kinds.values()),
        "pods": workers,
        "endpoints": 1,
        "endpointslices": 1,
        "total": sum(kinds.values()) + workers + 2,
    }
    per = {"total": 4 * workers + 1, "services": workers, "custom": 1, "other": 0}
    return {
        "chart": chart,
        "workers": workers,
        "render_samples": [seconds],
        "server_samples": [seconds / 4],
        "largest": {"bytes": 2048},
        "load_1m": 1.0,
        "bytes": 10240,
        "ours": ours,
        "operator": "Kubeflow v1",
        "kubeflow": per,
        "inovex": per,
    }


def test_scale_section_and_its_targets() -> None:
    from bench import scale

    kinds = {"ConfigMap": 2, "Job": 1}
    raw = {
        "helm": "v4.3.1",
        "repeat": 3,
        "workers": [1, 1000],
        "rows": [
            scale_row("tensorflow-dist", 1, 0.1, kinds),
            scale_row("tensorflow-dist", 1000, 0.4, kinds),
            scale_row("pytorch-dist", 1, 0.1, kinds),
            scale_row("pytorch-dist", 1000, 0.2, {"Job": 1}),
        ],
    }
    blocks, targets = scale.section(raw)
    text = shown(blocks)
    assert (
        "| tensorflow-dist | 1,000 | 3 (2 ConfigMap, 1 Job) | 1,000 | 1 + 1 | **1,005** | 10.0 | 400 / 100 | 2.0 |"
        in text
    )
    assert "| pytorch-dist | 2.0x | 2.0x |" in text
    assert targets == [
        model.target(
            "render time at worker=1,000 within 3x of worker=1 (each training chart)",
            "tensorflow-dist 4.0x, pytorch-dist 2.0x",
            "no: tensorflow-dist 4.0x",
        ),
        model.target("non-pod objects constant in the worker count", "grows for pytorch-dist", False),
    ]


def scheduling_run(workers: int, **seconds: float) -> dict[str, Any]:
    return {
        "workers": workers,
        "pods": workers,
        "seconds": {"helm_install": 0.5, **seconds},
        "objects": {"Pod": workers, "Job": 1},
        "rss_peak": {"etcd": 2**20 * 10, "kube-apiserver": 2**20 * 90},
        "cpu_seconds": {"kube-apiserver": 3.0, "etcd": 1.0},
        "load_before": LOAD,
        "largest": {"kind": "ConfigMap", "bytes": 2048},
    }


def test_scheduling_section_and_the_rate_limit_comparison() -> None:
    from bench import scheduling

    raw = {
        "versions": {"kubernetes": "v1.35.8", "etcd": "v3.6.16", "kwok": "v0.8.0"},
        "nodes": 3,
        "gpus_per_node": 8,
        "start_seconds": 4.0,
        "rss_idle_start": {"etcd": 2**20, "kube-apiserver": 2**20},
        "runs": [
            scheduling_run(8, created=1.0, bound=1.0, running=2.0),
            scheduling_run(1000, created=20.0, timed_out=240.0),
        ],
    }
    blocks, targets = scheduling.section(raw)
    text = shown(blocks)
    assert "| 1,000 | 0.50 | 20.0 | **not bound** (timed out at 240 s) | — | 50 | 1 Job, 1000 Pod | 1.50 |" in text
    assert "| 8 | 0.50 | 1.0 | **1.0** | 2.0 | — |" in text
    assert "| kube-apiserver | 1 | 90 | 90 | 0 |" in text
    assert targets == [model.target("a 1,000-worker job fully bound in under 60 s", "not bound in time", False)]
    qps = scheduling.qps_block("qps20", {**raw, "controller_qps": 20})
    assert qps["id"] == "qps20" and "`--kube-api-qps=20`" in qps["caption"]
    assert len(qps["rows"][0]) == len(scheduling.QPS_COLUMNS)


def test_a_cost_run_replaces_its_own_row_and_keeps_the_others_in_order() -> None:
    from bench import scheduling

    run = scheduling_run(5000, created=90.0, bound=95.0, running=130.0)
    data = {"chart": "tensorflow-dist", "nodes": 659, "date": "2026-12-01 10:00 UTC", "runs": [run]}
    old = [
        ["pytorch-dist", [5000, 5000]],
        ["tensorflow-dist", [5000, 5000]],
        ["tensorflow-dist (before)", [1000, 1000]],
    ]
    rows = scheduling.cost_rows("cost_tensorflow-dist_5000", data, old)
    assert [r[:2] for r in rows] == [
        ["tensorflow-dist (before)", [1000, 1000]],
        ["tensorflow-dist", [5000, 5000]],
        ["pytorch-dist", [5000, 5000]],
    ]
    mine = rows[1]
    assert mine[6] == 130.0 and mine[-1] == "2026-12-01" and mine[9] == [4.0, 0.8]
    line = results.table_lines(scheduling.COST_COLUMNS, [mine])[2]
    assert line == (
        "| tensorflow-dist | 5,000 (5,000) | 659 | 0.50 | 90.0 | 95.0 | **130.0** | **100** | 90 / 10 "
        "| 4 (1) | ConfigMap 2.0 KiB | 1.50 | 2026-12-01 |"
    )
    before = scheduling.cost_rows("cost_tensorflow-dist_1000_before", {**data, "runs": [run]}, [])
    assert before[0][0] == "tensorflow-dist (before)"


def test_suite_times_section_marks_rows_kept_from_an_earlier_run() -> None:
    from bench import suite_times

    row = {
        "tier": "fast-cold",
        "command": "pytest tests/fast",
        "seconds": 61.0,
        "exit": 0,
        "summary": "9 passed",
        "load_before": LOAD,
    }
    raw = {
        "rows": [
            row,
            {**row, "tier": "fast", "seconds": 30.0, "carried_over": True, "date": "2026-11-21 09:31"},
            {"tier": "cluster", "skipped": "control-plane binaries not built"},
        ]
    }
    blocks, targets = suite_times.section(raw)
    text = shown(blocks)
    assert "| fast | `pytest tests/fast` | 30.0 | 9 passed (exit 0) (measured 2026-11-21 09:31, kept from an" in text
    assert "| cluster | | — | skipped: control-plane binaries not built | — |" in text
    assert [t["met"] for t in targets] == ["no", "yes"]


def test_images_section() -> None:
    from bench import images

    row = {
        "image": "busybox",
        "reference": "busybox:1.37.0",
        "digest": "sha256:" + "a" * 64,
        "compressed_bytes": 67 * 2**20,
        "unpacked_bytes": 160 * 2**20,
        "cold_seconds": 98.0,
        "cold_steps": {"oci": 10.0, "rootfs": 86.0},
        "warm_seconds": 0.1,
        "push_cold_seconds": 0.3,
        "push_warm_seconds": 0.1,
        "shared_cache_digest": "sha256:" + "b" * 64,
        "load_before": LOAD,
        "load_after": LOAD,
    }
    text = shown(images.section({"rows": [row], "date": "2026-11-23 02:47 UTC", "tools": {"pip": "pip 26.3"}}))
    assert (
        "| busybox | `busybox:1.37.0` sha256:aaaaaaaaaaaa | 67 | 160 | 98 (rootfs 86, oci 10) | 0.1 | 0.3 / 0.1 "
        "| NO | 1.50 → 1.50 |"
    ) in text
    assert "| pip | pip 26.3 |" in text


def test_the_frameworks_section_is_what_its_committed_raw_numbers_give() -> None:
    from bench import frameworks

    raw = json.loads(frameworks.OUT_JSON.read_text())
    committed = model.load(model.path_of(frameworks.SECTION))
    assert frameworks.section(raw) == committed["blocks"]


def test_renderers_section() -> None:
    from bench import renderers

    raw = {
        "date": "2026-11-26 19:29 UTC",
        "load_start": LOAD,
        "load_end": LOAD,
        "cold": {
            "helm": "v4.3.1",
            "compared": 2,
            "identical": 2,
            "kube_versions": ["1.29.0", "1.35.0"],
            "server_start": 0.063,
            "from_json": 10,
            "by_pyyaml": 0,
            "problems": [],
            "rows": [{"scenario": "c/01", "server": 0.02, "binary": 0.08}],
        },
        "unittest": {
            "version": "v1.1.2",
            "rows": [{"chart": "c", "renders": 2, "seconds": 0.06, "per_render": 0.03, "tests": "2 passed, 2 total"}],
        },
        "tiers": {
            "rows": [
                {
                    "tier": "fast",
                    "command": "pytest tests/fast",
                    "seconds": 40.0,
                    "summary": "9 passed",
                    "load_before": LOAD,
                    "compared": ["4", "4"],
                }
            ]
        },
        "verdict": {
            "cases": 2,
            "cores": 2,
            "ours, server": {"seconds": 5.0, "verdict": {"objects": 10, "invalid": 0}},
            "kubeconform per case": {"seconds": 50.0, "verdict": {"valid": 10}},
        },
    }
    text = shown(renderers.section(raw))
    assert "| helm-unittest v1.1.2 (one process per chart, wall / renders) | 30.0 ms |" in text
    assert "| byte-identical to the binary (Secret data aside) and decoded alike | 2/2 |" in text
    assert "| fast | 40.0 | 9 passed; 4/4 renders identical | 1.50 |" in text
    assert "| kubeconform per case | 50.0 | {'valid': 10} | 10.00x |" in text
    assert "| chart-to-verdict cases | 2 |" in text


def test_the_run_keeps_machine_facts_it_did_not_learn_and_the_other_parts_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import common, run

    monkeypatch.setattr(common, "saved", lambda part: None)  # no raw validation run on this machine
    old = {
        "title": "t",
        "blocks": [
            model.facts("machine", "machine", [["kubeconform", "v0.8.0 (built from its Go module)"]]),
            model.table("parts", run.PART_COLUMNS, [["scale", 7, "2026-11-21 09:57 UTC", "ok"]]),
        ],
    }
    status = {
        "machine": {"cpu": "AMD EPYC", "cores": 2, "packages": {}},
        "command": "make bench",
        "started": "2026-12-01 10:00:00 UTC",
        "total_seconds": 90.0,
        "load_start": LOAD,
        "load_end": LOAD,
        "parts": {"validation": {"exit": 1, "seconds": 30.0, "date": "2026-12-01 10:01 UTC"}},
    }
    machine, parts = run.section(status, old)
    facts = {f[0]: f[1] for f in machine["facts"]}
    assert facts["kubeconform"] == "v0.8.0 (built from its Go module)"
    assert facts["took, min"] == 1.5
    assert parts["rows"] == [
        ["scale", 7, "2026-11-21 09:57 UTC", "ok"],
        ["validation", 30.0, "2026-12-01 10:01 UTC", "FAILED (exit 1; build/bench/validation.log)"],
    ]
