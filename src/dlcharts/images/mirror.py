"""The Debian mirror this machine's apt already uses: the images are built from the same one.

Read from /etc/apt/sources.list and /etc/apt/sources.list.d/ (one-line ``.list`` and deb822 ``.sources``
files); the first ``deb`` source of Debian's main archive (a release suite such as ``bookworm``, not
``-security`` or ``-updates``) wins. ``$DLCHARTS_DEBIAN_MIRROR`` overrides it. No host is written here.
"""

from __future__ import annotations

import os
from pathlib import Path

from dlcharts.errors import ImageError

MIRROR_ENV = "DLCHARTS_DEBIAN_MIRROR"
APT_ROOT = Path("/etc/apt")


def _one_line(text: str) -> list[tuple[list[str], list[str], list[str]]]:
    entries = []
    for raw in text.splitlines():
        words = raw.split("#", 1)[0].split()
        if len(words) < 3 or words[0] != "deb":
            continue
        words = [w for w in words[1:] if not (w.startswith("[") or w.endswith("]") or "=" in w)]
        if len(words) >= 2:
            entries.append(([words[0]], [words[1]], words[2:]))
    return entries


def _deb822(text: str) -> list[tuple[list[str], list[str], list[str]]]:
    entries = []
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0].isspace() and key:
                fields[key] += " " + line.strip()
                continue
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
            continue
        entries.append(
            (fields.get("uris", "").split(), fields.get("suites", "").split(), fields.get("components", "").split())
        )
    return entries


def debian_mirror(apt_root: Path = APT_ROOT) -> str:
    """The URI of Debian's main archive in this machine's apt sources (or $DLCHARTS_DEBIAN_MIRROR)."""
    if os.environ.get(MIRROR_ENV):
        return os.environ[MIRROR_ENV].rstrip("/")
    files = [apt_root / "sources.list", *sorted((apt_root / "sources.list.d").glob("*.list"))]
    files += sorted((apt_root / "sources.list.d").glob("*.sources"))
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        entries = _deb822(text) if path.suffix == ".sources" else _one_line(text)
        for uris, suites, components in entries:
            release = [s for s in suites if "-" not in s and "/" not in s]
            if uris and release and "main" in components and not uris[0].rstrip("/").endswith("-security"):
                return uris[0].rstrip("/")
    raise ImageError(
        f"no Debian main archive found in the apt sources under {apt_root} (a 'deb' source of a release suite "
        f"such as bookworm with component main); set {MIRROR_ENV}=<mirror URI> to name one"
    )
