"""dl-common's helpers keep the names other charts include: each name a release of dl-common gave up stays, in
templates/_deprecated.tpl, as a define that renders its new name (a chart built on an older dl-common keeps
rendering), and every define of the library is defined once."""

from __future__ import annotations

import collections
import re

from tests.support import CHARTS

TEMPLATES = CHARTS / "dl-common" / "templates"
DEFINE = re.compile(r'{{-?\s*define\s+"([^"]+)"')


def defines() -> collections.Counter[str]:
    return collections.Counter(name for f in TEMPLATES.rglob("*.tpl") for name in DEFINE.findall(f.read_text()))


def test_every_define_of_the_library_is_defined_once() -> None:
    twice = [name for name, count in defines().items() if count > 1]
    assert not twice, twice


def test_each_deprecated_name_renders_its_new_name() -> None:
    known = defines()
    aliases = re.findall(
        r'{{-\s*define\s+"([^"]+)"\s*-}}{{\s*include\s+"([^"]+)"\s+\.\s*}}{{-\s*end\s*-}}',
        (TEMPLATES / "_deprecated.tpl").read_text(),
    )
    assert dict(aliases) == {
        "dl-common.script.mpiProgram": "dl-common.mpi.program",
        "dl-common.script.mpiSettings": "dl-common.mpi.roleSettings",
        "dl-common.mpi.validate": "dl-common.validate.mpi",
        "dl-common.script.validate": "dl-common.validate.script",
    }
    assert all(known[new] == 1 for _, new in aliases)
    assert len(DEFINE.findall((TEMPLATES / "_deprecated.tpl").read_text())) == len(aliases), "a define that is no alias"
