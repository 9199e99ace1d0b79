"""Section 1 of bench/results.md (bench/data/01-validation.json) from a raw run of ``python -m bench.validation``
(build/bench/validation.json): the corpus, equal work, engine agreement, end to end, validation alone, where the time
goes, the targets; and bench/plots/validation.png."""

from __future__ import annotations

from typing import Any

from bench import common, model, results

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


def corpus_facts(v: dict[str, Any]) -> list[model.Block]:
    """The corpus: what it holds and how it was built."""
    c, n = v["corpus"], v["corpus"]["objects"]
    eq = v["equal_work"]
    return [
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


def equal_work_blocks(v: dict[str, Any]) -> list[model.Block]:
    """Equal work: both sides' findings on the broken set, and where they differ."""
    eq = v["equal_work"]
    blocks: list[model.Block] = []
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
    return blocks


def agreement_blocks(v: dict[str, Any]) -> list[model.Block]:
    """Our two engines' verdicts on randomly mutated objects (when measured)."""
    blocks: list[model.Block] = []
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
    return blocks


def end_to_end_blocks(v: dict[str, Any]) -> list[model.Block]:
    """End to end, one process per run, on the clean corpus."""
    n, e2e = v["corpus"]["objects"], v["end_to_end"]
    kc1 = e2e.get("kubeconform -n 1, 1 core")
    kc1_rate = _rate(n, common.median(kc1["samples"])) if kc1 else None
    rows = []
    for label, row in e2e.items():
        med = common.median(row["samples"])
        rows.append([label, med, _rate(n, med), _rate(n, med) / kc1_rate if kc1_rate else None, row["load_1m"]])
    repeat = max((len(r["samples"]) for r in e2e.values()), default=0)
    return [
        model.table(
            "end-to-end", E2E_COLUMNS, rows, f"**End to end**, one process per run, clean corpus, median of {repeat}"
        )
    ]


def engines_blocks(v: dict[str, Any]) -> list[model.Block]:
    """Validation alone: kubeconform's engine beside ours (and ours before, when recorded)."""
    n = v["corpus"]["objects"]
    blocks: list[model.Block] = []
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
    return blocks


def time_blocks(v: dict[str, Any]) -> list[model.Block]:
    """Where the time goes in one run."""
    e2e, eng = v["end_to_end"], v.get("engines")
    blocks: list[model.Block] = []
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
    return blocks


def section(v: dict[str, Any]) -> tuple[list[model.Block], list[dict[str, str]]]:
    """Section 1's blocks and targets from a raw run (build/bench/validation.json)."""
    blocks = [*corpus_facts(v), *equal_work_blocks(v), *agreement_blocks(v), *end_to_end_blocks(v)]
    blocks += [*engines_blocks(v), *time_blocks(v)]
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


def report(raw: dict[str, Any]) -> None:
    blocks, targets = section(raw)
    model.update(SECTION, blocks, title=TITLE, by="`python -m bench.validation`", targets=targets)
    results.write()
    plot(raw)
