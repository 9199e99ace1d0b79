"""What every conversion shares: the :class:`Job` it collects into and :class:`ImportRefused`, which ends it;
reading a manifest file; and what every kind ends with: the job's metadata (the Kueue queue), the role layout
(``defaults`` and ``roles.<role>``) and the header's lines about every import."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import DLChartsError
from dlcharts.jobs.importer.writer import Imported, Values

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: role settings the chart's own values.yaml sets under roles.<role>: an imported value for them must be written
#: there too, or the chart's role default would win over one written in defaults
ROLE_DEFAULTS = {
    "tensorflow-dist": {"ps": {"gpu"}, "evaluator": {"gpu"}},
    "horovod-mpi": {"launcher": {"gpu", "resources", "shm"}},
}


class ImportRefused(DLChartsError):
    """A manifest has fields with no equivalent in our charts (every one is listed), or is not a job we convert."""


class Job:
    """What one conversion collects: the values, and the lines of the header; refusals end it."""

    def __init__(self, where: str, doc: Values, chart: str, image_tag: str | None = None) -> None:
        self.where, self.chart, self.image_tag = where, chart, image_tag
        self.kind = str(doc.get("kind"))
        meta: Values = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "")
        self.values: Values = {}
        self.carried: list[str] = []
        self.dropped: list[str] = []
        self.differs: list[str] = []
        self.mode: list[str] = []
        self.problems: list[str] = []

    def refuse(self, path: str, why: str) -> None:
        self.problems.append(f"{path}: {why}")

    def drop(self, path: str, why: str) -> None:
        self.dropped.append(f"{path}: {why}")

    def unknown(self, obj: Values, path: str, known: Iterable[str]) -> None:
        """Refuse every key of ``obj`` that is not ``known``: a field with no equivalent, never a silent loss."""
        allowed = set(known)
        for key in obj:
            if key not in allowed:
                where = f"{path}.{key}" if path else str(key)
                self.refuse(where, f"no equivalent in {self.chart}; remove it to import this job")

    def result(self) -> Imported:
        if self.problems:
            head = f"{self.where}: {self.kind} {self.name or '(no name)'} cannot become values of {self.chart}:"
            raise ImportRefused("\n".join([head, *(f"  {p}" for p in self.problems)]))
        return Imported(
            self.where, self.kind, self.name, self.namespace, self.chart, self.values, self.carried, self.dropped,
            self.differs, self.mode,
        )  # fmt: skip


def metadata(job: Job, meta: Values, labels_path: str = "metadata.labels") -> None:
    """The job's own labels: the Kueue queue is kueue.queueName; others labelled the operator's object."""
    labels = dict(meta.get("labels") or {})
    queue = labels.pop(QUEUE_LABEL, None)
    if queue:
        job.values["kueue"] = {"queueName": queue}
        job.carried.append(f"{labels_path}.{QUEUE_LABEL} as kueue.queueName")
        if job.kind != "TrainJob":
            job.differs.append("Kueue admitted the whole job as one workload; here each role's Job is one "
                               "(kueue.podGroup=true: one pod group, with Kueue's pod integration)")  # fmt: skip
    for label in sorted(labels):
        if label.startswith("kueue.x-k8s.io/"):
            job.refuse(f"{labels_path}.{label}", "a Kueue setting our charts have no value for; remove it")
    others = sorted(k for k in labels if not k.startswith("kueue.x-k8s.io/"))
    if others or meta.get("annotations"):
        job.drop(f"{labels_path} and annotations of the {job.kind} ({', '.join(others) or 'annotations'})",
                 "they labelled the operator's object; pod labels are carried as podLabels")  # fmt: skip
    if not job.name:
        job.refuse("metadata.name", "no name (it becomes the release name)")


def layout(job: Job, roles: dict[str, Values]) -> None:
    """Role settings into defaults (the same in every role) and roles.<role> (the rest, and what the chart itself
    sets per role)."""
    pinned = ROLE_DEFAULTS.get(job.chart, {})
    defaults = job.values.setdefault("defaults", {})
    keys: list[str] = []
    for settings in roles.values():
        keys += [k for k in settings if k not in keys]
    for key in keys:
        present = [settings.get(key) for settings in roles.values()]
        shared = all(key in s for s in roles.values()) and all(v == present[0] for v in present)
        if shared:
            if key == "job":
                defaults.setdefault("job", {}).update(present[0])
            else:
                defaults[key] = present[0]
        for role, settings in roles.items():
            if key in settings and (not shared or key in pinned.get(role, set())):
                job.values.setdefault("roles", {}).setdefault(role, {})[key] = settings[key]
    if not defaults.get("job"):
        defaults.pop("job", None)


def intro(job: Job) -> None:
    if job.namespace:
        job.carried.append(f"metadata.namespace as the namespace of the commands above (-n {job.namespace})")
    settings = [job.values.get("defaults", {}), *job.values.get("roles", {}).values()]
    if any(s.get("shm") == {"sizeLimit": "64Mi"} for s in settings):
        job.differs.append("/dev/shm is a memory-backed emptyDir of 64Mi where the manifest mounted none (the "
                           "container runtime's 64 MiB); raise shm.sizeLimit (the chart's default is 2Gi) for NCCL "
                           "or data loaders")  # fmt: skip
    job.differs.append("the pods run as uid 1000, non-root, with a read-only root filesystem (writable: /tmp, "
                       "/dev/shm, your volumes), where Kubeflow ran the image's user: for an image that needs root "
                       "or writes elsewhere see the README's values table (defaults.podSecurityContext.runAsUser, "
                       "defaults.securityContext.readOnlyRootFilesystem)")  # fmt: skip


def documents(path: Path) -> list[Any]:
    """The manifests of a (multi-document) YAML file, as parsed; a file without one is refused."""
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except FileNotFoundError:
        raise DLChartsError(f"{path}: no such file") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DLChartsError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not docs:
        raise ImportRefused(f"{path}: no manifest in it")
    return docs
