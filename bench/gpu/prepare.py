"""`python -m bench.gpu prepare`: render each case's chart with the real helm (this machine has it; the device
machine has not) and write what one worker pod of it gets into the plan, a JSON file the device run reads.

Per case the plan holds the pod's main container as rendered (verbatim), its volumes, the data of every ConfigMap
it mounts (the chart's benchmark program among them), and what the kubelet would hand the program: the environment
with the completion-index fieldRef resolved for pod 0 and $(VAR) references expanded, and command + args expanded
likewise (dlcharts.podenv, which the tests of the pods' wiring use too). A variable the kubelet would set from a
source podenv does not resolve (another fieldRef, a Secret) stops the prepare, naming it: the run would otherwise
lack it silently. Also the host names of the release's pods, which the run maps to 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.gpu import plan
from dlcharts import podenv
from dlcharts.render import Rendered, Renderer, RenderRequest
from dlcharts.utils.git import git


def request(case: plan.Case) -> RenderRequest:
    return RenderRequest(
        chart=plan.ROOT / "charts" / case.chart,
        set_values=case.set_values,
        set_json=case.set_json,
        set_files=tuple(f"{key}={plan.ROOT / path}" for key, path in (s.split("=", 1) for s in case.set_files)),
        release=plan.RELEASE,
        namespace=plan.NAMESPACE,
    )


def worker_job(rendered: Rendered) -> dict[str, Any]:
    job: dict[str, Any] = rendered.get("Job", f"{plan.RELEASE}-worker").body
    if job["spec"].get("completions") != 1:
        raise ValueError(
            f"{rendered.request.describe()}: the worker Job has {job['spec'].get('completions')} pods; bench.gpu "
            "runs one (set worker=1 in its case, bench/gpu/plan.py)"
        )
    return job


def pod_hosts(rendered: Rendered) -> list[str]:
    """The DNS names of every pod of the release's Jobs (<job>-<index>.<subdomain>.<namespace>.svc)."""
    hosts = []
    for job in rendered.of_kind("Job"):
        spec = job.body["spec"]
        subdomain = spec["template"]["spec"].get("subdomain")
        if subdomain and spec.get("completionMode") == "Indexed":
            hosts += [f"{job.name}-{i}.{subdomain}.{plan.NAMESPACE}.svc" for i in range(spec.get("completions", 1))]
    return hosts


def extract(case: plan.Case, rendered: Rendered) -> dict[str, Any]:
    """One case of the plan: what pod 0 of the worker Job gets (see the module's docstring)."""
    job = worker_job(rendered)
    pod, container = job["spec"]["template"]["spec"], podenv.main_container(job)
    env = podenv.container_env(container, 0)
    unresolved = [item["name"] for item in container.get("env") or [] if item["name"] not in env]
    if unresolved or container.get("envFrom"):
        raise ValueError(
            f"{case.id}: the kubelet would set {unresolved or 'envFrom'} from a source bench.gpu does not resolve "
            "(only the completion index is); resolve it in bench/gpu/prepare.py or change the case's values"
        )
    argv = [podenv.expand(str(a), env) for a in [*container.get("command", []), *container.get("args", [])]]
    mounted = {v["name"]: v for v in pod.get("volumes") or []}
    configmaps = {}
    for mount in container.get("volumeMounts") or []:
        source = mounted[mount["name"]].get("configMap")
        if source:
            configmaps[source["name"]] = rendered.get("ConfigMap", source["name"]).body.get("data") or {}
    gpus = int((container.get("resources") or {}).get("limits", {}).get("nvidia.com/gpu", 0))
    return {
        "id": case.id,
        "chart": case.chart,
        "program": case.program,
        "cpu": case.cpu,
        "values": rendered.request.describe().replace(str(plan.ROOT) + "/", ""),
        "module": case.module,
        "bare": case.bare,
        "bare_env": case.bare_env,
        "gpu_proof": case.gpu_proof,
        "container": container,
        "volumes": list(mounted.values()),
        "configmaps": configmaps,
        "env": env,
        "argv": argv,
        "gpus": gpus,
        "hosts": pod_hosts(rendered),
    }


def prepare(folder: Path = plan.PLAN_DIR, renderer: Renderer | None = None) -> Path:
    renderer = renderer or Renderer()
    cases = [extract(case, renderer.render(request(case))) for case in plan.CASES]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / plan.PLAN_FILE
    commit, status = (git(plan.ROOT, *args, check=False).stdout.strip() for args in
                      (("rev-parse", "--short", "HEAD"), ("status", "--porcelain")))  # fmt: skip
    made = {"commit": commit, "changed_files": len(status.splitlines())}
    body = {"made_from": made, "helm": renderer.helm.version, "cases": cases}
    path.write_text(json.dumps(body, indent=1) + "\n")
    return path
