"""Everything the embedded cluster needs from the machine, checked at once and before any build starts.

A newcomer's first `make demo` builds for many minutes; a missing package or a full disk found after that is an
hour lost. :func:`problems` lists every unmet precondition with its fix, :func:`require` raises them together:

- root, for the real node (containerd, kubelet, network namespaces);
- the host's tools, from the Debian packages in ``host-packages.txt`` (the Makefile's ``packages`` target
  installs the same list);
- Go, when a binary still has to be built from the Go module proxy;
- a fixed registry port (``$DLCHARTS_REGISTRY_PORT``) that is free (every other port is chosen free at start);
- free disk where the builds and images are cached.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from dlcharts import gobuild
from dlcharts.errors import ClusterError
from dlcharts.host import registry
from dlcharts.utils.net import port_free

HOST_PACKAGES_FILE = Path(__file__).with_name("host-packages.txt")
GIB = 1 << 30
#: free space a cold build of the cluster's binaries takes: modules, Go's build cache and the binaries
#: (bench/NOTES.md, "A newcomer's first make demo")
BUILD_BYTES = 8 * GIB
#: free space the local images take when none is cached yet (root file systems, layers, OCI layout, registry)
IMAGES_BYTES = 6 * GIB
#: enough for a warm start: cluster state, logs, pod sandboxes
RUN_BYTES = 1 * GIB
#: the share of its disk below which the real node's kubelet evicts pods and taints itself (its evictionHard
#: nodefs/imagefs.available in dlcharts.cluster.kubelet)
EVICTION_FREE = 0.01


@dataclasses.dataclass(frozen=True)
class HostTool:
    tool: str  # a command on PATH, or an absolute path
    package: str  # the Debian package that has it
    purpose: str

    @property
    def present(self) -> bool:
        return Path(self.tool).is_file() if self.tool.startswith("/") else shutil.which(self.tool) is not None


def host_tools(path: Path = HOST_PACKAGES_FILE) -> list[HostTool]:
    """The entries of ``host-packages.txt``: ``<tool> <package> <purpose...>`` per line, ``#`` comments."""
    tools = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split(None, 2)
        if len(fields) < 3:
            raise ClusterError(f"{path}:{number}: want `<tool> <package> <purpose>`, got {line.strip()!r}")
        tools.append(HostTool(*fields))
    return tools


def missing_packages(tools: Iterable[HostTool] | None = None) -> list[str]:
    """The Debian packages of the tools that are not on this machine, sorted, each once."""
    return sorted({t.package for t in (host_tools() if tools is None else tools) if not t.present})


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def go_env(go: Path) -> dict[str, str]:
    """GOVERSION, GOMODCACHE and GOCACHE of ``go`` (empty when it does not run)."""
    keys = ("GOVERSION", "GOMODCACHE", "GOCACHE")
    out = subprocess.run([str(go), "env", *keys], capture_output=True, text=True, check=False)
    return dict(zip(keys, out.stdout.splitlines(), strict=False)) if out.returncode == 0 else {}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def problems(
    cache: Path, *, to_build: Iterable[str] = (), images_cached: bool = True, real_node: bool = True
) -> list[str]:
    """Every unmet precondition, each with its fix; ``to_build`` names the binaries not built yet."""
    found = []
    if real_node and os.geteuid() != 0:
        found.append(
            "the real node (containerd, kubelet, network namespaces) needs root: run as root "
            "(or start a cluster without it: `dlcharts cluster up --no-real-node`)"
        )
    missing = missing_packages()
    if real_node and missing:
        found.append(
            f"the Debian packages {', '.join(missing)} are missing: `make packages` installs them "
            f"(as root: apt-get install {' '.join(missing)})"
        )
    to_build = sorted(to_build)
    need = RUN_BYTES + (0 if images_cached else IMAGES_BYTES)
    folders = [cache]
    if to_build:
        go, wanted = gobuild.find_go(), gobuild.GO_VERSION.rsplit(".", 1)[0]
        if go is None:
            found.append(
                f"Go {wanted} or newer is needed to build {', '.join(to_build)} from "
                "the Go module proxy, and there is no `go` on PATH nor in /usr/local/go/bin: install it "
                "(https://go.dev/dl/ or your distribution's golang package)"
            )
        else:
            env = go_env(Path(go))
            if _version(env.get("GOVERSION", "")) < _version(wanted):
                found.append(
                    f"{go} is {env.get('GOVERSION') or 'not a working Go'}; building {', '.join(to_build)} needs Go "
                    f"{wanted} or newer: install it (https://go.dev/dl/) and put it first on PATH"
                )
            folders += [Path(env[key]) for key in ("GOMODCACHE", "GOCACHE") if env.get(key)]
            need += BUILD_BYTES
    port = os.environ.get("DLCHARTS_REGISTRY_PORT")
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            found.append(f"DLCHARTS_REGISTRY_PORT={port!r} is not a port number: unset it, or set 1-65535")
        elif not port_free(int(port)) and not _registry_of_ours_running(cache):
            found.append(
                f"DLCHARTS_REGISTRY_PORT={port} is taken by another program: unset it (a free port is chosen) "
                "or pick a free one"
            )
    devices: dict[int, Path] = {}
    devices_of_cache = _existing(cache)
    for folder in folders:
        existing = _existing(folder)
        devices.setdefault(existing.stat().st_dev, existing)
    for folder in devices.values():
        usage = shutil.disk_usage(folder)
        # the real node's kubelet taints itself (disk pressure) below EVICTION_FREE of the disk: keep a margin
        floor = 2 * EVICTION_FREE * usage.total if real_node and folder == devices_of_cache else 0
        if usage.free < need + floor:
            found.append(
                f"{folder} has {usage.free / GIB:.1f} GiB free; the builds and images cached there need about "
                f"{(need + floor) / GIB:.0f} GiB"
                + (f" (the real node's kubelet stops scheduling below {EVICTION_FREE:.0%} free)" if floor else "")
                + ": free some space, or set DLCHARTS_CACHE (and GOMODCACHE/GOCACHE) to a larger disk"
            )
    return found


def _registry_of_ours_running(cache: Path) -> bool:
    """A port held by a registry this cache already runs is not a conflict: it is reused."""
    return any(
        registry.Registry(pidfile.parent, use_env_port=False).status().pid is not None
        for pidfile in cache.glob("registry/**/registry.pid")
    )


def require(cache: Path, *, to_build: Iterable[str] = (), images_cached: bool = True, real_node: bool = True) -> None:
    """:func:`problems`, raised together as one :class:`ClusterError` (nothing to report: returns)."""
    found = problems(cache, to_build=to_build, images_cached=images_cached, real_node=real_node)
    if found:
        raise ClusterError(
            "this machine is not ready for the embedded cluster:\n" + "\n".join(f"  - {p}" for p in found)
        )
