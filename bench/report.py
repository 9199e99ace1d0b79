#!/usr/bin/env python3
"""Turn build/bench/*.json (written by the parts) into bench/results.md and bench/*.png.

Usage: .venv/bin/python bench/report.py   (bench/run.py calls it at the end)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

RESULTS = common.BENCH / "results.md"
MiB = 1024 * 1024

SOURCES = """\
Where the per-replica numbers come from (read in the projects' source; we copy no code):

- **Kubeflow training-operator v1** (TFJob, PyTorchJob; tag v1.9.0, commit 6f74c7f6):
  `pkg/controller.v1/common/job.go` reconciles, for every replica type, `ReconcilePods` and
  `ReconcileServices`; `pkg/controller.v1/common/service.go` `ReconcileServices` creates one Service per
  replica index (`CreateNewService`: `ClusterIP: None`, named `<job>-<type>-<index>`, selecting that one
  pod). Neither the TFJob nor the PyTorchJob reconciler overrides it. **MXJob** is the same common
  controller in v1.8.0 (commit f8687ca7), its last release with MXJob (removed in v1.9).
  A TFJob/PyTorchJob/MXJob therefore makes 1 custom object + per replica 1 Pod + 1 headless Service.
- **mpi-operator v2** (MPIJob v2beta1; tag v0.8.0, commit 1bfc6b3a): `pkg/controller/mpi_job_controller.go`
  creates one headless Service for the job (`newJobService`), one ConfigMap (hostfile + discover_hosts.sh,
  `getOrCreateConfigMap`), one ssh Secret (`getOrCreateSSHAuthSecret`), one Pod per worker
  (`getOrCreateWorker`, plain pods) and one launcher Job (`newLauncherJob`): constant non-pod objects, like ours.
- **inovex (2017/2018)**: the talk's examples (github.com/krallistic/presentations, `data2day-17/examples/
  between-graph-asyncronous/rs.yaml`, commit 9adfb849) write, per worker and per parameter server, one
  workload object (a ReplicaSet; the 2018 Helm templates loop the same pair with a Job per replica) and one
  ClusterIP Service selecting it. Modelled here as per replica: 1 Job + 1 Service + 1 Pod.
- Every Service with a selector gets, from kube-controller-manager, one Endpoints object and
  ceil(endpoints / 100) EndpointSlices (`--max-endpoints-per-slice` default 100; at least one per Service).
  Per-replica Services therefore add 2 more objects per replica; our one headless Service adds
  1 Endpoints + ceil(pods / 100) slices. Section 4 counts what the embedded cluster really created."""


def _f(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def _rate(objects: int, seconds: float) -> float:
    return objects / seconds if seconds > 0 else float("inf")


# ----- part 1 -----------------------------------------------------------------------------------------


def validation_section(v: dict[str, Any] | None, targets: list[tuple[str, str, str]]) -> list[str]:
    out = ["## 1. Validation throughput: ours vs kubeconform", ""]
    if not v:
        return [*out, "Not run (see build/bench/validation.log).", ""]
    c, n = v["corpus"], v["corpus"]["objects"]
    out += [
        f"**Corpus**: {n:,} objects ({c['bytes'] / MiB:.1f} MiB of YAML) from {c['renders']:,} renders with the "
        f"pinned helm: every chart x ci scenario, then each training-chart scenario again with `--set worker=N`, "
        f"N cycling through {', '.join(map(str, c['worker_cycle']))} ({c['worker_rounds']} rounds), each render "
        f"with its own release name; Kubernetes {common.KUBE_VERSION}, strict. Written as one multi-document "
        "stream to `build/bench/corpus/objects.yaml`. "
        f"{c['refused_count']} renders that a scenario refuses (e.g. elastic scenarios outside their min..max) "
        f"were skipped. {c['helm_renders_run']} helm processes ran this time (the rest came from the render cache); "
        f"building the corpus took {c['render_seconds']:.0f} s.",
        "",
        "**Schemas, one source for both**: the strict v1.35 set shipped in `kubernetes-validate` (what our "
        "validator reads), copied for kubeconform to `build/bench/kubeconform-schemas/v1.35.0/` as "
        "`{{ .ResourceKind }}{{ .KindSuffix }}.json` (the package already names files that way) with `$id` "
        "dropped and `/api/_definitions.json` references made relative, so kubeconform resolves them offline. "
        "CRD kinds (Kueue, JobSet, PodGroup, ServiceMonitor) are validated by **both** sides from "
        "`src/dlcharts/crds/`; kubeconform gets that folder as its first `-schema-location` "
        "(`{{ .Group }}_{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json`), because its KindSuffix maps "
        "`scheduling.x-k8s.io/v1alpha1 PodGroup` onto Kubernetes' own `scheduling.k8s.io` PodGroup file otherwise. "
        "Neither side asserts `format`.",
        "",
    ]
    eq = v["equal_work"]
    kc_sum = eq["kubeconform"]["summary"]
    out += [
        f"**Equal work** (`build/bench/corpus/broken.yaml`: the same objects, {eq['seeded']} of them, 1%, "
        "given one typo'd field: `imagePullPolicyy` in the first container, or `metadata.lables`):",
        "",
        "| | objects invalid | errors | same (object, field) pairs as the other side |",
        "|---|---:|---:|---|",
        f"| kubeconform `-strict` | {kc_sum['invalid']} (valid {kc_sum['valid']}, errors {kc_sum['errors']}, "
        f"skipped {kc_sum['skipped']}) | {eq['kubeconform']['errors']} | {'yes' if eq['same_errors'] else 'NO'} |",
        f"| ours (jsonschema-rs, then jsonschema for the failures) | {eq['ours']['invalid']} | "
        f"{eq['ours']['findings']} | {'yes' if eq['same_errors'] else 'NO'} |",
        f"| ours with pure jsonschema (the engine before) | {eq['ours_python_engine']['invalid']} | "
        f"{eq['ours_python_engine']['findings']} | {'identical findings' if eq['engines_agree'] else 'DIFFERENT'} |",
        "",
    ]
    if not eq["same_errors"]:
        out += [f"Only kubeconform: {eq['only_kubeconform']}; only ours: {eq['only_ours']}.", ""]
    ag = v.get("agreement")
    if ag:
        out += [
            f"**Engine agreement**: on {ag['mutated']:,} corpus objects mutated at random (values replaced by other "
            "types, odd strings, huge numbers or NaN; fields deleted; unknown fields added), jsonschema-rs and "
            f"jsonschema gave the same verdict {ag['agree']:,} times; jsonschema-rs accepted what jsonschema "
            f"rejects in **{ag['rs_accepts_jsonschema_rejects']}** cases (that would lose findings) and rejected "
            f"what jsonschema accepts in {ag['rs_rejects_jsonschema_accepts']} (harmless: those objects go through "
            "jsonschema, whose verdict stands).",
            "",
        ]

    e2e = v["end_to_end"]
    kc1 = e2e.get("kubeconform -n 1, 1 core")
    out += [
        "**End to end**, one process per run (read the file, decode YAML, compile schemas, validate every object), "
        'clean corpus, median of 3. "1 core" runs are pinned with `taskset -c 0`; ours is one Python process '
        "either way.",
        "",
        "| run | wall s | objects/s | vs kubeconform -n 1, 1 core | load 1m |",
        "|---|---:|---:|---:|---|",
    ]
    for label, row in e2e.items():
        med = common.median(row["samples"])
        ratio = _rate(n, med) / _rate(n, common.median(kc1["samples"])) if kc1 else None
        out.append(
            f"| {label} | {med:.2f} | {_rate(n, med):,.0f} | {_f(ratio, 2)}x | "
            f"{', '.join(f'{x:.2f}' for x in row['load_1m'])} |"
        )
    ours1 = e2e.get("ours, 1 core")
    if ours1 and ours1["breakdown"]:
        b = ours1["breakdown"][len(ours1["breakdown"]) // 2]
        out += [
            "",
            f"Where our end-to-end time goes (one of those runs): imports and starting the render server "
            f"{b['import']:.2f} s, YAML decoding {b['parse']:.2f} s (the render server's decoder, the harness's own "
            f"path: Go, PyYAML's YAML 1.1 types, sent as JSON; {b.get('decoded_by_pyyaml', '?')} pieces left to "
            f"PyYAML), validation including compiling every validator and the API server's rules "
            f"{b['validate']:.2f} s. The `PyYAML decoding` row decodes every piece with PyYAML's C loader instead, "
            "as a harness without its render server does.",
        ]
    eng = v.get("engines")
    if eng:
        kc_v = eng["kubeconform"]["validate"]
        ours_v = common.median(eng["ours"]["samples"])
        kc_dec = common.median(eng["kubeconform"]["decode"])
        out += [
            "",
            "**Validation alone**, one core, objects already decoded, schemas compiled by a first pass. kubeconform: "
            "`bench/kcengine` runs kubeconform's own `validator.ValidateResource` over every document and, "
            "separately, the `sigs.k8s.io/yaml.UnmarshalStrict` decode it starts with; validation = the difference. "
            "Ours: `dlcharts.schemas.validate_objects` on parsed objects.",
            "",
            "| engine | validate s | objects/s | ratio |",
            "|---|---:|---:|---:|",
            f"| kubeconform {v['kubeconform']['version']} (santhosh-tekuri/jsonschema, Go) | {kc_v:.3f} | "
            f"{_rate(n, kc_v):,.0f} | 1.00x |",
            f"| ours (jsonschema-rs `is_valid`; jsonschema `iter_errors` only for failures) | {ours_v:.3f} | "
            f"{_rate(n, ours_v):,.0f} | {kc_v / ours_v:.2f}x |",
        ]
        before = v.get("before")
        if before:
            out.append(
                "| ours before this change (pure `jsonschema`; on the broken set) | "
                f"{before['validate_seconds']:.3f} | "
                f"{_rate(before['objects'], before['validate_seconds']):,.0f} | "
                f"{kc_v / before['validate_seconds']:.2f}x |"
            )
        out += [
            "",
            f"kubeconform's decode of the same documents: {kc_dec:.2f} s in-process; its CLI spends the rest of its "
            "end-to-end time reading and splitting the stream and decoding.",
        ]
        targets.append(
            (
                "ours validation at least as fast as kubeconform (validation alone, 1 core)",
                f"{_rate(n, ours_v):,.0f} vs {_rate(n, kc_v):,.0f} objects/s ({kc_v / ours_v:.1f}x)",
                "yes" if ours_v <= kc_v else "no",
            )
        )
    if ours1 and kc1:
        o, k = common.median(ours1["samples"]), common.median(kc1["samples"])
        targets.append(
            (
                "end to end (read + decode + validate), 1 core",
                f"ours {_rate(n, o):,.0f} vs kubeconform -n 1 {_rate(n, k):,.0f} objects/s ({k / o:.2f}x)",
                "yes" if o <= k * 1.0 else "no",
            )
        )
    kc2, ours2 = e2e.get("kubeconform default -n 4, 2 cores"), e2e.get("ours, 2 cores")
    if kc2 and ours2:
        o, k = common.median(ours2["samples"]), common.median(kc2["samples"])
        targets.append(
            (
                "end to end, both cores (kubeconform's default -n 4)",
                f"ours {_rate(n, o):,.0f} vs kubeconform {_rate(n, k):,.0f} objects/s ({k / o:.2f}x)",
                "yes" if o <= k else "no",
            )
        )
    cmds = v.get("commands", {})
    out += [
        "",
        "Commands (one of each):",
        "",
        "```",
        cmds.get("kubeconform", ""),
        cmds.get("ours", ""),
        "```",
        "",
        "![validation throughput](validation.png)",
        "",
    ]
    return out


def validation_plot(v: dict[str, Any] | None) -> None:
    if not v:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    fig.savefig(common.BENCH / "validation.png", dpi=110)
    plt.close(fig)


# ----- part 2 -----------------------------------------------------------------------------------------


def render_section(rv: dict[str, Any] | None) -> list[str]:
    import render_validate

    out = ["## 2. Render + validate per scenario", ""]
    if not rv:
        return [*out, "Not run (see build/bench/render_validate.log).", ""]
    out += [
        f"Every chart x ci scenario, Kubernetes {rv['kube_version']}, helm {rv['helm']}, median of {rv['repeat']}. "
        f"*Cold*: `Renderer(helm).render()` with no cache ({rv.get('renderer', 'one helm process per render')}; "
        "what the first test run and CI pay). *Memory cache*: the same Renderer again (inputs hashed, parsed "
        "objects reused). "
        "*Disk cache*: a fresh Renderer whose cache folder holds the manifest (what a second `pytest` run pays: "
        "hash inputs, read, parse). Schema validation with validators already compiled, as in a test session.",
        "",
        *render_validate.table(rv),
        "",
        "**In-process rendering**: dlcharts renders with a server linked to the pinned helm (section 10 compares it "
        "with the binary and helm-unittest). The PyPI package `helm-python-sdk` (0.2.2, a ctypes binding to a "
        "bundled `libhelm_c.so`) was tried first (`bench/helm_sdk_probe.py`, in a separate virtualenv) and is not "
        "used: it bundles Helm v4.2.3, not the pinned v4.3.1; its `Chart.render()` takes no Kubernetes version or "
        "API versions, so our charts' `semverCompare` gates on `.Capabilities.KubeVersion` cannot be driven for "
        "1.29-1.35; and it returns a map of template path to text (NOTES.txt included, no hook separation or "
        "manifest ordering) instead of `helm template`'s stream, so its output is not byte-identical to the pinned "
        "binary's (the probe prints the diff).",
        "",
    ]
    return out


# ----- part 3 -----------------------------------------------------------------------------------------


def scale_section(s: dict[str, Any] | None, targets: list[tuple[str, str, str]]) -> list[str]:
    out = ["## 3. Scale of what one job creates", ""]
    if not s:
        return [*out, "Not run (see build/bench/scale.log).", ""]
    rows = s["rows"]
    out += [
        f"Each training chart with its default values and `--set worker=N`, Kubernetes {common.KUBE_VERSION}, "
        f"helm {s['helm']}; render time is one cold `helm template` process (*binary*) and one render by the "
        f"in-process renderer with the objects decoded (*server*), median of {s['repeat']} each. *Largest object*: "
        "the biggest rendered object as compact JSON, which must stay under the API server's 1.5 MiB. "
        "*Rendered*: what helm creates (the `helm test` hook pod apart). *Pods*, *Endpoints*, *EndpointSlices*: "
        "what the controllers then create, computed from the render. *Per-replica designs*: the same job "
        "(same roles, same replica counts) under the Kubeflow operator that runs it (TFJob / PyTorchJob / MXJob "
        "for the first three charts, MPIJob v2 for the MPI charts) and under the inovex pattern; sources below.",
        "",
        "| chart | workers | rendered objects (by kind) | pods | Endpoints + slices | **total** | rendered KiB "
        "| render ms: binary / server | largest object KiB | Kubeflow: total (Services) | inovex: total (Services) "
        "| load 1m |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        o = r["ours"]
        kinds = ", ".join(f"{v} {k}" for k, v in o["kinds"].items())
        kf, ino = r["kubeflow"], r["inovex"]
        out.append(
            f"| {r['chart']} | {r['workers']:,} | {o['rendered']} ({kinds}) | {o['pods']:,} | "
            f"{o['endpoints']} + {o['endpointslices']} | **{o['total']:,}** | {r['bytes'] / 1024:.1f} | "
            f"{common.median(r['render_samples']) * 1e3:.0f} / {_server_ms(r)} | {_largest(r)} | "
            f"{r['operator']}: {kf['total']:,} ({kf['services']:,}) | "
            f"{ino['total']:,} ({ino['services']:,}) | {r['load_1m']:.2f} |"
        )
    # targets: render time ratio and constant non-pod objects, per chart
    ratios, server_ratios, constant, worst = [], [], True, []
    charts = sorted({r["chart"] for r in rows}, key=list(common.TRAINING_CHARTS).index)
    lo, hi = min(s["workers"]), max(s["workers"])
    for chart in charts:
        mine = [r for r in rows if r["chart"] == chart]
        by_w = {r["workers"]: r for r in mine}
        if lo in by_w and hi in by_w:
            ratio = common.median(by_w[hi]["render_samples"]) / common.median(by_w[lo]["render_samples"])
            ratios.append((chart, ratio))
            if by_w[hi].get("server_samples") and by_w[lo].get("server_samples"):
                server = common.median(by_w[hi]["server_samples"]) / common.median(by_w[lo]["server_samples"])
                server_ratios.append((chart, server))
        kinds = {tuple(sorted(r["ours"]["kinds"].items())) for r in mine}
        if len(kinds) != 1:
            constant = False
            worst.append(chart)
    out += [
        "",
        f"Render time at worker={hi:,} over worker={lo}, binary: "
        + ", ".join(f"{c} {x:.1f}x" for c, x in ratios)
        + (f"; in-process: {', '.join(f'{c} {x:.1f}x' for c, x in server_ratios)}" if server_ratios else "")
        + ". Non-pod objects by kind "
        + ("are the same at every worker count for every chart." if constant else f"change with N for: {worst}."),
        "",
        SOURCES,
        "",
        "![objects per job](scale.png)",
        "",
    ]
    slow = [c for c, x in ratios if x > 3]
    if "tensorflow-dist" in slow:
        out[-4:-4] = [
            "**Why tensorflow-dist misses the 3x target**: it renders the whole cluster host list (from which each "
            "container composes the TF_CONFIG every TF program reads) into its cluster ConfigMap, and "
            "`dl-common.peers.hosts` builds that list with Sprig "
            "`append` in a loop, which copies the list on every call: quadratic in the worker count. Emitting the "
            "JSON array directly in the `range` (same bytes out) measured about 2x instead of 6x at 1000 workers "
            "when tried on a copy of the charts; the change belongs to dl-common (and its version bump).",
            "",
        ]
    if ratios:
        bad = [f"{c} {x:.1f}x" for c, x in ratios if x > 3]
        targets.append(
            (
                f"render time at worker={hi:,} within 3x of worker={lo} (each training chart)",
                ", ".join(f"{c} {x:.1f}x" for c, x in ratios),
                "yes" if not bad else f"no: {', '.join(bad)}",
            )
        )
    targets.append(
        (
            "non-pod objects constant in the worker count",
            "same kinds and counts at every N" if constant else f"grows for {worst}",
            "yes" if constant else "no",
        )
    )
    return out


def _server_ms(row: dict[str, Any]) -> str:
    return f"{common.median(row['server_samples']) * 1e3:.0f}" if row.get("server_samples") else "–"


def _largest(row: dict[str, Any]) -> str:
    return f"{row['largest']['bytes'] / 1024:.1f}" if row.get("largest") else "–"


def scale_plot(s: dict[str, Any] | None) -> None:
    if not s:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = s["rows"]
    charts = [c for c in common.TRAINING_CHARTS if any(r["chart"] == c for r in rows)]
    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    for ax, chart in zip(axes.flat, charts, strict=False):
        mine = sorted((r for r in rows if r["chart"] == chart), key=lambda r: r["workers"])
        w = [r["workers"] for r in mine]
        direct = [r["kubeflow"]["custom"] + r["kubeflow"]["services"] + r["kubeflow"]["other"] for r in mine]
        ax.plot(w, [r["ours"]["total"] for r in mine], "o-", label="ours: all API objects")
        ax.plot(w, [r["ours"]["rendered"] for r in mine], "o--", label="ours: rendered (no pods, no endpoints)")
        ax.plot(w, [r["kubeflow"]["total"] for r in mine], "s-", label=f"{mine[0]['operator']}: all")
        ax.plot(w, direct, "s--", label=f"{mine[0]['operator']}: created by it (no pods, no endpoints)")
        ax.plot(w, [r["inovex"]["total"] for r in mine], "^-", label="inovex: all")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(chart)
        ax.set_xlabel("workers")
        ax.set_ylabel("API objects")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    ax = axes.flat[len(charts)] if len(charts) < 6 else None
    if ax is not None:
        for chart in charts:
            mine = sorted((r for r in rows if r["chart"] == chart), key=lambda r: r["workers"])
            ax.plot([r["workers"] for r in mine], [common.median(r["render_samples"]) * 1e3 for r in mine], "o-",
                    label=chart)  # fmt: skip
        ax.set_xscale("log")
        ax.set_title("helm template time (cold process)")
        ax.set_xlabel("workers")
        ax.set_ylabel("ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("What one training job creates, by worker count")
    fig.tight_layout()
    fig.savefig(common.BENCH / "scale.png", dpi=100)
    plt.close(fig)


# ----- part 4 -----------------------------------------------------------------------------------------


def scheduling_section(sc: dict[str, Any] | None, targets: list[tuple[str, str, str]]) -> list[str]:
    out = ["## 4. Scheduling scale on the embedded cluster", ""]
    if not sc:
        return [*out, "Not run (see build/bench/scheduling.log).", ""]
    ver = sc.get("versions", {})
    out += [
        f'Embedded cluster "bench" (dlcharts.cluster: kube-apiserver, kube-controller-manager, kube-scheduler '
        f"{ver.get('kubernetes')} and etcd {ver.get('etcd')} built from Go modules, kwok {ver.get('kwok')} fake "
        f"nodes), {sc['nodes']} nodes x {sc['gpus_per_node']} `nvidia.com/gpu`, started in "
        f"{_f(sc.get('start_seconds'))} s. For each size: `helm install` of tensorflow-dist with `--set worker=N` "
        "(1 GPU per worker) into a fresh namespace enforcing Pod Security `restricted`; times from the start of "
        "`helm install`, pods polled every 0.5 s through the API server's Table format. Fake pods run for an hour, "
        "so every worker holds its GPU at once. Then uninstall and delete the namespace (not after the last size: "
        "stopping the cluster removes it).",
        "",
    ]
    if sc.get("error"):
        out += [f"**The run stopped with an error**: `{sc['error']}`", ""]
    runs = sc.get("runs") or []
    if runs:
        out += [
            "| workers | helm install returned s | all pods created s | **all bound s** | all Running s "
            "| objects in the namespace | load 1m before |",
            "|---:|---:|---:|---:|---:|---|---:|",
        ]
        for r in runs:
            t = r["seconds"]
            objs = ", ".join(f"{v} {k}" for k, v in r["objects"].items())
            flag = f" (timed out at {t['timed_out']:.0f} s)" if "timed_out" in t else ""
            out.append(
                f"| {r['workers']:,} | {_f(t.get('helm_install'), 2)} | {_f(t.get('created'))} | "
                f"**{_f(t.get('bound'))}**{flag} | {_f(t.get('running'))} | {objs} | {r['load_before']['1m']:.2f} |"
            )
        comps = sorted({k for r in runs for k in r["rss_peak"]})
        out += [
            "",
            "Resident memory of the control-plane processes (MiB): idle after start, peak while each job was "
            "scheduled, and at the end (the last job still installed).",
            "",
            "| process | idle after start | "
            + " | ".join(f"peak, {r['workers']:,} workers" for r in runs)
            + " | at the end |",
            "|---|---:|" + "---:|" * len(runs) + "---:|",
        ]
        for comp in comps:
            cells = [f"{sc.get('rss_idle_start', {}).get(comp, 0) / MiB:.0f}"]
            cells += [f"{r['rss_peak'].get(comp, 0) / MiB:.0f}" for r in runs]
            cells.append(f"{sc.get('rss_idle_end', {}).get(comp, 0) / MiB:.0f}")
            out.append(f"| {comp} | " + " | ".join(cells) + " |")
        total_peak = max(sum(r["rss_peak"].values()) for r in runs)
        out += [
            "",
            f"Largest sum of the per-process peaks: {total_peak / MiB:.0f} MiB. The Secret in each namespace is "
            "Helm's release record; the ConfigMap is the chart's scripts (`kube-root-ca.crt` not counted).",
            "",
        ]
        rates = [
            f"{r['workers']:,}: {r['workers'] / r['seconds']['created']:.0f} pods/s"
            for r in runs
            if r["seconds"].get("created") and r["workers"] >= 64
        ]
        if rates:
            out += [
                "Pod creation rate (workers / time until every pod existed): "
                + ", ".join(rates)
                + ". The Job controller creates the pods through kube-controller-manager's API client; the "
                "embedded cluster raises its limit, and the scheduler's, to 200 requests/s (burst 400; "
                "`ClusterConfig.api_qps`), because the components' default of 20/s paced a 1,000-worker job "
                "to about 55 s (comparison below).",
                "",
            ]
        big = max(runs, key=lambda r: r["workers"])
        bound = big["seconds"].get("bound")
        targets.append(
            (
                f"a {big['workers']:,}-worker job fully bound in under 60 s",
                f"{_f(bound)} s from helm install" if bound is not None else "not bound in time",
                "yes" if bound is not None and bound < 60 else "no",
            )
        )
    qps = common.saved("scheduling_qps20")
    if qps and qps.get("runs"):
        out += [
            "**Comparison: the components' default API rate limits.** The same cluster with kube-controller-manager "
            "and kube-scheduler at `--kube-api-qps=20` (their own default; `bench/scheduling.py --controller-qps 20`):",
            "",
            "| workers | helm install returned s | all pods created s | **all bound s** | all Running s "
            "| load 1m before |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for r in qps["runs"]:
            t = r["seconds"]
            out.append(
                f"| {r['workers']:,} | {_f(t.get('helm_install'), 2)} | {_f(t.get('created'))} | "
                f"**{_f(t.get('bound'))}** | {_f(t.get('running'))} | {r['load_before']['1m']:.2f} |"
            )
        out += [
            "",
            "All Running lags bound because kwok's controller, which plays every kubelet, has its own API rate "
            "limit; binding is what the target measures.",
            "",
        ]
    out += ["![scheduling](scheduling.png)", ""]
    return out


def scheduling_plot(sc: dict[str, Any] | None) -> None:
    if not sc or not sc.get("runs"):
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sc["runs"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5))
    for r in runs:
        samples = r.get("samples") or []
        if samples:
            ax1.plot([x[0] for x in samples], [x[2] for x in samples], label=f"{r['workers']:,} workers: bound")
    qps = common.saved("scheduling_qps20")
    for r in (qps or {}).get("runs") or []:
        samples = r.get("samples") or []
        if samples:
            ax1.plot([x[0] for x in samples], [x[2] for x in samples], "--",
                     label=f"{r['workers']:,} workers, API QPS 20 (default)")  # fmt: skip
    ax1.axvline(60, color="gray", linestyle=":", label="60 s target")
    ax1.set_xlabel("seconds since helm install")
    ax1.set_ylabel("pods bound to a node")
    ax1.set_title("tensorflow-dist on the embedded cluster")
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=8)
    comps = sorted({k for r in runs for k in r["rss_peak"]})
    bottom = [0.0] * len(runs)
    for comp in comps:
        vals = [r["rss_peak"].get(comp, 0) / MiB for r in runs]
        ax2.bar([str(r["workers"]) for r in runs], vals, bottom=bottom, label=comp)
        bottom = [b + x for b, x in zip(bottom, vals, strict=True)]
    ax2.set_xlabel("workers")
    ax2.set_ylabel("peak RSS, MiB")
    ax2.set_title("control-plane memory")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(common.BENCH / "scheduling.png", dpi=100)
    plt.close(fig)


# ----- cluster cost in the worker count (issue 19) ----------------------------------------------------

COST_ORDER = ("tensorflow-dist (before)", "tensorflow-dist", "pytorch-dist", "mxnet-dist", "horovod-mpi")


def cost_runs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(label, whole result, run) of every saved build/bench/cost_*.json (bench/scheduling.py --save-as), the
    chart of an earlier commit labelled "(before)" (its file name says so)."""
    out = []
    for path in common.WORK.glob("cost_*.json"):
        data = common.saved(path.stem) or {}
        label = str(data.get("chart")) + (" (before)" if "before" in path.stem else "")
        out += [(label, data, run) for run in data.get("runs") or []]
    rank = {label: i for i, label in enumerate(COST_ORDER)}
    return sorted(out, key=lambda x: (rank.get(x[0], len(rank)), x[0], x[2]["workers"]))


def cost_section() -> list[str]:
    """Section 9 of results.md: one row per chart and worker count (printed by `report.py cost`)."""
    rows = cost_runs()
    out = [
        "| chart | workers (pods) | nodes | helm install s | all created s | all bound s | **all Running s** "
        "| **control-plane peak RSS MiB** | kube-apiserver / etcd MiB | control-plane CPU s (ms per pod) "
        "| largest object | load 1m before |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for label, data, r in rows:
        t, rss, big = r["seconds"], r["rss_peak"], r.get("largest") or {}
        running = _f(t.get("running")) if "running" in t else f"not all (stopped at {_f(t.get('timed_out'), 0)} s)"
        cpu = sum((r.get("cpu_seconds") or {}).values())
        pods = r.get("pods", r["workers"])
        cpu_cell = f"{cpu:,.0f} ({1000 * cpu / pods:.0f})" if cpu else "–"
        out.append(
            f"| {label} | {r['workers']:,} ({r.get('pods', r['workers']):,}) | {data['nodes']:,} "
            f"| {_f(t.get('helm_install'), 2)} | {_f(t.get('created'))} | {_f(t.get('bound'))} | **{running}** "
            f"| **{sum(rss.values()) / MiB:,.0f}** | {rss.get('kube-apiserver', 0) / MiB:,.0f} / "
            f"{rss.get('etcd', 0) / MiB:,.0f} | {cpu_cell} "
            f"| {big.get('kind', '?')} {big.get('bytes', 0) / 1024:,.1f} KiB "
            f"| {r['load_before']['1m']:.2f} |"
        )
    return out


def cost_plot() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, list[tuple[int, float | None, float]]] = {}
    for label, _, r in cost_runs():
        series.setdefault(label, []).append(
            (r["workers"], r["seconds"].get("running"), sum(r["rss_peak"].values()) / MiB)
        )
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5))
    for label, points in series.items():
        style = "--o" if "before" in label else "-o"
        done = [(n, t) for n, t, _ in points if t is not None]
        ax1.plot([n for n, _ in done], [t for _, t in done], style, label=label)
        ax2.plot([n for n, _, _ in points], [m for _, _, m in points], style, label=label)
    ax1.axhline(90, color="gray", linestyle=":", label="90 s target at 5,000")
    ax2.axhline(4096, color="gray", linestyle=":", label="4 GiB target at 5,000")
    for ax, title in ((ax1, "seconds from helm install until every pod is Running"),
                      (ax2, "peak control-plane RSS, MiB (sum of processes)")):  # fmt: skip
        ax.set_xlabel("workers")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(common.BENCH / "cost.png", dpi=100)
    plt.close(fig)


def _saved_date(part: str) -> str:
    """When a part's results were written (for runs recorded before parts carried their date)."""
    written = [p.stat().st_mtime for p in common.WORK.glob(f"{part}*.json")]
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(max(written))) if written else "?"


# ----- part 5 -----------------------------------------------------------------------------------------


def suite_section(st: dict[str, Any] | None, targets: list[tuple[str, str, str]]) -> list[str]:
    out = ["## 5. Test-suite wall time per tier", ""]
    if not st:
        return [*out, "Not run (see build/bench/suite_times.log).", ""]
    out += [
        "Each row is its own pytest process, one after the other, on this machine. *fast-cold* and *fast* run "
        "unit + render + properties together on every core (pytest-xdist), as `make test` does: the first "
        "with `--dlcharts-no-cache`, the second with the render cache filled. The rows after them run one tier "
        "each (the unit, render and properties tiers on one core). *render-cold* passes "
        "`--dlcharts-no-cache` (every render a helm process: what CI on a fresh machine pays). *fast* and "
        "*render* run once untimed first, so they are timed with the on-disk render cache filled (a developer's "
        "second run). The cluster tier takes "
        "longer than the rest of `make bench` together, so `make bench` shows its last measurement "
        "(`.venv/bin/python bench/suite_times.py --tiers cluster` measures it again); its `cluster` fixture uses "
        "the cluster named `dlcharts`, and reuses it when one is already running.",
        "",
        "| tier | command | wall s | result | load 1m before |",
        "|---|---|---:|---|---:|",
    ]
    by = {}
    for r in st["rows"]:
        if "skipped" in r:
            out.append(f"| {r['tier']} | | | skipped: {r['skipped']} | |")
            continue
        by[r["tier"]] = r
        note = f" (measured {r.get('date', 'earlier')}, kept from an earlier run)" if r.get("carried_over") else ""
        out.append(
            f"| {r['tier']} | `{r['command']}` | {r['seconds']:.1f} | {r['summary']} (exit {r['exit']}){note} | "
            f"{r['load_before']['1m']:.2f} |"
        )
    out += ["", "![test tiers](suite.png)", ""]
    for tier, label in (("fast-cold", "fresh render cache"), ("fast", "render cache filled")):
        if tier in by:
            seconds = by[tier]["seconds"]
            targets.append(
                (
                    f"unit + render + properties tiers under 60 s together (as `make test` runs them, {label})",
                    f"{seconds:.0f} s",
                    "yes" if seconds < 60 else "no",
                )
            )
    return out


def suite_plot(st: dict[str, Any] | None) -> None:
    if not st:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in st["rows"] if "seconds" in r]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar([r["tier"] for r in rows], [r["seconds"] for r in rows],
           color=["tab:green" if r["exit"] == 0 else "tab:red" for r in rows])  # fmt: skip
    ax.axhline(60, color="gray", linestyle=":", label="60 s")
    ax.set_ylabel("wall seconds")
    ax.set_title("Test tiers on this machine (red: the tier failed)")
    for i, r in enumerate(rows):
        ax.text(i, r["seconds"], f"{r['seconds']:.0f}", ha="center", va="bottom", fontsize=8)
    fig.tight_layout()
    fig.savefig(common.BENCH / "suite.png", dpi=100)
    plt.close(fig)


# ----- part 6 -----------------------------------------------------------------------------------------


def images_section(im: dict[str, Any] | None) -> list[str]:
    out = ["## 6. Local images: build and push cost (dlcharts images)", ""]
    if not im:
        return [*out, "Not run (`.venv/bin/python bench/images.py`; see build/bench/images.log).", ""]
    tools = im.get("tools", {})
    out += [
        f"Measured {im.get('date', '?')} by `bench/images.py` ({tools.get('mmdebstrap', '?')}, "
        f"{tools.get('umoci', '?')}, {tools.get('pip', '?')}). Each image is built in a fresh cache of its own: "
        "*cold* downloads its Debian packages (mmdebstrap) and wheels (pip) and runs every step; *warm* is the "
        "second `dlcharts images build` (every blob's digest verified, nothing else). *push* goes to a fresh "
        "local registry (distribution v3) with crane; the second push finds every blob there. *compressed* is "
        "what a node pulls (config + gzip layers); *unpacked* is the layers' tar size. *same digest* compares "
        "the cold build with the same image in the machine's cache, built earlier from the same definition.",
        "",
        "| image | reference | compressed MiB | unpacked MiB | cold s (steps) | warm s | push cold / warm s "
        "| same digest | load 1m before → after |",
        "|---|---|---:|---:|---|---:|---|---|---|",
    ]
    for r in im["rows"]:
        steps = ", ".join(
            f"{k} {r['cold_steps'][k]:.0f}" for k in ("rootfs", "wheels", "layer", "oci") if k in r["cold_steps"]
        )
        same = "—" if not r["shared_cache_digest"] else ("yes" if r["shared_cache_digest"] == r["digest"] else "NO")
        out.append(
            f"| {r['image']} | `{r['reference']}` {r['digest'][:19]} | {r['compressed_bytes'] / MiB:,.0f} | "
            f"{r['unpacked_bytes'] / MiB:,.0f} | {r['cold_seconds']:.0f} ({steps}) | {r['warm_seconds']:.1f} | "
            f"{r['push_cold_seconds']:.1f} / {r['push_warm_seconds']:.1f} | {same} | "
            f"{r['load_before']['1m']:.2f} → {r['load_after']['1m']:.2f} |"
        )
    out += [
        "",
        "*warm* is measured inside one process; `dlcharts images build` as a new process adds Python's start "
        "and the tool version probes (mmdebstrap, umoci, pip) that enter the cache keys: 2.2-2.8 s wall for both "
        "images warm on this machine (`time .venv/bin/dlcharts images build`, load 5-7). Commands: cold and warm "
        "as above, `.venv/bin/python bench/images.py`; a cold build by hand: `dlcharts images build NAME` with "
        "an empty `$DLCHARTS_CACHE/images`.",
        "",
        "CI (`make test`, tests/images) builds the helper image only (busybox: one small root file system, and "
        "the damaged-rootfs test runs mmdebstrap once more); the tensorflow image costs minutes cold and about "
        "2.5 GB of cache (rootfs, wheels, venv layer, OCI layout), so it is built where the node needs it "
        "(`dlcharts images build tensorflow --push`) and stays cached by content. Two builds in separate caches "
        "gave the same digests (the rootfs tar from mmdebstrap with SOURCE_DATE_EPOCH, the venv layer tar, the "
        "umoci layout): the builds are reproducible as long as the Debian mirror serves the same package "
        "versions and PyPI the same wheels for the unpinned dependencies; a later cold build on a newer mirror "
        "gives another digest, which is why the cache, not the definition, keeps the bytes.",
        "",
        "Not built yet: **pytorch** CPU. PyPI's torch wheel for Linux x86_64 is the CUDA build: torch 2.9.1 "
        "(cp313, manylinux_2_28, 900 MB) requires 15 nvidia-*-cu12 wheels and triton. Tried here: the torch "
        "wheel with `--no-deps` plus its six other dependencies (filelock, fsspec, jinja2, networkx, sympy, "
        "typing-extensions) installs offline into a 1.8 GB venv (libtorch_cuda.so alone 976 MB) and `import "
        "torch` fails: `ValueError: libcublas.so.*[0-9] not found in the system path` (torch/__init__.py "
        "preloads the CUDA libraries from the nvidia-* packages). The CPU-only wheels are on "
        "the PyTorch project's own index, which this machine cannot reach; no CPU-only torch for x86_64 is "
        "published on PyPI by the project. **mxnet**, **horovod**, **cntk**: not attempted (time).",
        "",
    ]
    return out


# ----- the whole file ---------------------------------------------------------------------------------


FIRST_KEPT_SECTION = "\n## 7. "


def kept_sections() -> str:
    """Sections 7 onwards of results.md (real-node runs, frameworks, cluster cost): written by their own scripts
    and by hand, never generated here, so a rewrite keeps them as they are."""
    text = RESULTS.read_text() if RESULTS.exists() else ""
    return "\n" + text[text.index(FIRST_KEPT_SECTION) + 1 :] if FIRST_KEPT_SECTION in text else ""


def write() -> None:
    run = common.saved("run") or {}
    v, rv, s = common.saved("validation"), common.saved("render_validate"), common.saved("scale")
    sc, st = common.saved("scheduling"), common.saved("suite_times")
    m = run.get("machine") or common.machine()
    targets: list[tuple[str, str, str]] = []
    body = [
        *validation_section(v, targets),
        *render_section(rv),
        *scale_section(s, targets),
        *scheduling_section(sc, targets),
        *suite_section(st, targets),
        *images_section(common.saved("images")),
    ]
    parts = run.get("parts", {})
    pk = m.get("packages", {})
    load_start = common.load_text(run["load_start"]) if run.get("load_start") else "?"
    load_end = common.load_text(run["load_end"]) if run.get("load_end") else "?"
    head = [
        "# dl-charts benchmarks",
        "",
        f"Generated by `bench/run.py` (`make bench` runs every part); its last run (`{run.get('command', '?')}`) "
        f"started {run.get('started', '?')} and took {_f((run.get('total_seconds') or 0) / 60)} min. "
        "`bench/run.py --parts scale` reruns one part and rewrites this file from the other parts' last results "
        "(build/bench/*.json), so parts can come from different runs: the *part wall times* row says when each "
        "part ran. All ran on the machine below, which other jobs were sharing: read each number with the load "
        "average beside it.",
        "",
        "| machine | |",
        "|---|---|",
        f"| CPU | {m.get('cpu')}, {m.get('cores')} cores |",
        f"| memory, kernel | {m.get('memory_gib')} GiB, Linux {m.get('kernel')} |",
        f"| Python, Go | {m.get('python')}, {m.get('go')} |",
        f"| helm | {m.get('helm4')} (renders), {m.get('helm3')} |",
        f"| kubeconform | {(v or {}).get('kubeconform', {}).get('version', '?')} (built from its Go module) |",
        "| jsonschema, jsonschema-rs, kubernetes-validate, PyYAML | "
        f"{pk.get('jsonschema')}, {pk.get('jsonschema-rs')}, {pk.get('kubernetes-validate')}, {pk.get('pyyaml')} |",
        f"| load average 1/5/15 min, start → end | {load_start} → {load_end} |",
        "| part wall times | "
        + ", ".join(
            f"{p} {x['seconds']:.0f} s ({x.get('date') or _saved_date(p)}){' (FAILED)' if x.get('exit') else ''}"
            for p, x in parts.items()
        )
        + " |",
        "",
        "## Targets (issue 7)",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        *[f"| {t} | {mval} | {ok} |" for t, mval, ok in targets],
        "",
    ]
    failed = {p: x for p, x in parts.items() if x.get("exit")}
    if failed:
        head += ["Parts that failed this run (their last log lines):", ""]
        for p, x in failed.items():
            head += [f"- **{p}**:", "", "```", (x.get("error") or "").strip()[-1500:], "```", ""]
    RESULTS.write_text("\n".join(head + body).rstrip() + "\n" + kept_sections())
    for plot, data in ((validation_plot, v), (scale_plot, s), (scheduling_plot, sc), (suite_plot, st)):
        try:
            plot(data)
        except ImportError as exc:  # matplotlib comes with the `bench` extra
            print(f"report: no plots ({exc}); install with: .venv/bin/pip install -e '.[bench]'")
            break


if __name__ == "__main__":
    if sys.argv[1:] == ["cost"]:  # section 9 is kept by hand in results.md: print its table, redraw its plot
        print("\n".join(cost_section()))
        cost_plot()
    else:
        write()
        print(f"wrote {RESULTS}")
