"""`dlcharts import FILE...`: Kubeflow training jobs as values files for our charts.

TFJob and PyTorchJob (``kubeflow.org/v1``), MPIJob (``kubeflow.org/v2beta1``) and TrainJob
(``trainer.kubeflow.org/v1alpha1`` on the ``torch-distributed`` runtime) become values for tensorflow-dist,
pytorch-dist and horovod-mpi: one values file per job. Every field of the manifest is either carried over
(listed in the file's header), dropped with the reason it changes nothing here (listed too), or refused with
its path and what to do: nothing is lost silently. Pod settings shared by every role go in ``defaults``, the
rest in ``roles.<role>``.
"""

from __future__ import annotations

import copy
import dataclasses
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import DLChartsError

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: what each Kubeflow kind becomes: (apiVersion, kind) -> chart
CHARTS = {
    ("kubeflow.org/v1", "TFJob"): "tensorflow-dist",
    ("kubeflow.org/v1", "PyTorchJob"): "pytorch-dist",
    ("kubeflow.org/v2beta1", "MPIJob"): "horovod-mpi",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "pytorch-dist",
}
#: role settings the chart's own values.yaml sets under roles.<role>: an imported value for them must be written
#: there too, or the chart's role default would win over one written in defaults
ROLE_DEFAULTS = {
    "tensorflow-dist": {"ps": {"gpu"}, "evaluator": {"gpu"}},
    "horovod-mpi": {"launcher": {"gpu", "resources", "shm"}},
}
#: volume names the charts use themselves (a values volume of the same name is refused at render)
OWN_VOLUMES = {"shm", "tmp", "scripts", "cluster", "mpi-config", "mpi-ssh-secret", "mpi-home", "mpi-etc"}
#: TrainJob runtimes that have no chart here, and what to do instead
OTHER_RUNTIMES = {
    "deepspeed-distributed": "DeepSpeed's MPI launcher has no chart here; DeepSpeed also starts under torchrun: "
    "import it as a PyTorchJob, or use charts/pytorch-dist with `deepspeed` in your program",
    "mlx-distributed": "MLX over MPI has no chart here (horovod-mpi runs Horovod, not MLX)",
    "jax-distributed": "JAX has no chart here",
    "xgboost-distributed": "XGBoost has no chart here",
}

Values = dict[str, Any]


class ImportRefused(DLChartsError):
    """A manifest has fields with no equivalent in our charts (every one is listed), or is not a job we convert."""


@dataclasses.dataclass
class Imported:
    """One job converted: its chart, its values and what the header says about them."""

    where: str  # file (and document number)
    kind: str
    name: str
    namespace: str
    chart: str
    values: Values
    carried: list[str]
    dropped: list[str]
    differs: list[str]

    def text(self, values_file: str) -> str:
        """The values file: a header naming the chart, the commands, what was carried over, what was dropped and
        what behaves differently; then the values."""
        ns = ["-n", self.namespace] if self.namespace else []
        chart = f"charts/{self.chart}"
        run = shlex.join(["dlcharts", "run", chart, "-f", values_file, "--release", self.name, *ns])
        install = shlex.join(["helm", "install", self.name, chart, *ns, "-f", values_file])
        lines = [
            f"# dlcharts import: {self.kind} {self.name} ({self.where}) as values of the chart {self.chart}",
            f"#   {run}",
            f"#   {install}",
            "# carried over:",
            *(f"#   - {line}" for line in self.carried),
        ]
        if self.dropped:
            lines += ["# dropped (nothing changes here without them):", *(f"#   - {line}" for line in self.dropped)]
        if self.differs:
            lines += ["# differs from Kubeflow:", *(f"#   - {line}" for line in self.differs)]
        first = [key for key in ORDER if key in self.values]
        ordered = {key: self.values[key] for key in [*first, *(k for k in self.values if k not in first)]}
        body = yaml.dump(ordered, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
        return "\n".join(lines) + "\n" + body


#: the top-level keys of a values file in this order: the job's shape first, then its settings
ORDER = ("chief", "ps", "worker", "evaluator", "nprocPerNode", "port", "elastic", "mpi", "kueue", "gang", "defaults")


class _Dumper(yaml.SafeDumper):
    """YAML with lists of numbers on one line (an ExitCode rule's exit codes), and no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = bool(data) and all(isinstance(item, int) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _list)


class _Job:
    """What one conversion collects: the values, and the lines of the header; refusals end it."""

    def __init__(self, where: str, doc: Values, chart: str) -> None:
        self.where, self.chart = where, chart
        self.kind = str(doc.get("kind"))
        meta = doc.get("metadata") or {}
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "")
        self.values: Values = {}
        self.carried: list[str] = []
        self.dropped: list[str] = []
        self.differs: list[str] = []
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
            self.differs,
        )  # fmt: skip


NO_COMMAND = "none: Kubeflow ran the image's entrypoint, the chart would run its benchmark; write it out as the command"

# ----- pods ------------------------------------------------------------------------------------------------------

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


def split_image(job: _Job, image: str, path: str) -> Values | None:
    """``repo[:tag][@digest]`` as our image value, or None (refused): our charts want a published tag."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    repository, tag = (name[:colon], name[colon + 1 :]) if colon > slash else (name, "")
    if not tag or tag == "latest":
        job.refuse(path, f"{image!r} has {'the tag latest' if tag else 'no tag'}: our charts run a published version "
                   "tag, so that every pod runs the same image; write the image with its version tag")  # fmt: skip
        return None
    return {"repository": repository, "tag": f"{tag}@{digest}" if digest else tag}


def convert_resources(job: _Job, resources: Values, path: str, settings: Values) -> None:
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


def convert_pod(job: _Job, template: Values, path: str, main: str) -> Pod | None:
    """A pod template (``path`` names it) as role settings. ``main`` names the main container as Kubeflow's
    operator knows it (tensorflow, pytorch); any name does when the pod has one container."""
    if not isinstance(template, dict):
        job.refuse(path, "expected a pod template (metadata, spec)")
        return None
    job.unknown(template, path, ("metadata", "spec"))
    settings: Values = {}
    meta = template.get("metadata") or {}
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
    names = [c.get("name") for c in containers]
    index = names.index(main) if main in names else 0 if len(containers) == 1 else None
    if index is None:
        job.refuse(f"{path}.spec.containers", f"no container named {main!r}, the one Kubeflow's operator runs")
        return None
    for i, other in enumerate(containers):
        if i != index:
            job.refuse(f"{path}.spec.containers[{i}]", f"a second container ({other.get('name')}): our charts run "
                       "one container per pod; build it into the image or run it as a job of its own")  # fmt: skip
    cpath = f"{path}.spec.containers[{index}]"
    container = containers[index]
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
    convert_resources(job, container.get("resources") or {}, f"{cpath}.resources", settings)
    volumes(job, spec.get("volumes") or [], container.get("volumeMounts") or [], path, cpath, settings)
    ports = {}
    for i, port in enumerate(container.get("ports") or []):
        ports[str(port.get("name") or f"#{i}")] = int(port.get("containerPort", 0))
    command = [str(a) for a in container["command"]] if container.get("command") else None
    args = [str(a) for a in container["args"]] if container.get("args") else None
    return Pod(settings, command, args, ports, str(spec.get("schedulerName") or ""))


def volumes(job: _Job, vols: list[Values], mounts: list[Values], path: str, cpath: str, settings: Values) -> None:
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


# ----- what every kind shares ------------------------------------------------------------------------------------


def replica_specs(job: _Job, specs: Any, path: str, roles: dict[str, str]) -> dict[str, tuple[str, Values]]:
    """Kubeflow replica type (any case) -> (our role, its replica spec); unknown types are refused."""
    found: dict[str, tuple[str, Values]] = {}
    if not isinstance(specs, dict) or not specs:
        job.refuse(path, "no replica specs")
        return found
    for rtype, spec in specs.items():
        role = roles.get(str(rtype).lower())
        if role is None:
            job.refuse(f"{path}.{rtype}", f"a replica type {job.chart} has no role for; it has "
                       f"{', '.join(sorted(set(roles.values())))}")  # fmt: skip
            continue
        job.unknown(spec or {}, f"{path}.{rtype}", ("replicas", "template", "restartPolicy"))
        found[str(rtype)] = (role, spec or {})
    return found


def restart_policy(job: _Job, policy: str, path: str, job_settings: Values, container: str) -> None:
    """A replica spec's restartPolicy as the Job's retries: Never -> no retry; OnFailure/Always -> the chart's
    retries (a failed pod is replaced, up to backoffLimitPerIndex times); ExitCode -> exit codes 1-127 fail the
    job at once (Kubeflow's permanent errors), 128 and above (signals) are retried."""
    if policy == "Never":
        job_settings["backoffLimitPerIndex"] = 0
    elif policy == "ExitCode":
        job_settings["podFailurePolicy"] = {
            "rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "FailJob",
                 "onExitCodes": {"containerName": container, "operator": "In", "values": list(range(1, 128))}},
            ]
        }  # fmt: skip
    elif policy not in ("OnFailure", "Always", ""):
        job.refuse(path, f"unknown restartPolicy {policy!r}")


def run_policy(job: _Job, policy: Values, path: str, gang_from_pods: str, total_pods: int) -> None:
    """spec.runPolicy as defaults.job.* and gang.*."""
    known = ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "cleanPodPolicy",
             "schedulingPolicy", "suspend", "managedBy")  # fmt: skip
    job.unknown(policy, path, known)
    settings = job.values.setdefault("defaults", {}).setdefault("job", {})
    for key in ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        if policy.get(key) is not None:
            settings[key] = policy[key]
            job.carried.append(f"{path}.{key} as defaults.job.{key} (each role's Job)")
    if policy.get("activeDeadlineSeconds") is None:
        job.differs.append("no activeDeadlineSeconds in the manifest: the chart's backstop of 7 days applies "
                           "(defaults.job.activeDeadlineSeconds=null for none)")  # fmt: skip
    clean = policy.get("cleanPodPolicy")
    if clean is not None:
        if clean not in ("All", "Running", "None"):
            job.refuse(f"{path}.cleanPodPolicy", f"unknown value {clean!r}")
        job.drop(f"{path}.cleanPodPolicy ({clean})", "long-running roles (parameter servers, sshd workers) exit by "
                 "themselves when the job ends and the Job controller ends what is left, so no pod of a finished "
                 "job holds a node or GPU; finished pods stay, with their logs, until "
                 "defaults.job.ttlSecondsAfterFinished or helm uninstall")  # fmt: skip
    if policy.get("suspend"):
        job.refuse(f"{path}.suspend", "our releases start when installed; hold a job with a Kueue queue "
                   f"(metadata.labels.{QUEUE_LABEL}) instead")  # fmt: skip
    managed = policy.get("managedBy")
    if managed and "multikueue" in str(managed):
        job.refuse(f"{path}.managedBy", f"{managed}: MultiKueue dispatch of a release is not supported")
    elif managed:
        job.drop(f"{path}.managedBy ({managed})", "Helm and the Job controller run the job")
    scheduling = policy.get("schedulingPolicy")
    if scheduling is not None or gang_from_pods:
        gang(job, scheduling or {}, f"{path}.schedulingPolicy", gang_from_pods, total_pods)


def gang(job: _Job, policy: Values, path: str, scheduler: str, total_pods: int) -> None:
    """Gang scheduling: the pods' schedulerName tells which gang scheduler the operator was set up with."""
    job.unknown(policy, path, ("minAvailable", "queue", "priorityClass", "scheduleTimeoutSeconds", "minResources"))
    values: Values = {}
    if scheduler == "volcano":
        values["scheduler"] = "volcano"
    elif scheduler:
        values.update(scheduler="scheduler-plugins", schedulerName=scheduler)
    else:
        job.refuse(path, "gang scheduling, but the pods name no gang scheduler: the training operator's "
                   "--gang-scheduler-name decided it. Set spec.template.spec.schedulerName of every replica to "
                   "volcano or to your scheduler-plugins scheduler")  # fmt: skip
        return
    minimum = policy.get("minAvailable")
    if minimum is not None and minimum != total_pods:
        job.refuse(f"{path}.minAvailable", f"{minimum} of {total_pods} pods: our gang's minMember is every pod; "
                   "remove it")  # fmt: skip
    if policy.get("queue"):
        if values["scheduler"] != "volcano":
            job.refuse(f"{path}.queue", "a queue of Volcano's, but the pods use scheduler-plugins")
        values["queue"] = policy["queue"]
    if policy.get("priorityClass"):
        if values["scheduler"] != "volcano":
            job.refuse(f"{path}.priorityClass", "a PodGroup priorityClassName is Volcano's")
        values["priorityClassName"] = policy["priorityClass"]
    if policy.get("scheduleTimeoutSeconds") is not None:
        if values["scheduler"] == "volcano":
            job.refuse(f"{path}.scheduleTimeoutSeconds", "scheduler-plugins' setting, but the pods use Volcano")
        values["scheduleTimeoutSeconds"] = policy["scheduleTimeoutSeconds"]
    if policy.get("minResources"):
        job.refuse(f"{path}.minResources", "our PodGroup has no minResources; remove it")
    job.values["gang"] = values
    job.carried.append(f"gang scheduling ({scheduler}) and {path} as gang.*")


def metadata(job: _Job, meta: Values, labels_path: str = "metadata.labels") -> None:
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


def layout(job: _Job, roles: dict[str, Values]) -> None:
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


def counts(job: _Job, specs: dict[str, tuple[str, Values]], path: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for rtype, (role, spec) in specs.items():
        replicas = spec.get("replicas", 1)
        if not isinstance(replicas, int) or replicas < 0:
            job.refuse(f"{path}.{rtype}.replicas", f"{replicas!r} is not a count")
            continue
        found[role] = found.get(role, 0) + replicas
    return found


def role_pods(job: _Job, specs: dict[str, tuple[str, Values]], path: str, main: str) -> dict[str, tuple[Pod, str]]:
    """Each replica type's pod template converted, with its restartPolicy in the role's job settings."""
    pods: dict[str, tuple[Pod, str]] = {}
    for rtype, (role, spec) in specs.items():
        pod = convert_pod(job, spec.get("template") or {}, f"{path}.{rtype}.template", main)
        if pod is None:
            continue
        job_settings: Values = {}
        restart_policy(job, str(spec.get("restartPolicy") or ""), f"{path}.{rtype}.restartPolicy", job_settings, role)
        if job_settings:
            pod.settings["job"] = job_settings
            how = (
                "no retry (job.backoffLimitPerIndex 0)"
                if "backoffLimitPerIndex" in job_settings
                else "a job.podFailurePolicy: exit codes 1-127 fail the job, signals are retried"
            )
            job.carried.append(f"{path}.{rtype}.restartPolicy ({spec.get('restartPolicy')}) as {how}")
        pods[rtype] = (pod, role)
    return pods


def common_scheduler(job: _Job, pods: Iterable[Pod], path: str) -> str:
    names = {pod.scheduler for pod in pods}
    if len(names) > 1:
        job.refuse(path, f"replicas name different schedulers ({', '.join(sorted(names))}); our pods use one")
    name = next(iter(names), "")
    if name and name != "volcano" and "scheduler-plugins" not in name and "coscheduling" not in name:
        # not a gang scheduler: the pods' schedulerName, carried as it is
        return ""
    return name


def port_from(job: _Job, pods: Iterable[Pod], name: str, path: str) -> None:
    """The operator's named port (tfjob-port, pytorchjob-port) as the chart's ``port``."""
    found = {pod.ports[name] for pod in pods if name in pod.ports}
    if len(found) > 1:
        job.refuse(f"{path} ports named {name}", f"differ between replicas ({sorted(found)}); our roles share one")
    elif found:
        job.values["port"] = found.pop()
        job.carried.append(f"the container port {name} as port")


def intro(job: _Job) -> None:
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


def replicas_of(
    job: _Job, doc: Values, field: str, known: tuple[str, ...], roles: dict[str, str]
) -> tuple[Values, str, dict[str, tuple[str, Values]], dict[str, int]]:
    """What the replica-spec kinds start from: their spec (its fields checked), the path of its replica specs
    (``spec.<field>``), each replica type's role and spec, and each role's pod count."""
    spec = doc.get("spec") or {}
    job.unknown(spec, "spec", (field, "runPolicy", *known))
    path = f"spec.{field}"
    specs = replica_specs(job, spec.get(field), path, roles)
    return spec, path, specs, counts(job, specs, path)


# ----- TFJob -----------------------------------------------------------------------------------------------------

TF_ROLES = {"chief": "chief", "master": "chief", "ps": "ps", "worker": "worker", "evaluator": "evaluator"}


def tfjob(job: _Job, doc: Values) -> None:
    spec, path, specs, number = replicas_of(job, doc, "tfReplicaSpecs", ("successPolicy", "enableDynamicWorker"),
                                            TF_ROLES)  # fmt: skip
    for role, limit in (("chief", 1), ("evaluator", 1)):
        if number.get(role, 0) > limit:
            job.refuse(f"{path} {role}", f"{number[role]} {role} pods (Chief and Master together): at most {limit}")
    if not number.get("worker"):
        job.refuse(f"{path}.Worker", "tensorflow-dist needs at least one worker; a chief alone is one worker: "
                   "write it as Worker with replicas 1")  # fmt: skip
    pods = role_pods(job, specs, path, "tensorflow")
    for rtype, (pod, _) in pods.items():
        if pod.command is None:
            job.refuse(f"{path}.{rtype}.template.spec.containers.command", NO_COMMAND)
        else:
            pod.settings["command"] = pod.command
            pod.settings["args"] = pod.args or []
    port_from(job, [p for p, _ in pods.values()], "tfjob-port", f"{path}.*.template")
    for role in ("chief", "ps", "worker", "evaluator"):
        if number.get(role):
            job.values[role] = number[role]
    job.carried.append("replicas: " + ", ".join(f"{r} {number[r]}" for r in ("chief", "ps", "worker", "evaluator")
                                                 if number.get(r)))  # fmt: skip
    if spec.get("successPolicy") not in (None, "", "AllWorkers"):
        job.refuse("spec.successPolicy", f"unknown value {spec['successPolicy']!r}")
    elif spec.get("successPolicy") == "AllWorkers":
        job.refuse("spec.successPolicy", "AllWorkers: tensorflow-dist's job succeeds with the chief (or worker 0), "
                   "as Kubeflow's default; remove it")  # fmt: skip
    if spec.get("enableDynamicWorker"):
        job.refuse("spec.enableDynamicWorker", "workers cannot join a running release; remove it")
    finish(job, doc, spec, pods, path)


def finish(job: _Job, doc: Values, spec: Values, pods: dict[str, tuple[Pod, str]], path: str) -> None:
    """What every replica-spec kind ends with: run policy, metadata, the role layout."""
    scheduler = common_scheduler(job, [p for p, _ in pods.values()], f"{path}.*.template.spec.schedulerName")
    total = sum(v for k, v in job.values.items() if k in ("chief", "ps", "worker", "evaluator") and isinstance(v, int))
    if job.chart == "horovod-mpi":
        total = 1 + int(job.values.get("worker", 0))
    run_policy(job, spec.get("runPolicy") or {}, "spec.runPolicy", scheduler, total)
    roles: dict[str, Values] = {}
    for pod, role in pods.values():
        if scheduler:
            pod.settings.pop("schedulerName", None)
        roles.setdefault(role, pod.settings)
    layout(job, roles)
    metadata(job, doc.get("metadata") or {})
    job.carried.append("of every role: image, command and args, env, resources and GPUs, node selectors, "
                       "tolerations, affinity, volumes and mounts, pod labels and annotations")  # fmt: skip
    intro(job)


# ----- PyTorchJob ------------------------------------------------------------------------------------------------

#: torchrun flags the chart sets through PET_* variables: from the manifest's command they would override them
TORCHRUN_OWN = {"--nnodes", "--nproc-per-node", "--nproc_per_node", "--node-rank", "--node_rank", "--rdzv-backend",
                "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id", "--master-addr",
                "--master_addr", "--master-port", "--master_port", "--max-restarts", "--max_restarts",
                "--standalone"}  # fmt: skip


def torchrun_args(job: _Job, command: list[str], args: list[str], path: str, settings: Values) -> str:
    """The program under the chart's torchrun: ``python [-u] script.py ...`` and ``torchrun ...`` become
    ``args`` (torchrun stays the command and gives the program RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
    MASTER_PORT, as the operator did); any other command is kept as it is, without torchrun. Returns how the
    manifest started it: torchrun, python or as-is; a torchrun --nproc-per-node becomes nprocPerNode."""
    line = [*command, *args]
    head = Path(line[0]).name
    rest = line[1:]
    if head in ("python", "python3") and rest[:2] == ["-m", "torch.distributed.run"]:
        head, rest = "torchrun", rest[2:]
    if head == "torchrun":
        kept, i = [], 0
        while i < len(rest) and rest[i].startswith("-"):
            flag, _, value = rest[i].partition("=")
            takes_value = not value and flag != "--standalone" and i + 1 < len(rest)
            value = value or (rest[i + 1] if takes_value else "")
            if flag in ("--nproc-per-node", "--nproc_per_node"):
                nproc(job, value, f"{path} {flag}")
            elif flag in TORCHRUN_OWN:
                job.drop(f"{path} {flag}", "the chart sets it for torchrun (PET_* variables)")
            else:
                kept += rest[i : i + 1 + takes_value]
            i += 1 + takes_value
        settings["args"] = [*kept, *rest[i:]]
        job.carried.append(f"{path} under the chart's torchrun (args)")
        return "torchrun"
    if head in ("python", "python3") and rest[:1] == ["-u"]:
        settings.setdefault("env", []).append({"name": "PYTHONUNBUFFERED", "value": "1"})
        rest = rest[1:]
        job.carried.append(f"{path} python -u as PYTHONUNBUFFERED=1")
    if head in ("python", "python3") and rest and (not rest[0].startswith("-") or rest[0] == "-m"):
        settings["args"] = rest
        job.carried.append(f"{path} ({shlex.join(line[:3])} ...) under the chart's torchrun, which sets RANK, "
                           "WORLD_SIZE, MASTER_ADDR and MASTER_PORT for it, one process per pod")  # fmt: skip
        return "python"
    settings["command"], settings["args"] = command, args
    job.differs.append(f"{path} runs as it is, without torchrun: the chart sets MASTER_ADDR, MASTER_PORT and "
                       "PET_*, not RANK or WORLD_SIZE as the operator did: start it with torchrun")  # fmt: skip
    return "as-is"


PT_ROLES = {"master": "worker", "worker": "worker"}


def pytorchjob(job: _Job, doc: Values) -> None:
    spec, path, specs, number = replicas_of(job, doc, "pytorchReplicaSpecs", ("elasticPolicy", "nprocPerNode"),
                                            PT_ROLES)  # fmt: skip
    pods = role_pods(job, specs, path, "pytorch")
    templates = {rtype: pod.settings for rtype, (pod, _) in pods.items()}
    if len(templates) == 2:
        master, worker = templates.values()
        differ = sorted(k for k in {*master, *worker} if master.get(k) != worker.get(k))
        lines = {rtype: (pod.command, pod.args) for rtype, (pod, _) in pods.items()}
        if differ or len(set(map(str, lines.values()))) > 1:
            job.refuse(f"{path}.Master", "Master and Worker pods differ ("
                       f"{', '.join(differ) or 'command or args'}): pytorch-dist runs every node from one template, "
                       "worker 0 in Master's place; make them alike")  # fmt: skip
    if "Master" in specs or "master" in specs:
        job.carried.append("Master as worker 0 (it hosts the c10d rendezvous, as the master did)")
    started = set()
    for rtype, (pod, _) in list(pods.items())[:1]:  # Master and Worker are alike (or refused above)
        if pod.command is None:
            job.refuse(f"{path}.{rtype}.template.spec.containers.command", NO_COMMAND)
        else:
            started.add(torchrun_args(job, pod.command, pod.args or [], f"{path}.{rtype} command", pod.settings))
    job.values["worker"] = number.get("worker", 0)
    job.carried.append(f"replicas: {number.get('worker', 0)} workers (Master and Worker together)")
    port_from(job, [p for p, _ in pods.values()], "pytorchjob-port", f"{path}.*.template")
    nproc(job, spec.get("nprocPerNode"), "spec.nprocPerNode")
    if spec.get("elasticPolicy") is not None:
        elastic(job, spec["elasticPolicy"], int(job.values["worker"]))
    if "nprocPerNode" not in job.values and started == {"python"}:
        job.values["nprocPerNode"] = 1  # `python` ran one process per pod: so does the chart's torchrun
    finish(job, doc, spec, dict(list(pods.items())[:1]), path)


def nproc(job: _Job, value: Any, path: str) -> None:
    if value is None:
        return
    text = str(value)
    if text.isdigit():
        job.values["nprocPerNode"] = int(text)
    elif text in ("auto", "gpu", "cpu"):
        job.values["nprocPerNode"] = text
    else:
        job.refuse(path, f"{value!r} is not a count or auto / gpu / cpu")
        return
    job.carried.append(f"{path} as nprocPerNode")


def elastic(job: _Job, policy: Values, workers: int) -> None:
    path = "spec.elasticPolicy"
    known = ("minReplicas", "maxReplicas", "rdzvBackend", "rdzvPort", "rdzvHost", "rdzvId", "rdzvConf",
             "nProcPerNode", "maxRestarts", "metrics")  # fmt: skip
    job.unknown(policy, path, known)
    low = policy.get("minReplicas", workers)
    high = policy.get("maxReplicas", workers)
    if not all(isinstance(v, int) and v >= 1 for v in (low, high)):
        job.refuse(path, f"minReplicas {low!r} and maxReplicas {high!r} must be counts")
        return
    if low > workers:
        job.refuse(f"{path}.minReplicas", f"{low} is above the {workers} workers the job starts")
    values: Values = {"minWorkers": low}
    if policy.get("maxRestarts") is not None:
        values["maxRestarts"] = policy["maxRestarts"]
    job.values["elastic"] = values
    job.carried.append(f"{path}: minReplicas {low} as elastic.minWorkers (PET_NNODES={low}:{workers})"
                       + (", maxRestarts as elastic.maxRestarts" if "maxRestarts" in values else ""))  # fmt: skip
    if policy.get("metrics"):
        job.refuse(f"{path}.metrics", "autoscaling the workers (a HorizontalPodAutoscaler) has no equivalent: a "
                   "release runs the workers it starts; remove it")  # fmt: skip
    if high != workers:
        job.drop(f"{path}.maxReplicas ({high})", f"without metrics nothing scaled the job beyond its {workers} "
                 f"workers; the chart's upper bound is worker: set worker={high} to start {high}")  # fmt: skip
    backend = policy.get("rdzvBackend")
    if backend not in (None, "c10d"):
        job.refuse(f"{path}.rdzvBackend", f"{backend}: the chart's rendezvous is c10d on worker 0; remove it")
    if policy.get("rdzvPort") is not None:
        job.values["port"] = policy["rdzvPort"]
        job.carried.append(f"{path}.rdzvPort as port")
    if policy.get("rdzvHost"):
        job.refuse(f"{path}.rdzvHost", "the rendezvous is worker 0 of the release; remove it")
    if policy.get("rdzvId"):
        job.drop(f"{path}.rdzvId", "the chart names the rendezvous after the release")
    if policy.get("rdzvConf"):
        job.refuse(f"{path}.rdzvConf", "the chart sets no rendezvous configuration; remove it (or set PET_RDZV_CONF "
                   "in defaults.env)")  # fmt: skip
    nproc(job, policy.get("nProcPerNode"), f"{path}.nProcPerNode")


# ----- MPIJob ----------------------------------------------------------------------------------------------------

MPI_ROLES = {"launcher": "launcher", "worker": "worker"}
MPI_IMPLEMENTATIONS = {"OpenMPI": "openmpi", "Intel": "intel", "MPICH": "mpich"}


def mpijob(job: _Job, doc: Values) -> None:
    known = ("slotsPerWorker", "sshAuthMountPath", "launcherCreationPolicy", "mpiImplementation",
             "runLauncherAsWorker")  # fmt: skip
    spec, path, specs, number = replicas_of(job, doc, "mpiReplicaSpecs", known, MPI_ROLES)
    if number.get("launcher") != 1:
        job.refuse(f"{path}.Launcher", "an MPIJob has one launcher")
    if not number.get("worker"):
        job.refuse(f"{path}.Worker", "horovod-mpi needs at least one worker")
    pods = role_pods(job, specs, path, "")
    for rtype, (pod, role) in pods.items():
        where = f"{path}.{rtype}.template.spec.containers"
        if role == "launcher":
            if pod.command is None:
                job.refuse(f"{where}.command", "none: write out the launch line (mpirun or horovodrun ...)")
            else:
                pod.settings["args"] = [*pod.command, *(pod.args or [])]
                job.carried.append(f"{where} command and args as roles.launcher.args: the launch line, run by "
                                   "the chart's launcher after every worker's sshd answers")  # fmt: skip
        elif pod.command is not None and "sshd" in Path(pod.command[0]).name:
            job.drop(f"{where} command ({shlex.join(pod.command + (pod.args or []))})",
                     "the chart runs the workers' sshd itself, with the release's key")  # fmt: skip
        elif pod.command is not None or pod.args is not None:
            job.refuse(f"{where}.command", "the workers run sshd, through which the launcher starts the ranks; "
                       "remove the command (the launch line goes in the launcher)")  # fmt: skip
    job.values["worker"] = number.get("worker", 0)
    job.carried.append(f"replicas: launcher 1, worker {number.get('worker', 0)}")
    slots = spec.get("slotsPerWorker")
    worker_gpus = next((p.settings["gpu"].get("count") for p, r in pods.values() if r == "worker"), 0)
    if slots is not None:
        if worker_gpus and slots != worker_gpus:
            job.refuse("spec.slotsPerWorker", f"{slots} with {worker_gpus} GPUs per worker: horovod-mpi's slots "
                       "follow the whole-GPU count; remove it or make them equal")  # fmt: skip
        else:
            job.values["mpi"] = {"slots": slots}
            job.carried.append("spec.slotsPerWorker as mpi.slots")
    implementation = spec.get("mpiImplementation")
    if implementation is not None:
        if implementation not in MPI_IMPLEMENTATIONS:
            job.refuse("spec.mpiImplementation", f"unknown value {implementation!r}")
        else:
            job.values.setdefault("mpi", {})["implementation"] = MPI_IMPLEMENTATIONS[implementation]
            job.carried.append("spec.mpiImplementation as mpi.implementation")
    if spec.get("sshAuthMountPath"):
        job.drop("spec.sshAuthMountPath", "the chart mounts the release's SSH key where its ssh user reads it")
    if spec.get("launcherCreationPolicy"):
        job.drop(f"spec.launcherCreationPolicy ({spec['launcherCreationPolicy']})",
                 "the chart's launcher waits until every worker's sshd answers before it launches")  # fmt: skip
    launcher_gpus = next((p.settings["gpu"].get("count") for p, r in pods.values() if r == "launcher"), 0)
    if spec.get("runLauncherAsWorker") and not launcher_gpus:
        job.refuse("spec.runLauncherAsWorker", "the chart's launcher runs ranks only with GPUs "
                   "(roles.launcher.gpu.count > 0); give the launcher GPU limits or remove it")  # fmt: skip
    elif launcher_gpus and not spec.get("runLauncherAsWorker"):
        job.refuse(f"{path}.Launcher resources", "GPUs on the launcher: the chart's launcher then runs ranks too "
                   "(runLauncherAsWorker); set runLauncherAsWorker: true or remove them")  # fmt: skip
    finish(job, doc, spec, pods, path)


# ----- TrainJob --------------------------------------------------------------------------------------------------

TRAINER_FIELDS = ("image", "command", "args", "env", "numNodes", "resourcesPerNode", "numProcPerNode")
OVERRIDE_SPEC = {"nodeSelector": "nodeSelector", "affinity": "affinity", "tolerations": "tolerations",
                 "serviceAccountName": "serviceAccountName", "imagePullSecrets": "imagePullSecrets"}  # fmt: skip


def trainjob(job: _Job, doc: Values) -> None:
    spec = doc.get("spec") or {}
    known = ("runtimeRef", "trainer", "initializer", "labels", "annotations", "podTemplateOverrides",
             "podSpecOverrides", "suspend", "managedBy", "activeDeadlineSeconds", "runtimePatches",
             "datasetConfig", "modelConfig")  # fmt: skip
    job.unknown(spec, "spec", known)
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
    trainer = spec.get("trainer") or {}
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


def pod_override(job: _Job, override: Values, path: str, settings: Values) -> None:
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


# ----- files -----------------------------------------------------------------------------------------------------

CONVERTERS: dict[str, Callable[[_Job, Values], None]] = {
    "TFJob": tfjob,
    "PyTorchJob": pytorchjob,
    "MPIJob": mpijob,
    "TrainJob": trainjob,
}


def convert(doc: Any, where: str) -> Imported:
    """One manifest (a parsed YAML document) as an :class:`Imported`; :class:`ImportRefused` lists every field
    without an equivalent."""
    if not isinstance(doc, dict):
        raise ImportRefused(f"{where}: expected a Kubernetes object (a mapping), got a {type(doc).__name__}")
    api, kind = doc.get("apiVersion"), doc.get("kind")
    chart = CHARTS.get((str(api), str(kind)))
    if chart is None:
        known = ", ".join(f"{k} {a}" for a, k in CHARTS)
        same = [a for a, k in CHARTS if k == kind]
        hint = f" (this importer reads {kind} {same[0]})" if same else ""
        raise ImportRefused(f"{where}: {kind} {api}{hint} is not a job dlcharts import converts; it reads {known}")
    job = _Job(where, doc, chart)
    job.unknown(doc, "", ("apiVersion", "kind", "metadata", "spec", "status"))
    CONVERTERS[str(kind)](job, doc)
    return job.result()


def read(path: Path) -> list[Imported]:
    """Every job of a (multi-document) YAML file; every refusal of the file in one error."""
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except FileNotFoundError:
        raise DLChartsError(f"{path}: no such file") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DLChartsError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not docs:
        raise ImportRefused(f"{path}: no manifest in it")
    jobs, problems = [], []
    for i, doc in enumerate(docs):
        try:
            jobs.append(convert(doc, f"{path}" if len(docs) == 1 else f"{path} document {i + 1}"))
        except ImportRefused as exc:
            problems.append(str(exc))
    if problems:
        raise ImportRefused("\n".join(problems))
    return jobs


def file_name(job: Imported) -> str:
    return f"{job.name}.yaml"


def write(jobs: list[Imported], out: Path | None) -> list[tuple[Imported, Path | None, str]]:
    """Where each job's values go: ``out`` (a .yaml file for one job, else a folder, one ``<name>.yaml`` each) or
    stdout (one job). Returns (job, path or None for stdout, text); writes nothing when any target clashes."""
    names = [file_name(job) for job in jobs]
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise DLChartsError(f"several jobs are named alike ({', '.join(twice)}): import them one file at a time")
    if out is None:
        if len(jobs) > 1:
            raise DLChartsError(f"{len(jobs)} jobs: give -o FOLDER for their values files (one per job)")
        return [(jobs[0], None, jobs[0].text(file_name(jobs[0])))]
    if out.suffix in (".yaml", ".yml") and not out.is_dir():
        if len(jobs) > 1:
            raise DLChartsError(f"-o {out}: {len(jobs)} jobs need a folder, one values file each")
        targets = [out]
    else:
        out.mkdir(parents=True, exist_ok=True)
        targets = [out / name for name in names]
    done: list[tuple[Imported, Path | None, str]] = []
    for job, target in zip(jobs, targets, strict=True):
        text = job.text(str(target))
        target.write_text(text, encoding="utf-8")
        done.append((job, target, text))
    return done
