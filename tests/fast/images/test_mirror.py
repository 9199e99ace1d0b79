"""The Debian mirror comes from the machine's apt sources (one-line and deb822), never from the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts.errors import ImageError
from dlcharts.images.mirror import debian_mirror

DEB822 = """\
Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main

Types: deb-src
URIs: http://src.example/debian
Suites: bookworm
Components: main

Types: deb
# a comment
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main contrib
"""


def _apt(tmp_path: Path, sources_list: str = "", **parts: str) -> Path:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(sources_list)
    for name, text in parts.items():
        (tmp_path / "sources.list.d" / name.replace("_", ".")).write_text(text)
    return tmp_path


def test_deb822_main_archive_wins_over_security_and_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DLCHARTS_DEBIAN_MIRROR", raising=False)
    assert debian_mirror(_apt(tmp_path, debian_sources=DEB822)) == "http://mirror.example/debian"


def test_one_line_sources_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DLCHARTS_DEBIAN_MIRROR", raising=False)
    text = "# old\ndeb [signed-by=/k.gpg] http://one.example/debian bookworm main\n"
    assert debian_mirror(_apt(tmp_path, text)) == "http://one.example/debian"


def test_override_and_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLCHARTS_DEBIAN_MIRROR", "http://other.example/debian/")
    assert debian_mirror(_apt(tmp_path)) == "http://other.example/debian"
    monkeypatch.delenv("DLCHARTS_DEBIAN_MIRROR")
    with pytest.raises(ImageError, match="no Debian main archive.*DLCHARTS_DEBIAN_MIRROR"):
        debian_mirror(tmp_path)
