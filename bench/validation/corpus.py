"""The corpus of ``python -m bench.validation`` (see the package's docstring): every chart x ci scenario, then the
training charts' scenarios again with ``--set worker=N`` until the renders hold enough objects, and a copy with 1% of
the (core-kind) objects given a typo'd field."""

from __future__ import annotations

import concurrent.futures
import os
import random
import re
import time
from pathlib import Path
from typing import Any

from bench import common
from dlcharts.catalogue import TRAINING_CHARTS

CORPUS = common.WORK / "corpus"
# Training scenarios are rendered again for these worker counts, round after round (each render with a new
# release name), until the corpus holds enough objects: job sizes people run, not one ever-growing job.
WORKER_CYCLE = (1, 2, 3, 4, 6, 8, 12, 16)
_DOC_SPLIT_RE = re.compile(r"^---[ \t]*$", re.MULTILINE)
_SOURCE_RE = re.compile(r"^# Source: (.+)$", re.MULTILINE)


def build_corpus(target: int) -> dict[str, Any]:
    from dlcharts.render import Renderer, default_cache_dir
    from dlcharts.suite import all_scenarios

    renderer = Renderer(cache_dir=default_cache_dir())  # reruns of `make bench` reuse renders by content
    scenarios = all_scenarios(common.ROOT / "charts")
    for chart in {s.chart for s in scenarios}:
        renderer.ensure_dependencies(chart)
    training = [s for s in scenarios if s.chart_name in TRAINING_CHARTS]
    others = [s for s in scenarios if s.chart_name not in TRAINING_CHARTS]
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
