"""Build dlcharts' wheels: the pure-Python one, and one per platform that carries the harness's Go helpers.

    python native/wheels.py [--platform GOOS/GOARCH ...] [--out dist]      (make dist: this machine's platform)
    python native/wheels.py --all                                           every platform in PLATFORMS

A platform wheel is the pure wheel plus ``dlcharts/_native/``: the render servers of both helm majors and the API
server's rules of both Kubernetes minors (dlcharts.native.HELPERS), cross-compiled from native/ by
dlcharts.native.build (static, CGO_ENABLED=0; cached in the tools folder in folders named for the platform), with
``manifest.json`` naming the platform and each helper's file, version and sha256. Its tag is ``py3-none-<platform>``:
the helpers are programs, not Python extensions, so one wheel serves every Python 3 (as ruff's and uv's wheels do),
and pip prefers it to the pure one wherever it fits.
The pure wheel (``py3-none-any``) stays for every other platform; installed there, a check that needs a helper
says it did not run (dlcharts.native.missing_reason) and fails the run.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import hashlib
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from dlcharts import native
from dlcharts.native import platform_tag

REPO = Path(__file__).resolve().parents[1]
#: Go's platform -> the wheel's platform tags. Static Go binaries run on any glibc or musl Linux; Go 1.26 needs
#: macOS 12 or later.
PLATFORMS = {
    "linux/amd64": "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64",
    "linux/arm64": "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64",
    "darwin/amd64": "macosx_12_0_x86_64",
    "darwin/arm64": "macosx_12_0_arm64",
}


def pure_wheel(out: Path) -> Path:
    """``pip wheel`` of the checkout: dlcharts-<version>-py3-none-any.whl in ``out``. One build at a time: setuptools
    builds in the checkout's build/ and src/*.egg-info, which two builds at once (pytest-xdist workers) would share."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("dlcharts-*-py3-none-any.whl"):
        old.unlink()
    (REPO / "build").mkdir(exist_ok=True)
    with (REPO / "build" / ".wheel.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(REPO)],
            check=True,
        )
    (wheel,) = out.glob("dlcharts-*-py3-none-any.whl")
    return wheel


def build_helpers(platform: str) -> dict[str, Path]:
    """The helpers for ``platform``, built (or found in the tools folder) from this checkout's native/."""
    return native.build(native.HELPERS, platform=platform)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def platform_wheel(pure: Path, platform: str, helpers: dict[str, Path], out: Path) -> Path:
    """``pure`` with ``helpers`` as dlcharts/_native/ and a manifest, tagged for ``platform``."""
    tags = PLATFORMS[platform]
    name, version = pure.name.split("-")[:2]
    target = out / f"{name}-{version}-py3-none-{tags}.whl"
    manifest: dict[str, object] = {"platform": platform, "helpers": {}}
    files: dict[str, tuple[bytes, int]] = {}  # archive name -> (data, unix mode)
    for helper, path in helpers.items():
        data = path.read_bytes()
        file = helper.replace("@", "-")
        files[f"dlcharts/_native/{file}"] = (data, 0o755)
        version_dir = path.parent.name.removeprefix(path.name + "-")  # <name>-<version>[-<goos>-<goarch>]
        manifest["helpers"][helper] = {  # type: ignore[index]
            "file": file, "version": version_dir.removesuffix("-" + platform.replace("/", "-")),
            "sha256": hashlib.sha256(data).hexdigest(),
        }  # fmt: skip
    files["dlcharts/_native/manifest.json"] = (json.dumps(manifest, indent=1, sort_keys=True).encode() + b"\n", 0o644)
    with zipfile.ZipFile(pure) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        dist_info = next(n.split("/")[0] for n in src.namelist() if n.endswith(".dist-info/WHEEL"))
        record = []
        for info in src.infolist():
            if info.filename in (f"{dist_info}/RECORD", f"{dist_info}/WHEEL"):
                continue
            data = src.read(info)
            dst.writestr(info, data)
            record.append(f"{info.filename},{_record_hash(data)},{len(data)}")
        wheel_meta = [
            line for line in src.read(f"{dist_info}/WHEEL").decode().splitlines() if not line.startswith("Tag:")
        ]
        wheel_meta += [f"Tag: py3-none-{tag}" for tag in tags.split(".")]
        files[f"{dist_info}/WHEEL"] = ("\n".join(wheel_meta).encode() + b"\n", 0o644)
        for archive_name, (data, mode) in sorted(files.items()):
            info = zipfile.ZipInfo(archive_name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(info, data)
            record.append(f"{archive_name},{_record_hash(data)},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        dst.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                        help="a platform to build a wheel for (repeatable; default: this machine's)")  # fmt: skip
    parser.add_argument("--all", action="store_true", help="every platform")
    parser.add_argument("--out", default=str(REPO / "dist"), help="where the wheels go (default: dist/)")
    args = parser.parse_args(argv)
    platforms = sorted(PLATFORMS) if args.all else args.platform or [platform_tag()]
    unknown = [p for p in platforms if p not in PLATFORMS]
    if unknown:
        parser.error(f"no wheel is built for {', '.join(unknown)}; platforms: {', '.join(PLATFORMS)}")
    out = Path(args.out)
    pure = pure_wheel(out)
    print(f"{pure.name}: {pure.stat().st_size / 1e6:.1f} MB (pure Python: no helpers)")
    for platform in platforms:
        started = time.monotonic()
        helpers = build_helpers(platform)
        built = time.monotonic() - started
        wheel = platform_wheel(pure, platform, helpers, out)
        print(f"{wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB; helpers built or found in {built:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
