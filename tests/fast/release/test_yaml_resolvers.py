"""A release check leaves PyYAML as it found it: yamllint's import would teach every loader YAML 1.2 octals."""

from __future__ import annotations

from pathlib import Path

import yaml

from dlcharts.release.metadata import lint_yaml
from tests.support import ROOT


def test_a_yaml_lint_does_not_change_how_the_process_reads_yaml(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("mode: 0o17\n")
    lint_yaml([values], ROOT / ".yamllint")
    for loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        assert yaml.load("k: 0o17\n", Loader=loader) == {"k": "0o17"}  # noqa: S506 - safe loaders
