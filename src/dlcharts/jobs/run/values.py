"""The values `dlcharts run` installs first (the user's helm arguments come after them, so they win): CPU pod
settings, each chart's small benchmark, the local images standing for the chart's image values, the real nodes'
placement; and the file helm reads them from."""

from __future__ import annotations

import contextlib
import copy
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from dlcharts.catalogue import TRAINING_CHARTS
from dlcharts.cluster import node
from dlcharts.images.definitions import IMAGES, ImageDef

#: pod settings of every role on a CPU-only machine (the dl-common values layout every training chart shares)
CPU_DEFAULTS: dict[str, Any] = {
    "gpu": {"count": 0},
    "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "3Gi"}},
    "shm": {"sizeLimit": "512Mi"},
}


def local_images(chart: str) -> list[tuple[ImageDef, str]]:
    """The local images standing for image values of ``chart`` (dlcharts.catalogue): (image, values path such as
    ``defaults.image``); none for a chart the catalogue does not know."""
    entry = TRAINING_CHARTS.get(chart)
    return [(IMAGES[image], path) for path, image in entry.local_images().items()] if entry else []


#: each role's pods on as many nodes as there are (the charts default a constraint's labelSelector to the role's pods);
#: a node that is tainted (down, unreachable) no longer counts, so a replacement pod is not held for it
SPREAD_OVER_NODES: dict[str, Any] = {
    "maxSkew": 1,
    "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "DoNotSchedule",
    "nodeTaintsPolicy": "Honor",
}


def cpu_values(
    chart: str,
    registry: str | None = None,
    real_node: bool = True,
    api_server: str | None = None,
    spread: bool = False,
) -> dict[str, Any]:
    """Values that run ``chart`` on CPU: :data:`CPU_DEFAULTS` and the catalogue's ``cpu_values``; with ``registry``
    every image from there (``global.imageRegistry``) with the local images' tags, pulled Always; with ``real_node`` the
    embedded cluster's real nodes' selector and toleration, and the start watch at ``api_server`` (an
    :func:`api_relay`'s URL: the real nodes' pods have no route to the API server), or without the start watch
    when there is none; with ``spread`` :data:`SPREAD_OVER_NODES`."""
    entry = TRAINING_CHARTS.get(chart)
    small = copy.deepcopy(dict(entry.cpu_values)) if entry else {}
    values: dict[str, Any] = {"defaults": copy.deepcopy(CPU_DEFAULTS), **small}
    if registry:
        values["global"] = {"imageRegistry": registry}
        for image, path in local_images(chart):
            target = values
            for key in path.split("."):
                target = target.setdefault(key, {})
            # Always: a rebuilt image keeps its tag, and a node holding the old one would run it with IfNotPresent
            target.update(tag=image.tag, pullPolicy="Always")
    if real_node:
        values["defaults"]["nodeSelector"] = dict(node.NODE_SELECTOR)
        values["defaults"]["tolerations"] = [dict(node.TOLERATION)]
        values["startWatch"] = {"apiServer": api_server} if api_server else {"enabled": False}
    if spread:
        values["defaults"]["topologySpreadConstraints"] = [dict(SPREAD_OVER_NODES)]
    return values


@contextlib.contextmanager
def values_file(values: dict[str, Any]) -> Iterator[Path]:
    """``values`` in a YAML file for helm (``-f``), removed after the block."""
    with tempfile.TemporaryDirectory(prefix="dlcharts-run-") as tmp:
        path = Path(tmp) / "cpu-values.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False))
        yield path
