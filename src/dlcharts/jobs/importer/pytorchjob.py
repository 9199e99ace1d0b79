"""PyTorchJob (``kubeflow.org/v1``) as values of pytorch-dist: Master and Worker as one template of workers
(Master is worker 0), the program under the chart's torchrun, ``elasticPolicy`` as ``elastic.*``."""

from __future__ import annotations

from dlcharts.jobs.importer.common import Job
from dlcharts.jobs.importer.replicas import finish, image_entrypoint, port_from, replicas_of, role_pods
from dlcharts.jobs.importer.torchrun import nproc, torchrun_args
from dlcharts.jobs.importer.writer import Values

PT_ROLES = {"master": "worker", "worker": "worker"}


def convert(job: Job, doc: Values) -> None:
    spec, path, specs, number = replicas_of(job, doc, "pytorchReplicaSpecs", ("elasticPolicy", "nprocPerNode"),
                                            PT_ROLES)  # fmt: skip
    for rtype, (_, rspec) in specs.items():
        masters = rspec.get("replicas", 1)
        if rtype.lower() == "master" and isinstance(masters, int) and masters > 1:
            job.refuse(f"{path}.{rtype}.replicas", f"{masters} Masters: Kubeflow refuses more than one (the Master "
                       "is rank 0); set 1 and count the others as Worker replicas")  # fmt: skip
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
            image_entrypoint(job, pod, f"{path}.{rtype}.template.spec.containers", "every worker")
            started.add("entrypoint")
            if spec.get("elasticPolicy") is not None:
                job.refuse(f"{path}.{rtype}.template.spec.containers.command", "none, with elasticPolicy: the chart "
                           "wraps torchrun for elastic training, which an image's own entrypoint cannot be; write out "
                           "the torchrun command line")  # fmt: skip
        else:
            started.add(torchrun_args(job, pod.command, pod.args or [], f"{path}.{rtype} command", pod.settings))
    job.values["worker"] = number.get("worker", 0)
    job.carried.append(f"replicas: {number.get('worker', 0)} workers (Master and Worker together)")
    port_from(job, [p for p, _ in pods.values()], "pytorchjob-port", f"{path}.*.template")
    nproc(job, spec.get("nprocPerNode"), "spec.nprocPerNode")
    if spec.get("elasticPolicy") is not None:
        elastic(job, spec["elasticPolicy"], int(job.values["worker"]))
    if "nprocPerNode" not in job.values and started & {"python", "entrypoint"}:
        # `python` ran one process per pod: so does the chart's torchrun. The operator counted an entrypoint's
        # WORLD_SIZE with one process per pod and set no PET_NPROC_PER_NODE (torchrun's default is 1)
        job.values["nprocPerNode"] = 1
    finish(job, doc, spec, dict(list(pods.items())[:1]), path)


def elastic(job: Job, policy: Values, workers: int) -> None:
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
