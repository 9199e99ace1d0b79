"""TFJob (``kubeflow.org/v1``) as values of tensorflow-dist: Chief (or Master), PS, Worker and Evaluator as the
chart's roles, each with its own command."""

from __future__ import annotations

from dlcharts.jobs.importer.common import Job
from dlcharts.jobs.importer.replicas import finish, image_entrypoint, port_from, replicas_of, role_pods
from dlcharts.jobs.importer.writer import Values

TF_ROLES = {"chief": "chief", "master": "chief", "ps": "ps", "worker": "worker", "evaluator": "evaluator"}


def convert(job: Job, doc: Values) -> None:
    spec, path, specs, number = replicas_of(job, doc, "tfReplicaSpecs", ("successPolicy", "enableDynamicWorker"),
                                            TF_ROLES)  # fmt: skip
    for role, limit in (("chief", 1), ("evaluator", 1)):
        if number.get(role, 0) > limit:
            job.refuse(f"{path} {role}", f"{number[role]} {role} pods (Chief and Master together): at most {limit}")
    if not number.get("worker"):
        job.refuse(f"{path}.Worker", "tensorflow-dist needs at least one worker; a chief alone is one worker: "
                   "write it as Worker with replicas 1")  # fmt: skip
    pods = role_pods(job, specs, path, "tensorflow")
    for rtype, (pod, role) in pods.items():
        if pod.command is None:
            image_entrypoint(job, pod, f"{path}.{rtype}.template.spec.containers", f"{rtype} ({role})")
        else:
            pod.settings["command"] = pod.command
            pod.settings["args"] = pod.args or []
    driver = "chief" if number.get("chief") else "worker"
    for rtype, (pod, role) in pods.items():
        if pod.settings.get("imageEntrypoint") and role != driver:
            job.differs.append(f"{rtype}: never ends by itself, so its image runs in a native sidecar beside the "
                               f"chart's watchdog, which completes the pod once the {driver} pods are done (Kubeflow "
                               "deleted it); the kubelet restarts the sidecar in place if it fails")  # fmt: skip
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
