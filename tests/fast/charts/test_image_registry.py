"""Air-gapped installs: global.imageRegistry redirects every image of every chart to a mirror (registry part
replaced, path and tag kept), global.imagePullSecrets reaches every pod, and a registry given with a scheme
is refused naming the value and the fix. Runs under Helm 4 and again under Helm 3 (make test-charts-helm3)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from dlcharts.suite import discover_charts
from tests.support import CHARTS
from tests.support.charts import refusal

MIRROR = "mirror.example.com:5000/team"
CHART_NAMES = [c.name for c in discover_charts(CHARTS)]
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def images(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, value) of every "image" string anywhere in an object: pod specs of any kind and anything else."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image" and isinstance(value, str):
                yield f"{path}.image", value
            else:
                yield from images(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            name = value.get("name") if isinstance(value, dict) else None
            yield from images(value, f"{path}[{name if name else i}]")


def pod_specs(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, spec) of every pod spec (a dict with a "containers" list) in an object."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield path, node
        for key, value in node.items():
            yield from pod_specs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from pod_specs(value, f"{path}[{i}]")


def all_images(rendered) -> dict[str, str]:
    return {f"{obj.key}{path}": image for obj in rendered for path, image in images(obj.body)}


def container_images(rendered) -> dict[str, str]:
    return {
        f"{obj.key}{path}.{field}[{c['name']}].image": c["image"]
        for obj in rendered
        for path, spec in pod_specs(obj.body)
        for field in CONTAINER_LISTS
        for c in spec.get(field) or []
    }


def split(reference: str) -> tuple[str, str]:
    """("repository", "tag") of "repository:tag" (a registry port stays in the repository)."""
    repository, _, tag = reference.rpartition(":")
    assert repository and "/" not in tag, f"{reference!r} has no tag"
    return repository, tag


def without_registry(repository: str) -> str:
    """The path of a repository without its registry: the first component when it has '.' or ':' or is
    localhost (the container runtime's rule), else Docker Hub's implicit registry, nothing to drop."""
    first, _, rest = repository.partition("/")
    return rest if rest and ("." in first or ":" in first or first == "localhost") else repository


def pull_secret_names(spec: dict[str, Any]) -> list[str]:
    return [s["name"] for s in spec.get("imagePullSecrets") or []]


def test_every_image_of_every_scenario_moves_to_the_mirror_registry(dlcharts_scenario, render):
    original = render(dlcharts_scenario)
    mirrored = render(dlcharts_scenario, set=[f"global.imageRegistry={MIRROR}"])
    before, after = all_images(original), all_images(mirrored)
    assert before, f"{dlcharts_scenario.id} renders no image; this test checks nothing"
    assert after.keys() == before.keys()
    # every container of every pod spec (Pods, Jobs, DaemonSets, test hooks ...) is among the images checked
    assert set(container_images(mirrored).items()) <= set(after.items())
    assert len(container_images(mirrored)) == len(after), "an image field outside a pod spec's containers"
    for where, reference in before.items():
        repository, tag = split(reference)
        assert after[where].startswith(f"{MIRROR}/"), f"{where}: {after[where]!r} escapes the mirror"
        assert after[where] == f"{MIRROR}/{without_registry(repository)}:{tag}", where
        # nothing else in the manifest (an env value, an argument, a config file) names the original image
        escaped = re.findall(rf"(?<![\w./:-]){re.escape(reference)}", mirrored.text)
        assert not escaped, f"{dlcharts_scenario.id}: {reference!r} still appears outside the mirror"


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        ("busybox", "busybox"),
        ("tensorflow/tensorflow", "tensorflow/tensorflow"),
        ("nvcr.io/nvidia/pytorch", "nvidia/pytorch"),
        ("docker.io/library/busybox", "library/busybox"),
        ("registry.example.com:5000/team/bert", "team/bert"),
        ("localhost/bert", "bert"),
        ("localhost:5000/team/bert", "team/bert"),
    ],
)
def test_only_the_registry_part_of_a_reference_is_replaced(repository, expected, render):
    values = {
        "defaults": {"image": {"repository": repository, "tag": "2026.11.1"}},
        "global": {"imageRegistry": MIRROR},
    }
    (job,) = [j for j in render(CHARTS / "pytorch-dist", values=values).of_kind("Job") if j.name.endswith("-worker")]
    (container,) = [c for c in job.body["spec"]["template"]["spec"]["containers"] if c["name"] == "worker"]
    assert container["image"] == f"{MIRROR}/{expected}:2026.11.1"


def test_global_pull_secrets_reach_every_pod_of_every_scenario_after_the_charts_own(dlcharts_scenario, render):
    original = render(dlcharts_scenario)
    extra = render(dlcharts_scenario, values={"global": {"imagePullSecrets": ["mirror-pull", {"name": "team-pull"}]}})
    own = {f"{obj.key}{path}": pull_secret_names(spec) for obj in original for path, spec in pod_specs(obj.body)}
    merged = {f"{obj.key}{path}": pull_secret_names(spec) for obj in extra for path, spec in pod_specs(obj.body)}
    assert merged, f"{dlcharts_scenario.id} renders no pod; this test checks nothing"
    assert merged.keys() == own.keys()
    for where, names in merged.items():
        assert names == own[where] + [n for n in ("mirror-pull", "team-pull") if n not in own[where]], where


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_a_pull_secret_named_twice_is_listed_once(chart, render):
    local = {"imagePullSecrets": [{"name": "regcred"}]}
    values = {"global": {"imagePullSecrets": ["mirror-pull", {"name": "regcred"}]}}
    values |= local if chart == "gpu-device-plugin" else {"defaults": local}
    rendered = render(CHARTS / chart, values=values)
    specs = [spec for obj in rendered for _, spec in pod_specs(obj.body)]
    assert specs
    assert all(pull_secret_names(spec) == ["regcred", "mirror-pull"] for spec in specs)


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_a_registry_with_a_scheme_is_refused_naming_the_value_and_the_fix(chart, render):
    stderr = refusal(render, chart, set=[f"global.imageRegistry=https://{MIRROR}/"])
    assert f'global.imageRegistry is "https://{MIRROR}/"' in stderr, stderr
    assert f"--set global.imageRegistry={MIRROR}." in stderr, stderr


@pytest.mark.parametrize("registry", [f"{MIRROR}/", "mirror.example.com/Team", f"{MIRROR}/busybox:1.37.0", "a b"])
def test_a_registry_that_is_no_host_port_path_is_refused(registry, render):
    stderr = refusal(render, "tensorflow-dist", values={"global": {"imageRegistry": registry}})
    assert f"global.imageRegistry is {registry!r}".replace("'", '"') in stderr, stderr
    assert "--set global.imageRegistry=mirror.example.com:5000/team" in stderr, stderr


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_a_misspelt_image_global_is_refused(chart, render):
    stderr = refusal(render, chart, set=[f"global.imageRegistery={MIRROR}"])
    assert "global.imageRegistery is not a value this chart reads" in stderr, stderr


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_an_umbrella_charts_own_globals_pass(chart, render):
    """Globals are shared by every chart of a release: an umbrella's own (storageClass, ...) must not break ours."""
    rendered = render(CHARTS / chart, set=["global.storageClass=fast", f"global.imageRegistry={MIRROR}"])
    assert rendered.objects
