"""Every link in the project's Markdown resolves: a relative link names a file or folder that is there (an image
too), and a ``#fragment`` names a heading of the file it points into (GitHub's anchors). Links to the web are not
followed (the machines have no route there)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT

#: [text](target) and ![alt](target), the target up to a space (a title may follow) or the closing parenthesis
INLINE = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
#: [label]: target
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, oci:, ...


def markdown_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True, check=True, cwd=ROOT)
    return [ROOT / name for name in listed.stdout.split() if (ROOT / name).is_file()]


def prose(text: str) -> str:
    """``text`` without code blocks and code spans, where a bracket is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    body = prose(text)
    return [m.group(1) for m in INLINE.finditer(body)] + [m.group(1) for m in REFERENCE.finditer(body)]


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*|_{2,}|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        if match := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = anchor(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken(path: Path) -> list[str]:
    wrong = []
    for target in links(path.read_text()):
        if EXTERNAL.match(target):
            continue
        where, _, fragment = target.partition("#")
        resolved = (path.parent / where).resolve() if where else path
        if not resolved.exists():
            wrong.append(f"{target}: no {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved}")
        elif fragment and resolved.suffix == ".md" and fragment.lower() not in anchors(resolved):
            wrong.append(f"{target}: {resolved.name} has no heading with the anchor #{fragment}")
    return wrong


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(path: Path) -> None:
    assert not broken(path), f"{path.relative_to(ROOT)}: broken links:\n" + "\n".join(broken(path))


def test_a_broken_link_and_a_wrong_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading, with `code`\n\ntext\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#a-heading-with-code) ![img](missing.png) [bad](there.md#nope) [web](https://example.org)\n"
        "`[not](a-link.md)`\n\n```\n[nor](this.md)\n```\n[ref]: gone/\n"
    )
    found = broken(page)
    assert [line.split(":")[0] for line in found] == ["missing.png", "there.md#nope", "gone/"], found
