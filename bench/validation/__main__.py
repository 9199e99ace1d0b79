"""``python -m bench.validation`` (bench.validation.cli)."""

from __future__ import annotations

from bench.validation.cli import main

# prog: the name --help showed when bench.validation was one module, bench/validation.py (argparse's default is the
# script's name, here __main__.py)
raise SystemExit(main(prog="validation.py"))
