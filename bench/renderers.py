#!/usr/bin/env python3
"""`make bench-render`: the in-process renderer (dlcharts.render_server) beside the helm binary and helm-unittest,
in one run on this machine (issue 14). Parts, each can run alone (--parts):

  cold     every chart x ci scenario x Kubernetes version rendered cold (no render cache) through the server and
           through the helm binary, alternately, each as the Renderer does it (helm template, then the objects:
           JSON from the server, PyYAML for the binary's text); the two compared with dlcharts.render.difference
           (the identity count); the server's start-up timed apart.
  unittest helm-unittest (built from its Go module by `dlcharts cluster build helm-unittest`) rendering the same
           cases: a copy of each chart with one suite per scenario x Kubernetes version (its values file, release,
           namespace, API versions; one `notFailedTemplate` assert), one helm-unittest process per chart.
  tiers    wall time of the fast tier as the issue-7 target counts it (bench.suite_times.FAST; -n 2,
           --dlcharts-no-cache: a fresh render cache) with DLCHARTS_RENDERER=binary (before) and with the server
           (after); the charts' tests under Helm 3 the same two ways; the identity tests (tests/fast/identity).
  verdict  chart to verdict as a chart author's CI runs it, every chart x scenario x Kubernetes version: ours (one
           Python process: a cold render through the server, objects from its JSON, strict schema validation)
           vs `helm template ... | kubeconform -strict` per case (kubeconform built by bench/build-kubeconform.sh,
           schemas of the same version, CRDs first), both on the same cores, one after the other.

Writes build/bench/renderers.json (raw; a part run alone keeps the others' last results), section 10 of
bench/results.md (bench/data/10-renderers.json) and bench/plots/renderers.png. The last line is
`in-process/binary speedup: <R>x, identical: <n>/<n>` (R: median cold render, binary over server).

Usage: .venv/bin/python -m bench.renderers [--parts cold,unittest,tiers,verdict] [--report-only]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import common, model, results, suite_times, validation
from dlcharts import native, render_server, toolchain
from dlcharts.helm import Helm, find_helm
from dlcharts.render import difference, parse_manifest
from dlcharts.suite import KUBE_VERSIONS, Scenario, all_scenarios

PARTS = ("cold", "unittest", "tiers", "verdict")
SECTION = "10-renderers"
TITLE = "In-process rendering: server vs binary vs helm-unittest (issue 14)"
PYTEST = [str(common.ROOT / ".venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", "-n", "2"]
FAST = [*suite_times.FAST[2:], "--dlcharts-no-cache"]
HELM3 = ["tests/fast/charts", "--dlcharts-helm", "helm-v3.18.0", "--dlcharts-no-cache"]
# (name, pytest arguments, DLCHARTS_RENDERER); the server's own unit tests need it, so "before" runs without them
TIERS: list[tuple[str, list[str], str]] = [
    ("fast, binary (before)", [*FAST, "--ignore=tests/fast/render/test_render_server.py"], "binary"),
    ("fast, server (after)", FAST, "server"),
    ("render under Helm 3, binary (before)", HELM3, "binary"),
    ("render under Helm 3, server (after)", HELM3, "server"),
    ("identity (server vs binary, both helms)", ["tests/fast/identity"], "server"),
]
_SUMMARY = re.compile(r"^=*\s*(.*\d+ (?:passed|failed|error|errors).*?)\s*=*$", re.MULTILINE)
_COMPARED = re.compile(r"in-process renderer vs helm binary: (\d+)/(\d+) renders identical")


def cases() -> list[tuple[Scenario, str]]:
    return [(s, v) for s in all_scenarios(common.ROOT / "charts") for v in KUBE_VERSIONS]


def helm4() -> Helm:
    return find_helm(toolchain.HELM_MATRIX[0])


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


# ----- cold renders and identity ---------------------------------------------------------------------------


def measure_cold() -> dict[str, Any]:
    helm = helm4()
    start_up, server = _timed(lambda: render_server.RenderServer(native.locate(["helm4-render"], False)
                                                                  ["helm4-render"], helm))  # fmt: skip
    rows: dict[str, dict[str, list[float]]] = {}
    identical, compared, from_json, by_pyyaml, problems = 0, 0, 0, 0, []
    for scenario, version in cases():
        request = scenario.request(version)
        args = request.helm_args()

        def by_server(args: list[str] = args, ns: str = request.namespace) -> Any:
            reply = server.template(args)
            assert reply is not None, f"the server does not take {args}"
            if reply.status == 0:
                parse_manifest(reply.stdout, ns, reply.objects, reply.fallback)
            return reply

        def by_binary(args: list[str] = args, ns: str = request.namespace) -> Any:
            proc = helm.run(args, check=False)
            if proc.returncode == 0:
                parse_manifest(proc.stdout, ns)
            return proc

        server_s, reply = _timed(by_server)
        binary_s, proc = _timed(by_binary)
        row = rows.setdefault(scenario.id, {"server": [], "binary": []})
        row["server"].append(server_s)
        row["binary"].append(binary_s)
        compared += 1
        problem = difference(reply, proc)
        if problem:
            problems.append(f"{scenario.id} on {version}: {problem[:300]}")
        else:
            identical += 1
        pieces = [c for c in re.split(r"^---[ \t]*$", reply.stdout, flags=re.MULTILINE) if c.strip()]
        by_pyyaml += len(reply.fallback)
        from_json += len(pieces) - len(reply.fallback)
    server.close()
    table = [
        {"scenario": sid, "server": common.median(r["server"]), "binary": common.median(r["binary"])}
        for sid, r in rows.items()
    ]
    for r in table:
        print(f"cold: {r['scenario']}: server {r['server'] * 1e3:.1f} ms, binary {r['binary'] * 1e3:.1f} ms")
    return {
        "rows": table, "server_start": start_up, "identical": identical, "compared": compared,
        "problems": problems, "from_json": from_json, "by_pyyaml": by_pyyaml, "helm": helm.version,
        "kube_versions": list(KUBE_VERSIONS), "load": common.load(),
    }  # fmt: skip


# ----- helm-unittest -----------------------------------------------------------------------------------------


def suite_text(scenario: Scenario, version: str) -> str:
    major, minor, _ = version.split(".")
    lines = [f"suite: {scenario.id.replace('/', ' ')} on {version}"]
    if scenario.values_file:
        lines += ["values:", f"  - ../ci/{scenario.values_file.name}"]
    request = scenario.request(version)
    lines += ["release:", f"  name: {request.release}", f"  namespace: {request.namespace}"]
    lines += ["capabilities:", f'  majorVersion: "{major}"', f'  minorVersion: "{minor}"']
    if request.api_versions:
        lines += ["  apiVersions:", *[f"    - {a}" for a in request.api_versions]]
    return "\n".join([*lines, "tests:", "  - it: renders", "    asserts:", "      - notFailedTemplate: {}", ""])


def measure_unittest() -> dict[str, Any]:
    build = common.build("helm-unittest")
    if build.returncode != 0:
        return {"error": f"helm-unittest did not build: {build.stderr.strip()[-600:]}"}
    binary = build.stdout.split()[-1]
    by_chart: dict[Path, list[tuple[Scenario, str]]] = {}
    for scenario, version in cases():
        by_chart.setdefault(scenario.chart, []).append((scenario, version))
    rows = []
    with tempfile.TemporaryDirectory(prefix="dlcharts-bench-unittest-") as tmp:
        for chart, chart_cases in by_chart.items():
            copy = Path(tmp) / chart.name
            shutil.copytree(chart, copy, symlinks=False)  # dl-common vendored as a link: helm-unittest gets a copy
            (copy / "tests").mkdir(exist_ok=True)
            for index, (scenario, version) in enumerate(chart_cases):
                (copy / "tests" / f"{index:03d}_test.yaml").write_text(suite_text(scenario, version))
            seconds, proc = _timed(
                lambda copy=copy: subprocess.run([binary, str(copy)], capture_output=True, text=True, check=False)
            )
            passed = re.search(r"Tests:\s+(.*)", proc.stdout)
            rows.append({"chart": chart.name, "renders": len(chart_cases), "seconds": seconds,
                         "per_render": seconds / len(chart_cases), "exit": proc.returncode,
                         "tests": passed.group(1) if passed else proc.stdout[-300:]})  # fmt: skip
            print(f"unittest: {chart.name}: {len(chart_cases)} renders in {seconds:.2f} s ({rows[-1]['tests']})")
    return {"rows": rows, "version": os.environ.get("HELM_UNITTEST_VERSION") or _unittest_version()}


def _unittest_version() -> str:
    env = (common.ROOT / "src" / "dlcharts" / "versions.env").read_text()
    found = re.search(r"^HELM_UNITTEST_VERSION=(\S+)", env, re.MULTILINE)
    return found.group(1) if found else "?"


# ----- test tiers --------------------------------------------------------------------------------------------


def measure_tiers() -> dict[str, Any]:
    rows = []
    for name, args, mode in TIERS:
        env = {**os.environ, render_server.RENDERER_ENV: mode}
        load = common.load()
        seconds, proc = _timed(
            lambda args=args, env=env: subprocess.run(
                [*PYTEST, *args], cwd=common.ROOT, env=env, capture_output=True, text=True, check=False
            )
        )
        found = _SUMMARY.findall(proc.stdout)
        compared = _COMPARED.search(proc.stdout)
        row = {"tier": name, "command": f"{render_server.RENDERER_ENV}={mode} " + " ".join(["pytest", *PYTEST[1:],
               *args]), "seconds": seconds, "exit": proc.returncode,
               "summary": found[-1] if found else proc.stdout[-400:], "load_before": load,
               "compared": compared.groups() if compared else None}  # fmt: skip
        rows.append(row)
        print(f"tiers: {name}: {seconds:.1f} s, {row['summary']}" + (f", compared {compared.group(0)}" if compared
                                                                        else ""), flush=True)  # fmt: skip
    return {"rows": rows}


# ----- chart to verdict --------------------------------------------------------------------------------------


def ours_verdict() -> dict[str, Any]:
    """One process, as `pytest` or `dlcharts check` runs it: every case rendered cold and validated."""
    from dlcharts.render import Renderer
    from dlcharts.schemas import validate_objects

    helm = helm4()
    objects, invalid = 0, set()
    for scenario, version in cases():
        rendered = Renderer(helm).render(scenario.request(version))
        objects += len(rendered)
        invalid |= {(scenario.id, version, f.object) for f in validate_objects(rendered, version)}
    return {"objects": objects, "invalid": len(invalid)}


def measure_verdict() -> dict[str, Any]:
    """Ours (server, then binary) against kubeconform two ways: a pipe per case, as a CI loop over scenarios
    writes it, and one kubeconform per Kubernetes version reading every case's render (its schemas loaded once)."""
    build = subprocess.run(["bash", "bench/build-kubeconform.sh"], cwd=common.ROOT, capture_output=True, text=True)
    if build.returncode != 0:
        return {"error": f"kubeconform did not build: {build.stderr.strip()[-600:]}"}
    kubeconform = next(line.split()[1] for line in build.stdout.splitlines() if line.startswith("kubeconform "))
    helm = helm4()
    per_case, per_version = ["set -uo pipefail"], ["set -uo pipefail"]  # a refused case shows as a missing summary
    for version in KUBE_VERSIONS:
        validation.kubeconform_schemas(version)
        kc = [kubeconform, "-strict", "-summary", "-output", "json", "-kubernetes-version", version]
        for location in validation.schema_locations(version):
            kc += ["-schema-location", location]
        renders = [" ".join(map(_quote, [str(helm.path), *s.request(version).helm_args()])) for s, v in cases()
                   if v == version]  # fmt: skip
        per_case += [f'{r} | {" ".join(map(_quote, kc))} >>"$OUT"' for r in renders]
        per_version.append("{ " + "; ".join(renders) + "; } | " + " ".join(map(_quote, kc)) + ' >>"$OUT"')
    result: dict[str, Any] = {"cases": len(cases()), "cores": len(os.sched_getaffinity(0))}
    for name, script in (("kubeconform per case", per_case), ("kubeconform per version", per_version)):
        with tempfile.TemporaryDirectory(prefix="dlcharts-bench-verdict-") as tmp:
            out, run = Path(tmp) / "kubeconform.jsonl", Path(tmp) / "run.sh"
            run.write_text("\n".join(script) + "\n")
            seconds, proc = _timed(
                lambda run=run, out=out: subprocess.run(
                    ["bash", str(run)], env={**os.environ, "OUT": str(out)}, capture_output=True, text=True, check=False
                )
            )
            found = re.findall(r'"valid": (\d+),\s*"invalid": (\d+),\s*"errors": (\d+),\s*"skipped": (\d+)',
                               out.read_text())  # fmt: skip
        totals = dict(zip(("valid", "invalid", "errors", "skipped"), [sum(int(f[i]) for f in found) for i in range(4)],
                          strict=True))  # fmt: skip
        result[name] = {"seconds": seconds, "verdict": totals, "exit": proc.returncode, "load": common.load()}
        print(f"verdict: helm template | {name}: {seconds:.1f} s, {totals}", flush=True)
    for mode in ("server", "binary"):
        env = {**os.environ, render_server.RENDERER_ENV: mode}
        seconds, proc = _timed(
            lambda env=env: subprocess.run(
                [sys.executable, "-m", "bench.renderers", "ours-verdict"],
                cwd=common.ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
        )
        verdict = proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 else proc.stderr[-600:]
        result[f"ours, {mode}"] = {"seconds": seconds, "verdict": verdict, "exit": proc.returncode,
                                   "load": common.load()}  # fmt: skip
        print(f"verdict: ours, {mode}: {seconds:.1f} s, {verdict}", flush=True)
    return result


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


# ----- report ------------------------------------------------------------------------------------------------


def speedup(data: dict[str, Any]) -> float:
    cold = data["cold"]["rows"]
    return common.median([r["binary"] for r in cold]) / common.median([r["server"] for r in cold])


CASE_COLUMNS = [model.column("scenario"), model.column("server ms", "{:.1f}"), model.column("binary ms", "{:.1f}")]
UNITTEST_COLUMNS = [
    model.column("chart"),
    model.column("renders", "{:,}"),
    model.column("wall s", "{:.2f}"),
    model.column("per render ms", "{:.1f}"),
    model.column("tests"),
]
TIER_COLUMNS = [
    model.column("tier"),
    model.column("wall s", "{:.1f}"),
    model.column("result"),
    model.column("load 1m before", "{:.2f}"),
]
VERDICT_COLUMNS = [
    model.column("chart to verdict"),
    model.column("wall s", "{:.1f}"),
    model.column("verdict"),
    model.column("vs ours (server)", "{:.2f}x"),
]


def cold_blocks(cold: dict[str, Any], unit: dict[str, Any] | None) -> list[model.Block]:
    """The cold renders: the median per renderer (helm-unittest's beside them), their facts, every case, and
    where the server's renders and the binary's differ."""
    unit_ms = (
        common.median([r["per_render"] for r in unit["rows"]]) * 1e3
        if unit and "rows" in unit else f"n/a ({(unit or {}).get('error', 'not measured')})"
    )  # fmt: skip
    blocks = [
        model.table(
            "cold",
            [model.column("renderer"), model.column("median cold render", "{:.1f} ms")],
            [
                [
                    "in-process server (helm4-render; JSON objects)",
                    common.median([r["server"] for r in cold["rows"]]) * 1e3,
                ],
                [
                    "helm binary (one process per render; PyYAML)",
                    common.median([r["binary"] for r in cold["rows"]]) * 1e3,
                ],
                [
                    f"helm-unittest {(unit or {}).get('version', '')} (one process per chart, wall / renders)",
                    unit_ms,
                ],
            ],
            "**Cold render per scenario** (median over the scenarios of each scenario's median over the "
            "versions; helm template plus the objects, as the Renderer does it):",
        ),
        model.facts(
            "cold-facts",
            "cold renders",
            [
                ["server start-up (once per process), ms", cold["server_start"] * 1e3, "{:.0f}"],
                [
                    "byte-identical to the binary (Secret data aside) and decoded alike",
                    [cold["identical"], cold["compared"]],
                    "{}/{}",
                ],
                ["objects from the server's JSON", cold["from_json"], "{:,}"],
                ["objects left to PyYAML", cold["by_pyyaml"], "{:,}"],
            ],
        ),
        model.table(
            "cases", CASE_COLUMNS, [[r["scenario"], r["server"] * 1e3, r["binary"] * 1e3] for r in cold["rows"]]
        ),
    ]
    if cold["problems"]:
        blocks.append(model.table("differences", [model.column("difference")], [[p] for p in cold["problems"]]))
    return blocks


def unittest_table(unit: dict[str, Any]) -> model.Block:
    """helm-unittest per chart."""
    rows = [[r["chart"], r["renders"], r["seconds"], r["per_render"] * 1e3, r["tests"]] for r in unit["rows"]]
    return model.table("unittest", UNITTEST_COLUMNS, rows, "helm-unittest per chart:")


def tier_blocks(tiers: dict[str, Any]) -> list[model.Block]:
    """The test tiers' wall times, and their commands."""
    rows = []
    for r in tiers["rows"]:
        extra = f"; {r['compared'][0]}/{r['compared'][1]} renders identical" if r.get("compared") else ""
        rows.append([r["tier"], r["seconds"], r["summary"] + extra, r["load_before"]["1m"]])
    return [
        model.table(
            "tiers",
            TIER_COLUMNS,
            rows,
            "**Test tiers** (pytest -n 2 on this machine's 2 cores, `--dlcharts-no-cache`):",
        ),
        model.code("tier-commands", [r["command"] for r in tiers["rows"]], "Commands:"),
    ]


def verdict_table(verdict: dict[str, Any]) -> model.Block:
    """Chart to verdict, every way, beside ours (the render server's)."""
    ours = verdict["ours, server"]["seconds"]
    rows = [
        [name, row["seconds"], str(row["verdict"]), row["seconds"] / ours]
        for name, row in verdict.items()
        if isinstance(row, dict)
    ]
    return model.table(
        "verdict",
        VERDICT_COLUMNS,
        rows,
        "**Chart to verdict** (every chart x ci scenario x Kubernetes version, cold, no render cache; one row "
        "after the other). Ours: one Python process (start-up, imports and validator compilation included) "
        "rendering each case and validating it with the strict schemas of its version. kubeconform: "
        "`helm template … | kubeconform -strict` with the same schemas (CRDs first).",
    )


def section(data: dict[str, Any]) -> list[model.Block]:
    """Section 10's blocks from build/bench/renderers.json."""
    run = [
        ["measured", data.get("date", "?")],
        ["load average before → after", " → ".join(common.load_text(data[k]) for k in ("load_start", "load_end"))],
    ]
    blocks: list[model.Block] = []
    cold, unit = data.get("cold"), data.get("unittest")
    if cold:
        run += [
            ["helm", cold["helm"]],
            ["cold renders (every chart x ci scenario x Kubernetes version)", cold["compared"], "{:,}"],
            ["Kubernetes versions", ", ".join(cold["kube_versions"])],
        ]
        blocks += cold_blocks(cold, unit)
    if unit and "rows" in unit:
        blocks.append(unittest_table(unit))
    tiers = data.get("tiers")
    if tiers:
        blocks += tier_blocks(tiers)
    verdict = data.get("verdict")
    if verdict and "error" not in verdict:
        run += [["chart-to-verdict cases", verdict["cases"], "{:,}"], ["cores", verdict["cores"], "{}"]]
        blocks.append(verdict_table(verdict))
    elif verdict:
        blocks.append(model.facts("verdict", "chart to verdict", [["not measured", verdict["error"]]]))
    if cold:
        blocks.append(model.image("plot", "plots/renderers.png", "in-process renderer"))
    return [model.facts("run", "`python -m bench.renderers` (`make bench-render`)", run), *blocks]


def report(data: dict[str, Any]) -> None:
    model.update(SECTION, section(data), title=TITLE, by="`python -m bench.renderers`")
    results.write()
    if data.get("cold"):
        plot(data)


def plot(data: dict[str, Any]) -> None:
    plt = common.pyplot()
    if plt is None:
        return
    rows = data["cold"]["rows"]
    fig, ax = plt.subplots(figsize=(10, 8))
    y = range(len(rows))
    ax.barh([i + 0.2 for i in y], [r["binary"] * 1e3 for r in rows], height=0.4, label="helm binary")
    ax.barh([i - 0.2 for i in y], [r["server"] * 1e3 for r in rows], height=0.4, label="in-process server")
    ax.set_yticks(list(y), [r["scenario"] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("cold render, median over Kubernetes versions (ms)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(common.PLOTS / "renderers.png", dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", nargs="?", choices=["ours-verdict"])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "ours-verdict":
        print(ours_verdict())
        return 0
    data = common.saved("renderers") or {}
    if not args.report_only:
        data["load_start"], data["date"] = common.load(), common.now()
        for part in args.parts.split(","):
            data[part] = globals()[f"measure_{part}"]()
            data["load_end"] = common.load()
            common.save("renderers", data)
    report(data)
    if data.get("cold"):
        cold = data["cold"]
        print(f"in-process/binary speedup: {speedup(data):.1f}x, identical: {cold['identical']}/{cold['compared']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
