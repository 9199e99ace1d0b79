"""What the replica-spec kinds (TFJob, PyTorchJob, MPIJob) share: replica types as our roles and their pod counts,
each type's pod template with its restartPolicy as the Job's retries, ``spec.runPolicy`` (the Job's limits, gang
scheduling), the operator's named port, and :func:`finish`, which each of them ends with."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dlcharts.jobs.importer.common import QUEUE_LABEL, Job, intro, layout, metadata
from dlcharts.jobs.importer.pods import Pod, convert_pod
from dlcharts.jobs.importer.writer import Values

#: the environment Kubeflow's operator gave a program it did not start, which the chart gives in entrypoint mode
ENTRYPOINT_ENV = {
    "PyTorchJob": "MASTER_ADDR, MASTER_PORT, WORLD_SIZE (pods x nprocPerNode), RANK (the pod's index; worker 0 is the "
    "Master), PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT, PYTHONUNBUFFERED=1, "
    "and PET_RDZV_* (c10d on worker 0) for a torchrun entrypoint",
    "TFJob": "TF_CONFIG (cluster, task type and index, environment cloud), as an env var of the pod",
    "MPIJob": "the hostfile at /etc/mpi/hostfile and OMPI_MCA_orte_default_hostfile, "
    "OMPI_MCA_orte_keep_fqdn_hostnames, OMPI_MCA_plm_rsh_args (Intel MPI: I_MPI_HYDRA_HOST_FILE; MPICH: "
    "HYDRA_HOST_FILE); the launcher starts once every worker's sshd accepts the release's key (the mpi-wait init "
    "container)",
}


def image_entrypoint(job: Job, pod: Pod, path: str, roles: str) -> None:
    """A container without ``command``: the role runs its image's own entrypoint (imageEntrypoint), with the
    manifest's args (else the image's CMD) and the env the operator would have set; the header says so."""
    pod.settings["imageEntrypoint"] = True
    if pod.args is not None:
        pod.settings["args"] = pod.args
    job.mode.append(f"{roles}: the image's own entrypoint ({path} has no command), as {job.kind}'s operator did: "
                    f"imageEntrypoint true, {'the manifest args as args' if pod.args else 'no args (the image CMD)'}; "
                    f"the chart sets {ENTRYPOINT_ENV[job.kind]}")  # fmt: skip


def replica_specs(job: Job, specs: Any, path: str, roles: dict[str, str]) -> dict[str, tuple[str, Values]]:
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


def restart_policy(job: Job, policy: str, path: str, job_settings: Values, container: str) -> None:
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


def run_policy(job: Job, policy: Values, path: str, gang_from_pods: str, total_pods: int) -> None:
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


def gang(job: Job, policy: Values, path: str, scheduler: str, total_pods: int) -> None:
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


def counts(job: Job, specs: dict[str, tuple[str, Values]], path: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for rtype, (role, spec) in specs.items():
        replicas = spec.get("replicas", 1)
        if not isinstance(replicas, int) or replicas < 0:
            job.refuse(f"{path}.{rtype}.replicas", f"{replicas!r} is not a count")
            continue
        found[role] = found.get(role, 0) + replicas
    return found


def role_pods(job: Job, specs: dict[str, tuple[str, Values]], path: str, main: str) -> dict[str, tuple[Pod, str]]:
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


def common_scheduler(job: Job, pods: Iterable[Pod], path: str) -> str:
    names = {pod.scheduler for pod in pods}
    if len(names) > 1:
        job.refuse(path, f"replicas name different schedulers ({', '.join(sorted(names))}); our pods use one")
    name = next(iter(names), "")
    if name and name != "volcano" and "scheduler-plugins" not in name and "coscheduling" not in name:
        # not a gang scheduler: the pods' schedulerName, carried as it is
        return ""
    return name


def port_from(job: Job, pods: Iterable[Pod], name: str, path: str) -> None:
    """The operator's named port (tfjob-port, pytorchjob-port) as the chart's ``port``."""
    found = {pod.ports[name] for pod in pods if name in pod.ports}
    if len(found) > 1:
        job.refuse(f"{path} ports named {name}", f"differ between replicas ({sorted(found)}); our roles share one")
    elif found:
        job.values["port"] = found.pop()
        job.carried.append(f"the container port {name} as port")


def replicas_of(
    job: Job, doc: Values, field: str, known: tuple[str, ...], roles: dict[str, str]
) -> tuple[Values, str, dict[str, tuple[str, Values]], dict[str, int]]:
    """What the replica-spec kinds start from: their spec (its fields checked), the path of its replica specs
    (``spec.<field>``), each replica type's role and spec, and each role's pod count."""
    spec = doc.get("spec") or {}
    job.unknown(spec, "spec", (field, "runPolicy", *known))
    path = f"spec.{field}"
    specs = replica_specs(job, spec.get(field), path, roles)
    return spec, path, specs, counts(job, specs, path)


def finish(job: Job, doc: Values, spec: Values, pods: dict[str, tuple[Pod, str]], path: str) -> None:
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
