#!/usr/bin/env python3
"""Part 1: strict validation throughput, ours (dlcharts.schemas) vs kubeconform, on the same >= 10,000 objects.

Corpus: every chart x ci scenario, then the training charts' scenarios again with ``--set worker=N`` for N in
1, 2, 3, 4, 6, 8, 12, 16 (round after round) until the renders hold at least --objects objects; Kubernetes
1.35.0; each render with its own release name, so the whole set is one manifest stream without duplicate
objects and no two renders are the same. Written to build/bench/corpus/objects.yaml, and a
copy with 1% of the (core-kind) objects given a typo'd field to build/bench/corpus/broken.yaml.

Schemas, one source for both sides: the strict v1.35 schema set in the installed kubernetes-validate package.
kubeconform gets a local copy (build/bench/kubeconform-schemas/) laid out as
``{{ .ResourceKind }}{{ .KindSuffix }}.json`` (kubernetes-validate already names its files that way) with the
``$id``s dropped and ``/api/_definitions.json`` references made relative, so it resolves them from disk; the
CRD kinds (Kueue, JobSet, PodGroup, ServiceMonitor) come from src/dlcharts/crds/ for both sides, named
``{{ .Group }}_{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json``, and that location is searched first, as ours
does (kubeconform's KindSuffix maps scheduling.x-k8s.io/v1alpha1 PodGroup onto Kubernetes' own
scheduling.k8s.io PodGroup file otherwise).

Writes build/bench/validation.json (raw), section 1 of bench/results.md (bench/data/01-validation.json) and
bench/plots/validation.png.

Usage: .venv/bin/python -m bench.validation [--objects 10000] [--repeat 3]
       .venv/bin/python -m bench.validation ours-e2e FILE [--engine rs|python]   (one timed process; JSON out)
       .venv/bin/python -m bench.validation --report-only   (section 1 again from build/bench/validation.json)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import common, model, results

CORPUS = common.WORK / "corpus"
KC_SCHEMAS = common.WORK / "kubeconform-schemas"
CRDS = common.ROOT / "src" / "dlcharts" / "crds"
# Training scenarios are rendered again for these worker counts, round after round (each render with a new
# release name), until the corpus holds enough objects: job sizes people run, not one ever-growing job.
WORKER_CYCLE = (1, 2, 3, 4, 6, 8, 12, 16)
_DOC_SPLIT_RE = re.compile(r"^---[ \t]*$", re.MULTILINE)
_SOURCE_RE = re.compile(r"^# Source: (.+)$", re.MULTILINE)


# ----- corpus --------------------------------------------------------------------------------------------


def build_corpus(target: int) -> dict[str, Any]:
    from dlcharts.render import Renderer, default_cache_dir
    from dlcharts.suite import all_scenarios

    renderer = Renderer(cache_dir=default_cache_dir())  # reruns of `make bench` reuse renders by content
    scenarios = all_scenarios(common.ROOT / "charts")
    for chart in {s.chart for s in scenarios}:
        renderer.ensure_dependencies(chart)
    training = [s for s in scenarios if s.chart_name in common.TRAINING_CHARTS]
    others = [s for s in scenarios if s.chart_name not in common.TRAINING_CHARTS]
    jobs: list[tuple[Any, tuple[str, ...], str]] = [(s, (), s.id) for s in others]
    texts: list[str] = []
    failed: list[str] = []
    total = 0
    start = time.perf_counter()
    misses_before = renderer.misses
    rounds = 0

    def render(job: tuple[Any, tuple[str, ...], str], index: int) -> tuple[str, str | None, int]:
        scenario, sets, label = job
        request = scenario.request(common.KUBE_VERSION, release=f"c{index:05d}", set_values=sets)
        try:
            rendered = renderer.render(request)
        except Exception as exc:  # noqa: BLE001 - a scenario that refuses this worker count is skipped
            return label, None, len(str(exc))
        return label, rendered.text, len(rendered)

    index = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        while total < target:
            if not jobs:
                worker = WORKER_CYCLE[rounds % len(WORKER_CYCLE)]
                rounds += 1
                jobs = [(s, (f"worker={worker}",), f"{s.id} worker={worker}") for s in training]
            batch = [(job, index + i) for i, job in enumerate(jobs)]
            index += len(jobs)
            jobs = []
            for label, text, count in pool.map(lambda a: render(*a), batch):
                if text is None:
                    failed.append(label)
                    continue
                texts.append(text)
                total += count
    seconds = time.perf_counter() - start
    CORPUS.mkdir(parents=True, exist_ok=True)
    full = "".join(t if t.endswith("\n") else t + "\n" for t in texts)
    (CORPUS / "objects.yaml").write_text(full)
    broken_count = write_broken(full, CORPUS / "broken.yaml")
    return {
        "renders": len(texts),
        "objects": total,
        "worker_rounds": rounds,
        "worker_cycle": WORKER_CYCLE,
        "refused_renders": sorted(set(failed)),
        "refused_count": len(failed),
        "helm_renders_run": renderer.misses - misses_before,
        "render_seconds": seconds,
        "bytes": len(full.encode()),
        "broken_objects": broken_count,
    }


def write_broken(text: str, dest: Path, share: float = 0.01, seed: int = 7) -> int:
    """A copy of the corpus in which ``share`` of the core-kind objects carry one typo'd (unknown) field."""
    import yaml

    from dlcharts.schemas import crd_kinds

    load = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = set(crd_kinds())
    chunks = [c for c in _DOC_SPLIT_RE.split(text) if c.strip()]
    eligible = []
    for i, chunk in enumerate(chunks):
        kind = re.search(r"^kind: *(\S+)", chunk, re.MULTILINE)
        api = re.search(r"^apiVersion: *(\S+)", chunk, re.MULTILINE)
        if kind and api and (api.group(1), kind.group(1)) not in crd:
            eligible.append(i)
    picked = set(random.Random(seed).sample(eligible, max(1, round(len(chunks) * share))))
    out = []
    for i, chunk in enumerate(chunks):
        if i in picked:
            body = yaml.load(chunk, Loader=load)  # noqa: S506 - a safe loader
            source = _SOURCE_RE.search(chunk)
            pod = ((body.get("spec") or {}).get("template") or {}).get("spec")
            if isinstance(pod, dict) and pod.get("containers"):
                pod["containers"][0]["imagePullPolicyy"] = "IfNotPresent"  # typo of imagePullPolicy
            else:
                body["metadata"]["lables"] = {"typo": "of-labels"}
            head = f"# Source: {source.group(1)}\n" if source else ""
            chunk = "\n" + head + yaml.safe_dump(body, sort_keys=False)
        out.append("---" + chunk if chunk.startswith("\n") else "---\n" + chunk)
    dest.write_text("".join(c if c.endswith("\n") else c + "\n" for c in out))
    return len(picked)


def kubeconform_schemas(version: str = common.KUBE_VERSION) -> Path:
    """The strict schema set of Kubernetes ``version``, rewritten so kubeconform resolves its references from local
    files (build/bench/kubeconform-schemas/v<version>)."""
    from dlcharts.schemas import schema_root

    src = schema_root() / f"v{version}-local-strict"
    dest = KC_SCHEMAS / f"v{version}"
    stamp = dest / ".source"
    marker = f"{src}\n{sum(p.stat().st_mtime_ns for p in src.glob('*.json'))}\n"
    if stamp.is_file() and stamp.read_text() == marker:
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    for path in src.glob("*.json"):
        doc = json.loads(path.read_text())
        doc.pop("$id", None)  # https://kubernetes.io/... would make every $ref a URL to fetch
        data = json.dumps(doc).replace('"/api/_definitions.json#', '"_definitions.json#')
        (dest / path.name).write_text(data)
    stamp.write_text(marker)
    return dest


# ----- running each side ---------------------------------------------------------------------------------


def schema_locations(version: str = common.KUBE_VERSION) -> list[str]:
    """kubeconform's schema locations: the CRDs first (as ours looks them up first), then Kubernetes'."""
    return [
        str(CRDS) + "/{{ .Group }}_{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json",
        str(KC_SCHEMAS / f"v{version}") + "/{{ .ResourceKind }}{{ .KindSuffix }}.json",
    ]


def kubeconform_cmd(binary: Path, workers: int | None, output: str = "text") -> list[str]:
    cmd = [str(binary), "-strict", "-summary", "-output", output, "-kubernetes-version", common.KUBE_VERSION]
    for location in schema_locations():
        cmd += ["-schema-location", location]
    if workers is not None:
        cmd += ["-n", str(workers)]
    return cmd


def run_timed(cmd: list[str], single_core: bool) -> tuple[float, subprocess.CompletedProcess[str]]:
    if single_core:
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0))), *cmd]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=common.ROOT)
    return time.perf_counter() - start, proc


def kubeconform_findings(stdout: str) -> dict[str, Any]:
    """Invalid objects and leaf errors from kubeconform's JSON output, as (Kind/name, field path) pairs."""
    doc = json.loads(stdout)
    errors = set()
    for res in doc.get("resources") or []:
        if res.get("status") != "statusInvalid":
            continue
        for ptr, what in re.findall(r" - at '([^']*)': (.*?)(?= - at '|$)", res.get("msg", "")):
            path = ptr.strip("/").split("/") if ptr.strip("/") else []
            extra = re.match(r"additional properties? '([^']+)'", what)
            if extra:
                path.append(extra.group(1))
            errors.add((f"{res['kind']}/{res['name']}", "/".join(path)))
    return {"summary": doc.get("summary"), "errors": sorted(errors)}


def ours_cmd(path: Path, engine: str, decoder: str = "server") -> list[str]:
    """One timed process of ours (run from the checkout's root, where ``bench`` is importable)."""
    return [sys.executable, "-m", "bench.validation", "ours-e2e", str(path), "--engine", engine, "--decoder", decoder]


def ours_e2e(path: Path, engine: str, decoder: str = "server") -> dict[str, Any]:
    """One process: read and decode the stream, compile validators, validate every object (timed in parts).

    ``decoder``: ``server``, the harness's own path (dlcharts.render_server: the pinned helm's in-process renderer
    decodes each piece as PyYAML would and sends JSON; the pieces it leaves to PyYAML are decoded here), or
    ``pyyaml``, every piece with PyYAML's C loader (the path of a harness without its render server)."""
    t0 = time.perf_counter()
    from dlcharts import render_server, schemas
    from dlcharts.helm import find_helm
    from dlcharts.render import parse_manifest

    if engine == "python":
        schemas.disable_fast_engine()
    server = render_server.server_for(find_helm()) if decoder == "server" else None
    if decoder == "server" and server is None:
        raise SystemExit("the render server does not run (build it: make tools)")
    t1 = time.perf_counter()
    text = path.read_text()
    decoded, fallback = server.decode(text) if server is not None else (None, frozenset[int]())
    objects = list(parse_manifest(text, decoded=decoded, fallback=fallback).values())
    t2 = time.perf_counter()
    findings = schemas.validate_objects(objects, common.KUBE_VERSION)
    t3 = time.perf_counter()
    errors = sorted({(f.object, f.path.replace(".", "/").replace("[", "/").replace("]", "")) for f in findings})
    return {
        "objects": len(objects),
        "invalid": len({f.object for f in findings}),
        "findings": len(findings),
        "errors": errors,
        "seconds": {"import": t1 - t0, "parse": t2 - t1, "validate": t3 - t2},
        "decoded_by_pyyaml": len(fallback) if decoded is not None else len(objects),
    }


def ours_engine(path: Path, repeat: int) -> dict[str, Any]:
    """validate_objects alone: objects parsed, validators compiled by a first pass, then ``repeat`` timed passes."""
    from dlcharts import schemas
    from dlcharts.render import parse_manifest

    objects = list(parse_manifest(path.read_text()).values())
    start = time.perf_counter()
    schemas.validate_objects(objects, common.KUBE_VERSION)
    first = time.perf_counter() - start
    samples, findings = common.timed(lambda: schemas.validate_objects(objects, common.KUBE_VERSION), repeat)
    return {"objects": len(objects), "first_pass": first, "samples": samples, "findings": len(findings)}


def engine_agreement(path: Path, count: int, seed: int = 11) -> dict[str, Any]:
    """jsonschema-rs's verdict vs jsonschema's on ``count`` randomly mutated corpus objects (values replaced by
    other types, odd strings or huge numbers, fields deleted, unknown fields added). Only "rs accepts what
    jsonschema rejects" would lose findings; the other way round, jsonschema's path decides anyway."""
    import copy

    from dlcharts import schemas
    from dlcharts.render import parse_manifest

    text = path.read_text()[:6_000_000]
    objects = list(parse_manifest(text[: text.rfind("\n---")]).values())
    rng = random.Random(seed)
    values: list[Any] = [None, 0, -1, 1.5, 2**70, "", "x", "1Gi", True, False, [], {}, ["a"], {"a": 1}, "a\n",
                         float("nan")]  # fmt: skip
    schema_set = schemas.schema_set_for(common.KUBE_VERSION)

    def walk(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        found = [prefix] if prefix else []
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            found += walk(child, (*prefix, key))
        return found

    counts = {"agree": 0, "rs_accepts_jsonschema_rejects": 0, "rs_rejects_jsonschema_accepts": 0}
    for _ in range(count):
        obj = rng.choice(objects)
        body = copy.deepcopy(obj.body)
        for _ in range(rng.randint(1, 3)):
            where = rng.choice(walk(body))
            parent: Any = body
            for key in where[:-1]:
                parent = parent[key]
            last, op = where[-1], rng.random()
            if op < 0.35:
                parent[last] = copy.deepcopy(rng.choice(values))  # a shared value could end up inside itself
            elif op < 0.55 and isinstance(parent, dict):
                del parent[last]
            elif op < 0.75 and isinstance(parent, dict):
                parent[f"{last}x"] = 1
            elif isinstance(parent[last], str):
                parent[last] += rng.choice(["\n", "-", "_", "A", " ", ".", "é"])
        fast = schemas.fast_validator_for(schema_set, obj.key.api_version, obj.kind)
        reference = schemas.validator_for(schema_set, obj.key.api_version, obj.kind)
        rs_ok = schemas.fast_is_valid(fast, body)
        py_ok = next(iter(reference.iter_errors(body)), None) is None
        key = (
            "agree" if rs_ok == py_ok else "rs_accepts_jsonschema_rejects" if rs_ok else "rs_rejects_jsonschema_accepts"
        )
        counts[key] += 1
    return {"mutated": count, **counts}


def engine_cmd(binary: Path, path: Path, repeat: int) -> list[str]:
    cmd = [str(binary), "-repeat", str(repeat), "-kubernetes-version", common.KUBE_VERSION]
    for location in schema_locations():
        cmd += ["-schema-location", location]
    return [*cmd, str(path)]


# ----- section 1 of results.md -----------------------------------------------------------------------------

SECTION = "01-validation"
TITLE = "Validation throughput: ours vs kubeconform"
E2E_COLUMNS = [
    model.column("run"),
    model.column("wall s", "{:.2f}"),
    model.column("objects/s", "{:,.0f}"),
    model.column("vs kubeconform -n 1, 1 core", "{:.2f}x"),
    model.column("load 1m", "{:.2f}", join=", ", align="left"),
]
ENGINE_COLUMNS = [
    model.column("engine"),
    model.column("validate s", "{:.3f}"),
    model.column("objects/s", "{:,.0f}"),
    model.column("ratio", "{:.2f}x"),
]
EQUAL_COLUMNS = [
    model.column(""),
    model.column("objects invalid", "{:,}"),
    model.column("errors", "{:,}"),
    model.column("same (object, field) pairs as the other side"),
    model.column("kubeconform's summary", "valid {:,}, errors {}, skipped {}"),
]


def _rate(objects: int, seconds: float) -> float:
    return objects / seconds if seconds > 0 else float("inf")


def section(v: dict[str, Any]) -> tuple[list[model.Block], list[dict[str, str]]]:
    """Section 1's blocks and targets from a raw run (build/bench/validation.json)."""
    c, n = v["corpus"], v["corpus"]["objects"]
    eq = v["equal_work"]
    blocks = [
        model.facts(
            "corpus",
            "corpus (build/bench/corpus/objects.yaml)",
            [
                ["objects", n, "{:,}"],
                ["YAML, MiB", c["bytes"] / common.MiB, "{:.1f}"],
                ["renders", c["renders"], "{:,}"],
                ["Kubernetes (strict schemas)", common.KUBE_VERSION],
                ["worker counts the training charts cycle through", ", ".join(map(str, c["worker_cycle"]))],
                ["rounds of that cycle", c["worker_rounds"], "{:,}"],
                ["renders a scenario refuses (skipped)", c["refused_count"], "{:,}"],
                ["helm processes run (the rest came from the render cache)", c["helm_renders_run"], "{:,}"],
                ["building the corpus, s", c["render_seconds"], "{:.0f}"],
                ["objects given one typo'd field in broken.yaml (1%)", eq["seeded"], "{:,}"],
            ],
        ),
    ]
    kc_sum = eq["kubeconform"]["summary"]
    same = "yes" if eq["same_errors"] else "NO"
    rows = [
        ["kubeconform `-strict`", kc_sum["invalid"], eq["kubeconform"]["errors"], same,
         [kc_sum["valid"], kc_sum["errors"], kc_sum["skipped"]]],
        ["ours (jsonschema-rs, then jsonschema for the failures)", eq["ours"]["invalid"], eq["ours"]["findings"], same,
         None],
        ["ours with pure jsonschema (the engine before)", eq["ours_python_engine"]["invalid"],
         eq["ours_python_engine"]["findings"], "identical findings" if eq["engines_agree"] else "DIFFERENT", None],
    ]  # fmt: skip
    blocks.append(model.table("equal-work", EQUAL_COLUMNS, rows, "**Equal work** (`build/bench/corpus/broken.yaml`)"))
    if not eq["same_errors"]:
        only = [[", ".join(map(str, eq["only_kubeconform"])), ", ".join(map(str, eq["only_ours"]))]]
        blocks.append(
            model.table("equal-work-differences", [model.column("only kubeconform"), model.column("only ours")], only)
        )
    ag = v.get("agreement")
    if ag:
        blocks.append(
            model.facts(
                "engine-agreement",
                "engine agreement, randomly mutated corpus objects",
                [
                    ["objects mutated", ag["mutated"], "{:,}"],
                    ["same verdict from jsonschema-rs and jsonschema", ag["agree"], "{:,}"],
                    [
                        "jsonschema-rs accepts what jsonschema rejects (would lose findings)",
                        ag["rs_accepts_jsonschema_rejects"],
                        "{:,}",
                    ],
                    [
                        "jsonschema-rs rejects what jsonschema accepts (harmless: jsonschema decides)",
                        ag["rs_rejects_jsonschema_accepts"],
                        "{:,}",
                    ],
                ],
            )
        )
    e2e = v["end_to_end"]
    kc1 = e2e.get("kubeconform -n 1, 1 core")
    kc1_rate = _rate(n, common.median(kc1["samples"])) if kc1 else None
    rows = []
    for label, row in e2e.items():
        med = common.median(row["samples"])
        rows.append([label, med, _rate(n, med), _rate(n, med) / kc1_rate if kc1_rate else None, row["load_1m"]])
    repeat = max((len(r["samples"]) for r in e2e.values()), default=0)
    blocks.append(
        model.table(
            "end-to-end", E2E_COLUMNS, rows, f"**End to end**, one process per run, clean corpus, median of {repeat}"
        )
    )
    eng = v.get("engines")
    if eng:
        kc_v = eng["kubeconform"]["validate"]
        ours_v = common.median(eng["ours"]["samples"])
        rows = [
            [f"kubeconform {v['kubeconform']['version']} (santhosh-tekuri/jsonschema, Go)", kc_v, _rate(n, kc_v), 1.0],
            ["ours (jsonschema-rs `is_valid`; jsonschema `iter_errors` only for failures)", ours_v, _rate(n, ours_v),
             kc_v / ours_v],
        ]  # fmt: skip
        before = v.get("before")
        if before:
            seconds = before["validate_seconds"]
            rows.append(
                [
                    "ours before this change (pure `jsonschema`; on the broken set)",
                    seconds,
                    _rate(before["objects"], seconds),
                    kc_v / seconds,
                ]
            )
        blocks.append(
            model.table(
                "engines",
                ENGINE_COLUMNS,
                rows,
                "**Validation alone**, one core, objects already decoded, schemas compiled by a first pass",
            )
        )
    ours1 = e2e.get("ours, 1 core")
    times: list[list[Any]] = []
    if ours1 and ours1["breakdown"]:
        b = ours1["breakdown"][len(ours1["breakdown"]) // 2]
        times += [
            ["ours: imports and starting the render server", b["import"], "{:.2f}"],
            ["ours: YAML decoding (the render server's decoder)", b["parse"], "{:.2f}"],
            ["ours: validation, compiling every validator and the API server's rules included", b["validate"],
             "{:.2f}"],
        ]  # fmt: skip
    if eng:
        times.append(
            [
                "kubeconform's decode of the same documents, in-process (kcengine)",
                common.median(eng["kubeconform"]["decode"]),
                "{:.2f}",
            ]
        )
    if times:
        blocks.append(model.facts("time", "where the time goes (one run), s", times))
    cmds = v.get("commands", {})
    blocks += [
        model.code("commands", [cmds.get("kubeconform", ""), cmds.get("ours", "")], "Commands (one of each):"),
        model.image("plot", "plots/validation.png", "validation throughput"),
    ]
    return blocks, targets(v)


def targets(v: dict[str, Any]) -> list[dict[str, str]]:
    n, e2e, eng = v["corpus"]["objects"], v["end_to_end"], v.get("engines")
    out = []
    if eng:
        kc_v, ours_v = eng["kubeconform"]["validate"], common.median(eng["ours"]["samples"])
        out.append(
            model.target(
                "ours validation at least as fast as kubeconform (validation alone, 1 core)",
                f"{_rate(n, ours_v):,.0f} vs {_rate(n, kc_v):,.0f} objects/s ({kc_v / ours_v:.1f}x)",
                ours_v <= kc_v,
            )
        )
    pairs = [
        ("end to end (read + decode + validate), 1 core", "ours, 1 core", "kubeconform -n 1, 1 core",
         "kubeconform -n 1"),
        ("end to end, both cores (kubeconform's default -n 4)", "ours, 2 cores", "kubeconform default -n 4, 2 cores",
         "kubeconform"),
    ]  # fmt: skip
    for text, ours_label, kc_label, kc_name in pairs:
        if ours_label in e2e and kc_label in e2e:
            o, k = common.median(e2e[ours_label]["samples"]), common.median(e2e[kc_label]["samples"])
            measured = f"ours {_rate(n, o):,.0f} vs {kc_name} {_rate(n, k):,.0f} objects/s ({k / o:.2f}x)"
            out.append(model.target(text, measured, o <= k))
    return out


def plot(v: dict[str, Any]) -> None:
    plt = common.pyplot()
    if plt is None:
        return
    n = v["corpus"]["objects"]
    labels, rates, colors = [], [], []
    for label, row in v["end_to_end"].items():
        labels.append(f"end to end: {label}")
        rates.append(_rate(n, common.median(row["samples"])))
        colors.append("tab:orange" if label.startswith("kubeconform") else "tab:blue")
    eng = v.get("engines")
    if eng:
        labels.append("validation alone: kubeconform, 1 core")
        rates.append(_rate(n, eng["kubeconform"]["validate"]))
        colors.append("tab:orange")
        labels.append("validation alone: ours, 1 core")
        rates.append(_rate(n, common.median(eng["ours"]["samples"])))
        colors.append("tab:blue")
        if v.get("before"):
            labels.append("validation alone: ours before (pure jsonschema)")
            rates.append(_rate(v["before"]["objects"], v["before"]["validate_seconds"]))
            colors.append("tab:gray")
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(labels) + 1.2))
    ax.barh(range(len(labels)), rates, color=colors)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("objects per second (log scale)")
    ax.set_title(f"Strict validation of {n:,} rendered objects, Kubernetes {common.KUBE_VERSION}")
    for i, r in enumerate(rates):
        ax.text(r, i, f" {r:,.0f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(common.PLOTS / "validation.png", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "ours-e2e", "ours-engine"])
    parser.add_argument("file", nargs="?", type=Path)
    parser.add_argument("--engine", choices=["rs", "python"], default="rs")
    parser.add_argument("--decoder", choices=["server", "pyyaml"], default="server")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--report-only", action="store_true", help="section 1 from build/bench/validation.json")
    args = parser.parse_args(argv)
    if args.report_only:
        raw = common.saved("validation")
        if raw is None:
            raise SystemExit(f"no {common.WORK / 'validation.json'}: run `python -m bench.validation` first")
        report(raw)
        return 0
    if args.mode == "ours-e2e":
        print(json.dumps(ours_e2e(args.file, args.engine, args.decoder)))
        return 0
    if args.mode == "ours-engine":
        print(json.dumps(ours_engine(args.file, args.repeat)))
        return 0

    built = subprocess.run([str(common.BENCH / "build-kubeconform.sh")], capture_output=True, text=True, check=True)
    binaries = dict(line.split(" ", 1) for line in built.stdout.strip().splitlines())
    kc_bin, engine_bin = Path(binaries["kubeconform"]), Path(binaries["kcengine"])
    kc_version = subprocess.run([str(kc_bin), "-v"], capture_output=True, text=True, check=False).stdout.strip()
    result: dict[str, Any] = {
        "load_start": common.load(),
        "kubeconform": {"binary": str(kc_bin), "version": kc_version},
    }
    print("validation: building the corpus", flush=True)
    result["corpus"] = build_corpus(args.objects)
    kubeconform_schemas()
    objects_file, broken_file = CORPUS / "objects.yaml", CORPUS / "broken.yaml"
    n = result["corpus"]["objects"]
    print(f"validation: {n} objects in {result['corpus']['renders']} renders", flush=True)

    # 1. Equal work: both sides on the seeded broken set.
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
    result["equal_work"] = {
        "seeded": result["corpus"]["broken_objects"],
        "kubeconform": {"summary": kc["summary"], "errors": len(kc_errors)},
        "ours": {"invalid": ours["invalid"], "findings": ours["findings"], "errors": len(ours_errors)},
        "ours_python_engine": {"invalid": ours_py["invalid"], "findings": ours_py["findings"]},
        "same_errors": kc_errors == ours_errors,
        "only_kubeconform": sorted(kc_errors - ours_errors)[:10],
        "only_ours": sorted(ours_errors - kc_errors)[:10],
        "engines_agree": ours["errors"] == ours_py["errors"],
    }
    print(f"validation: equal work {json.dumps(result['equal_work'])[:400]}", flush=True)

    # 2. Throughput, end to end (one process each: read + parse + compile + validate), on the clean corpus.
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
        for _ in range(args.repeat):
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
    result["end_to_end"] = runs

    # 3. Validation alone, one core: decoding taken out on both sides, validators/schemas compiled first.
    print("validation: engines alone", flush=True)
    _, proc = run_timed(engine_cmd(engine_bin, objects_file, args.repeat), True)
    if proc.returncode != 0:
        raise SystemExit(f"kcengine failed: {proc.stderr[-2000:]}")
    kc_engine = json.loads(proc.stdout)
    _, proc = run_timed([*ours_cmd(objects_file, "rs")[:3], "ours-engine", str(objects_file), "--repeat",
                         str(args.repeat)], True)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"ours-engine failed: {proc.stderr[-2000:]}")
    ours_engine_result = json.loads(proc.stdout)
    result["engines"] = {"kubeconform": kc_engine, "ours": ours_engine_result, "load_1m": common.load()["1m"]}
    print(
        f"validation: kubeconform engine {n / kc_engine['validate']:.0f} objects/s, "
        f"ours {n / common.median(ours_engine_result['samples']):.0f} objects/s",
        flush=True,
    )
    result["agreement"] = engine_agreement(objects_file, 5000)
    print(f"validation: engine agreement {result['agreement']}", flush=True)
    result["before"] = {"engine": "pure jsonschema", "objects": n, "validate_seconds": ours_py["seconds"]["validate"],
                        "parse_seconds": ours_py["seconds"]["parse"]}  # fmt: skip
    from dlcharts.toolchain import cache_root

    result["commands"] = {
        "kubeconform": " ".join(kubeconform_cmd(kc_bin, None))
        .replace(str(common.ROOT) + "/", "")
        .replace(str(cache_root()), "$DLCHARTS_CACHE")
        + " build/bench/corpus/objects.yaml",
        "ours": ".venv/bin/python -m bench.validation ours-e2e build/bench/corpus/objects.yaml",
    }
    result["load_end"] = common.load()
    common.save("validation", result)
    report(result)
    return 0


def report(raw: dict[str, Any]) -> None:
    blocks, targets = section(raw)
    model.update(SECTION, blocks, title=TITLE, by="`python -m bench.validation`", targets=targets)
    results.write()
    plot(raw)


if __name__ == "__main__":
    raise SystemExit(main())
