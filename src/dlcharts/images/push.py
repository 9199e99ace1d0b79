"""Step 5, push: ``crane push`` of a built OCI layout to a registry (see dlcharts.host.registry), then the
registry's digest for it compared with the built one."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dlcharts.errors import ImageError
from dlcharts.host.registry import require_tool
from dlcharts.host.registry_access import Access
from dlcharts.images.definitions import ImageDef
from dlcharts.images.runner import ToolRunner


def crane_env() -> dict[str, str]:
    # crane reads registry credentials from ~/.docker; a plain local registry needs none, a secure one's login
    # comes with its Access.
    return {"DOCKER_CONFIG": "/nonexistent"}


def push_layout(
    runner: ToolRunner, image: ImageDef, layout: Path, digest: str, registry: str, access: Access | None = None
) -> str:
    """Push ``layout`` (``image`` built, manifest ``digest``) to ``registry`` (host:port; ``access``: its CA and
    login, for a secure one); return ``<ref>@<digest>``."""
    crane = require_tool("crane")
    ref = f"{registry}/{image.reference}"
    env = {**crane_env(), **(access.client_env() if access is not None else {})}
    runner.run([str(crane), "push", str(layout), ref], image, "push", env)
    remote = subprocess.run([str(crane), "digest", ref], capture_output=True, text=True, check=False, env=env)
    if remote.returncode != 0 or remote.stdout.strip() != digest:
        raise ImageError(
            f"{ref}: the registry has {remote.stdout.strip() or remote.stderr.strip()!r} after the push, "
            f"not the built {digest}"
        )
    return f"{ref}@{digest}"
