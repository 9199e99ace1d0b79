"""MPIJob (``kubeflow.org/v2beta1``) as values of horovod-mpi: the launcher's launch line, workers that run the
chart's sshd, slots per worker and the MPI implementation."""

from __future__ import annotations

import shlex
from pathlib import Path

from dlcharts.jobs.importer.common import Job
from dlcharts.jobs.importer.replicas import finish, image_entrypoint, replicas_of, role_pods
from dlcharts.jobs.importer.writer import Values

MPI_ROLES = {"launcher": "launcher", "worker": "worker"}
MPI_IMPLEMENTATIONS = {"OpenMPI": "openmpi", "Intel": "intel", "MPICH": "mpich"}


def convert(job: Job, doc: Values) -> None:
    known = ("slotsPerWorker", "sshAuthMountPath", "launcherCreationPolicy", "mpiImplementation",
             "runLauncherAsWorker")  # fmt: skip
    spec, path, specs, number = replicas_of(job, doc, "mpiReplicaSpecs", known, MPI_ROLES)
    if number.get("launcher") != 1:
        job.refuse(f"{path}.Launcher", "an MPIJob has one launcher")
    if not number.get("worker"):
        job.refuse(f"{path}.Worker", "horovod-mpi needs at least one worker")
    pods = role_pods(job, specs, path, "")
    launcher_entrypoint = False
    for rtype, (pod, role) in pods.items():
        where = f"{path}.{rtype}.template.spec.containers"
        if role == "launcher":
            if pod.command is None:
                image_entrypoint(job, pod, where, "the launcher")
                launcher_entrypoint = True
            else:
                pod.settings["args"] = [*pod.command, *(pod.args or [])]
                job.carried.append(f"{where} command and args as roles.launcher.args: the launch line, run by "
                                   "the chart's launcher after every worker's sshd answers")  # fmt: skip
        elif (line := [*(pod.command or []), *(pod.args or [])]) and "sshd" in Path(line[0]).name:
            field = "command" if pod.command else "args"  # mpi-operator's examples start sshd either way
            job.drop(f"{where} {field} ({shlex.join(line)})",
                     "the chart runs the workers' sshd itself, with the release's key")  # fmt: skip
        elif pod.command is not None or pod.args is not None:
            field = "command" if pod.command is not None else "args"
            job.refuse(f"{where}.{field}", "the workers run sshd, through which the launcher starts the ranks; "
                       f"remove the {field} (the launch line goes in the launcher)")  # fmt: skip
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
    if launcher_entrypoint and launcher_gpus:
        job.refuse(f"{path}.Launcher", "GPUs on a launcher without command: its ranks' sshd runs under the chart's "
                   "launcher wrapper, which the image's own entrypoint replaces; write out the launch line as the "
                   "command, or remove the launcher's GPUs")  # fmt: skip
    if spec.get("runLauncherAsWorker") and not launcher_gpus:
        job.refuse("spec.runLauncherAsWorker", "the chart's launcher runs ranks only with GPUs "
                   "(roles.launcher.gpu.count > 0); give the launcher GPU limits or remove it")  # fmt: skip
    elif launcher_gpus and not spec.get("runLauncherAsWorker"):
        job.refuse(f"{path}.Launcher resources", "GPUs on the launcher: the chart's launcher then runs ranks too "
                   "(runLauncherAsWorker); set runLauncherAsWorker: true or remove them")  # fmt: skip
    finish(job, doc, spec, pods, path)
