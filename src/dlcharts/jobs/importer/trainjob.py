"""TrainJob (``trainer.kubeflow.org/v1alpha1``) on Kubeflow's ``torch-distributed`` runtime as values of
pytorch-dist: the trainer (image, command under the chart's torchrun, env, resources, nodes) and the overrides of
its pods. Other runtimes are refused with what to do instead."""

from __future__ import annotations

import copy

from dlcharts.jobs.importer.common import QUEUE_LABEL, Job, intro, layout, metadata
from dlcharts.jobs.importer.pods import convert_resources, split_image, volumes
from dlcharts.jobs.importer.torchrun import nproc, torchrun_args
from dlcharts.jobs.importer.writer import Values

#: TrainJob runtimes that have no chart here, and what to do instead
OTHER_RUNTIMES = {
    "deepspeed-distributed": "DeepSpeed's MPI launcher has no chart here; DeepSpeed also starts under torchrun: "
    "import it as a PyTorchJob, or use charts/pytorch-dist with `deepspeed` in your program",
    "mlx-distributed": "MLX over MPI has no chart here (horovod-mpi runs Horovod, not MLX)",
    "jax-distributed": "JAX has no chart here",
    "xgboost-distributed": "XGBoost has no chart here",
}


TRAINER_FIELDS = ("image", "command", "args", "env", "numNodes", "resourcesPerNode", "numProcPerNode")
OVERRIDE_SPEC = {"nodeSelector": "nodeSelector", "affinity": "affinity", "tolerations": "tolerations",
                 "serviceAccountName": "serviceAccountName", "imagePullSecrets": "imagePullSecrets"}  # fmt: skip


def convert(job: Job, doc: Values) -> None:
    spec = doc.get("spec") or {}
    known = ("runtimeRef", "trainer", "initializer", "labels", "annotations", "podTemplateOverrides",
             "podSpecOverrides", "suspend", "managedBy", "activeDeadlineSeconds", "runtimePatches",
             "datasetConfig", "modelConfig")  # fmt: skip
    job.unknown(spec, "spec", known)
    check_runtime(job, spec)
    settings = trainer_settings(job, spec.get("trainer") or {})
    for key in ("podTemplateOverrides", "podSpecOverrides"):
        for i, override in enumerate(spec.get(key) or []):
            pod_override(job, override, f"spec.{key}[{i}]", settings)
    if spec.get("activeDeadlineSeconds"):
        job.values["defaults"] = {"job": {"activeDeadlineSeconds": spec["activeDeadlineSeconds"]}}
        job.carried.append("spec.activeDeadlineSeconds as defaults.job.activeDeadlineSeconds")
    else:
        job.differs.append("no activeDeadlineSeconds in the manifest: the chart's backstop of 7 days applies "
                           "(defaults.job.activeDeadlineSeconds=null for none)")  # fmt: skip
    if spec.get("suspend"):
        job.refuse("spec.suspend", f"our releases start when installed; hold a job with a Kueue queue "
                   f"(metadata.labels.{QUEUE_LABEL}) instead")  # fmt: skip
    managed = str(spec.get("managedBy") or "")
    if "multikueue" in managed:
        job.refuse("spec.managedBy", f"{managed}: MultiKueue dispatch of a release is not supported")
    for key in ("labels", "annotations"):
        if spec.get(key):
            job.drop(f"spec.{key}", "they labelled the JobSet and its Jobs; our charts label their Jobs themselves "
                     "(pod labels go in defaults.podLabels)")  # fmt: skip
    layout(job, {"worker": settings})
    metadata(job, doc.get("metadata") or {})
    job.carried.append("spec.trainer image, command and args, env, resourcesPerNode and GPUs")
    job.differs.append("the ClusterTrainingRuntime torch-distributed's own pod settings are not in the TrainJob: "
                       "compare with `kubectl get clustertrainingruntime torch-distributed -o yaml`")  # fmt: skip
    intro(job)


def check_runtime(job: Job, spec: Values) -> None:
    """The runtime the TrainJob names: Kubeflow's torch-distributed maps to pytorch-dist; its initializers and
    patches have no equivalent."""
    ref = spec.get("runtimeRef") or {}
    job.unknown(ref, "spec.runtimeRef", ("name", "apiGroup", "kind"))
    runtime = str(ref.get("name") or "")
    if (
        ref.get("kind", "ClusterTrainingRuntime") != "ClusterTrainingRuntime"
        or ref.get("apiGroup", "trainer.kubeflow.org") != "trainer.kubeflow.org"
    ):
        job.refuse("spec.runtimeRef", f"{ref.get('kind')} {runtime}: a runtime of your own, whose pod template is "
                   "not in this file; only Kubeflow's ClusterTrainingRuntimes are known here")  # fmt: skip
    elif runtime in OTHER_RUNTIMES:
        job.refuse("spec.runtimeRef.name", f"{runtime}: {OTHER_RUNTIMES[runtime]}")
    elif runtime != "torch-distributed":
        job.refuse("spec.runtimeRef.name", f"{runtime!r}: only torch-distributed maps to a chart here "
                   "(pytorch-dist); torchtune and the others bring initializers and programs of their own")  # fmt: skip
    for key in ("initializer", "datasetConfig", "modelConfig"):
        if spec.get(key):
            job.refuse(f"spec.{key}", "dataset and model initializers have no equivalent: fetch them in your "
                       "program or mount a volume that holds them")  # fmt: skip
    if spec.get("runtimePatches"):
        job.refuse("spec.runtimePatches", "patches of the runtime's JobSet have no equivalent; remove them")


def trainer_settings(job: Job, trainer: Values) -> Values:
    """spec.trainer as the workers' settings (image, command under torchrun, env, resources) and their count."""
    job.unknown(trainer, "spec.trainer", TRAINER_FIELDS)
    settings: Values = {"shm": {"sizeLimit": "64Mi"}}
    if trainer.get("image"):
        image = split_image(job, str(trainer["image"]), "spec.trainer.image")
        if image is not None:
            settings["image"] = image
    else:
        job.differs.append("no spec.trainer.image: the chart's image (pytorch/pytorch) runs, not the runtime's")
    if not trainer.get("command"):
        job.refuse("spec.trainer.command", "none: the runtime's command ran; write it out (e.g. torchrun train.py)")
    else:
        command = [str(a) for a in trainer["command"]]
        torchrun_args(job, command, [str(a) for a in trainer.get("args") or []], "spec.trainer command", settings)
    if trainer.get("env"):
        settings["env"] = [*copy.deepcopy(trainer["env"]), *settings.get("env", [])]
    convert_resources(job, trainer.get("resourcesPerNode") or {}, "spec.trainer.resourcesPerNode", settings)
    job.values["worker"] = int(trainer.get("numNodes") or 1)
    job.carried.append(f"spec.trainer.numNodes as worker ({job.values['worker']})")
    nproc(job, trainer.get("numProcPerNode"), "spec.trainer.numProcPerNode")
    return settings


def pod_override(job: Job, override: Values, path: str, settings: Values) -> None:
    """A podTemplateOverride for the trainer's pods ("node"): scheduling, volumes, the node container's env and
    mounts."""
    job.unknown(override, path, ("targetJobs", "metadata", "spec"))
    targets = [str(t.get("name")) for t in override.get("targetJobs") or []]
    if targets != ["node"]:
        job.refuse(f"{path}.targetJobs", f"{targets}: only the trainer's pods (node) have an equivalent")
        return
    meta = override.get("metadata") or {}
    job.unknown(meta, f"{path}.metadata", ("labels", "annotations"))
    if meta.get("labels"):
        settings["podLabels"] = dict(meta["labels"])
    if meta.get("annotations"):
        settings["podAnnotations"] = dict(meta["annotations"])
    spec = override.get("spec") or {}
    job.unknown(spec, f"{path}.spec", (*OVERRIDE_SPEC, "volumes", "containers"))
    for field, key in OVERRIDE_SPEC.items():
        if spec.get(field):
            settings[key] = copy.deepcopy(spec[field])
    mounts: list[Values] = []
    for i, container in enumerate(spec.get("containers") or []):
        cpath = f"{path}.spec.containers[{i}]"
        if container.get("name") != "node":
            job.refuse(f"{cpath}.name", f"{container.get('name')!r}: only the trainer container (node) is ours")
            continue
        job.unknown(container, cpath, ("name", "env", "volumeMounts"))
        if container.get("env"):
            settings["env"] = [*settings.get("env", []), *copy.deepcopy(container["env"])]
        mounts += container.get("volumeMounts") or []
    shm = settings.pop("shm")
    volumes(job, spec.get("volumes") or [], mounts, path, path, settings)
    if settings["shm"] == {"sizeLimit": "64Mi"}:
        settings["shm"] = shm
    job.carried.append(f"{path} (node): scheduling, volumes, env")
