"""``python -m dlcharts.cluster {build,up,down,status}``: the same as ``dlcharts cluster ...``."""

from __future__ import annotations

import sys

from dlcharts.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["cluster", *sys.argv[1:]]))
