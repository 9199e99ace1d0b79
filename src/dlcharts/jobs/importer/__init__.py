"""`dlcharts import FILE...`: Kubeflow training jobs as values files for our charts.

TFJob and PyTorchJob (``kubeflow.org/v1``), MPIJob (``kubeflow.org/v2beta1``) and TrainJob
(``trainer.kubeflow.org/v1alpha1`` on the ``torch-distributed`` runtime) become values for tensorflow-dist,
pytorch-dist and horovod-mpi: one values file per job. Every field of the manifest is either carried over
(listed in the file's header), dropped with the reason it changes nothing here (listed too), or refused with
its path and what to do: nothing is lost silently. Pod settings shared by every role go in ``defaults``, the
rest in ``roles.<role>``.

The parts, each importing only those above it:

- ``writer``: :class:`Imported` (one job converted) and its values file, a header (the chart, the commands, what
  was carried over, dropped, or differs) and the values; :func:`write` (stdout, a file, or a folder of them).
- ``common``: the ``Job`` a conversion collects into, :class:`ImportRefused`, reading a manifest file, and what
  every kind ends with (the job's metadata and Kueue queue, the role layout, the header's lines about every job).
- ``pods``: a pod template as role settings (image, command, env, resources and GPUs, scheduling, volumes).
- ``replicas``: what the replica-spec kinds share (replica types as roles, restartPolicy, runPolicy and gang
  scheduling, the operator's named port).
- ``torchrun``: the manifest's program under the chart's torchrun (PyTorchJob and TrainJob).
- ``shapes``: the types of the manifest's fields, checked before a converter reads them (a wrong one is refused
  with its path).
- ``tfjob``, ``pytorchjob``, ``mpijob``, ``trainjob``: what is particular to each kind, its ``convert``.
- here: which kind becomes which chart (:data:`CHARTS`) through which converter (:data:`CONVERTERS`), and the
  entry points :func:`read` (a file's jobs, or every refusal in it) and :func:`write`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlcharts.jobs.importer import mpijob, pytorchjob, shapes, tfjob, trainjob
from dlcharts.jobs.importer.common import ROLE_DEFAULTS, ImportRefused, Job, documents
from dlcharts.jobs.importer.writer import Imported, Values, write

__all__ = ["CHARTS", "CONVERTERS", "ROLE_DEFAULTS", "ImportRefused", "Imported", "convert", "read", "write"]

#: what each Kubeflow kind becomes: (apiVersion, kind) -> chart
CHARTS = {
    ("kubeflow.org/v1", "TFJob"): "tensorflow-dist",
    ("kubeflow.org/v1", "PyTorchJob"): "pytorch-dist",
    ("kubeflow.org/v2beta1", "MPIJob"): "horovod-mpi",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "pytorch-dist",
}
#: each kind's converter: what is particular to it
CONVERTERS: dict[str, Callable[[Job, Values], None]] = {
    "TFJob": tfjob.convert,
    "PyTorchJob": pytorchjob.convert,
    "MPIJob": mpijob.convert,
    "TrainJob": trainjob.convert,
}


def convert(doc: Any, where: str, image_tag: str | None = None) -> Imported:
    """One manifest (a parsed YAML document) as an :class:`Imported`; :class:`ImportRefused` lists every field
    without an equivalent. ``image_tag``: the tag to run where an image has none or ``latest``."""
    if not isinstance(doc, dict):
        raise ImportRefused(f"{where}: expected a Kubernetes object (a mapping), got a {type(doc).__name__}")
    api, kind = doc.get("apiVersion"), doc.get("kind")
    chart = CHARTS.get((str(api), str(kind)))
    if chart is None:
        known = ", ".join(f"{k} {a}" for a, k in CHARTS)
        same = [a for a, k in CHARTS if k == kind]
        hint = f" (this importer reads {kind} {same[0]})" if same else ""
        raise ImportRefused(f"{where}: {kind} {api}{hint} is not a job dlcharts import converts; it reads {known}")
    job = Job(where, doc, chart, image_tag)
    job.unknown(doc, "", ("apiVersion", "kind", "metadata", "spec", "status"))
    if not shapes.check(job, doc):
        return job.result()  # refuses: the converters would misread fields of the wrong type
    try:
        CONVERTERS[str(kind)](job, doc)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:  # a field's type shapes.check does not know
        job.refuse("(a field)", f"of a type dlcharts import did not expect ({type(exc).__name__}: {exc}); check the "
                   f"manifest against the {kind} API, or report it with the manifest")  # fmt: skip
    return job.result()


def read(path: Path, image_tag: str | None = None) -> list[Imported]:
    """Every job of a (multi-document) YAML file; every refusal of the file in one error."""
    docs = documents(path)
    jobs, problems = [], []
    for i, doc in enumerate(docs):
        try:
            jobs.append(convert(doc, f"{path}" if len(docs) == 1 else f"{path} document {i + 1}", image_tag))
        except ImportRefused as exc:
            problems.append(str(exc))
    if problems:
        raise ImportRefused("\n".join(problems))
    return jobs
