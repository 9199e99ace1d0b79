"""Values that name another part of a role's pod (a mount and its volume, a volume and the chart's own volumes, a
mount path and the chart's mounts, a pod label and the Job controller's) are refused when the chart renders,
exactly where the API server would refuse the Job: each message names both values and the fix, the render
leaves nothing half made, and what the charts accept the API server's own rules (offline) accept. The cluster tier
(tests/cluster/api_parity) draws the same classes (tests.support.values.CROSS_REFERENCES) against a real API
server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dlcharts import apirules
from dlcharts.errors import RenderError
from dlcharts.schemas import validate_objects
from tests.support import CHARTS
from tests.support.charts import MPI, TRAINING, refusal, without_reference_checks
from tests.support.values import CROSS_REFERENCES


def volume(name: str) -> dict[str, Any]:
    return {"name": name, "emptyDir": {}}


def mount(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "mountPath": path}


CHECKPOINT = {"volume": {"persistentVolumeClaim": {"claimName": "ckpt"}}}


#: values the API server refuses (class, values, what the message must say: both values and the fix)
REFUSED = {
    "mount-of-no-volume": ("volume-mount-name", {"roles": {"worker": {"volumeMounts": [mount("data", "/data")]}}}, [
        'roles.worker.volumeMounts[0].name is "data", but the pods of role worker have no volume of that name',
        "defaults.volumes defines none", 'Add a volume named "data" to defaults.volumes, or mount one of: shm, tmp']),
    "mount-of-a-replaced-volume": ("volume-mount-name", {
        "defaults": {"volumes": [volume("data")], "volumeMounts": [mount("data", "/data")]},
        "roles": {"worker": {"volumes": [volume("other")]}}}, [
        'defaults.volumeMounts[0].name is "data"',
        "roles.worker.volumes names only other (a list in roles.worker replaces the one in defaults)"]),
    "volume-named-shm": ("volume-name", {"roles": {"worker": {"volumes": [volume("shm")]}}}, [
        'roles.worker.volumes[0].name is "shm", the name of the chart\'s own volume at /dev/shm '
        "(defaults.shm.enabled is true)", "or set roles.worker.shm.enabled=false to use your own volume at /dev/shm"]),
    "volume-named-scripts": ("volume-name", {"defaults": {"volumes": [volume("scripts")]}}, [
        'defaults.volumes[0].name is "scripts", the name of a volume the chart adds to the pods of',
        "(mounted at /opt/dl-charts)", "Rename yours (and the volumeMounts that name it)"]),
    "volume-named-checkpoint": ("volume-name", {
        "checkpoint": CHECKPOINT, "defaults": {"volumes": [volume("checkpoint")]}}, [
        'defaults.volumes[0].name is "checkpoint", the name of a volume the chart adds to the pods of',
        "(mounted at /checkpoints)", "Rename yours (and the volumeMounts that name it)"]),
    "checkpoint-at-tmp": ("mount-path", {"checkpoint": {**CHECKPOINT, "mountPath": "/tmp"}}, [
        "checkpoint.mountPath is /tmp, where the chart mounts its volume tmp in role",
        "set checkpoint.mountPath to a path of its own, e.g. /checkpoints"]),
    "mount-at-the-checkpoints": ("mount-path", {"checkpoint": CHECKPOINT, "defaults": {
        "volumes": [volume("data")], "volumeMounts": [mount("data", "/checkpoints")]}}, [
        'defaults.volumeMounts[0].mountPath is "/checkpoints", where the chart mounts its own volume "checkpoint"']),
    "volume-named-twice": ("volume-name", {"defaults": {"volumes": [volume("data"), volume("data")]}}, [
        'defaults.volumes[0].name and defaults.volumes[1].name are both "data"', "Rename one"]),
    "mount-at-dev-shm": ("mount-path", {
        "roles": {"worker": {"volumes": [volume("data")], "volumeMounts": [mount("data", "/dev/shm")]}}}, [
        'roles.worker.volumeMounts[0].mountPath is "/dev/shm", where the chart mounts its own volume "shm" '
        "(defaults.shm.enabled is true)",
        "or set roles.worker.shm.enabled=false to mount your own volume at /dev/shm"]),
    "mount-at-the-scripts": ("mount-path", {
        "defaults": {"volumes": [volume("data")], "volumeMounts": [mount("data", "/opt/dl-charts")]}}, [
        'defaults.volumeMounts[0].mountPath is "/opt/dl-charts", where the chart mounts its own volume "scripts"',
        "Choose another mountPath; the chart's own mount paths besides /dev/shm and /tmp are"]),
    "mount-path-twice": ("mount-path", {
        "defaults": {"volumes": [volume("a"), volume("b")],
                     "volumeMounts": [mount("a", "/data"), mount("b", "/data")]}}, [
        'defaults.volumeMounts[0].mountPath and defaults.volumeMounts[1].mountPath are both "/data"']),
    "job-name-label": ("job-label", {"roles": {"worker": {"podLabels": {"job-name": "other"}}}}, [
        'roles.worker.podLabels sets the label job-name to "other"', "to the Job's name, release-worker",
        "Remove job-name from roles.worker.podLabels"]),
    "controller-uid-label": ("job-label", {"defaults": {"podLabels": {"batch.kubernetes.io/controller-uid": "x"}}}, [
        "defaults.podLabels sets the label batch.kubernetes.io/controller-uid, which Kubernetes sets on every pod of a "
        "Job to that Job's uid", "Remove batch.kubernetes.io/controller-uid from defaults.podLabels"]),
    "failure-policy-container": ("job-policy", {"defaults": {"job": {"podFailurePolicy": {"rules": [
        {"action": "FailJob", "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [42]}}]}}}}, [
        'defaults.job.podFailurePolicy.rules[0].onExitCodes.containerName is "trainer", which names no container of '
        "the pods of", "a pod's main container is named after its role", "leave containerName out"]),
    "fail-index-without-per-index": ("job-policy", {"defaults": {"job": {
        "backoffLimitPerIndex": None, "maxFailedIndexes": None, "podFailurePolicy": {"rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}]}}}}, [
        "defaults.job.podFailurePolicy.rules[0].action is FailIndex, which Kubernetes takes only with "
        "backoffLimitPerIndex, but defaults.job.backoffLimitPerIndex is null",
        "Set defaults.job.backoffLimitPerIndex"]),
    "success-index-past-the-pods": ("job-policy", {"roles": {"worker": {"job": {"successPolicy": {"rules": [
        {"succeededIndexes": "0-2"}]}}}}}, [
        'roles.worker.job.successPolicy.rules[0].succeededIndexes is "0-2", but the Job of role worker runs 2 pods '
        "(indexes 0-1)", "Name indexes below 2"]),
    "success-count-past-the-pods": ("job-policy", {"roles": {"worker": {"job": {"successPolicy": {"rules": [
        {"succeededCount": 3}]}}}}}, [
        "roles.worker.job.successPolicy.rules[0].succeededCount is 3, but the Job of role worker runs 2 pods",
        "Lower succeededCount to at most 2"]),
    "spread-pair-twice": ("topology-spread", {"defaults": {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}]}}, [
        "defaults.topologySpreadConstraints[0] and defaults.topologySpreadConstraints[1] both spread over "
        'topologyKey "kubernetes.io/hostname" with whenUnsatisfiable DoNotSchedule', "Keep one"]),
}  # fmt: skip
#: the Kubernetes minor from which the chart renders the field a case is about (before it, the case renders)
SINCE = {"failure-policy-container": (1, 31), "fail-index-without-per-index": (1, 31),
         "success-index-past-the-pods": (1, 33), "success-count-past-the-pods": (1, 33)}  # fmt: skip

#: values that look alike and that the API server takes: the charts must render them
ACCEPTED = {
    "own-shm-instead-of-the-charts": {"roles": {"worker": {
        "shm": {"enabled": False}, "volumes": [volume("shm")], "volumeMounts": [mount("shm", "/dev/shm")]}}},
    "checkpoint-volume-of-a-claim": {"checkpoint": CHECKPOINT},
    "checkpoint-under-tmp": {"checkpoint": {**CHECKPOINT, "mountPath": "/tmp/checkpoints"}},
    "chart-volume-mounted-again": {"defaults": {"volumeMounts": [mount("scripts", "/srv/code")]}},
    "paths-that-differ-as-written": {"defaults": {"volumes": [volume("a"), volume("b"), volume("c")], "volumeMounts": [
        mount("a", "/data"), mount("b", "/data/"), mount("c", "/dev/shm/extra")]}},
    "job-name-label-of-the-job": {"roles": {"worker": {"podLabels": {
        "job-name": "release-worker", "batch.kubernetes.io/job-name": "release-worker"}}}},
    "defaults-volume-mounted-by-a-role": {"defaults": {"volumes": [volume("data")]},
                                          "roles": {"worker": {"volumeMounts": [mount("data", "/data")]}}},
    "failure-policy-naming-the-role": {"roles": {"worker": {"job": {"podFailurePolicy": {"rules": [
        {"action": "FailIndex", "onExitCodes": {"containerName": "worker", "operator": "In", "values": [42]}}]}}}}},
    "success-policy-within-the-pods": {"roles": {"worker": {"job": {"successPolicy": {"rules": [
        {"succeededIndexes": "1", "succeededCount": 1}, {"succeededCount": 2}]}}}}},
    "spread-two-pairs": {"defaults": {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}]}},
}  # fmt: skip


def test_the_cases_cover_every_class():
    assert {klass for klass, _, _ in REFUSED.values()} == set(CROSS_REFERENCES)


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_broken_cross_reference_is_refused_naming_both_values(chart, case, render):
    _, values, expected = REFUSED[case]
    stderr = refusal(render, chart, values=values)
    assert f"{chart} values are invalid" in stderr, stderr
    for text in expected:
        assert text in stderr, f"{text!r} not in:\n{stderr}"


@pytest.mark.parametrize("chart", TRAINING)
@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_cross_references_the_api_server_takes_render(chart, case, render):
    rendered = render(CHARTS / chart, values=ACCEPTED[case])
    assert rendered.get("Job", "release-worker")


def test_one_mistake_in_defaults_is_one_line_naming_every_role(render):
    values = {"defaults": {"volumeMounts": [mount("data", "/data")]}}
    stderr = refusal(render, "mxnet-dist", values=values)
    assert stderr.count('defaults.volumeMounts[0].name is "data"') == 1, stderr
    assert "the pods of roles scheduler, server, worker have no volume" in stderr, stderr


@pytest.mark.parametrize("chart", MPI)
def test_mpi_volumes_are_the_chart_own_and_the_launcher_has_no_shm(chart, render):
    stderr = refusal(render, chart, values={"defaults": {"volumes": [volume("mpi-home"), volume("shm")]}})
    assert (
        'defaults.volumes[0].name is "mpi-home", the name of a volume the chart adds to the pods of roles '
        "launcher, worker" in stderr
    ), stderr
    assert 'defaults.volumes[1].name is "shm"' in stderr and "the pods of role worker" in stderr, stderr
    render(CHARTS / chart, values={"roles": {"launcher": {"volumes": [volume("shm")]}}})  # the launcher has no shm


@pytest.mark.parametrize("chart", TRAINING)
def test_a_refused_cross_reference_renders_nothing(chart, helm, tmp_path):
    """`helm install` renders every template before it creates anything: a refusal at render leaves no object behind.
    helm template prints no object at all, not the ones rendered before the Job."""
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(REFUSED["mount-of-no-volume"][1]))
    proc = helm.run(["template", "release", str(CHARTS / chart), "-f", str(path)], check=False)
    assert proc.returncode != 0 and "values are invalid" in proc.stderr, proc.stderr
    assert proc.stdout.strip() == "", proc.stdout[:500]


@pytest.fixture(scope="module")
def unchecked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("references-off")


@pytest.mark.parametrize("kube_version", ["1.35.0", "1.29.0"])
@pytest.mark.parametrize("chart", TRAINING)
def test_the_chart_refuses_exactly_what_the_api_server_rules_refuse(chart, kube_version, render, unchecked):
    """Offline differential: each case rendered with the checks turned off goes to the API server's own create
    validation (dlcharts.apirules, both minors): it refuses the objects of every case the chart refuses, and takes
    those of every case the chart renders."""
    if apirules.rules(kube_version) is None:
        pytest.fail(f"the validator of Kubernetes {kube_version} is not built (dlcharts tools)")
    copy = without_reference_checks(CHARTS / chart, unchecked)
    verdicts = {}
    for case, values in [*((c, v) for c, (_, v, _) in REFUSED.items()), *ACCEPTED.items()]:
        try:
            render(CHARTS / chart, values=values, kube_version=kube_version)
            ours = "accept"
        except RenderError:
            ours = "refuse"
        objects = list(render(copy, values=values, kube_version=kube_version))
        findings = validate_objects(objects, kube_version)
        verdicts[case] = (ours, "refuse" if findings else "accept", [f"{f.path}: {f.message}" for f in findings][:2])
    disagree = {case: v for case, v in verdicts.items() if v[0] != v[1]}
    assert not disagree, disagree
    minor = tuple(int(part) for part in kube_version.split(".")[:2])
    refused = {c for c in REFUSED if minor >= SINCE.get(c, (0, 0))}
    assert {c for c, v in verdicts.items() if v[0] == "refuse"} == refused, verdicts


@pytest.mark.parametrize("chart", TRAINING)
def test_names_that_look_like_numbers_stay_strings(chart, render):
    """Found by the cluster tier's values dry-run: a service account, working directory or pull secret named with
    digits only was written unquoted, so the API server read a number where it takes a string and refused the Job."""
    values = {"defaults": {"serviceAccountName": "60", "workingDir": "007", "imagePullSecrets": ["12"]}}
    pod = render(CHARTS / chart, values=values).get("Job", "release-worker").body["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "60" and pod["imagePullSecrets"] == [{"name": "12"}]
    assert pod["containers"][0]["workingDir"] == "007"


def test_a_failure_policy_may_name_the_init_containers_a_role_has(render):
    rule = {"action": "FailJob", "onExitCodes": {"containerName": "peer-wait", "operator": "In", "values": [42]}}
    values = {"roles": {"worker": {"job": {"podFailurePolicy": {"rules": [rule]}}}}}
    # its workers wait for their peers in peer-wait, an init container when they are told to
    render(CHARTS / "tensorflow-dist", values={**values, "peerWait": {"initContainer": True}})
    stderr = refusal(render, "tensorflow-dist", values=values)  # by default they wait in their main container
    assert 'containerName is "peer-wait", which names no container of the pods of role worker' in stderr, stderr
    stderr = refusal(render, "horovod-mpi", values=values)  # MPI workers have only mpi-setup
    assert 'containerName is "peer-wait", which names no container of the pods of role worker' in stderr, stderr
    assert "its init containers are mpi-setup" in stderr, stderr


@pytest.mark.parametrize("case", sorted(SINCE))
def test_policy_checks_follow_the_kubernetes_version_the_chart_renders_for(case, render):
    """job.podFailurePolicy is rendered from 1.31, job.successPolicy and backoffLimitPerIndex from 1.33: a rule the
    target version never receives is no reason to refuse."""
    major, minor = SINCE[case]
    values = REFUSED[case][1]
    render(CHARTS / "pytorch-dist", values=values, kube_version=f"{major}.{minor - 1}.0")
    refusal(render, "pytorch-dist", values=values, kube_version=f"{major}.{minor}.0")


def test_fail_index_before_1_33_is_refused_whatever_backoff_limit_per_index_says(render):
    rule = {"action": "FailIndex", "onExitCodes": {"containerName": "worker", "operator": "In", "values": [42]}}
    values = {"defaults": {"job": {"backoffLimitPerIndex": 2, "podFailurePolicy": {"rules": [rule]}}}}
    render(CHARTS / "pytorch-dist", values=values, kube_version="1.33.0")
    stderr = refusal(render, "pytorch-dist", values=values, kube_version="1.32.0")
    assert "the target Kubernetes v1.32.0 has none (before 1.33 the chart writes backoffLimit instead)" in stderr


@pytest.mark.parametrize("chart", TRAINING)
def test_a_gpu_count_past_what_kubernetes_counts_is_refused(chart, render):
    """Found by the property tier once it drew new values: a count above 9223372036854775 rendered, and the API server
    refused the Job (a quantity is kept in thousandths within 64 bits)."""
    stderr = refusal(render, chart, values={"defaults": {"gpu": {"count": 9223372036854776}}})
    assert "defaults.gpu.count is 9223372036854776, more than Kubernetes can count" in stderr, stderr
    render(CHARTS / chart, values={"defaults": {"gpu": {"count": 2**53}}})  # large, and still a quantity
