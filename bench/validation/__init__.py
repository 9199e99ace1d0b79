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

# The package's modules: corpus (the objects both sides validate), kubeconform (its side: schemas, command lines,
# findings), ours (our side, and our two engines' agreement), measure (the run), section (section 1) and cli.
# Their names are the package's, as when it was one module (bench/validation.py).

from __future__ import annotations

from bench.validation.cli import main
from bench.validation.corpus import CORPUS, WORKER_CYCLE, build_corpus, write_broken
from bench.validation.kubeconform import (
    CRDS,
    KC_SCHEMAS,
    engine_cmd,
    kubeconform_cmd,
    kubeconform_findings,
    kubeconform_schemas,
    schema_locations,
)
from bench.validation.measure import run_timed
from bench.validation.ours import engine_agreement, ours_cmd, ours_e2e, ours_engine
from bench.validation.section import (
    E2E_COLUMNS,
    ENGINE_COLUMNS,
    EQUAL_COLUMNS,
    SECTION,
    TITLE,
    plot,
    report,
    section,
    targets,
)

__all__ = [
    "CORPUS",
    "CRDS",
    "E2E_COLUMNS",
    "ENGINE_COLUMNS",
    "EQUAL_COLUMNS",
    "KC_SCHEMAS",
    "SECTION",
    "TITLE",
    "WORKER_CYCLE",
    "build_corpus",
    "engine_agreement",
    "engine_cmd",
    "kubeconform_cmd",
    "kubeconform_findings",
    "kubeconform_schemas",
    "main",
    "ours_cmd",
    "ours_e2e",
    "ours_engine",
    "plot",
    "report",
    "run_timed",
    "schema_locations",
    "section",
    "targets",
    "write_broken",
]
