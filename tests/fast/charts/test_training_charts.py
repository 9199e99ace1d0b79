"""The training charts' promises: the workload shape, scale-invariant objects, framework wiring checked by the
frameworks' own parsers, and bad input refused with a message that names the value and the fix."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from dlcharts.errors import RenderError
from dlcharts.podenv import container_env, main_container, start_container
from dlcharts.policies import pod_specs
from dlcharts.suite import all_scenarios
from tests.support import CHARTS
from tests.support.charts import MPI, TRAINING, training_jobs


def non_pod_objects(rendered):
    return {(o.kind, o.name) for o in rendered if o.kind not in ("Job", "Pod")}


@pytest.mark.parametrize("chart", TRAINING)
def test_worker_shorthand_gives_one_indexed_job_and_the_headless_services(chart, render):
    rendered = render(CHARTS / chart, set=["worker=4"], release="tf-train")
    services = {s.name: s.body["spec"] for s in rendered.of_kind("Service")}
    assert sorted(services) == ["tf-train", "tf-train-ready"]
    # the pods' subdomain: every pod resolves as soon as it has an IP
    assert services["tf-train"]["clusterIP"] == "None"
    assert services["tf-train"]["publishNotReadyAddresses"] is True
    # the watchdog's view: only pods whose containers run (ready), with the same selector
    assert services["tf-train-ready"]["clusterIP"] == "None"
    assert services["tf-train-ready"]["publishNotReadyAddresses"] is False
    assert services["tf-train-ready"]["selector"] == services["tf-train"]["selector"]
    worker = rendered.get("Job", "tf-train-worker").body
    assert worker["spec"]["completionMode"] == "Indexed"
    assert worker["spec"]["completions"] == worker["spec"]["parallelism"] == 4
    assert worker["spec"]["template"]["spec"]["subdomain"] == "tf-train"


@pytest.mark.parametrize("chart", TRAINING)
def test_objects_do_not_grow_with_the_worker_count(chart, render):
    small = render(CHARTS / chart, set=["worker=4"])
    large = render(CHARTS / chart, set=["worker=256"])
    assert small.kinds_and_names() == large.kinds_and_names()
    assert large.get("Job", "release-worker").body["spec"]["completions"] == 256


SCRAPER = {
    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
    "ports": [{"port": 9090}],
}


@pytest.mark.parametrize("chart", TRAINING)
def test_one_network_policy_admits_only_the_release_and_turning_it_off_is_caught(chart, render, find_problems):
    rendered = render(CHARTS / chart, set=["worker=3"], release="job-a")
    (policy,) = rendered.of_kind("NetworkPolicy")
    release = {"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": "job-a"}
    assert policy.body["spec"] == {
        "podSelector": {"matchLabels": release},
        "policyTypes": ["Ingress"],  # egress (DNS, the API server, storage) is left alone
        "ingress": [{"from": [{"podSelector": {"matchLabels": release}}]}],
    }
    # every pod of the release, the helm test hook included, is selected and admitted; the start watch is no pod
    # of the training (it listens on nothing)
    pods = [pod for obj in rendered for pod in pod_specs(obj) if obj.name != "job-a-start-watch"]
    assert pods and all(release.items() <= pod.labels.items() for pod in pods)
    extra = render(CHARTS / chart, values={"networkPolicy": {"extraIngress": [SCRAPER]}}, release="job-a")
    assert extra.of_kind("NetworkPolicy")[0].body["spec"]["ingress"][1:] == [SCRAPER]
    off = render(CHARTS / chart, set=["networkPolicy.enabled=false"])
    assert off.of_kind("NetworkPolicy") == []
    caught = {f.object for f in find_problems(off) if f.check == "network-policy"}
    assert caught == {job.ref() for job in training_jobs(off)}  # the start watch listens on nothing


# The most one object may hold: etcd's default request limit (--max-request-bytes), 1.5 MiB, which the API server
# refuses larger writes with ("etcdserver: request is too large").
OBJECT_LIMIT = 3 * 1024 * 1024 // 2


@pytest.mark.parametrize("chart", TRAINING)
def test_every_object_fits_the_api_server_at_ten_thousand_workers(chart, render):
    rendered = render(CHARTS / chart, set=["worker=10000"])
    sizes = {o.ref(): len(json.dumps(o.body, separators=(",", ":")).encode()) for o in rendered}
    largest = max(sizes, key=lambda ref: sizes[ref])
    assert sizes[largest] < OBJECT_LIMIT, f"{chart}: {largest} is {sizes[largest]:,} bytes as JSON at 10,000 workers"
    assert rendered.get("Job", "release-worker").body["spec"]["completions"] == 10000


def pod_template_sizes(rendered):
    """Job name (without the release) -> bytes of its pod template as compact JSON, which every pod copies."""
    return {
        job.name.removeprefix("release-"): len(json.dumps(job.body["spec"]["template"], separators=(",", ":")))
        for job in rendered.of_kind("Job")
    }


TRAINING_SCENARIOS = [s for s in all_scenarios(CHARTS) if s.chart_name in TRAINING]
# Elastic scenarios bound the worker count; widened so that the same scenario renders with 1 and 1,000 workers.
ELASTIC_BOUNDS = {
    "horovod-mpi/06-elastic": ["horovod.elastic.minNp=1", "horovod.elastic.maxNp=1000"],
    "pytorch-dist/03-elastic": ["elastic.minWorkers=1"],
}


@pytest.mark.parametrize("scenario", TRAINING_SCENARIOS, ids=str)
def test_pod_templates_do_not_grow_with_the_worker_count(scenario, render):
    """Every pod copies its Job's pod template, and every component that caches pods (API server, etcd,
    scheduler, controllers, kubelets) pays for each copy: a template that grows with the workers makes the
    cluster's state grow as N squared (issue 19: 188 KB per TensorFlow pod at 5,000 workers). Whatever
    grows with N belongs in a ConfigMap the pods mount."""
    bounds = ELASTIC_BOUNDS.get(scenario.id, [])
    small = pod_template_sizes(render(scenario, set=["worker=1", *bounds]))
    large = pod_template_sizes(render(scenario, set=["worker=1000", *bounds]))
    assert small.keys() == large.keys()
    grown = {job: f"{small[job]} -> {large[job]} bytes" for job in small if large[job] - small[job] >= 1024}
    assert not grown, f"{scenario}: pod templates grow with the worker count (1 -> 1000 workers): {grown}"


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("worker=0", "worker"),
        ("worker=-2", "worker"),
        ("worker=2.5", "worker"),
        ("workers=3", "workers"),
        ("defaults.image.repository=", "repository"),
        ("defaults.image.tag=", "tag"),
        ("defaults.gpu.count=0.5", "gpu.count"),
        ("kueue.queueName=:", "queueName"),  # a label value, as the Job's queue-name label
    ],
)
def test_bad_input_is_refused_naming_the_value(chart, setting, expected, render):
    with pytest.raises(RenderError) as info:
        render(CHARTS / chart, set=[setting])
    stderr = info.value.stderr
    assert expected in stderr, stderr
    for marker in ("nil pointer", "panic", "can't evaluate"):
        assert marker not in stderr


def test_names_yaml_reads_as_numbers_stay_strings(render):
    gang = {"scheduler": "volcano", "schedulerName": "1", "queue": "2", "priorityClassName": "3"}
    values = {"defaults": {"priorityClassName": "0"}, "gang": gang}
    rendered = render(CHARTS / "mxnet-dist", values=values)
    for job in training_jobs(rendered):
        spec = job.body["spec"]["template"]["spec"]
        assert (spec["priorityClassName"], spec["schedulerName"]) == ("0", "1"), job.ref()
    (group,) = rendered.of_kind("PodGroup")
    assert (group.body["spec"]["queue"], group.body["spec"]["priorityClassName"]) == ("2", "3")


@pytest.mark.parametrize("chart", TRAINING)
def test_release_name_too_long_for_hostnames_is_refused_with_the_fix(chart, render):
    with pytest.raises(RenderError) as info:
        render(CHARTS / chart, release="a" * 53, set=["worker=1000"])  # "-worker-999" makes 64 characters
    assert "fullnameOverride" in info.value.stderr and "a" * 53 in info.value.stderr


def tf_configs(rendered):
    """(role, index, TF_CONFIG dict) for every pod of the release, as its program receives it: the pod's
    entrypoint wrapper run with the env the kubelet hands over and the release's cluster ConfigMap."""
    cluster = rendered.get("ConfigMap", f"{rendered.request.release}-cluster").body["data"]
    for job in training_jobs(rendered):
        count = job.body["spec"]["completions"]
        for index in range(count):
            started = start_container(main_container(job.body), index, cluster)
            config = json.loads(started.env["TF_CONFIG"])
            yield config["task"]["type"], index, config


@pytest.fixture(scope="module")
def tf_resolver():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # TensorFlow is a hard test dependency (make setup installs tensorflow-cpu): an ImportError fails loudly.
    from tensorflow.python.distribute.cluster_resolver.tfconfig_cluster_resolver import TFConfigClusterResolver

    return TFConfigClusterResolver


@pytest.mark.parametrize(
    "settings",
    [["worker=4"], ["worker=3", "ps=2", "chief=1", "evaluator=1", "strategy=parameter-server"]],
    ids=["workers", "chief-ps-evaluator"],
)
def test_every_tf_config_is_accepted_by_tensorflow(settings, render, tf_resolver, monkeypatch):
    rendered = render(CHARTS / "tensorflow-dist", set=settings, release="tf-train", namespace="ml")
    seen = set()
    for role, index, config in tf_configs(rendered):
        monkeypatch.setenv("TF_CONFIG", json.dumps(config))
        resolver = tf_resolver()
        assert (resolver.task_type, resolver.task_id) == (role, index)
        spec = resolver.cluster_spec().as_dict()
        assert spec["worker"][0] == "tf-train-worker-0.tf-train.ml.svc:2222"
        assert resolver.master() == spec[role][index]  # this pod's own address, as TensorFlow sees it
        seen.add((role, index))
    counts = {s.split("=")[0]: int(s.split("=")[1]) for s in settings if s.split("=")[1].isdigit()}
    assert len(seen) == sum(counts.values())


def test_tf_legacy_flags(render):
    settings = ["worker=2", "ps=1", "legacyFlags=true", "defaults.command={python,/work/tf1_train.py}"]
    rendered = render(CHARTS / "tensorflow-dist", set=settings, release="r")
    cluster = rendered.get("ConfigMap", "r-cluster").body["data"]
    hosts = ["--ps_hosts=r-ps-0.r.default.svc:2222",
             "--worker_hosts=r-worker-0.r.default.svc:2222,r-worker-1.r.default.svc:2222"]  # fmt: skip
    program = ["python", "/work/tf1_train.py"]
    worker = main_container(rendered.get("Job", "r-worker").body)
    assert worker["args"] == [*program, "--job_name=worker", "--task_index=$(DL_TASK_INDEX)"]  # O(1) in the pod
    started = start_container(worker, 1, cluster)
    assert started.argv == [*program, "--job_name=worker", "--task_index=1", *hosts]
    ps = start_container(main_container(rendered.get("Job", "r-ps").body), 0, cluster)
    assert ps.argv[ps.argv.index("dl-watchdog") + 1 :] == [*program, "--job_name=ps", "--task_index=0", *hosts]


def test_tf_config_is_composed_at_start_and_named_in_the_log(render):
    rendered = render(CHARTS / "tensorflow-dist", set=["worker=2"], release="r")
    job = rendered.get("Job", "r-worker").body
    assert "TF_CONFIG" not in {e["name"] for e in main_container(job)["env"]}  # not copied into every pod
    started = start_container(main_container(job), 1, rendered.get("ConfigMap", "r-cluster").body["data"])
    assert "tf-config: TF_CONFIG of task worker 1 composed from " in started.log
    assert f"tf-config: TF_CONFIG={started.env['TF_CONFIG']}" in started.log


def test_tf_config_over_the_kernels_limit_for_one_variable_fails_with_the_fix(render):
    rendered = render(CHARTS / "tensorflow-dist", set=["worker=4000"], release="r")
    with pytest.raises(RuntimeError) as info:
        start_container(main_container(rendered.get("Job", "r-worker").body), 0,
                        rendered.get("ConfigMap", "r-cluster").body["data"])  # fmt: skip
    assert "over Linux's limit of 131072 bytes for one environment variable" in str(info.value)
    assert "fullnameOverride" in str(info.value)


def test_tf_config_set_by_the_user_is_refused(render):
    with pytest.raises(RenderError) as info:
        render(CHARTS / "tensorflow-dist", set=["defaults.env[0].name=TF_CONFIG", "defaults.env[0].value=mine"])
    assert "defaults.env sets TF_CONFIG which the chart already sets for the framework" in info.value.stderr


def test_pytorch_torchrun_environment(render):
    rendered = render(CHARTS / "pytorch-dist", set=["worker=4", "defaults.gpu.count=8"], release="pt",
                      namespace="ml")  # fmt: skip
    job = rendered.get("Job", "pt-worker").body
    for index in range(4):
        env = container_env(main_container(job), index)
        assert env["PET_NNODES"] == "4"
        assert env["PET_NPROC_PER_NODE"] == "8"
        assert env["PET_NODE_RANK"] == str(index)
        assert env["PET_RDZV_BACKEND"] == "c10d"
        assert env["PET_RDZV_ENDPOINT"] == "pt-worker-0.pt.ml.svc:29500"
    limits = main_container(job)["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 8 or limits["nvidia.com/gpu"] == "8"


def test_pytorch_elastic_range(render):
    env = container_env(main_container(render(CHARTS / "pytorch-dist", set=["worker=4", "elastic.minWorkers=2"])
                                       .get("Job", "release-worker").body), 0)  # fmt: skip
    assert env["PET_NNODES"] == "2:4"


def test_pytorch_hot_spares_are_more_pods_than_torchrun_nodes_and_the_job_succeeds_with_the_ranks(render):
    """spareWorkers adds pods to the worker Job, not nodes to the rendezvous; the Job's successPolicy counts the
    ranks' pods only, and the peers (start watch, Service, NetworkPolicy) include the spares."""
    rendered = render(CHARTS / "pytorch-dist", set=["worker=4", "spareWorkers=2"], release="pt")
    job = rendered.get("Job", "pt-worker").body
    assert (job["spec"]["completions"], job["spec"]["parallelism"]) == (6, 6)
    assert job["spec"]["successPolicy"] == {"rules": [{"succeededCount": 4}]}
    for index in (0, 5):
        assert container_env(main_container(job), index)["PET_NNODES"] == "4"
    without = render(CHARTS / "pytorch-dist", set=["worker=4"], release="pt").get("Job", "pt-worker").body
    assert "successPolicy" not in without["spec"] and without["spec"]["completions"] == 4
    elastic = render(CHARTS / "pytorch-dist", set=["worker=4", "spareWorkers=1", "elastic.minWorkers=2"])
    assert container_env(main_container(elastic.get("Job", "release-worker").body), 4)["PET_NNODES"] == "2:4"


@pytest.mark.parametrize(
    ("values", "kube", "expected"),
    [
        (["restartsInPod=0"], None, "spareWorkers is 1 but restartsInPod is 0"),
        (["defaults.imageEntrypoint=true"], None, "spareWorkers is 1 and defaults.imageEntrypoint is true"),
        ([], "1.32.0", "spareWorkers is 1, which needs a Job successPolicy"),
    ],
)
def test_pytorch_hot_spares_that_cannot_work_are_refused_with_the_fix(render, values, kube, expected):
    kwargs = {"kube_version": kube} if kube else {}
    with pytest.raises(RenderError) as info:
        render(CHARTS / "pytorch-dist", set=["spareWorkers=1", *values], **kwargs)
    assert expected in info.value.stderr


@pytest.mark.parametrize(("chart", "values"), [("horovod-mpi", []), ("cntk-dist", []),
                                               ("deepspeed-dist", ["deepspeed.launcher=mpirun"])])  # fmt: skip
def test_mpi_hot_spares_are_more_worker_pods_and_the_launcher_writes_the_hostfile_of_each_run(chart, values, render):
    """mpi.spareWorkers: the worker Job and the ConfigMap's hostfile have every worker pod, the launch line keeps
    the ranks of `worker` pods and reads the hostfile the launcher writes into its own ssh dir (mpi-launcher.sh's
    MPI_RUN_HOSTFILE), which Open MPI's default hostfile names too; without spares the ConfigMap's is read."""
    rendered = render(CHARTS / chart, set=["worker=2", "mpi.spareWorkers=1", *values], release="r", namespace="ml")
    assert rendered.get("Job", "r-worker").body["spec"]["completions"] == 3
    hostfile = rendered.get("ConfigMap", "r-mpi").body["data"]["hostfile"]
    assert [line.split()[0] for line in hostfile.splitlines()] == [f"r-worker-{i}.r.ml.svc" for i in range(3)]
    launcher = main_container(rendered.get("Job", "r-launcher").body)
    env, line = container_env(launcher, 0), launcher["args"]
    run_hostfile = env["MPI_RUN_HOSTFILE"]
    assert run_hostfile.endswith("/.ssh/hostfile") and env["MPI_SPARES"] == "1"
    assert env["MPI_HOSTFILE"] == "/etc/mpi/hostfile" and env["OMPI_MCA_orte_default_hostfile"] == run_hostfile
    assert env["MPI_PEER_GROUPS"] == "r-worker:3"
    assert line[line.index("--hostfile") + 1] == run_hostfile and line[line.index("-np") + 1] == "2"
    plain = main_container(render(CHARTS / chart, set=["worker=2", *values], release="r").get("Job", "r-launcher").body)
    assert plain["args"][plain["args"].index("--hostfile") + 1] == "/etc/mpi/hostfile"
    assert "MPI_SPARES" not in container_env(plain, 0)


@pytest.mark.parametrize(
    ("chart", "values", "expected"),
    [
        ("horovod-mpi", ["horovod.elastic.enabled=true", "horovod.elastic.minNp=1"],
         "mpi.spareWorkers is 1 and horovod.elastic.enabled is true"),
        ("horovod-mpi", ["horovod.launcher=horovodrun", "mpi.implementation=mpich"],
         "mpi.spareWorkers is 1 with horovodrun and mpi.implementation mpich"),
        ("deepspeed-dist", [], "mpi.spareWorkers is 1 but deepspeed.launcher is deepspeed"),
        ("cntk-dist", ["mpi.replaceEntrypoint=true", "roles.launcher.command[0]=mpirun"],
         "mpi.spareWorkers is 1 and mpi.replaceEntrypoint is true"),
        ("horovod-mpi", ["roles.launcher.imageEntrypoint=true"],
         "mpi.spareWorkers is 1 and roles.launcher.imageEntrypoint is true"),
    ],
)  # fmt: skip
def test_mpi_hot_spares_that_the_launch_cannot_use_are_refused_with_the_fix(chart, values, expected, render):
    with pytest.raises(RenderError) as info:
        render(CHARTS / chart, set=["mpi.spareWorkers=1", *values])
    assert expected in info.value.stderr


@pytest.mark.parametrize(("fails", "restarts", "runs", "code"), [(1, 3, 2, 0), (5, 3, 4, 7), (1, 0, 1, 7)])
def test_pytorch_reruns_torchrun_in_the_same_pod_up_to_restarts_in_pod(render, tmp_path, fails, restarts, runs, code):
    """The worker's command, run by sh as the pod runs it, with a torchrun that exits 7 its first ``fails`` times:
    run again up to restartsInPod times, the last exit code kept."""
    job = render(CHARTS / "pytorch-dist", set=[f"restartsInPod={restarts}"]).get("Job", "release-worker").body
    container = main_container(job)
    argv, env = [*container["command"], *container["args"]], container_env(container, 0)
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == "dl-entrypoint", argv  # the peer wait's wrapper first
    argv = argv[4:]
    assert argv[:2] == ["sh", "-c"] and argv[3] == "torchrun", argv
    counter, fake = tmp_path / "runs", tmp_path / "torchrun"
    fake.write_text(f'#!/bin/sh\necho x >> {counter}\n[ "$(wc -l < {counter})" -gt {fails} ] || exit 7\n')
    fake.chmod(0o755)
    pod_env = {"PATH": os.environ["PATH"], "DL_RESTARTS_IN_POD": env["DL_RESTARTS_IN_POD"]}
    proc = subprocess.run([*argv[:3], str(fake), *argv[4:]], capture_output=True, text=True, timeout=60,
                          env=pod_env)  # fmt: skip
    assert (proc.returncode, len(counter.read_text().split())) == (code, runs), proc.stderr
    assert proc.stderr.count("running it again in this pod") == min(fails, restarts), proc.stderr


def test_mxnet_dmlc_environment(render):
    rendered = render(CHARTS / "mxnet-dist", set=["worker=3", "server=2"], release="mx", namespace="ml")
    scheduler_host = "mx-scheduler-0.mx.ml.svc"
    for role, count in (("scheduler", 1), ("server", 2), ("worker", 3)):
        job = rendered.get("Job", f"mx-{role}").body
        for index in range(count):
            env = container_env(main_container(job), index)
            assert env["DMLC_ROLE"] == role
            assert env["DMLC_PS_ROOT_URI"] == scheduler_host
            assert env["DMLC_PS_ROOT_PORT"] == "9091"
            assert (env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"]) == ("2", "3")
            assert env["DMLC_USE_KUBERNETES"] == "1"
            if role == "worker":
                assert env["DMLC_WORKER_ID"] == str(index)


@pytest.mark.parametrize(
    ("implementation", "line"),
    [("openmpi", "hv-worker-{i}.hv.ml.svc slots=8"), ("mpich", "hv-worker-{i}.hv.ml.svc:8"),
     ("intel", "hv-worker-{i}.hv.ml.svc:8")],
)  # fmt: skip
def test_horovod_hostfile_has_one_line_per_worker_with_slots_equal_to_gpus(implementation, line, render):
    settings = ["worker=4", "defaults.gpu.count=8", f"mpi.implementation={implementation}"]
    rendered = render(CHARTS / "horovod-mpi", set=settings, release="hv", namespace="ml")
    hostfiles = [cm.body["data"]["hostfile"] for cm in rendered.of_kind("ConfigMap") if "hostfile" in cm.body["data"]]
    (hostfile,) = hostfiles
    assert hostfile.strip().splitlines() == [line.format(i=i) for i in range(4)]


@pytest.mark.parametrize(
    ("settings", "launch"),
    [([], ["mpirun", "--hostfile", "/etc/mpi/hostfile", "-np", "2", "--bind-to", "none", "--map-by", "slot",
           "--tag-output"]),
     (["horovod.verbose=true"], ["horovodrun", "-np", "2"]),
     (["horovod.extraArgs={--network-interfaces,eth0}"], ["horovodrun", "-np", "2"]),
     (["horovod.elastic.enabled=true", "horovod.elastic.minNp=1"], ["horovodrun", "-np", "2"]),
     (["horovod.launcher=horovodrun"], ["horovodrun", "-np", "2"])],
)  # fmt: skip
def test_horovod_launches_with_plain_mpirun_unless_horovodrun_is_needed_or_chosen(settings, launch, render):
    rendered = render(CHARTS / "horovod-mpi", set=["worker=2", *settings])
    args = main_container(rendered.get("Job", "release-launcher").body)["args"]
    assert args[: len(launch)] == launch, args


def test_mpi_key_secret_is_ssh_auth_and_not_in_values(render):
    rendered = render(CHARTS / "horovod-mpi", set=["worker=2"])
    (secret,) = rendered.of_kind("Secret")
    assert secret.body["type"] == "kubernetes.io/ssh-auth"
    assert "ssh-privatekey" in secret.body["data"]
    assert "PRIVATE KEY" not in (CHARTS / "horovod-mpi" / "values.yaml").read_text()


@pytest.mark.parametrize("chart", MPI)
def test_mpi_slots_that_contradict_gpus_are_refused(chart, render):
    with pytest.raises(RenderError) as info:
        render(CHARTS / chart, set=["defaults.gpu.count=8", "mpi.slots=4"])
    assert "mpi.slots" in info.value.stderr and "GPU" in info.value.stderr


PEER_ENV = {"DL_PEER_GROUPS", "DL_PEER_DOMAIN", "DL_PEER_TIMEOUT", "DL_PEER_INTERVAL"}


@pytest.mark.parametrize("chart", ["jax-dist", "mxnet-dist", "pytorch-dist", "tensorflow-dist"])
def test_the_peer_wait_runs_in_the_main_container_unless_an_init_container_is_asked_for(chart, render):
    """The main container waits before its program (no kubelet round between an init container's exit and the
    program); peerWait.initContainer, or a role that runs its image's own entrypoint (no wrapper can go before it),
    waits in the peer-wait init container instead; peerWait.enabled false waits nowhere."""

    def placed(values: dict) -> tuple[list[str], bool, bool]:
        job = render(CHARTS / chart, values=values).get("Job", "release-worker").body
        main = main_container(job)
        script = "\n".join(main.get("command") or [])
        env = {e["name"] for e in main["env"]}
        inits = [c["name"] for c in job["spec"]["template"]["spec"].get("initContainers") or []]
        assert ("peer-wait: all" in script) == (env >= PEER_ENV), (script, env)
        return inits, "peer-wait: all" in script, script.startswith("/bin/sh\n-c\n(\n")

    assert placed({}) == ([], True, True)  # the wait opens the entrypoint wrapper
    assert placed({"peerWait": {"initContainer": True}})[:2] == (["peer-wait"], False)
    assert placed({"defaults": {"imageEntrypoint": True}})[:2] == (["peer-wait"], False)
    assert placed({"peerWait": {"enabled": False}})[:2] == ([], False)
