"""The data behind bench/results.md: one JSON file per section in bench/data/, and the blocks it holds.

``bench/data/NN-name.json`` is section NN of results.md (``00-run.json``: the machine and the last `make bench`
run, shown before the numbered sections). A section file holds:

    {
      "title": "Scale of what one job creates",          the heading, after "NN. "
      "by": "`python -m bench.scale`",                    what writes it, in Markdown ("hand": edited by hand)
      "blocks": [ ...tables, facts, code, images... ],   in the order results.md shows them
      "targets": [ {"target": ..., "measured": ..., "met": ...} ]   optional: rows of the Targets table
    }

Blocks (each may carry an ``id``, which a tool that measures uses to replace its own blocks and keep the
others, and a ``caption``, one paragraph shown above it):

    {"kind": "table", "columns": [{"title": "workers", "format": "{:,}"}, ...], "rows": [[8, ...], ...]}
    {"kind": "facts", "title": "corpus", "facts": [["objects", 10096, "{:,}"], ["helm", "v4.3.1"], ...]}
    {"kind": "code", "lines": ["make bench", ...]}
    {"kind": "image", "file": "scale.png", "alt": "objects per job"}

A column's ``format`` is a `str.format` template: a number is shown as ``format.format(value)``, a list as
``format.format(*value)`` (``"{:.0f} / {:.0f}"``), or, with ``join``, each item formatted and joined
(``"join": ", "``). A string cell is shown as it is, ``null`` as an em dash. Columns with a format are
right-aligned; ``"align": "left"`` or ``"right"`` says otherwise. bench/results.py turns all of it into
Markdown; the method and analysis of each section are hand-written in bench/NOTES.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
SECTION_FILE = re.compile(r"^(\d\d)-[a-z0-9-]+\.json$")
BLOCK_KINDS = ("table", "facts", "code", "image")

Block = dict[str, Any]
Section = dict[str, Any]


# ----- building blocks ---------------------------------------------------------------------------------------


def column(title: str, fmt: str | None = None, *, join: str | None = None, align: str | None = None) -> dict[str, Any]:
    """One table column: its heading, and how its numbers are shown (see the module's docstring)."""
    col: dict[str, Any] = {"title": title}
    if fmt is not None:
        col["format"] = fmt
    if join is not None:
        col["join"] = join
    if align is not None:
        if align not in ("left", "right"):
            raise ValueError(f"column {title!r}: align {align!r} is neither 'left' nor 'right'")
        col["align"] = align
    return col


def table(block_id: str, columns: list[dict[str, Any]], rows: list[list[Any]], caption: str | None = None) -> Block:
    for i, row in enumerate(rows):
        if len(row) != len(columns):
            raise ValueError(f"table {block_id!r}, row {i}: {len(row)} cells for {len(columns)} columns: {row!r}")
    return _block("table", block_id, caption, columns=columns, rows=rows)


def facts(block_id: str, title: str, items: list[list[Any]], caption: str | None = None) -> Block:
    """A two-column table of named values: each item is ``[label, value]`` or ``[label, value, format]``."""
    for item in items:
        if not 2 <= len(item) <= 3:
            raise ValueError(f"facts {block_id!r}: {item!r} is not [label, value] or [label, value, format]")
    return _block("facts", block_id, caption, title=title, facts=items)


def code(block_id: str, lines: list[str], caption: str | None = None) -> Block:
    return _block("code", block_id, caption, lines=lines)


def image(block_id: str, file: str, alt: str) -> Block:
    return _block("image", block_id, None, file=file, alt=alt)


def target(text: str, measured: str, met: bool | str) -> dict[str, str]:
    """A row of the Targets table; ``met`` True/False shows as yes/no, a string as it is."""
    return {"target": text, "measured": measured, "met": met if isinstance(met, str) else ("yes" if met else "no")}


def _block(kind: str, block_id: str, caption: str | None, **body: Any) -> Block:
    block: Block = {"kind": kind, "id": block_id}
    if caption is not None:
        block["caption"] = caption
    block.update(body)
    return block


# ----- reading and writing ---------------------------------------------------------------------------------


def section_files(data: Path = DATA) -> list[tuple[int, Path]]:
    """(number, path) of every section file, in order. Numbers must run 0 (or 1), 1, 2, ... without a gap."""
    found = sorted((int(m.group(1)), p) for p in data.glob("*.json") if (m := SECTION_FILE.match(p.name)))
    numbers = [n for n, _ in found]
    if len(set(numbers)) != len(numbers):
        twice = sorted({n for n in numbers if numbers.count(n) > 1})
        raise ValueError(f"{data}: more than one file for section(s) {twice}; give each its own number")
    first = 0 if numbers and numbers[0] == 0 else 1
    if numbers != list(range(first, first + len(numbers))):
        raise ValueError(f"{data}: section numbers {numbers} have a gap; renumber the files (NN-name.json)")
    return found


def path_of(name: str, data: Path = DATA) -> Path:
    """The file of section ``name`` (``"03-scale"``)."""
    if not SECTION_FILE.match(name + ".json"):
        raise ValueError(f"section name {name!r} is not NN-name (two digits, a dash, lowercase words)")
    return data / f"{name}.json"


def load(path: Path) -> Section:
    try:
        section = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    check(section, str(path))
    return section


def check(section: Section, where: str) -> None:
    """Raise ValueError naming ``where`` and the block when the section is not what results.py can show."""
    if not isinstance(section.get("title"), str) or not section["title"]:
        raise ValueError(f'{where}: no "title"')
    if not isinstance(section.get("blocks"), list):
        raise ValueError(f'{where}: no "blocks" list')
    for i, block in enumerate(section["blocks"]):
        kind = block.get("kind")
        if kind not in BLOCK_KINDS:
            raise ValueError(f"{where}, block {i}: kind {kind!r} is none of {', '.join(BLOCK_KINDS)}")
        need = {"table": ("columns", "rows"), "facts": ("facts",), "code": ("lines",), "image": ("file", "alt")}[kind]
        missing = [key for key in need if key not in block]
        if missing:
            raise ValueError(f"{where}, block {i} ({kind}): missing {', '.join(missing)}")
        if kind == "table":
            for r, row in enumerate(block["rows"]):
                if len(row) != len(block["columns"]):
                    raise ValueError(
                        f"{where}, block {i} ({block.get('id')}), row {r}: {len(row)} cells for "
                        f"{len(block['columns'])} columns"
                    )
    for t in section.get("targets") or []:
        if set(t) != {"target", "measured", "met"}:
            raise ValueError(f"{where}: a target needs exactly target, measured and met: {t!r}")


def save(path: Path, section: Section) -> Path:
    check(section, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(section) + "\n")
    return path


def update(
    name: str,
    blocks: list[Block],
    *,
    title: str | None = None,
    by: str | None = None,
    targets: list[dict[str, str]] | None = None,
    data: Path = DATA,
) -> Path:
    """Write what a tool measured into section ``name``: each block replaces the block with its id (in place),
    a new id is added at the end, and the section's other blocks stay (another run of another tool, or notes
    kept by hand). ``targets`` replace the section's targets when given."""
    path = path_of(name, data)
    section: Section = load(path) if path.is_file() else {"title": title or name, "blocks": []}
    if title is not None:
        section["title"] = title
    if by is not None:
        section.setdefault("by", by)  # a note kept by hand ("... and the ... table by hand") stays
    section["blocks"] = merge_blocks(section["blocks"], blocks)
    if targets is not None:
        section["targets"] = targets
    return save(path, _ordered(section))


def merge_blocks(old: list[Block], new: list[Block]) -> list[Block]:
    fresh = {b["id"]: b for b in new}
    if len(fresh) != len(new):
        raise ValueError(f"two new blocks share an id: {[b['id'] for b in new]}")
    out = [fresh.pop(b.get("id"), b) for b in old]
    return out + [b for b in new if b["id"] in fresh]


def merge_rows(old: list[list[Any]], new: list[list[Any]], key: int) -> list[list[Any]]:
    """``old`` rows whose first ``key`` cells no new row has, then the new rows: a rerun of some rows keeps
    the others."""
    measured = {json.dumps(r[:key]) for r in new}
    return [r for r in old if json.dumps(r[:key]) not in measured] + new


def _ordered(section: Section) -> Section:
    order = ["title", "by", "blocks", "targets"]
    return {k: section[k] for k in order if k in section} | {k: v for k, v in section.items() if k not in order}


# ----- JSON that reads and diffs well: one table row per line ------------------------------------------------


def dumps(value: Any, indent: str = "") -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        flat = json.dumps(value, ensure_ascii=False)
        if len(flat) + len(indent) <= 110 and not any(isinstance(v, dict | list) for v in value.values()):
            return flat
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {dumps(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        flat = json.dumps(value, ensure_ascii=False)
        nested = any(isinstance(v, dict) for v in value) or (
            len(flat) + len(indent) > 110 and all(isinstance(v, list) for v in value)
        )
        long_text = len(flat) + len(indent) > 110 and all(isinstance(v, str) for v in value) and len(value) > 1
        if not value or not (nested or long_text):
            return flat
        inner = indent + "  "
        return "[\n" + ",\n".join(inner + dumps(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False)
