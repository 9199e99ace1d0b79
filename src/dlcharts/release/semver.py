"""Semantic Versioning 2.0.0: parse a version and compare by precedence (build metadata is ignored)."""

from __future__ import annotations

import dataclasses
import functools
import re

from dlcharts.errors import DLChartsError

# semver.org's grammar: no leading zeros in numeric parts, dot-separated pre-release and build identifiers.
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class InvalidVersion(DLChartsError):
    """A string that is not a Semantic Versioning 2.0 version."""


@functools.total_ordering
@dataclasses.dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        """``"1.2.3-rc.1+b5"`` -> Version; a leading ``v`` is refused, as Helm refuses it for chart versions."""
        match = _SEMVER_RE.match(str(text).strip())
        if not match:
            raise InvalidVersion(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH, e.g. 0.1.0)")
        major, minor, patch, pre, build = match.groups()
        return cls(int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (),
                   tuple(build.split(".")) if build else ())  # fmt: skip

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        # A version without pre-release ranks above the same version with one; numeric identifiers rank below
        # alphanumeric ones and compare numerically; a longer identifier list wins when all shared ones tie.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: Version) -> bool:
        return self._key() < other._key()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def next_patch(self) -> Version:
        return Version(self.major, self.minor, self.patch + 1)

    def next_minor(self) -> Version:
        return Version(self.major, self.minor + 1, 0)
