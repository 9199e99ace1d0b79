#!/usr/bin/env python3
"""`make bench-render`: the in-process renderer (dlcharts.render_server) beside the helm binary and helm-unittest,
in one run on this machine (issue 14). Parts, each can run alone (--parts):

  cold     every chart x ci scenario x Kubernetes version rendered cold (no render cache) through the server and
           through the helm binary, alternately, each as the Renderer does it (helm template, then the objects:
           JSON from the server, PyYAML for the binary's text); the two compared with dlcharts.render.difference
           (the identity count); the server's start-up timed apart.
  unittest helm-unittest (built from its Go module by ci/build-control-plane.sh) rendering the same cases: a copy
           of each chart with one suite per scenario x Kubernetes version (its values file, release, namespace,
           API versions; one `notFailedTemplate` assert), one helm-unittest process per chart.
  tiers    wall time of unit + render + properties (-n 2, --dlcharts-no-cache: a fresh render cache, as the
           issue-7 target measured it) with DLCHARTS_RENDERER=binary (before) and with the server (after); the
           render tier under Helm 3 the same two ways; the identity tier (tests/identity) alone.
  verdict  chart to verdict as a chart author's CI runs it, every chart x scenario x Kubernetes version: ours (one
           Python process: a cold render through the server, objects from its JSON, strict schema validation)
           vs `helm template ... | kubeconform -strict` per case (kubeconform built by bench/build-kubeconform.sh,
           schemas of the same version, CRDs first), both on the same cores, one after the other.

Writes build/bench/renderers.json and section 10 of bench/results.md (and bench/renderers.png). The last line is
`in-process/binary speedup: <R>x, identical: <n>/<n>` (R: median cold render, binary over server).

Usage: .venv/bin/python bench/renderers.py [--parts cold,unittest,tiers,verdict] [--report-only]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import validation  # noqa: E402

from dlcharts import native, render_server, toolchain  # noqa: E402
from dlcharts.helm import Helm, find_helm  # noqa: E402
from dlcharts.render import difference, parse_manifest  # noqa: E402
from dlcharts.suite import KUBE_VERSIONS, Scenario, all_scenarios  # noqa: E402

PARTS = ("cold", "unittest", "tiers", "verdict")
BEGIN, END = "<!-- renderers: begin -->", "<!-- renderers: end -->"
HEADING = "## 10. In-process rendering: server vs binary vs helm-unittest (issue 14)"
PYTEST = [str(common.ROOT / ".venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", "-n", "2"]
FAST = ["tests/unit", "tests/render", "tests/properties", "--dlcharts-no-cache"]
HELM3 = ["tests/render", "--dlcharts-helm", "helm-v3.18.0", "--dlcharts-no-cache"]
# (name, pytest arguments, DLCHARTS_RENDERER); the server's own unit tests need it, so "before" runs without them
TIERS: list[tuple[str, list[str], str]] = [
    ("fast, binary (before)", [*FAST, "--ignore=tests/unit/test_render_server.py"], "binary"),
    ("fast, server (after)", FAST, "server"),
    ("render under Helm 3, binary (before)", HELM3, "binary"),
    ("render under Helm 3, server (after)", HELM3, "server"),
    ("identity (server vs binary, both helms)", ["tests/identity"], "server"),
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
    build = subprocess.run(
        ["bash", "ci/build-control-plane.sh", "helm-unittest"], cwd=common.ROOT, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
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
                [sys.executable, __file__, "ours-verdict"], env=env, capture_output=True, text=True, check=False
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


def section(data: dict[str, Any]) -> list[str]:
    lines = [BEGIN, "", f"Generated by `bench/renderers.py` (`make bench-render`), {data.get('date', '?')}; "
             f"load average before → after: {common.load_text(data['load_start'])} → "
             f"{common.load_text(data['load_end'])}.", ""]  # fmt: skip
    cold, unit = data.get("cold"), data.get("unittest")
    if cold:
        server = common.median([r["server"] for r in cold["rows"]]) * 1e3
        binary = common.median([r["binary"] for r in cold["rows"]]) * 1e3
        unit_ms = (
            f"{common.median([r['per_render'] for r in unit['rows']]) * 1e3:.1f} ms"
            if unit and "rows" in unit else f"n/a ({(unit or {}).get('error', 'not measured')})"
        )  # fmt: skip
        lines += [
            f"**Cold render per scenario** (helm {cold['helm']}; {cold['compared']} renders: every chart x ci "
            f"scenario x Kubernetes {', '.join(cold['kube_versions'])}; median over the scenarios of each "
            "scenario's median over the versions; helm template plus the objects, as the Renderer does it):",
            "",
            "| renderer | median cold render |",
            "|---|---:|",
            f"| in-process server (helm4-render; JSON objects) | {server:.1f} ms |",
            f"| helm binary (one process per render; PyYAML) | {binary:.1f} ms |",
            f"| helm-unittest {unit.get('version', '') if unit else ''} (one process per chart, wall / renders) "
            f"| {unit_ms} |",
            "",
            f"Server start-up (once per process): {cold['server_start'] * 1e3:.0f} ms. Identity: "
            f"{cold['identical']}/{cold['compared']} renders byte-identical to the binary (Secret data aside) and "
            f"decoded alike. Objects from the server's JSON: {cold['from_json']}; left to PyYAML: {cold['by_pyyaml']}.",
            "",
            "| scenario | server ms | binary ms |",
            "|---|---:|---:|",
            *[f"| {r['scenario']} | {r['server'] * 1e3:.1f} | {r['binary'] * 1e3:.1f} |" for r in cold["rows"]],
            "",
        ]
        if cold["problems"]:
            lines += ["Differences:", "", *[f"- {p}" for p in cold["problems"]], ""]
    if unit and "rows" in unit:
        lines += ["helm-unittest per chart:", "", "| chart | renders | wall s | per render ms | tests |",
                  "|---|---:|---:|---:|---|",
                  *[f"| {r['chart']} | {r['renders']} | {r['seconds']:.2f} | {r['per_render'] * 1e3:.1f} | "
                    f"{r['tests']} |" for r in unit["rows"]], ""]  # fmt: skip
    tiers = data.get("tiers")
    if tiers:
        lines += ["**Test tiers** (pytest -n 2 on this machine's 2 cores, `--dlcharts-no-cache`):", "",
                  "| tier | wall s | result | load 1m before |", "|---|---:|---|---:|"]  # fmt: skip
        for r in tiers["rows"]:
            extra = f"; {r['compared'][0]}/{r['compared'][1]} renders identical" if r.get("compared") else ""
            lines.append(f"| {r['tier']} | {r['seconds']:.1f} | {r['summary']}{extra} | {r['load_before']['1m']:.2f} |")
        lines += ["", "Commands: " + "; ".join(f"`{r['command']}`" for r in tiers["rows"]), ""]
    verdict = data.get("verdict")
    if verdict and "error" not in verdict:
        ours = verdict["ours, server"]["seconds"]
        lines += [
            f"**Chart to verdict** ({verdict['cases']} cases: every chart x ci scenario x Kubernetes version, cold, no "
            f"render cache; {verdict['cores']} cores, one row after the other). Ours: one Python process (start-up, "
            "imports and validator compilation included) rendering each case and validating it with the strict "
            "schemas of its version. kubeconform: `helm template … | kubeconform -strict` with the same schemas "
            "(CRDs first).",
            "",
            "| chart to verdict | wall s | verdict | vs ours (server) |",
            "|---|---:|---|---:|",
            *[
                f"| {name} | {row['seconds']:.1f} | {row['verdict']} | {row['seconds'] / ours:.2f}x |"
                for name, row in verdict.items()
                if isinstance(row, dict)
            ],  # fmt: skip
            "",
        ]
    elif verdict:
        lines += [f"Chart to verdict: not measured ({verdict['error']})", ""]
    if cold:
        lines += ["![in-process renderer](renderers.png)", ""]
    return [*lines, END]


def plot(data: dict[str, Any]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
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
    fig.savefig(common.BENCH / "renderers.png", dpi=90)


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
        data["load_start"], data["date"] = common.load(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        for part in args.parts.split(","):
            data[part] = globals()[f"measure_{part}"]()
            data["load_end"] = common.load()
            common.save("renderers", data)
    common.write_between(BEGIN, END, section(data), HEADING)
    if data.get("cold"):
        plot(data)
        cold = data["cold"]
        print(f"in-process/binary speedup: {speedup(data):.1f}x, identical: {cold['identical']}/{cold['compared']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
