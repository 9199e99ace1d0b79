"""bench.results, the one writer of bench/results.md: cells, tables, sections, and the committed file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench import model, results


@pytest.mark.parametrize(
    ("value", "fmt", "join", "text"),
    [
        (None, "{:,}", None, "—"),
        ("kept as written", "{:,}", None, "kept as written"),
        (10096, "{:,}", None, "10,096"),
        (0.5, "{:.0%}", None, "50%"),
        (5.125, "{:.2f}x", None, "5.12x"),
        ([95.4, 22.0], "{:.0f} / {:.0f}", None, "95 / 22"),
        (["Kubeflow v1", 4001, 1000], "{}: {:,} ({:,})", None, "Kubeflow v1: 4,001 (1,000)"),
        ([8.25, 8.2], "{:.1f}", ", ", "8.2, 8.2"),
        ([1, 2], None, None, "1 2"),
        (True, None, None, "yes"),
        (7, None, None, "7"),
        ("a | b", None, None, "a \\| b"),
        ("a \\| b", None, None, "a \\| b"),
    ],
)
def test_a_cell_shows_numbers_through_its_columns_format(value: object, fmt: str, join: str, text: str) -> None:
    assert results.cell(value, fmt, join) == text


def test_a_cell_refuses_what_a_table_cannot_show() -> None:
    with pytest.raises(ValueError, match="spans lines"):
        results.cell("two\nlines")
    with pytest.raises(ValueError, match="use a number, a string, a list or null"):
        results.cell({"a": 1})


def test_columns_with_a_format_are_right_aligned_unless_they_say_otherwise() -> None:
    columns = [
        model.column(""),
        model.column("n", "{:,}"),
        model.column("load", "{:.1f}", join=", ", align="left"),
        model.column("note", align="right"),
    ]
    lines = results.table_lines(columns, [["a", 1000, [1.0, 2.0], "x"], ["", None, [], ""]])
    assert lines == [
        "| | n | load | note |",
        "|---|---:|---|---:|",
        "| a | 1,000 | 1.0, 2.0 | x |",
        "| | — | | |",
    ]


def test_a_bad_cell_is_named_by_its_row_and_column() -> None:
    with pytest.raises(ValueError, match=r"row 0, column 'pair', value \[1\]"):
        results.table_lines([model.column("pair", "{} / {}")], [[[1]]])


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("1. Validation throughput: ours vs kubeconform", "1-validation-throughput-ours-vs-kubeconform"),
        ("2. Render + validate per scenario", "2-render--validate-per-scenario"),
        ("10. In-process rendering: server vs binary (issue 14)", "10-in-process-rendering-server-vs-binary-issue-14"),
        ("Machine and the last `make bench` run", "machine-and-the-last-make-bench-run"),
    ],
)
def test_anchors_are_githubs(heading: str, anchor: str) -> None:
    assert results.anchor(heading) == anchor


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    model.save(
        data / "00-run.json",
        {
            "title": "Machine",
            "by": "`python -m bench.run`",
            "blocks": [model.facts("machine", "machine", [["CPU", "x"]])],
        },
    )
    model.save(
        data / "01-first.json",
        {
            "title": "First: one",
            "by": "hand",
            "blocks": [
                model.table("t", [model.column("k"), model.column("v", "{:.1f}")], [["a", 1.25]], "**A table**"),
                model.code("c", ["make bench"]),
                model.image("p", "plots/first.png", "first"),
            ],
            "targets": [model.target("fast", "1 s", True)],
        },
    )
    model.save(data / "02-second.json", {"title": "Second", "by": "`python -m bench.scale`", "blocks": []})
    return data


def test_the_file_has_the_machine_then_the_targets_then_the_numbered_sections(tmp_path: Path) -> None:
    text = results.render(_data(tmp_path))
    headings = re.findall(r"^## (.*)$", text, re.MULTILINE)
    assert headings == ["Machine", "Targets (issue 7)", "1. First: one", "2. Second"]
    assert "| fast | 1 s | yes | [1](#1-first-one) |" in text
    assert "Data: [data/01-first.json](data/01-first.json), edited by hand." in text
    assert "[NOTES.md, section 1](NOTES.md#1-first-one)" in text
    assert "written by `python -m bench.scale`" in text
    assert "**A table**\n\n| k | v |\n|---|---:|\n| a | 1.2 |" in text
    assert "```\nmake bench\n```" in text
    assert "![first](plots/first.png)" in text
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_writing_twice_gives_the_same_file(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "results.md"
    first = results.write(data, out).read_text()
    assert results.write(data, out).read_text() == first


def test_a_broken_data_file_is_named_with_its_block(tmp_path: Path) -> None:
    data = _data(tmp_path)
    path = data / "02-second.json"
    section = json.loads(path.read_text())
    section["blocks"] = [model.table("bad", [model.column("pair", "{} / {}")], [[[1]]])]
    path.write_text(json.dumps(section))
    with pytest.raises(ValueError, match=r"02-second.json, block 0 \(bad\): row 0, column 'pair'"):
        results.render(data)


def test_notes_must_have_a_heading_for_every_numbered_section() -> None:
    sections = [(0, {"title": "Machine"}), (1, {"title": "First"}), (2, {"title": "Second"})]
    assert results.notes_problems(sections, "# Notes\n\n## 1. First\n") == ["NOTES.md has no heading '## 2. Second'"]


def test_the_committed_results_are_what_the_data_gives() -> None:
    """Nobody edits results.md by hand: `python -m bench.results` writes it from bench/data."""
    assert results.RESULTS.read_text() == results.render(), "run `python -m bench.results` and commit the result"


def test_the_notes_explain_every_section_and_every_link_of_the_results_resolves() -> None:
    sections = [(n, model.load(p)) for n, p in model.section_files()]
    assert results.notes_problems(sections, (results.BENCH / "NOTES.md").read_text()) == []
    text = results.RESULTS.read_text()
    for target in re.findall(r"\]\(((?:data|plots)/[^)#]+)\)", text):
        assert (results.BENCH / target).is_file(), target


def test_cross_references_name_sections_that_exist() -> None:
    last = max(n for n, _ in model.section_files())
    for name in ("NOTES.md", "results.md"):
        text = (results.BENCH / name).read_text()
        for number in re.findall(r"\bsections? (\d+)", text):
            assert 1 <= int(number) <= last, f"{name} refers to section {number}; there are {last}"
