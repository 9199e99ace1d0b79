"""What the test modules share, so that none imports from another test module or from a conftest.py.

The repository's paths are here; the helpers are in the modules beside this one:

- ``pytest_runs``: pytest run in a folder of its own, as a chart author runs it;
- ``pip_index``: a local pip index serving the pinned helm's wheel, for the install on first use;
- ``charts``: the training charts and the check that a render is refused with a message, not a panic;
- ``values``: hypothesis strategies that mutate a chart's values within (and just outside) its schema;
- ``release``: the charts' metadata and the check that an install from a published package matches the source;
- ``cluster``: what the embedded cluster needs beyond its defaults for every ci/ scenario (CRDs, a stand-in
  gang scheduler, extra fake nodes, per-scenario prerequisites) and kubectl;
- ``real_node``: pods for the embedded cluster's real node, and the sockets a process listens on.

conftest.py files hold fixtures and pytest settings only.
"""

from __future__ import annotations

from pathlib import Path

#: the repository's root folder
ROOT = Path(__file__).resolve().parents[2]
CHARTS = ROOT / "charts"
