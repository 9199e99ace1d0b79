"""Build the local images from Debian packages and PyPI wheels, without Docker, with kept tools.

Steps, each cached under ``$DLCHARTS_CACHE/images/`` by a key that hashes everything it depends on:

1. rootfs  ``mmdebstrap --variant=minbase`` of the image's suite and packages from the Debian mirror of
           this machine's apt sources, written as a tar with ``SOURCE_DATE_EPOCH`` (mmdebstrap then makes
           it bit-for-bit reproducible). Downloaded .debs are kept in ``debs/`` for the next rootfs.
2. wheels  ``pip download`` on the host (the host's pip configuration is how PyPI is reached) for the
           image's Python, glibc and CPU, binary wheels only.
3. layer   the rootfs unpacked in a scratch folder; in a private mount namespace with /dev and /proc
           mounted and the wheels bound read-only, ``chroot`` runs ``python3 -m venv /opt/venv`` and
           ``pip install --no-index --find-links`` with an environment of our own (no PIP_* of the host,
           no pip.conf is read: PIP_CONFIG_FILE=/dev/null). /opt/venv becomes a second layer: a GNU tar
           sorted by name, owner 0, every mtime SOURCE_DATE_EPOCH.
4. oci     ``umoci`` (init, new, raw add-layer, config) writes an OCI image layout with the config (user,
           env, working directory, cmd, no entrypoint, created = SOURCE_DATE_EPOCH, no history).
5. push    ``crane push`` of that layout to the local registry (see dlcharts.host.registry).

A step whose result is in the cache is verified before it is used: every file's sha256 is compared with
the digest recorded when it was made (for an OCI layout: every blob against its own digest). A damaged
entry (truncated tar, missing or changed blob) is reported, deleted and rebuilt, never used. With every
step cached, a build only verifies digests.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dlcharts.errors import ImageError
from dlcharts.host.registry import require_tool
from dlcharts.host.registry_access import Access
from dlcharts.images.definitions import IMAGES, VENV, ImageDef
from dlcharts.images.mirror import debian_mirror
from dlcharts.toolchain import cache_root
from dlcharts.utils.digest import json_digest, sha256_file
from dlcharts.utils.flock import locked
from dlcharts.waiting import wait_process

#: every timestamp inside the images (2026-01-01T00:00:00Z)
SOURCE_DATE_EPOCH = 1767225600
#: bumped when this file changes how an image is made, so old cache entries are not reused
RECIPE_VERSION = "1"


@dataclasses.dataclass(frozen=True)
class BuildResult:
    image: ImageDef
    digest: str  # manifest digest (sha256:...)
    size: int  # compressed: config + layers, what a node pulls
    rootfs_size: int  # uncompressed layers
    seconds: float
    built: list[str]  # the steps that ran (empty: everything came from the cache)
    layout: Path
    step_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    pushed: str = ""  # registry reference with digest, when pushed


def images_dir(cache: Path | None = None) -> Path:
    return (cache if cache is not None else cache_root()) / "images"


def _hash(data: Any) -> str:
    return json_digest(data, 32)


def _tool_version(cmd: Sequence[str]) -> str:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise ImageError(f"{cmd[0]} is not usable ({err}); install it (Debian: apt-get install {cmd[0]})") from err
    return out.strip().splitlines()[0] if out.strip() else ""


class Builder:
    """Builds images into ``<cache>/images`` (tool output goes to ``<cache>/images/logs/<image>.log``)."""

    def __init__(self, cache: Path | None = None, *, say: Callable[[str], None] | None = None) -> None:
        self.root = images_dir(cache)
        self.say = say or (lambda line: print(line, file=sys.stderr))
        self.logs = self.root / "logs"
        self._versions: dict[str, str] = {}

    # ----- keys
    def tool_versions(self) -> dict[str, str]:
        if not self._versions:
            self._versions = {
                "mmdebstrap": _tool_version(["mmdebstrap", "--version"]),
                "umoci": _tool_version(["umoci", "--version"]),
                "pip": _tool_version([sys.executable, "-m", "pip", "--version"]).split(" from ")[0],
                "recipe": RECIPE_VERSION,
            }
        return self._versions

    def rootfs_key(self, image: ImageDef) -> str:
        return _hash(
            {
                "suite": image.suite,
                "packages": sorted(image.packages),
                "hooks": list(image.hooks),
                "mirror": debian_mirror(),
                "mmdebstrap": self.tool_versions()["mmdebstrap"],
                "epoch": SOURCE_DATE_EPOCH,
                "recipe": RECIPE_VERSION,
            }
        )

    def wheels_key(self, image: ImageDef) -> str:
        return _hash(
            {
                "requirements": sorted(image.requirements),
                "sdists": sorted(image.sdists),
                "build": (self.rootfs_key(build_root(image)), sorted(image.build_env)) if image.sdists else None,
                "python": image.python,
                "glibc": image.glibc,
                "pip": self.tool_versions()["pip"],
                "recipe": RECIPE_VERSION,
            }
        )

    def layer_key(self, image: ImageDef) -> str:
        return _hash(
            {
                "rootfs": self.rootfs_key(image),
                "wheels": self.wheels_key(image),
                "check": image.check,
                "venv": VENV,
                "system_site_packages": image.system_site_packages,
            }
        )

    def image_key(self, image: ImageDef) -> str:
        return _hash(
            {
                "rootfs": self.rootfs_key(image),
                "layer": self.layer_key(image) if image.requirements else None,
                "check": image.check,
                "config": self._config_args(image),
                "tag": image.tag,
                "tools": self.tool_versions(),
            }
        )

    # ----- public
    def build(self, image: ImageDef) -> BuildResult:
        started = time.monotonic()
        built: list[str] = []
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / ".lock"):
            clock = _Clock()
            with clock("verify"):
                cached = self._cached_oci(image)
            if cached is not None:
                layout, meta = cached
            else:
                with clock("rootfs"):
                    rootfs = self._rootfs(image, built)
                layer = None
                if image.requirements:
                    with clock("wheels"):
                        wheels = self._wheels(image, built)
                    with clock("layer"):
                        layer = self._layer(image, rootfs, wheels, built)
                with clock("oci"):
                    layout, meta = self._oci(image, rootfs, layer, built)
        return BuildResult(
            image=image,
            digest=meta["digest"],
            size=meta["size"],
            rootfs_size=meta["rootfs_size"],
            seconds=time.monotonic() - started,
            built=built,
            layout=layout,
            step_seconds=clock.seconds,
        )

    def rootfs(self, image: ImageDef) -> Path:
        """The image's root file system tar (mmdebstrap), from the cache when it verifies."""
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / ".lock"):
            return self._rootfs(image, [])

    def push(self, result: BuildResult, registry: str, access: Access | None = None) -> str:
        """Push the built layout to ``registry`` (host:port; ``access``: its CA and login, for a secure one);
        return ``<ref>@<digest>``."""
        crane = require_tool("crane")
        ref = f"{registry}/{result.image.reference}"
        env = {**_crane_env(), **(access.client_env() if access is not None else {})}
        self._run([str(crane), "push", str(result.layout), ref], result.image, "push", env)
        remote = subprocess.run([str(crane), "digest", ref], capture_output=True, text=True, check=False, env=env)
        if remote.returncode != 0 or remote.stdout.strip() != result.digest:
            raise ImageError(
                f"{ref}: the registry has {remote.stdout.strip() or remote.stderr.strip()!r} after the push, "
                f"not the built {result.digest}"
            )
        return f"{ref}@{result.digest}"

    # ----- steps
    def _rootfs(self, image: ImageDef, built: list[str]) -> Path:
        key = self.rootfs_key(image)
        out = self.root / "rootfs" / f"{key}.tar"
        if self._verified_file(out, image, "rootfs"):
            return out
        _need_root(image, "rootfs")
        mirror = debian_mirror()
        debs = self.root / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        archives = '"$1"/var/cache/apt/archives'
        q = shlex.quote(str(debs))
        cmd = [
            "mmdebstrap",
            "--quiet",
            "--mode=root",
            "--variant=minbase",
            "--format=tar",
            f"--include={','.join(sorted(image.packages))}",
            # keep the downloaded .debs between builds: apt reuses a cached .deb only when its hash matches
            "--skip=download/empty",
            "--skip=output/dev",
            f"--setup-hook=mkdir -p {archives} && find {q} -maxdepth 1 -name '*.deb' -exec cp -t {archives} {{}} +",
            f"--customize-hook=find {archives} -maxdepth 1 -name '*.deb' -exec cp -t {q} {{}} + && "
            f"rm -f {archives}/*.deb",
            *(f"--customize-hook={hook}" for hook in image.hooks),
            image.suite,
            str(out) + ".partial",
            mirror,
        ]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_name(out.name + ".partial").unlink(missing_ok=True)  # left by a failed run
        self.say(f"{image.name}: rootfs {image.suite} [{' '.join(sorted(image.packages))}] from {mirror}")
        self._run(cmd, image, "rootfs", env={"SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)})
        self._commit_file(out)
        built.append("rootfs")
        return out

    def _wheels(self, image: ImageDef, built: list[str]) -> Path:
        key = self.wheels_key(image)
        out = self.root / "wheels" / key
        meta = out.with_suffix(".json")
        if out.is_dir() and meta.is_file():
            recorded = json.loads(meta.read_text())["files"]
            actual = {p.name for p in out.iterdir()}
            bad = [n for n, d in recorded.items() if n not in actual or sha256_file(out / n) != d]
            if not bad and actual == set(recorded):
                return out
            self.say(f"{image.name}: wheelhouse {key} is damaged ({', '.join(bad) or 'unexpected files'}); rebuilding")
        meta.unlink(missing_ok=True)
        shutil.rmtree(out, ignore_errors=True)
        partial = Path(str(out) + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        major, minor = image.glibc.split(".")
        platforms = [f"manylinux_{major}_{m}_x86_64" for m in range(int(minor), 4, -1)]
        platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
        py = image.python.replace(".", "")
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(partial), "--only-binary=:all:"]
        cmd += ["--python-version", image.python, "--implementation", "cp", "--abi", f"cp{py}"]
        for platform in platforms:
            cmd += ["--platform", platform]
        binary = [r for r in image.requirements if r not in image.sdists]
        if binary:
            self.say(f"{image.name}: wheels for Python {image.python}: {' '.join(binary)}")
            self._run(cmd + binary, image, "wheels")
        if image.sdists:
            self._build_sdists(image, partial)
        files = {p.name: sha256_file(p) for p in sorted(partial.iterdir())}
        partial.rename(out)
        meta.write_text(json.dumps({"files": files}, indent=1) + "\n")
        built.append("wheels")
        return out

    def _build_sdists(self, image: ImageDef, wheelhouse: Path) -> None:
        """Download ``image.sdists`` on the host and build each into ``wheelhouse`` in the image's build root."""
        _need_root(image, "wheels")
        root = self._rootfs(build_root(image), [])
        with tempfile.TemporaryDirectory(prefix="sdists-", dir=self.root / "tmp") as src:
            cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary=:all:", "--dest", src]
            self.say(f"{image.name}: sdists {' '.join(image.sdists)}")
            self._run([*cmd, *image.sdists], image, "wheels")
            env = " ".join(shlex.quote(e) for e in image.build_env)
            script = (
                f"cd /tmp && for s in /tmp/sdists/*; do env {env} python3 -m pip wheel --no-deps --no-build-isolation "
                '--no-index --wheel-dir /tmp/wheels "$s" || exit 1; done'
            )
            self.say(
                f"{image.name}: building {' '.join(image.sdists)} from source ({image.suite}, Python {image.python})"
            )
            with self._unpacked(root) as tree:
                self._chroot(tree, script, image, "wheels", wheels=wheelhouse, writable=True, sdists=Path(src))

    def _layer(self, image: ImageDef, rootfs: Path, wheels: Path, built: list[str]) -> Path:
        out = self.root / "layers" / f"{self.layer_key(image)}.tar"
        if self._verified_file(out, image, "layer"):
            return out
        _need_root(image, "layer")
        out.parent.mkdir(parents=True, exist_ok=True)
        reqs = " ".join(shlex.quote(r) for r in image.requirements)
        script = (
            f"python3 -m venv {'--system-site-packages ' if image.system_site_packages else ''}{VENV} && "
            f"{VENV}/bin/pip install --quiet --no-index --find-links /tmp/wheels --no-cache-dir {reqs}"
        )
        if image.check:
            script += f" && PATH={VENV}/bin:$PATH sh -c {shlex.quote(image.check)}"
        self.say(f"{image.name}: installing {' '.join(image.requirements)} offline into {VENV}")
        with self._unpacked(rootfs) as tree:
            self._chroot(tree, script, image, "layer", wheels=wheels)
            self._run(
                [*_tar_create(out.with_name(out.name + ".partial"), tree), VENV.lstrip("/")],
                image,
                "layer",
            )
        self._commit_file(out)
        built.append("layer")
        return out

    def is_cached(self, image: ImageDef) -> bool:
        """Whether a finished layout of ``image`` is in the cache (its blobs are checked when it is used)."""
        layout = self._layout_path(image)
        return layout.is_dir() and layout.with_suffix(".json").is_file()

    def _layout_path(self, image: ImageDef) -> Path:
        return self.root / "oci" / self.image_key(image)

    def _cached_oci(self, image: ImageDef) -> tuple[Path, dict[str, Any]] | None:
        """The finished layout when it is cached and every blob checks out (then no input is needed)."""
        layout = self._layout_path(image)
        meta_path = layout.with_suffix(".json")
        if not (layout.is_dir() and meta_path.is_file()):
            return None
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        problem = verify_layout(layout, meta.get("digest", ""))
        if not problem:
            return layout, meta
        self.say(f"{image.name}: cached OCI layout {layout.name} is damaged ({problem}); rebuilding")
        meta_path.unlink()
        shutil.rmtree(layout)
        return None

    def _oci(self, image: ImageDef, rootfs: Path, layer: Path | None, built: list[str]) -> tuple[Path, dict[str, Any]]:
        layout = self._layout_path(image)
        meta_path = layout.with_suffix(".json")
        if not layer and image.check:
            with self._unpacked(rootfs) as tree:
                self._chroot(tree, image.check, image, "check")
        meta_path.unlink(missing_ok=True)
        shutil.rmtree(layout, ignore_errors=True)
        partial = Path(str(layout) + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        target = f"{partial}:{image.tag}"
        self.say(f"{image.name}: OCI image {image.reference} (umoci)")
        self._run(["umoci", "init", "--layout", str(partial)], image, "oci")
        self._run(["umoci", "new", "--image", target], image, "oci")
        for tar in (rootfs, layer):
            if tar is not None:
                self._run(["umoci", "raw", "add-layer", "--no-history", "--image", target, str(tar)], image, "oci")
        self._run(["umoci", "config", "--image", target, *self._config_args(image)], image, "oci")
        self._run(["umoci", "gc", "--layout", str(partial)], image, "oci")
        digest, size = layout_summary(partial)
        rootfs_size = sum(tar.stat().st_size for tar in (rootfs, layer) if tar is not None)
        partial.rename(layout)
        meta = {"digest": digest, "size": size, "rootfs_size": rootfs_size, "reference": image.reference}
        meta_path.write_text(json.dumps(meta, indent=1) + "\n")
        built.append("oci")
        return layout, meta

    # ----- helpers
    @staticmethod
    def _config_args(image: ImageDef) -> list[str]:
        created = datetime.datetime.fromtimestamp(SOURCE_DATE_EPOCH, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        args = ["--no-history", f"--created={created}", "--author=dl-charts", f"--config.user={image.user}"]
        args += [f"--config.workingdir={image.workdir}", "--clear=config.entrypoint", "--clear=config.env"]
        args += [f"--config.env={e}" for e in image.config_env()]
        args += [f"--config.cmd={c}" for c in image.cmd]
        args += [f"--config.label=org.opencontainers.image.description={image.differs or image.reference}"]
        return args

    def _verified_file(self, path: Path, image: ImageDef, step: str) -> bool:
        meta = path.with_name(path.name + ".sha256")
        if not path.is_file() or not meta.is_file():
            return False
        want = meta.read_text().strip()
        have = sha256_file(path)
        if have == want:
            return True
        self.say(
            f"{image.name}: cached {step} {path.name} is damaged (sha256 {have[:12]}, recorded {want[:12]}); rebuilding"
        )
        path.unlink()
        meta.unlink()
        return False

    @staticmethod
    def _commit_file(path: Path) -> None:
        partial = path.with_name(path.name + ".partial")
        digest = sha256_file(partial)
        partial.rename(path)
        path.with_name(path.name + ".sha256").write_text(digest + "\n")

    @contextlib.contextmanager
    def _unpacked(self, rootfs: Path) -> Iterator[Path]:
        scratch = self.root / "tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        tree = Path(tempfile.mkdtemp(prefix="rootfs-", dir=scratch))
        try:
            subprocess.run(["tar", "-xf", str(rootfs), "-C", str(tree), "--numeric-owner"], check=True)
            yield tree
        finally:
            shutil.rmtree(tree, ignore_errors=True)

    def _chroot(
        self,
        tree: Path,
        script: str,
        image: ImageDef,
        step: str,
        wheels: Path | None = None,
        writable: bool = False,
        sdists: Path | None = None,
    ) -> None:
        """Run ``script`` with sh in ``tree``, in a private mount and pid namespace (mounts end with it):
        ``wheels`` at /tmp/wheels (read-only unless ``writable``), ``sdists`` read-only at /tmp/sdists."""
        t = shlex.quote(str(tree))
        # the rootfs tar has no /dev entries (mmdebstrap --skip=output/dev): the runtime provides them
        mounts = f"mkdir -p {t}/dev {t}/proc && mount --rbind /dev {t}/dev && mount -t proc proc {t}/proc"
        for host, at, ro in ((wheels, "wheels", not writable), (sdists, "sdists", True)):
            if host is not None:
                mode = "-o ro " if ro else ""
                mounts += f" && mkdir -p {t}/tmp/{at} && mount --bind {mode}{shlex.quote(str(host))} {t}/tmp/{at}"
        env = [
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME=/root",
            "LANG=C.UTF-8",
            f"SOURCE_DATE_EPOCH={SOURCE_DATE_EPOCH}",
            "PIP_CONFIG_FILE=/dev/null",
            "PIP_DISABLE_PIP_VERSION_CHECK=1",
            "PYTHONHASHSEED=0",
        ]
        inner = f"{mounts} && exec chroot {t} /usr/bin/env -i {' '.join(env)} /bin/sh -c {shlex.quote(script)}"
        self._run(["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c", inner], image, step)

    def _run(self, cmd: Sequence[str], image: ImageDef, step: str, env: dict[str, str] | None = None) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{image.name}.log"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCE_DATE_EPOCH")}
        if step != "wheels":  # the host's pip configuration is for downloading wheels only
            full_env = {k: v for k, v in full_env.items() if not k.startswith("PIP_")}
        full_env.update(env or {})
        with log.open("a") as fh:
            fh.write(f"\n$ {shlex.join(cmd)}\n")
            fh.flush()
            proc = subprocess.Popen(list(cmd), stdout=fh, stderr=subprocess.STDOUT, env=full_env)
            wait_process(proc, f"building image {image.name}, step {step}", self.say)
        if proc.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise ImageError(
                f"{image.name}: step {step} failed (exit code {proc.returncode}): {shlex.join(cmd)[:300]}\n"
                f"last lines of {log}:\n{tail}"
            )


def build_root(image: ImageDef) -> ImageDef:
    """The root file system ``image.sdists`` are built in: the image's, plus its ``build_packages``."""
    return dataclasses.replace(image, name=f"{image.name}-build", packages=(*image.packages, *image.build_packages))


def _need_root(image: ImageDef, step: str) -> None:
    if os.geteuid() != 0:
        raise ImageError(
            f"{image.name}: step {step} needs root (mmdebstrap --mode=root, chroot and mounts in a private "
            "namespace); run `dlcharts images build` as root (CI does)"
        )


class _Clock:
    """``with clock("step"):`` adds the block's wall seconds to ``clock.seconds["step"]``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[step] = round(self.seconds.get(step, 0.0) + time.monotonic() - started, 2)


def _tar_create(out: Path, tree: Path) -> list[str]:
    """GNU tar arguments for a reproducible layer of paths under ``tree`` (names follow)."""
    return [
        "tar",
        "--create",
        f"--file={out}",
        f"--directory={tree}",
        "--sort=name",
        "--format=posix",
        "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
        f"--mtime=@{SOURCE_DATE_EPOCH}",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
    ]


def _crane_env() -> dict[str, str]:
    # crane reads registry credentials from ~/.docker; a plain local registry needs none, a secure one's login
    # comes with its Access.
    return {"DOCKER_CONFIG": "/nonexistent"}


def _blob(layout: Path, digest: str) -> Path:
    algo, _, hexdigest = digest.partition(":")
    return layout / "blobs" / algo / hexdigest


def _manifest(layout: Path) -> tuple[str, dict[str, Any]]:
    index = json.loads((layout / "index.json").read_text())
    manifests = index.get("manifests", [])
    if len(manifests) != 1:
        raise ValueError(f"index.json lists {len(manifests)} manifests, expected 1")
    digest = manifests[0]["digest"]
    return digest, json.loads(_blob(layout, digest).read_text())


def verify_layout(layout: Path, digest: str) -> str:
    """'' when every blob the layout's image needs is there with its digest and size; else what is wrong."""
    try:
        have, manifest = _manifest(layout)
        if have != digest:
            return f"index.json names {have}, recorded {digest}"
        blobs: list[dict[str, Any]] = [{"digest": digest, "size": _blob(layout, digest).stat().st_size}]
        blobs += [manifest["config"], *manifest["layers"]]
        for desc in blobs:
            path = _blob(layout, desc["digest"])
            if not path.is_file():
                return f"blob {desc['digest']} is missing"
            if path.stat().st_size != desc["size"]:
                return f"blob {desc['digest']} has {path.stat().st_size} bytes, not {desc['size']}"
            if "sha256:" + sha256_file(path) != desc["digest"]:
                return f"blob {desc['digest']} does not match its digest"
    except (OSError, ValueError, KeyError) as err:
        return f"unreadable: {err}"
    return ""


def layout_summary(layout: Path) -> tuple[str, int]:
    """(manifest digest, compressed size of config + layers: what a node pulls)."""
    digest, manifest = _manifest(layout)
    return digest, manifest["config"]["size"] + sum(layer["size"] for layer in manifest["layers"])


def build_images(names: Sequence[str], cache: Path | None = None) -> list[BuildResult]:
    unknown = [n for n in names if n not in IMAGES]
    if unknown:
        raise ImageError(f"unknown image {', '.join(unknown)}; known: {', '.join(IMAGES)}")
    builder = Builder(cache)
    return [builder.build(IMAGES[n]) for n in (names or list(IMAGES))]
