"""The one writer of bench/results.md: every section comes from its file in bench/data/ (see bench/model.py).

    python -m bench.results            write bench/results.md
    python -m bench.results --check    exit 1, naming the first difference, when results.md is not what the
                                       data gives (edited by hand, or data changed without a rewrite)

Every bench tool that measures something updates its section's data and then calls `write()`. Nothing is read
from results.md itself, so writing twice gives the same file. The analysis lives in bench/NOTES.md, which is
written by hand and has a heading for every section ("## N. <title>"), which each section links.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path
from typing import Any

from bench import model

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results.md"
NOTES = "NOTES.md"

PREAMBLE = """\
# dl-charts benchmarks

**This file is generated**: `python -m bench.results` (`make bench-results`; every bench tool runs it after it
measures) writes it from the data in [bench/data/](data/), one JSON file per section. Edit the data, or the
hand-written [NOTES.md](NOTES.md) that explains each section (how it was measured, what it shows, the sources),
never this file: `python -m bench.results --check` (and the fast test tier) fails when they differ. The
machine has 2 cores that other jobs were sharing: read each number with the load average beside it."""


# ----- cells, blocks, sections -----------------------------------------------------------------------------


def cell(value: Any, fmt: str | None = None, join: str | None = None) -> str:
    """One table cell as Markdown (see bench/model.py for the formats)."""
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, list):
        if join is not None:
            text = join.join(cell(v, fmt) for v in value)
        else:
            text = (fmt or " ".join(["{}"] * len(value))).format(*value)
    elif isinstance(value, int | float):
        text = (fmt or "{}").format(value)
    else:
        raise ValueError(f"a cell holds {type(value).__name__} {value!r}: use a number, a string, a list or null")
    if "\n" in text:
        raise ValueError(f"cell {text!r} spans lines: a table cell is one line")
    return re.sub(r"(?<!\\)\|", r"\\|", text)


def table_lines(columns: list[dict[str, Any]], rows: list[list[Any]]) -> list[str]:
    aligns = []
    for col in columns:
        align = col.get("align") or ("right" if "format" in col else "left")
        aligns.append("---:" if align == "right" else "---")
    out = [_row([col["title"] for col in columns]), "|" + "|".join(aligns) + "|"]
    for r, row in enumerate(rows):
        cells = []
        for col, value in zip(columns, row, strict=True):
            try:
                cells.append(cell(value, col.get("format"), col.get("join")))
            except (ValueError, IndexError, TypeError, KeyError) as exc:
                raise ValueError(f"row {r}, column {col['title']!r}, value {value!r}: {exc}") from exc
        out.append(_row(cells))
    return out


def _row(cells: list[str]) -> str:
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def block_lines(block: dict[str, Any]) -> list[str]:
    out = [block["caption"], ""] if block.get("caption") else []
    kind = block["kind"]
    if kind == "table":
        out += table_lines(block["columns"], block["rows"])
    elif kind == "facts":
        columns = [{"title": block["title"]}, {"title": ""}]
        out += table_lines(columns, [[f[0], cell(f[1], f[2] if len(f) > 2 else None)] for f in block["facts"]])
    elif kind == "code":
        out += ["```", *block["lines"], "```"]
    elif kind == "image":
        out.append(f"![{block['alt']}]({block['file']})")
    return [*out, ""]


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, each space a dash."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def heading(number: int, section: dict[str, Any]) -> str:
    return f"{number}. {section['title']}" if number else section["title"]


def section_lines(number: int, path: Path, section: dict[str, Any]) -> list[str]:
    title = heading(number, section)
    out = [f"## {title}", ""]
    by = section.get("by", "hand")
    written = "edited by hand" if by == "hand" else f"written by {by}"
    line = f"Data: [data/{path.name}](data/{path.name}), {written}."
    if number:
        line += f" How it was measured and what it shows: [NOTES.md, section {number}]({NOTES}#{anchor(title)})."
    out += [line, ""]
    for i, block in enumerate(section["blocks"]):
        try:
            out += block_lines(block)
        except ValueError as exc:
            raise ValueError(f"{path}, block {i} ({block.get('id')}): {exc}") from exc
    return out


def targets_lines(sections: list[tuple[int, Path, dict[str, Any]]]) -> list[str]:
    rows = [
        [t["target"], t["measured"], t["met"], f"[{n}](#{anchor(heading(n, s))})"]
        for n, _, s in sections
        for t in s.get("targets") or []
    ]
    columns = [{"title": "target"}, {"title": "measured"}, {"title": "met"}, {"title": "section"}]
    return ["## Targets (issue 7)", "", *table_lines(columns, rows), ""]


def render(data: Path = model.DATA) -> str:
    """The whole of results.md: the preamble, section 0 (the machine), the Targets table gathered from every
    section, then the numbered sections."""
    sections = [(n, p, model.load(p)) for n, p in model.section_files(data)]
    lines = [PREAMBLE, ""]
    for number, path, section in sections:
        if number == 0:
            lines += section_lines(number, path, section)
    numbered = [s for s in sections if s[0]]
    lines += targets_lines(numbered)
    for number, path, section in numbered:
        lines += section_lines(number, path, section)
    return "\n".join(lines).rstrip() + "\n"


def notes_problems(sections: list[tuple[int, dict[str, Any]]], notes: str) -> list[str]:
    """What bench/NOTES.md lacks: a "## N. <title>" heading for each numbered section."""
    have = set(re.findall(r"^## (.+?)\s*$", notes, re.MULTILINE))
    return [f"NOTES.md has no heading '## {heading(n, s)}'" for n, s in sections if n and heading(n, s) not in have]


def write(data: Path = model.DATA, results: Path = RESULTS) -> Path:
    results.write_text(render(data))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare results.md with the data; write nothing")
    args = parser.parse_args(argv)
    try:
        text = render()
        sections = [(n, model.load(p)) for n, p in model.section_files()]
    except ValueError as exc:
        print(f"bench.results: {exc}", file=sys.stderr)
        return 2
    problems = notes_problems(sections, (BENCH / NOTES).read_text())
    for problem in problems:
        print(f"bench.results: {problem}", file=sys.stderr)
    if args.check:
        current = RESULTS.read_text() if RESULTS.is_file() else ""
        if current != text:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(), "results.md", "from data", lineterm="")
            print("\n".join(list(diff)[:40]), file=sys.stderr)
            print(
                "bench.results: results.md is not what bench/data gives: run `python -m bench.results`", file=sys.stderr
            )
            return 1
        return 1 if problems else 0
    RESULTS.write_text(text)
    print(f"wrote {RESULTS.relative_to(BENCH.parent)}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
