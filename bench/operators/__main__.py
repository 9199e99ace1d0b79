"""``python -m bench.operators real|scale|faults`` (bench.operators.cli)."""

from __future__ import annotations

import sys

from bench.operators.cli import main

# prog: the name --help showed when bench.operators was one module, bench/operators.py (argparse's default is the
# script's name, here __main__.py)
sys.exit(main(prog="operators.py"))
