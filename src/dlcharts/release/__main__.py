"""``python -m dlcharts.release``: the release check and repository commands without the full CLI."""

from dlcharts.release.cli import main

raise SystemExit(main())
