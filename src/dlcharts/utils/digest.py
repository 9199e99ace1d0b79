"""SHA-256 digests: of a file's bytes, and of JSON-shaped data (a cache key)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of ``path``'s bytes, read a MiB at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def json_digest(data: Any, length: int = 64) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``data`` as canonical JSON (keys sorted): equal data, equal
    key, whatever the order it was built in."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:length]
