"""bench.gpu without a GPU or torch: the plan holds exactly what the rendered pod spec gives the worker's container
(env, command, args, mounted scripts), the run step launches that with only the substitutions it records, and the
run path imports nothing beyond the standard library. tests/cluster/images/test_bench_gpu.py runs it for real."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.gpu import plan, report, run
from bench.gpu.prepare import prepare
from dlcharts.render import DEFAULT_KUBE_VERSION, Renderer
from tests.support import CHARTS, ROOT


@pytest.fixture(scope="module")
def cases(chart_renderer: Renderer, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    folder = prepare(tmp_path_factory.mktemp("plan"), chart_renderer).parent
    body = plan.load(folder)
    assert [c["id"] for c in body["cases"]] == [c.id for c in plan.CASES]
    return list(body["cases"])


def _values(set_json: tuple[str, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in set_json:
        key, text = item.split("=", 1)
        *parents, last = key.split(".")
        node = values
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = json.loads(text)
    return values


@pytest.mark.parametrize("case", plan.CASES, ids=lambda c: c.id)
def test_the_plan_holds_what_the_rendered_pod_spec_gives_the_container(
    case: plan.Case, cases: list[dict[str, Any]], render: Any
) -> None:
    got = next(c for c in cases if c["id"] == case.id)
    rendered = render(CHARTS / case.chart, set=case.set_values, values=_values(case.set_json),
                      set_file=[f"{k}={ROOT / v}" for k, v in (s.split("=", 1) for s in case.set_files)],
                      release=plan.RELEASE, namespace=plan.NAMESPACE, kube_version=DEFAULT_KUBE_VERSION)  # fmt: skip
    pod = rendered.get("Job", f"{plan.RELEASE}-worker").body["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert got["container"] == container
    assert got["argv"] == [*container["command"], *container["args"]]  # no $(VAR) in them
    # every variable of the spec, in its order, after the Job controller's JOB_COMPLETION_INDEX; pod 0's index
    assert list(got["env"]) == ["JOB_COMPLETION_INDEX", *(e["name"] for e in container["env"])]
    for item in container["env"]:
        if "value" in item and "$(" not in item["value"]:
            assert got["env"][item["name"]] == item["value"], item
        else:
            assert got["env"][item["name"]] == "0", item  # the completion index, or $(DL_TASK_INDEX)
    assert got["gpus"] == (0 if case.cpu else 1) == int(container["resources"]["limits"].get("nvidia.com/gpu", 0))
    scripts = rendered.get("ConfigMap", f"{plan.RELEASE}-scripts").body["data"]
    assert got["configmaps"][f"{plan.RELEASE}-scripts"] == scripts
    program = ROOT / plan.RESNET if case.program == "resnet101" else next((CHARTS / case.chart / "files").glob("*.py"))
    assert program.read_text() in scripts.values()


@pytest.mark.parametrize("case", plan.CASES, ids=lambda c: c.id)
def test_the_run_launches_the_pods_command_with_only_the_substitutions_it_records(
    case: plan.Case, cases: list[dict[str, Any]], tmp_path: Path
) -> None:
    got = next(c for c in cases if c["id"] == case.id)
    launch = run.ours(got, tmp_path / "ours")
    allowed = {(h, "127.0.0.1") for h in got["hosts"]} | {
        (m["mountPath"], str(tmp_path / "ours" / "mounts" / m["name"])) for m in got["container"]["volumeMounts"]
    }
    allowed.add((got["env"][run.PEER_GROUPS], ""))  # the peer wait's pods are this machine: none to wait for
    assert launch.env[run.PEER_GROUPS] == ""
    made = {(where, old, new) for where, old, new in launch.substitutions}
    assert {(old, new) for _, old, new in made} <= allowed
    for where, pod_value, value in [
        *((f"env {k}", v, launch.env[k]) for k, v in got["env"].items()),
        *((f"argv[{i}]", a, launch.argv[i]) for i, a in enumerate(got["argv"])),
    ]:
        expected = pod_value
        for old, new in sorted(((o, n) for w, o, n in made if w == where), key=lambda p: -len(p[0])):
            expected = expected.replace(old, new)
        assert value == expected, where
    assert len(launch.argv) == len(got["argv"])
    assert launch.env["CUDA_VISIBLE_DEVICES"] == ("" if case.cpu else "0")
    # worker 0, which hosts the rendezvous or the coordinator, is this machine (TF's peers: the next test)
    peer = {
        "pytorch-dist": ("PET_RDZV_ENDPOINT", "127.0.0.1:29500"),
        "jax-dist": ("JAX_COORDINATOR_ADDRESS", "127.0.0.1:6666"),
    }
    if case.chart in peer:
        assert launch.env[peer[case.chart][0]] == peer[case.chart][1]
    # the program the pod runs is the mounted ConfigMap's file, as rendered
    start = next(i for i, a in enumerate(launch.argv) if a.endswith(".py"))
    name = Path(got["argv"][start]).name
    assert Path(launch.argv[start]).read_text() == got["configmaps"][f"{plan.RELEASE}-scripts"][name]
    bare = run.bare(got, tmp_path / "bare", Path(launch.argv[start]).parent)
    assert bare.argv[-(len(launch.argv) - start) :] == launch.argv[start:]  # the same program and arguments


def test_tensorflows_cluster_file_names_localhost(cases: list[dict[str, Any]], tmp_path: Path) -> None:
    got = next(c for c in cases if c["id"] == "tensorflow-dist/benchmark/gpu")
    launch = run.ours(got, tmp_path)
    cluster = json.loads((Path(launch.env["DL_CLUSTER_DIR"]) / "cluster.json").read_text())
    assert cluster == {"worker": ["127.0.0.1:2222"]}, cluster


def test_the_run_path_imports_only_the_standard_library() -> None:
    code = (
        "import sys\nbefore = set(sys.modules)\nimport bench.gpu.__main__, bench.gpu.run, bench.gpu.plan\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in (*sys.stdlib_module_names, "
        "'bench')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_execute_reads_the_throughput_and_the_first_step(tmp_path: Path) -> None:
    program = "print('x: starting'); print('x: step 1/2 loss 1'); print('x: total throughput 12.5 images/s over 1')"
    got = run.execute(run.Launch([sys.executable, "-c", program], {}, []), tmp_path, 60)
    assert (got["rc"], got["samples_per_s"], got["unit"], got["timed_out"]) == (0, 12.5, "images", False)
    assert got["first_step_s"] is not None
    stopped = run.execute(run.Launch([sys.executable, "-c", "import time; time.sleep(60)"], {}, []), tmp_path, 1)
    assert stopped["timed_out"] and stopped["rc"] == -9 and stopped["samples_per_s"] is None


def test_a_missing_plan_names_the_prepare_step(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="python -m bench.gpu prepare"):
        run.run(tmp_path, tmp_path / "out", cpu=True, charts=None, budget=60, per_run=30)


def test_the_section_pairs_ours_with_bare() -> None:
    row = {"unit": "images", "first_step_s": 5.0, "status": "ok"}
    results = {
        "machine": {"gpu": "NVIDIA H100 80GB HBM3, 570.1, 81559 MiB", "python": "3.12", "versions": {"torch": "2.9"}},
        "plan": {"commit": "abc", "changed_files": 0}, "helm": "v4.3.1",
        "rows": [
            {"id": "pytorch-dist/resnet101/gpu", "how": "ours", "samples_per_s": 900.0, **row},
            {"id": "pytorch-dist/resnet101/gpu", "how": "bare", "samples_per_s": 1000.0, **row},
            {"id": "jax-dist/benchmark/gpu", "how": "both", "status": "not installed (jax)"},
        ],
    }  # fmt: skip
    assert report.rows(results) == [
        ["pytorch-dist/resnet101/gpu (images/s)", "NVIDIA H100 80GB HBM3", 900.0, 1000.0, 0.9, 5.0, 5.0, "ok"],
        ["jax-dist/benchmark/gpu", "NVIDIA H100 80GB HBM3", None, None, None, None, None, "not installed (jax)"],
    ]
    pending = report.blocks(None)[0]
    assert pending["facts"][0][1].startswith("pending")
