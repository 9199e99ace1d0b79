"""bench.model: the section files behind bench/results.md, how tools update them, and their JSON layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import model


def test_a_table_refuses_a_row_of_the_wrong_width() -> None:
    with pytest.raises(ValueError, match=r"table 'runs', row 1: 1 cells for 2 columns"):
        model.table("runs", [model.column("a"), model.column("b")], [[1, 2], [3]])


def test_a_column_refuses_an_unknown_alignment() -> None:
    with pytest.raises(ValueError, match="'center' is neither 'left' nor 'right'"):
        model.column("a", align="center")


def test_facts_are_label_value_and_an_optional_format() -> None:
    with pytest.raises(ValueError, match=r"is not \[label, value\]"):
        model.facts("f", "facts", [["only a label"]])


def test_targets_say_yes_or_no_or_what_they_are_given() -> None:
    assert model.target("t", "1 s", True)["met"] == "yes"
    assert model.target("t", "1 s", False)["met"] == "no"
    assert model.target("t", "1 s", "no: too slow")["met"] == "no: too slow"


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ({"blocks": []}, 'no "title"'),
        ({"title": "t"}, 'no "blocks" list'),
        ({"title": "t", "blocks": [{"kind": "chart"}]}, "block 0: kind 'chart' is none of table, facts, code, image"),
        ({"title": "t", "blocks": [{"kind": "image", "file": "a.png"}]}, r"block 0 \(image\): missing alt"),
        (
            {"title": "t", "blocks": [{"kind": "table", "id": "x", "columns": [{"title": "a"}], "rows": [[1, 2]]}]},
            r"block 0 \(x\), row 0: 2 cells for 1 columns",
        ),
        ({"title": "t", "blocks": [], "targets": [{"target": "t"}]}, "needs exactly target, measured and met"),
    ],
)
def test_a_section_that_cannot_be_shown_is_refused_with_its_place(section: model.Section, problem: str) -> None:
    with pytest.raises(ValueError, match="here.*" + problem):
        model.check(section, "here")


def test_section_files_run_without_gaps_or_twins(tmp_path: Path) -> None:
    for name in ("00-run", "01-a", "02-b"):
        (tmp_path / f"{name}.json").write_text("{}")
    (tmp_path / "notes.json").write_text("{}")  # not a section: ignored
    assert [n for n, _ in model.section_files(tmp_path)] == [0, 1, 2]
    (tmp_path / "04-d.json").write_text("{}")
    with pytest.raises(ValueError, match=r"numbers \[0, 1, 2, 4\] have a gap"):
        model.section_files(tmp_path)
    (tmp_path / "04-d.json").rename(tmp_path / "02-c.json")
    with pytest.raises(ValueError, match=r"more than one file for section\(s\) \[2\]"):
        model.section_files(tmp_path)


def test_a_section_name_is_two_digits_and_words() -> None:
    with pytest.raises(ValueError, match="'scale' is not NN-name"):
        model.path_of("scale")


def test_a_tool_replaces_its_own_blocks_and_keeps_those_kept_by_hand(tmp_path: Path) -> None:
    cols = [model.column("n", "{}")]
    model.update(
        "05-x",
        [model.table("measured", cols, [[1]]), model.image("plot", "p.png", "p")],
        title="X",
        by="`python -m bench.x`",
        data=tmp_path,
    )
    section = model.load(tmp_path / "05-x.json")
    section["blocks"].insert(1, model.table("by-hand", cols, [[99]]))
    section["by"] = "`python -m bench.x` (one table by hand)"
    model.save(tmp_path / "05-x.json", section)

    model.update(
        "05-x",
        [model.table("measured", cols, [[2]]), model.table("new", cols, [[3]])],
        by="`python -m bench.x`",
        targets=[model.target("t", "2", True)],
        data=tmp_path,
    )
    after = model.load(tmp_path / "05-x.json")
    assert [(b["id"], b.get("rows")) for b in after["blocks"]] == [
        ("measured", [[2]]),
        ("by-hand", [[99]]),
        ("plot", None),
        ("new", [[3]]),
    ]
    assert after["by"] == "`python -m bench.x` (one table by hand)"
    assert after["title"] == "X"
    assert after["targets"] == [{"target": "t", "measured": "2", "met": "yes"}]


def test_new_blocks_need_distinct_ids() -> None:
    with pytest.raises(ValueError, match="two new blocks share an id"):
        model.merge_blocks([], [model.code("a", []), model.code("a", [])])


def test_rows_of_a_rerun_replace_the_rows_with_their_key() -> None:
    old = [["tf", 1000, "old"], ["tf", 5000, "old"], ["pt", 5000, "old"]]
    assert model.merge_rows(old, [["tf", 5000, "new"]], key=2) == [
        ["tf", 1000, "old"],
        ["pt", 5000, "old"],
        ["tf", 5000, "new"],
    ]


def test_the_json_has_one_table_row_per_line_and_reads_back_the_same() -> None:
    section = {
        "title": "t",
        "blocks": [
            model.table("a", [model.column("x", "{:,}"), model.column("y")], [[i, f"row {i}" * 5] for i in range(6)]),
            model.code("c", ["a long command line " * 4, "another long command line " * 3]),
        ],
    }
    text = model.dumps(section)
    assert json.loads(text) == section
    assert '    ["3", ' not in text and '        [3, "row 3' in text
    assert '{"title": "x", "format": "{:,}"}' in text
    assert all(len(line) < 200 for line in text.splitlines())


def test_every_committed_section_file_is_valid_and_laid_out_by_dumps() -> None:
    for _, path in model.section_files():
        section = model.load(path)
        assert path.read_text() == model.dumps(section) + "\n", f"{path}: save it with bench.model.save"
