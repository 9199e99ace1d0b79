"""The measuring run of ``python -m bench.validation`` (see the package's docstring): kubeconform and kcengine built,
the corpus, then ours beside kubeconform three ways (equal work on the broken set, end to end on the clean corpus,
validation alone), our two engines' agreement, and the commands the section shows."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from bench import common
from bench.validation.corpus import CORPUS, build_corpus
from bench.validation.kubeconform import engine_cmd, kubeconform_cmd, kubeconform_findings, kubeconform_schemas
from bench.validation.ours import engine_agreement, ours_cmd


def run_timed(cmd: list[str], single_core: bool) -> tuple[float, subprocess.CompletedProcess[str]]:
    if single_core:
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0))), *cmd]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=common.ROOT)
    return time.perf_counter() - start, proc


def built_tools() -> tuple[Path, Path, str]:
    """kubeconform and kcengine, built by bench/build-kubeconform.sh, and kubeconform's version."""
    built = subprocess.run([str(common.BENCH / "build-kubeconform.sh")], capture_output=True, text=True, check=True)
    binaries = dict(line.split(" ", 1) for line in built.stdout.strip().splitlines())
    kc_bin, engine_bin = Path(binaries["kubeconform"]), Path(binaries["kcengine"])
    kc_version = subprocess.run([str(kc_bin), "-v"], capture_output=True, text=True, check=False).stdout.strip()
    return kc_bin, engine_bin, kc_version


def equal_work(kc_bin: Path, broken_file: Path, seeded: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides' findings on the seeded broken set (``seeded`` objects given a typo), and ours with pure
    jsonschema's whole output (the engine before)."""
    kc_proc = subprocess.run(
        [*kubeconform_cmd(kc_bin, None, "json"), str(broken_file)], capture_output=True, text=True, check=False
    )
    kc = kubeconform_findings(kc_proc.stdout)
    ours = json.loads(
        subprocess.run(ours_cmd(broken_file, "rs"), capture_output=True, text=True, check=True, cwd=common.ROOT).stdout
    )
    ours_py = json.loads(
        subprocess.run(
            ours_cmd(broken_file, "python"), capture_output=True, text=True, check=True, cwd=common.ROOT
        ).stdout
    )
    kc_errors = {tuple(e) for e in kc["errors"]}
    ours_errors = {tuple(e) for e in ours["errors"]}
    equal = {
        "seeded": seeded,
        "kubeconform": {"summary": kc["summary"], "errors": len(kc_errors)},
        "ours": {"invalid": ours["invalid"], "findings": ours["findings"], "errors": len(ours_errors)},
        "ours_python_engine": {"invalid": ours_py["invalid"], "findings": ours_py["findings"]},
        "same_errors": kc_errors == ours_errors,
        "only_kubeconform": sorted(kc_errors - ours_errors)[:10],
        "only_ours": sorted(ours_errors - kc_errors)[:10],
        "engines_agree": ours["errors"] == ours_py["errors"],
    }
    return equal, ours_py


def end_to_end(kc_bin: Path, objects_file: Path, n: int, repeat: int) -> dict[str, Any]:
    """Each side's runs on the clean corpus (``n`` objects), ``repeat`` times each, timed."""
    runs: dict[str, Any] = {}
    configs = [
        ("kubeconform -n 1, 1 core", kubeconform_cmd(kc_bin, 1) + [str(objects_file)], True),
        ("kubeconform default -n 4, 2 cores", kubeconform_cmd(kc_bin, None) + [str(objects_file)], False),
        ("ours, 1 core", ours_cmd(objects_file, "rs"), True),
        ("ours, 2 cores", ours_cmd(objects_file, "rs"), False),
        ("ours, PyYAML decoding, 1 core", ours_cmd(objects_file, "rs", "pyyaml"), True),
    ]  # fmt: skip
    for label, cmd, single in configs:
        samples, loads, details = [], [], []
        for _ in range(repeat):
            loads.append(common.load()["1m"])
            seconds, proc = run_timed(cmd, single)
            if label.startswith("ours"):
                if proc.returncode != 0:
                    raise SystemExit(f"{label} failed: {proc.stderr[-2000:]}")
                out = json.loads(proc.stdout)
                if out["findings"]:
                    raise SystemExit(f"{label}: {out['findings']} findings on the clean corpus")
                details.append(out["seconds"])
            else:
                want = f"Valid: {n}, Invalid: 0, Errors: 0"
                if want not in proc.stdout:
                    raise SystemExit(f"{label}: expected '{want}', got:\n{proc.stdout[-2000:]}")
            samples.append(seconds)
        runs[label] = {"samples": samples, "load_1m": loads, "objects": n, "breakdown": details}
        print(f"validation: {label}: {n / common.median(samples):.0f} objects/s", flush=True)
    return runs


def engines_alone(engine_bin: Path, objects_file: Path, n: int, repeat: int) -> dict[str, Any]:
    """kcengine's validation alone beside ours (``ours-engine``), on one core."""
    print("validation: engines alone", flush=True)
    _, proc = run_timed(engine_cmd(engine_bin, objects_file, repeat), True)
    if proc.returncode != 0:
        raise SystemExit(f"kcengine failed: {proc.stderr[-2000:]}")
    kc_engine = json.loads(proc.stdout)
    _, proc = run_timed([*ours_cmd(objects_file, "rs")[:3], "ours-engine", str(objects_file), "--repeat",
                         str(repeat)], True)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"ours-engine failed: {proc.stderr[-2000:]}")
    ours_engine_result = json.loads(proc.stdout)
    engines = {"kubeconform": kc_engine, "ours": ours_engine_result, "load_1m": common.load()["1m"]}
    print(
        f"validation: kubeconform engine {n / kc_engine['validate']:.0f} objects/s, "
        f"ours {n / common.median(ours_engine_result['samples']):.0f} objects/s",
        flush=True,
    )
    return engines


def commands(kc_bin: Path) -> dict[str, str]:
    """One command of each side, as the section shows them (paths from the checkout, the cache as $DLCHARTS_CACHE)."""
    from dlcharts.toolchain import cache_root

    return {
        "kubeconform": " ".join(kubeconform_cmd(kc_bin, None))
        .replace(str(common.ROOT) + "/", "")
        .replace(str(cache_root()), "$DLCHARTS_CACHE")
        + " build/bench/corpus/objects.yaml",
        "ours": ".venv/bin/python -m bench.validation ours-e2e build/bench/corpus/objects.yaml",
    }


def measure(objects: int, repeat: int) -> dict[str, Any]:
    """The whole run (at least ``objects`` objects, ``repeat`` timed runs of each): its raw result, as
    build/bench/validation.json keeps it."""
    kc_bin, engine_bin, kc_version = built_tools()
    result: dict[str, Any] = {
        "load_start": common.load(),
        "kubeconform": {"binary": str(kc_bin), "version": kc_version},
    }
    print("validation: building the corpus", flush=True)
    result["corpus"] = build_corpus(objects)
    kubeconform_schemas()
    objects_file, broken_file = CORPUS / "objects.yaml", CORPUS / "broken.yaml"
    n = result["corpus"]["objects"]
    print(f"validation: {n} objects in {result['corpus']['renders']} renders", flush=True)

    # 1. Equal work: both sides on the seeded broken set.
    result["equal_work"], ours_py = equal_work(kc_bin, broken_file, result["corpus"]["broken_objects"])
    print(f"validation: equal work {json.dumps(result['equal_work'])[:400]}", flush=True)

    # 2. Throughput, end to end (one process each: read + parse + compile + validate), on the clean corpus.
    result["end_to_end"] = end_to_end(kc_bin, objects_file, n, repeat)

    # 3. Validation alone, one core: decoding taken out on both sides, validators/schemas compiled first.
    result["engines"] = engines_alone(engine_bin, objects_file, n, repeat)
    result["agreement"] = engine_agreement(objects_file, 5000)
    print(f"validation: engine agreement {result['agreement']}", flush=True)
    result["before"] = {"engine": "pure jsonschema", "objects": n, "validate_seconds": ours_py["seconds"]["validate"],
                        "parse_seconds": ours_py["seconds"]["parse"]}  # fmt: skip
    result["commands"] = commands(kc_bin)
    result["load_end"] = common.load()
    return result
