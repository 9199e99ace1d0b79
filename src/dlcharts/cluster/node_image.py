"""The two images the real node needs without any registry: a pause (sandbox) image and a busybox image.

Both are made here from Debian's statically linked busybox (package busybox-static): one uncompressed layer
holding ``/bin/busybox`` and a symlink per applet, and two image configs over it (``dlcharts.local/pause``
runs ``sleep inf``; ``dlcharts.local/busybox`` runs ``sh``). They are written as an OCI image layout tar,
cached by content under ``$DLCHARTS_CACHE/images/`` (the key is the busybox binary's digest and this
module's format version), and imported into the node's containerd (namespace ``k8s.io``) with ``ctr``.

Pods use ``dlcharts.local/busybox:<tag>`` (see :func:`images`) with the default pull policy: the tag is
not ``latest``, so the kubelet takes the imported image and never tries to pull.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

from dlcharts.errors import ClusterError

BUSYBOX = Path("/bin/busybox")
FORMAT = "1"  # raise when the layout below changes: it is part of the cache key
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
# The user the busybox image runs as unless a pod says otherwise: non-root, so `runAsNonRoot` passes.
USER = "65534"


@dataclasses.dataclass(frozen=True)
class LocalImages:
    busybox: str
    pause: str
    archive: Path


def _busybox() -> Path:
    if not BUSYBOX.is_file():
        raise ClusterError(
            f"the real node's images are made from {BUSYBOX}, which is missing; "
            "install it with `apt-get install busybox-static`"
        )
    return BUSYBOX


def _key(busybox: Path) -> str:
    digest = hashlib.sha256(busybox.read_bytes()).hexdigest()
    return hashlib.sha256(f"{FORMAT}:{digest}".encode()).hexdigest()[:16]


def images(cache: Path) -> LocalImages:
    """Names of the local images and where their archive lives (built on first use)."""
    busybox = _busybox()
    key = _key(busybox)
    archive = cache / "images" / f"busybox-{key}.oci.tar"
    found = LocalImages(busybox=f"dlcharts.local/busybox:{key}", pause=f"dlcharts.local/pause:{key}", archive=archive)
    if not archive.is_file():
        _write_archive(found, busybox)
    return found


def _applets(busybox: Path) -> list[str]:
    out = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout
    return sorted({a.strip() for a in out.split() if a.strip() and "/" not in a and a != "busybox"})


def _layer(busybox: Path) -> bytes:
    """The root filesystem as an uncompressed tar with fixed owners and times (same input, same digest)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, kind: bytes, mode: int, data: bytes = b"", link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.mode = mode
            info.mtime = 0
            info.uid = info.gid = 0
            info.linkname = link
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)

        for d in ("bin", "dev", "etc", "proc", "sys", "root", "home"):
            add(d, tarfile.DIRTYPE, 0o755)
        add("tmp", tarfile.DIRTYPE, 0o1777)
        add("etc/passwd", tarfile.REGTYPE, 0o644, b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n")
        add("etc/group", tarfile.REGTYPE, 0o644, b"root:x:0:\nnogroup:x:65534:\n")
        add("bin/busybox", tarfile.REGTYPE, 0o755, busybox.read_bytes())
        for applet in _applets(busybox):
            add(f"bin/{applet}", tarfile.SYMTYPE, 0o777, link="busybox")
    return buf.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> str:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + digest.split(":")[1])
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))
    return digest


def _write_archive(found: LocalImages, busybox: Path) -> None:
    layer = _layer(busybox)
    layer_digest = "sha256:" + hashlib.sha256(layer).hexdigest()
    found.archive.parent.mkdir(parents=True, exist_ok=True)
    partial = found.archive.with_suffix(f".partial-{os.getpid()}")
    with tarfile.open(partial, "w") as tar:
        _blob(tar, layer)
        manifests = []
        for name, argv in ((found.busybox, ["/bin/sh"]), (found.pause, ["/bin/sleep", "inf"])):
            config = json.dumps(
                {
                    "architecture": "amd64",
                    "os": "linux",
                    "config": {"Entrypoint": argv, "Env": ["PATH=/bin"], "User": USER, "WorkingDir": "/"},
                    "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
                },
                sort_keys=True,
            ).encode()
            config_digest = _blob(tar, config)
            manifest = json.dumps(
                {
                    "schemaVersion": 2,
                    "mediaType": OCI_MANIFEST,
                    "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config)},
                    "layers": [{"mediaType": OCI_LAYER, "digest": layer_digest, "size": len(layer)}],
                },
                sort_keys=True,
            ).encode()
            manifests.append(
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": _blob(tar, manifest),
                    "size": len(manifest),
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name},
                }
            )
        for fname, data in (
            ("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
            ("index.json", json.dumps({"schemaVersion": 2, "manifests": manifests}, sort_keys=True).encode()),
        ):
            info = tarfile.TarInfo(fname)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    partial.replace(found.archive)


def import_images(found: LocalImages, socket: Path, log: Path) -> None:
    """Import the archive into the containerd at ``socket`` (namespace k8s.io), unpacked for the CRI."""
    cmd = ["ctr", "--address", str(socket), "-n", "k8s.io", "images", "import", str(found.archive)]
    with log.open("ab") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=fh, check=False, timeout=120)
    if proc.returncode != 0:
        raise ClusterError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}); see {log}")
