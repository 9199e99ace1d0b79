"""Go builds of pinned binaries into a cache keyed by version: the machinery under two tables, the harness's helpers
(dlcharts.native) and the embedded cluster's binaries (dlcharts.host.binaries).

A binary lives at ``<folder>/<name>-<version>[-<goos>-<goarch>]/<name>``, where the folder is ``$DLCHARTS_CACHE/bin``,
or the tools folder (dlcharts.toolchain.tools_dir) for the harness's helpers; ``NAME@oldest`` is built at the
oldest supported Kubernetes version, in that version's folder. Beside each binary, ``<name>.sha256`` holds its sha256
as built; a binary is used only while its sha256 is that one (a damaged one is reported, removed and rebuilt), and a
match is remembered in ``<name>.verified`` with the file's stamp (size, times, inode), so a warm check reads stamps
only. A binary cached before records existed is adopted when it runs its version command.

Every source comes through the Go module proxy (GOPROXY with any ``direct`` or ``off`` dropped: no VCS fallback):
a module of this checkout as committed (its go.sum checks every download), or a wrapper module generated under
``$DLCHARTS_CACHE/build``, never committed, that requires the pinned module and lists the commands to build as
tools. Builds run under ``nice -n 10`` with ``-trimpath -ldflags='-s -w ...'``, ``CGO_ENABLED=0`` and
``GOTOOLCHAIN=local``, one at a time (a file lock, ``$DLCHARTS_CACHE/bin/.build.lock``), and are reproducible: the
same version gives the same bytes on any machine of the same platform.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

from dlcharts.errors import ToolchainError
from dlcharts.toolchain import cache_root, tools_dir
from dlcharts.utils.digest import sha256_file
from dlcharts.utils.flock import locked
from dlcharts.waiting import TICK_SECONDS, duration, wait_process

PREFIX = "dlcharts build: "
GO_VERSION = "1.26.0"  # the go directive of every generated module
_GOFLAGS = "-buildvcs=false -mod=mod"
_GOFLAGS_COMMITTED = "-buildvcs=false -mod=readonly"  # a committed module: go.mod and go.sum as they are
_FALLBACK_GO = Path("/usr/local/go/bin/go")


def platform_tag() -> str:
    """This machine as Go names it: ``linux/amd64``, ``darwin/arm64``."""
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"{sys.platform.removesuffix('2')}/{arch}"  # sys.platform: linux, darwin


def check_platform(value: str) -> str:
    """``value`` when it is GOOS/GOARCH; else a ToolchainError naming it."""
    if not re.fullmatch(r"[a-z0-9]+/[a-z0-9]+", value):
        raise ToolchainError(f"platform {value!r} is not GOOS/GOARCH, such as darwin/arm64 or linux/amd64")
    return value


# ---------------------------------------------------------------------------------------------------------- modules


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A module ready for ``go build``: where to run it, its GOFLAGS, and the version flags (-X) it links into the
    binaries that ask for them (Spec.stamp)."""

    folder: Path
    goflags: str = _GOFLAGS
    stamp: str = ""


@dataclasses.dataclass(frozen=True)
class Committed:
    """A Go module of this checkout (native/...), built as committed."""

    path: Path

    def describe(self) -> str:
        return str(self.path)

    def prepare(self, go: Go) -> Prepared:
        if not (self.path / "go.mod").is_file():
            raise ToolchainError(f"{self.path} has no go.mod; is this a whole dl-charts checkout?")
        return Prepared(self.path, _GOFLAGS_COMMITTED)


@dataclasses.dataclass(frozen=True)
class Wrapper:
    """A generated module ``$DLCHARTS_CACHE/build/<folder>`` that requires ``module`` at ``version`` and lists
    ``tools`` (the packages to build). ``keep_replaces`` takes the module's own replace directives that point at
    other modules (a dependency's replaces are ignored otherwise), with ``replace_versions`` moving a replaced
    version to one the proxy serves; ``extra_requires`` pins what those need and the module does not name (go mod
    tidy would take the newest). ``git_sha_var`` is a variable set to the module's commit (10 hex digits), for the
    binaries that ask for it."""

    folder: str
    path: str  # the wrapper's module path
    module: str
    version: str
    tools: tuple[str, ...]
    keep_replaces: bool = False
    replace_versions: tuple[tuple[str, str], ...] = ()
    extra_requires: tuple[str, ...] = ()  # module@version
    git_sha_var: str = ""

    def describe(self) -> str:
        return f"{self.module} {self.version}"

    def prepare(self, go: Go) -> Prepared:
        folder = go.workdir / self.folder
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            f"// Generated by dlcharts.gobuild: builds {' and '.join(self.tools)} at {self.version}.",
            f"module {self.path}",
            "",
            f"go {GO_VERSION}",
            "",
            f"require {self.module} {self.version}",
            "",
            "tool (",
            *(f"\t{tool}" for tool in self.tools),
            ")",
        ]
        info = go.module_info(self.module, self.version) if self.keep_replaces or self.git_sha_var else {}
        if self.keep_replaces:
            lines += [f"replace {r}" for r in _replaces(Path(_field(info, "GoMod")).read_text(), self.replace_versions)]
        lines += [f"require {req.replace('@', ' ', 1)}" for req in self.extra_requires]
        (folder / "go.mod").write_text("\n".join(lines) + "\n")
        go.run(["mod", "tidy"], folder, f"preparing {self.describe()} (go mod tidy)")
        commit = _field(info, "Origin", "Hash") if self.git_sha_var else ""
        return Prepared(folder, stamp=f"-X {self.git_sha_var}={commit[:10]}" if commit else "")


def _field(info: dict[str, object], *keys: str) -> str:
    """A (nested) string field of ``go mod download -json``'s answer; "" where there is none."""
    value: object = info
    for key in keys:
        value = value.get(key, "") if isinstance(value, dict) else ""
    return value if isinstance(value, str) else ""


def _replaces(gomod: str, moves: tuple[tuple[str, str], ...]) -> list[str]:
    """The replace directives of ``gomod`` (one-line and blocks) that point at another module at a version, each as
    ``old => new version``, with each version OLD of ``moves`` at its end changed to NEW."""
    found, block = [], False
    for raw in gomod.splitlines():
        if raw == "replace (":
            block = True
            continue
        if block and raw.startswith(")"):
            block = False
            continue
        line = raw if block else raw[len("replace ") :] if raw.startswith("replace ") else ""
        line = line.lstrip(" \t")
        if re.search(r" => [^./][^ ]* v[^ ]*$", line):
            for old, new in moves:
                line = re.sub(f" {re.escape(old)}$", f" {new}", line)
            found.append(line)
    return found


@dataclasses.dataclass(frozen=True)
class Kubernetes:
    """k8s.io/kubernetes at ``version`` through a generated module ``$DLCHARTS_CACHE/build/kubernetes-<version>``
    that requires it, lists ``commands`` (cmd/<name>) as tools and replaces every staging module (published as
    v0.0.0 in its go.mod) with its published v0.<minor>.<patch>. With ``validator`` (native/k8s-validate), that
    program's Go files are copied in as ./k8s-validate, to be linked against this version."""

    version: str
    commands: tuple[str, ...]
    validator: Path | None = None

    def describe(self) -> str:
        return f"k8s.io/kubernetes {self.version}"

    @property
    def folder(self) -> str:
        """Its module's folder under ``$DLCHARTS_CACHE/build`` (a Wrapper's is its ``folder`` field)."""
        return f"kubernetes-{self.version}"

    def prepare(self, go: Go) -> Prepared:
        folder = go.workdir / self.folder
        folder.mkdir(parents=True, exist_ok=True)
        info = go.module_info("k8s.io/kubernetes", self.version)
        gomod = Path(_field(info, "GoMod"))
        if not _field(info, "GoMod") or not gomod.is_file():
            raise ToolchainError(f"could not fetch k8s.io/kubernetes@{self.version} from {go.proxy}")
        released = json.loads(Path(_field(info, "Info")).read_text()).get("Time", "")
        commit = _field(info, "Origin", "Hash")
        # every staging module, from the replace block of kubernetes' own go.mod: k8s.io/x => ./staging/src/k8s.io/x
        staging = re.findall(r"^\s*(k8s\.io/[A-Za-z0-9._-]*) => \./staging/src/", gomod.read_text(), re.M)
        if len(staging) <= 10:
            raise ToolchainError(f"found no staging modules in {gomod}; its layout changed")
        if self.validator is not None:
            copy = folder / "k8s-validate"
            copy.mkdir(exist_ok=True)
            for old in copy.glob("*.go"):
                old.unlink()
            for source in sorted(self.validator.glob("*.go")):
                shutil.copyfile(source, copy / source.name)
        minor = self.version.removeprefix("v1.")  # 35.8
        lines = [
            "// Generated by dlcharts.gobuild: builds Kubernetes server binaries from k8s.io/kubernetes.",
            "module dlcharts.local/control-plane/kubernetes",
            "",
            f"go {GO_VERSION}",
            "",
            f"require k8s.io/kubernetes {self.version}",
            "",
            "replace (",
            *(f"\t{name} => {name} v0.{minor}" for name in staging),
            ")",
            "",
            "tool (",
            *(f"\tk8s.io/kubernetes/cmd/{name}" for name in self.commands),
            ")",
        ]
        (folder / "go.mod").write_text("\n".join(lines) + "\n")
        go.run(["mod", "tidy"], folder, f"preparing {self.describe()} (go mod tidy)")
        stamp = ""
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            stamp += f" -X {pkg}.gitVersion={self.version} -X {pkg}.gitMajor=1 -X {pkg}.gitMinor={minor.split('.')[0]}"
            stamp += f" -X {pkg}.gitTreeState=clean -X {pkg}.buildDate={released}"
            stamp += f" -X {pkg}.gitCommit={commit}" if commit else ""
        return Prepared(folder, stamp=stamp)


Module = Committed | Wrapper | Kubernetes


# ------------------------------------------------------------------------------------------------------------ specs


@dataclasses.dataclass(frozen=True)
class Spec:
    """One binary of a table: its name (``NAME`` or ``NAME@oldest``), the version its cache folder is keyed by, the
    module and package it is built from, its -X flags (or, with ``stamp``, the module's version flags), the
    arguments with which it prints its version, files of the module copied into ``manifests/`` beside it (what an
    add-on is installed from), and whether it lives in the tools folder and may be built for another platform."""

    name: str
    version: str
    module: Module
    package: str
    ldflags: str = ""
    stamp: bool = False
    version_args: tuple[str, ...] = ("--version",)
    manifests: tuple[str, ...] = ()
    tools_folder: bool = False
    cross: bool = False

    @property
    def base(self) -> str:
        return self.name.partition("@")[0]

    def path(self, cache: Path | None = None, platform: str | None = None) -> Path:
        """Where it lives: under ``cache`` (default $DLCHARTS_CACHE)/bin, or the tools folder; another platform's
        build in a folder named for it."""
        suffix = "" if platform in (None, platform_tag()) else "-" + str(platform).replace("/", "-")
        folder = tools_dir() if self.tools_folder else (cache if cache is not None else cache_root()) / "bin"
        return folder / f"{self.base}-{self.version}{suffix}" / self.base

    def describe(self, platform: str | None = None) -> str:
        cross = f" for {platform}" if platform not in (None, platform_tag()) else ""
        return f"{self.name} {self.version}{cross}"


def source_hash(root: Path, *folders: str) -> str:
    """12 hex digits that change with any file under ``folders`` of ``root``: the sha256 of the sorted lines
    ``<sha256>  <folder>/<path>`` of every regular file (what ``find FOLDERS -type f | LC_ALL=C sort | xargs
    sha256sum | sha256sum`` prints, the key the cache has always used)."""
    files: list[str] = []
    for folder in folders:
        for parent, _dirs, names in os.walk(root / folder):
            rel = Path(parent).relative_to(root / folder).as_posix()
            prefix = folder if rel == "." else f"{folder}/{rel}"
            regular = (n for n in names if not (Path(parent) / n).is_symlink() and (Path(parent) / n).is_file())
            files += [f"{prefix}/{name}" for name in regular]
    listing = "".join(f"{sha256_file(root / f)}  {f}\n" for f in sorted(files))
    return hashlib.sha256(listing.encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------------------------- the cache


def _stamp(path: Path) -> str:
    """What a write to ``path`` changes: size, modification and change times in nanoseconds, inode (as ``stat -L -c
    '%s %.9Y %.9Z %i'`` prints them)."""
    st = path.stat()
    return " ".join((str(st.st_size), _seconds(st.st_mtime_ns), _seconds(st.st_ctime_ns), str(st.st_ino)))


def _seconds(ns: int) -> str:
    return f"{ns // 10**9}.{ns % 10**9:09d}"


def cached(spec: Spec, path: Path, *, cross: bool = False, out: TextIO | None = None) -> bool:
    """``path`` holds ``spec`` as it was built: its sha256 is the recorded one (remembered against the file's stamp,
    so a second look reads stamps only; a read-only cache is hashed each time). An entry without a record is adopted
    when it runs its version command. A damaged entry is reported and removed, so that it is rebuilt."""
    if not path.exists():
        return False
    record, verified = path.with_name(path.name + ".sha256"), path.with_name(path.name + ".verified")
    executable = path.is_file() and os.access(path, os.X_OK)
    if record.is_file():
        recorded = record.read_text().rstrip("\n")
        with contextlib.suppress(OSError):
            if executable and verified.read_text().rstrip("\n") == f"{_stamp(path)} {recorded}":
                return True
        if executable and sha256_file(path) == recorded:
            with contextlib.suppress(OSError):
                partial = verified.with_name(f"{verified.name}.{os.getpid()}")
                try:
                    partial.write_text(f"{_stamp(path)} {recorded}\n")
                    partial.replace(verified)
                finally:
                    partial.unlink(missing_ok=True)
            return True
        _say(out, f"{spec.name}: {path} is damaged (its sha256 is not the one recorded at its build); rebuilding it")
    elif not cross and executable and _runs(path, spec.version_args):
        with contextlib.suppress(OSError):  # a read-only cache: adopted again next time
            record.write_text(sha256_file(path) + "\n")
        return True
    else:
        command = " ".join((str(path), *spec.version_args))
        _say(out, f"{spec.name}: {path} does not run ({command} failed) and has no recorded sha256; rebuilding it")
    for stale in (path, record, verified):
        stale.unlink(missing_ok=True)
    return False


def _runs(path: Path, args: tuple[str, ...]) -> bool:
    try:
        proc = subprocess.run([str(path), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _install(built: Path, dest: Path) -> None:
    """Move a fresh build into the cache atomically, with its sha256 beside it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    record = dest.with_name(dest.name + ".sha256")
    record_partial = record.with_name(record.name + ".partial")
    record_partial.write_text(sha256_file(built) + "\n")
    partial = dest.with_name(dest.name + ".partial")
    shutil.move(built, partial)
    partial.replace(dest)
    record_partial.replace(record)


def missing(
    specs: Sequence[Spec], *, platform: str | None = None, cache: Path | None = None, out: TextIO | None = None
) -> list[Spec]:
    """Those of ``specs`` that ``cache`` (default $DLCHARTS_CACHE) does not hold, for ``platform`` (default this
    machine's), as they were built."""
    cross = platform not in (None, platform_tag())
    return [s for s in specs if not cached(s, s.path(cache, platform), cross=cross, out=out)]


# ------------------------------------------------------------------------------------------------------------- Go


def _say(out: TextIO | None, message: str) -> None:
    stream = out if out is not None else sys.stderr
    print(PREFIX + message, file=stream, flush=True)


def _nice() -> None:  # in the child, before exec: 2 shared cores
    with contextlib.suppress(OSError):
        os.nice(10)


def find_go() -> str | None:
    """``go`` on PATH, else the project machines' /usr/local/go/bin/go; None when there is neither."""
    return shutil.which("go") or (str(_FALLBACK_GO) if os.access(_FALLBACK_GO, os.X_OK) else None)


class Go:
    """The Go toolchain for a build: the binary, its environment (module proxy only, static, for ``platform``),
    the work folder for generated modules, and where its output goes."""

    def __init__(self, platform: str, workdir: Path, out: TextIO | None = None) -> None:
        found = find_go()
        if found is None:
            raise ToolchainError(
                f"building needs Go >= {GO_VERSION.rsplit('.', 1)[0]} and there is none on PATH (or {_FALLBACK_GO}): "
                "install it (https://go.dev/dl/ or your distribution's golang package) and run again"
            )
        self.binary, self.workdir, self.out = found, workdir, out
        goos, goarch = check_platform(platform).split("/")
        env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": _GOFLAGS, "GOOS": goos,
               "GOARCH": goarch}  # fmt: skip
        configured = subprocess.run([found, "env", "GOPROXY"], env=env, capture_output=True, text=True, check=False)
        proxies = [p for p in re.split(r"[,|]", configured.stdout.strip()) if p not in ("direct", "off", "")]
        if not proxies:
            raise ToolchainError(
                f"GOPROXY ({configured.stdout.strip() or 'empty'}) names no module proxy, and binaries are built "
                "from the module proxy only: set GOPROXY=https://proxy.golang.org (or your mirror)"
            )
        self.proxy = ",".join(proxies)
        self.env = {**env, "GOPROXY": self.proxy}

    def _stream(self) -> int | None:
        stream = self.out if self.out is not None else sys.stderr
        stream.flush()
        try:
            return stream.fileno()
        except (AttributeError, OSError, ValueError):
            return None  # not a file (a test's capture): the child writes to this process's stderr

    def run(self, args: list[str], cwd: Path, doing: str, *, goflags: str = _GOFLAGS, capture: bool = False) -> str:
        """``go ARGS`` in ``cwd`` under nice, its output passed through (``capture``: stdout returned), with a line
        ``still <doing>: <elapsed>`` each TICK_SECONDS; a ToolchainError when it fails."""
        env = {**self.env, "GOFLAGS": goflags}
        stream = self._stream()
        with tempfile.TemporaryFile("w+") if capture else contextlib.nullcontext() as captured:
            proc = subprocess.Popen(
                [self.binary, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=captured if capture else stream, stderr=stream, preexec_fn=_nice,
            )  # fmt: skip
            wait_process(proc, doing, lambda line: _say(self.out, line), TICK_SECONDS)
            if proc.returncode != 0:
                raise ToolchainError(
                    f"{doing} failed: go {' '.join(args)} exited with {proc.returncode} in {cwd} (Go's output is above)"
                )
            if captured is None:
                return ""
            captured.seek(0)
            return str(captured.read())

    def module_info(self, module: str, version: str) -> dict[str, object]:
        """``go mod download -json MODULE@VERSION``: Dir, GoMod, Info, Origin (Hash: the commit)."""
        text = self.run(["mod", "download", "-json", f"{module}@{version}"], self.workdir,
                        f"downloading {module} {version}", capture=True)  # fmt: skip
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ToolchainError(f"go mod download -json {module}@{version} printed no JSON: {text[:200]!r}") from None
        if not isinstance(data, dict) or data.get("Error"):
            raise ToolchainError(f"could not fetch {module}@{version} from {self.proxy}: {data.get('Error')}")
        return data


@contextlib.contextmanager
def _lock(folder: Path, out: TextIO | None) -> Iterator[None]:
    """One build at a time on this cache (the CLI and pytest workers may ask at once); the others wait."""
    path = folder / ".build.lock"
    next_line: float | None = None  # when the next progress line is due; None before the first

    def waiting(waited: float) -> None:
        nonlocal next_line
        if next_line is None or waited >= next_line:
            so_far = f": {duration(waited)}" if next_line is not None else " ..."
            _say(out, f"waiting for another build to finish (lock {path}){so_far}")
            next_line = (next_line or 0.0) + TICK_SECONDS

    with locked(path, waiting=waiting, poll=min(1.0, TICK_SECONDS)):
        yield


# ------------------------------------------------------------------------------------------------------- building


def build(
    specs: Sequence[Spec], *, platform: str | None = None, cache: Path | None = None, out: TextIO | None = None
) -> dict[str, Path]:
    """Paths of ``specs`` (for ``platform``, default this machine's), each built first where ``cache`` (default
    $DLCHARTS_CACHE; the helpers' folder is the tools folder) does not hold it. Progress goes to ``out`` (default
    stderr): what is built, ``n of m``, a line a minute while Go runs, the time each took; Go's own lines pass
    through. A ToolchainError names what failed."""
    host = platform_tag()
    target = check_platform(platform) if platform else host
    cross = target != host
    if cross:
        wrong = [s.name for s in specs if not s.cross]
        if wrong:
            allowed = "the harness's helpers (dlcharts.native.HELPERS)"
            raise ToolchainError(f"{', '.join(wrong)} is not built for another platform ({target}); only {allowed}")
    paths = {s.name: s.path(cache, target) for s in specs}
    if not missing(specs, platform=target, cache=cache, out=out):
        return paths
    root = cache if cache is not None else cache_root()
    started = time.monotonic()
    with _lock(root / "bin", out):
        todo = missing(specs, platform=target, cache=cache, out=out)  # another process may have built some meanwhile
        if todo:
            go = Go(target, root / "build", out)
            go.workdir.mkdir(parents=True, exist_ok=True)
            _build(_ordered(todo), go, target, cache, out)
            _say(out, f"done: {len(todo)} built in {duration(time.monotonic() - started)}")
    return paths


def _ordered(todo: list[Spec]) -> list[Spec]:
    """``todo`` grouped by module (in order of first appearance), so each module is prepared once."""
    modules: list[Module] = []
    for spec in todo:
        if spec.module not in modules:
            modules.append(spec.module)
    return [spec for module in modules for spec in todo if spec.module == module]


def _build(todo: list[Spec], go: Go, platform: str, cache: Path | None, out: TextIO | None) -> None:
    total = len(todo)
    _say(out, f"{total} to build: {', '.join(s.describe(platform) for s in todo)} (Go's download lines may follow)")
    prepared: dict[Module, Prepared] = {}
    for number, spec in enumerate(todo, 1):
        dest = spec.path(cache, platform)
        if spec.module not in prepared:
            _say(out, f"preparing {spec.module.describe()} for {spec.name} ...")
            prepared[spec.module] = spec.module.prepare(go)
        ready = prepared[spec.module]
        if spec.manifests:
            _copy_manifests(spec, go, dest.parent / "manifests")
        doing = f"building {spec.describe(platform)}"
        _say(out, f"{doing} ({number} of {total}) ...")
        started = time.monotonic()
        outdir = Path(tempfile.mkdtemp(prefix="out.", dir=go.workdir))
        try:
            built = outdir / spec.name
            flags = f"-s -w {ready.stamp if spec.stamp else spec.ldflags}"
            go.run(["build", "-trimpath", f"-ldflags={flags}", "-o", str(built), spec.package], ready.folder, doing,
                   goflags=ready.goflags)  # fmt: skip
            _install(built, dest)
        finally:
            shutil.rmtree(outdir, ignore_errors=True)
        _say(out, f"built {spec.describe(platform)} in {duration(time.monotonic() - started)} -> {dest}")


def _copy_manifests(spec: Spec, go: Go, dest: Path) -> None:
    if not isinstance(spec.module, Wrapper):
        raise ToolchainError(f"{spec.name}: manifests come from a Go module, and it is built from {spec.module}")
    source = Path(_field(go.module_info(spec.module.module, spec.module.version), "Dir"))
    if not source.name or not source.is_dir():
        raise ToolchainError(f"could not fetch {spec.module.module}@{spec.module.version} from {go.proxy}")
    dest.mkdir(parents=True, exist_ok=True)
    for item in spec.manifests:
        origin, copy = source / item, dest / Path(item).name
        if not origin.exists():
            raise ToolchainError(f"{spec.module.module}@{spec.module.version} has no {item}; its layout changed")
        if copy.is_dir():
            shutil.rmtree(copy)
        else:
            copy.unlink(missing_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, copy, copy_function=shutil.copyfile)
        else:
            shutil.copyfile(origin, copy)
        for path in (copy, *copy.rglob("*")):  # the module cache is read-only; the copy is ours
            path.chmod(path.stat().st_mode | 0o200)
