"""A role's pod template as our role settings: the main container (image, command and args, env, resources and
GPUs, ports), the pod's scheduling, and volumes and mounts (a memory emptyDir at /dev/shm is the chart's ``shm``).
The replica-spec kinds convert each pod template here; TrainJob, which has none, uses the image, resources and
volumes parts."""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

from dlcharts.jobs.importer.common import QUEUE_LABEL, Job
from dlcharts.jobs.importer.writer import Values

#: volume names the charts use themselves (a values volume of the same name is refused at render)
OWN_VOLUMES = {"shm", "tmp", "scripts", "cluster", "mpi-config", "mpi-ssh-secret", "mpi-home", "mpi-etc"}


#: pod spec fields with a role setting of the same meaning: Kubernetes name -> values key
POD_FIELDS = {
    "nodeSelector": "nodeSelector",
    "affinity": "affinity",
    "tolerations": "tolerations",
    "topologySpreadConstraints": "topologySpreadConstraints",
    "priorityClassName": "priorityClassName",
    "imagePullSecrets": "imagePullSecrets",
    "serviceAccountName": "serviceAccountName",
    "automountServiceAccountToken": "automountServiceAccountToken",
    "terminationGracePeriodSeconds": "terminationGracePeriodSeconds",
    "securityContext": "podSecurityContext",
}
CONTAINER_FIELDS = {k: k for k in ("env", "envFrom", "workingDir", "securityContext")}


@dataclasses.dataclass
class Pod:
    """A role's pod template as our role settings, and what each kind decides itself: the main container's command
    and args (None when absent), its declared ports, and the pod's schedulerName."""

    settings: Values
    command: list[str] | None
    args: list[str] | None
    ports: dict[str, int]
    scheduler: str


def is_gpu(resource: str) -> bool:
    """An extended resource that is a GPU (or a share or slice of one): nvidia.com/gpu, nvidia.com/mig-1g.10gb,
    nvidia.com/gpumem, amd.com/gpu, gpu.intel.com/i915, ..."""
    return "gpu" in resource or resource.startswith("nvidia.com/mig-")


def split_image(job: Job, image: str, path: str) -> Values | None:
    """``repo[:tag][@digest]`` as our image value, or None (refused): our charts want a published tag."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    repository, tag = (name[:colon], name[colon + 1 :]) if colon > slash else (name, "")
    if re.search(r"[<>{}\s]", image):
        job.refuse(path, f"{image!r} is a placeholder, not an image: write the image your cluster pulls")
        return None
    if not tag or tag == "latest":
        if not job.image_tag:
            job.refuse(path, f"{image!r} has {'the tag latest' if tag else 'no tag'}: our charts run a published "
                       "version tag, so that every pod runs the same image; write the image with its version tag, or "
                       "import with --image-tag TAG")  # fmt: skip
            return None
        job.differs.append(f"{path}: {image!r} runs as {repository}:{job.image_tag} (--image-tag), where Kubeflow "
                           "pulled whatever the tag pointed at when each pod started")  # fmt: skip
        tag = job.image_tag
    return {"repository": repository, "tag": f"{tag}@{digest}" if digest else tag}


def convert_resources(job: Job, resources: Values, path: str, settings: Values) -> None:
    """requests and limits as they are, GPUs as gpu.resource and gpu.count (rendered into limits only)."""
    job.unknown(resources, path, ("requests", "limits"))
    requests = dict(resources.get("requests") or {})
    limits = dict(resources.get("limits") or {})
    gpus = sorted({r for r in (*requests, *limits) if is_gpu(r)})
    if len(gpus) > 1:
        job.refuse(f"{path}.limits", f"several GPU resources ({', '.join(gpus)}): our charts request one")
    count: Any = 0
    if gpus:
        gpu = gpus[0]
        count = limits.pop(gpu, None)
        requested = requests.pop(gpu, None)
        if count is None:
            count = requested
        elif requested is not None and str(requested) != str(count):
            job.refuse(f"{path}.requests.{gpu}", f"{requested} differs from the limit {count}: GPUs are only limits")
        settings["gpu"] = {"resource": gpu, "count": int(count) if str(count).isdigit() else count}
    else:
        settings["gpu"] = {"count": 0}
    # Kubernetes' own defaulting: a limit without a request requests as much
    requests.update({name: value for name, value in limits.items() if name not in requests})
    if "memory" in requests and "memory" not in limits:
        limits["memory"] = requests["memory"]
        job.differs.append(f"{path}: no memory limit in the manifest; limits.memory is its request, "
                           f"{requests['memory']} (our validation wants one); raise it if need be")  # fmt: skip
    wanted = (("requests", requests, "cpu"), ("requests", requests, "memory"), ("limits", limits, "memory"))
    missing = [f"{kind}.{name}" for kind, have, name in wanted if name not in have]
    if missing:
        job.differs.append(f"{path}: {', '.join(missing)} not in the manifest: the chart's default applies")
    if requests or limits:
        settings["resources"] = {key: value for key, value in (("requests", requests), ("limits", limits)) if value}


def convert_pod(job: Job, template: Values, path: str, main: str) -> Pod | None:
    """A pod template (``path`` names it) as role settings. ``main`` names the main container as Kubeflow's
    operator knows it (tensorflow, pytorch); any name does when the pod has one container."""
    if not isinstance(template, dict):
        job.refuse(path, "expected a pod template (metadata, spec)")
        return None
    job.unknown(template, path, ("metadata", "spec"))
    settings: Values = {}
    pod_metadata(job, template.get("metadata") or {}, path, settings)
    spec = template.get("spec") or {}
    known = (*POD_FIELDS, "containers", "volumes", "restartPolicy", "schedulerName")
    job.unknown(spec, f"{path}.spec", known)
    for field, key in POD_FIELDS.items():
        if spec.get(field) not in (None, {}, []):
            settings[key] = copy.deepcopy(spec[field])
    if spec.get("schedulerName"):
        settings["schedulerName"] = spec["schedulerName"]  # a gang scheduler's name becomes gang.* (finish)
    if spec.get("restartPolicy"):
        job.drop(f"{path}.spec.restartPolicy", "the replica spec's restartPolicy decides (the operator overrode it)")
    containers = spec.get("containers") or []
    if not containers:
        job.refuse(f"{path}.spec.containers", "no container")
        return None
    index = main_container(job, containers, path, main)
    if index is None:
        return None
    cpath = f"{path}.spec.containers[{index}]"
    container = containers[index]
    container_settings(job, container, cpath, settings)
    volumes(job, spec.get("volumes") or [], container.get("volumeMounts") or [], path, cpath, settings)
    ports = {}
    for i, port in enumerate(container.get("ports") or []):
        ports[str(port.get("name") or f"#{i}")] = int(port.get("containerPort", 0))
    command = [str(a) for a in container["command"]] if container.get("command") else None
    args = [str(a) for a in container["args"]] if container.get("args") else None
    return Pod(settings, command, args, ports, str(spec.get("schedulerName") or ""))


def pod_metadata(job: Job, meta: Values, path: str, settings: Values) -> None:
    """The pod template's labels and annotations as podLabels and podAnnotations (a Kueue queue there is refused:
    it belongs on the job); its name and namespace are the chart's."""
    job.unknown(meta, f"{path}.metadata", ("labels", "annotations", "name", "namespace"))
    if meta.get("labels"):
        labels = dict(meta["labels"])
        if QUEUE_LABEL in labels:
            job.refuse(f"{path}.metadata.labels.{QUEUE_LABEL}",
                       "a Kueue queue on the pods: put it on the job's metadata.labels (kueue.queueName)")  # fmt: skip
        settings["podLabels"] = labels
    if meta.get("annotations"):
        settings["podAnnotations"] = dict(meta["annotations"])
    for key in ("name", "namespace"):
        if meta.get(key):
            job.drop(f"{path}.metadata.{key}", "the chart names its pods after the release and role")


def main_container(job: Job, containers: list[Values], path: str, main: str) -> int | None:
    """The index of the main container (None: refused); any other container is refused."""
    names = [c.get("name") for c in containers]
    index = names.index(main) if main in names else 0 if len(containers) == 1 else None
    if index is None:
        job.refuse(f"{path}.spec.containers", f"no container named {main!r}, the one Kubeflow's operator runs")
        return None
    for i, other in enumerate(containers):
        if i != index:
            job.refuse(f"{path}.spec.containers[{i}]", f"a second container ({other.get('name')}): our charts run "
                       "one container per pod; build it into the image or run it as a job of its own")  # fmt: skip
    return index


def container_settings(job: Job, container: Values, cpath: str, settings: Values) -> None:
    """The main container's image, env, workingDir, securityContext and resources as role settings."""
    cknown = (*CONTAINER_FIELDS, "name", "image", "imagePullPolicy", "command", "args", "resources", "ports",
              "volumeMounts")  # fmt: skip
    job.unknown(container, cpath, cknown)
    if not container.get("image"):
        job.refuse(f"{cpath}.image", "no image")
    else:
        image = split_image(job, str(container["image"]), f"{cpath}.image")
        if image is not None:
            if container.get("imagePullPolicy"):
                image["pullPolicy"] = container["imagePullPolicy"]
            settings["image"] = image
    for field, key in CONTAINER_FIELDS.items():
        if container.get(field) not in (None, {}, [], ""):
            settings[key] = copy.deepcopy(container[field])
    for i, var in enumerate(settings.get("env") or []):
        kubeflow_field_ref(job, var, f"{cpath}.env[{i}]")
    context = settings.get("securityContext") or {}
    if context.get("privileged") is True:  # the chart's allowPrivilegeEscalation: false would make it refused
        if context.get("allowPrivilegeEscalation") is False:
            job.refuse(f"{cpath}.securityContext", "privileged with allowPrivilegeEscalation false: the API server "
                       "refuses the pair; drop one")  # fmt: skip
        else:
            context["allowPrivilegeEscalation"] = True
            job.differs.append(f"{cpath}.securityContext: privileged, so allowPrivilegeEscalation is true (the chart's "
                               "is false, and the API server refuses a privileged container without it)")  # fmt: skip
    convert_resources(job, container.get("resources") or {}, f"{cpath}.resources", settings)


#: the labels Kubeflow's operators put on their pods, as the field paths of ours that say the same
KUBEFLOW_FIELDS = {
    "training.kubeflow.org/replica-index": "metadata.annotations['batch.kubernetes.io/job-completion-index']",
    "training.kubeflow.org/replica-type": "metadata.labels['app.kubernetes.io/component']",
    "training.kubeflow.org/job-name": "metadata.labels['app.kubernetes.io/instance']",
}


def kubeflow_field_ref(job: Job, var: Values, path: str) -> None:
    """An env var read from a label of Kubeflow's pods reads ours instead (their labels are never on our pods); a
    label with no counterpart is refused."""
    ref = ((var.get("valueFrom") or {}).get("fieldRef") or {}) if isinstance(var.get("valueFrom"), dict) else {}
    field = str(ref.get("fieldPath") or "")
    if "kubeflow.org/" not in field:
        return
    name = field.split("['", 1)[-1].rstrip("']")
    ours = KUBEFLOW_FIELDS.get(name)
    if ours is None:
        job.refuse(f"{path}.valueFrom.fieldRef", f"{field}: our pods carry no such label; DL_TASK_INDEX and the "
                   "app.kubernetes.io/component label say the pod's index and role")  # fmt: skip
        return
    ref["fieldPath"] = ours
    job.carried.append(f"{path} ({var.get('name')}) from {ours}, where Kubeflow's pods had {name}")
    if job.kind == "PyTorchJob" and name != "training.kubeflow.org/job-name":
        job.differs.append(f"{var.get('name')}: Master and Worker are one role here, so its worker i was Kubeflow's "
                           "Worker i-1 (the Master is worker 0) and its role reads worker")  # fmt: skip


def volumes(job: Job, vols: list[Values], mounts: list[Values], path: str, cpath: str, settings: Values) -> None:
    """Volumes and mounts as they are, except a memory-backed emptyDir at /dev/shm, which is the chart's own
    ``shm`` (enabled, with its size), and a volume at /tmp, which replaces the chart's ``tmp`` emptyDir."""
    by_name = {str(v.get("name")): v for v in vols}
    kept_mounts, dropped_volumes = [], set()
    for i, mount in enumerate(mounts):
        target = str(mount.get("mountPath", "")).rstrip("/")
        volume = by_name.get(str(mount.get("name")), {})
        empty = volume.get("emptyDir")
        if target == "/dev/shm" and isinstance(empty, dict) and empty.get("medium") == "Memory" and len(volume) == 2:
            settings["shm"] = {"enabled": True, **({"sizeLimit": empty["sizeLimit"]} if empty.get("sizeLimit") else {})}
            dropped_volumes.add(str(mount.get("name")))
            job.carried.append(f"{cpath}.volumeMounts[{i}] (/dev/shm, a memory emptyDir) as shm "
                               f"(sizeLimit {empty.get('sizeLimit') or 'the chart default 2Gi'})")  # fmt: skip
            continue
        if target == "/dev/shm":
            settings["shm"] = {"enabled": False}
        if target == "/tmp":
            settings["tmp"] = {"enabled": False}
        if target.startswith("/opt/dl-charts") or target.startswith("/etc/mpi"):
            job.refuse(f"{cpath}.volumeMounts[{i}].mountPath", f"{target} is where the chart mounts its own files; "
                       "mount the volume elsewhere")  # fmt: skip
        kept_mounts.append(copy.deepcopy(mount))
    kept = []
    for i, volume in enumerate(vols):
        name = str(volume.get("name"))
        if name in dropped_volumes:
            continue
        if name in OWN_VOLUMES:
            job.refuse(f"{path}.spec.volumes[{i}].name", f"{name!r} is a volume the chart has itself; rename it "
                       "(and its volumeMounts)")  # fmt: skip
        kept.append(copy.deepcopy(volume))
    if kept:
        settings["volumes"] = kept
    if kept_mounts:
        settings["volumeMounts"] = kept_mounts
    if "shm" not in settings:
        # the Kubeflow pod had the container runtime's /dev/shm of 64 MiB; the chart's default is 2Gi
        settings["shm"] = {"sizeLimit": "64Mi"}
