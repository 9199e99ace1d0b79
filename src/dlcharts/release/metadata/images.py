"""The images of a chart: declared in values.yaml, run by its default render; and ``app-version``: an application
chart's ``appVersion`` is the tag of its main image (``image`` or ``defaults.image`` in values.yaml; an empty tag
means appVersion), as declared and as rendered by default."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dlcharts.release.metadata.chart import ChartUnderCheck
from dlcharts.render import Rendered

# Where a chart's main image lives in values.yaml, first match wins.
MAIN_IMAGE_PATHS = ("image", "defaults.image")


def lookup(values: dict[str, Any], dotted: str) -> Any:
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def declared_images(values: Any, app_version: str | None, path: str = "") -> Iterator[tuple[str, str]]:
    """``(values path, "repository:tag")`` for every ``{repository, tag}`` block in values.yaml."""
    if isinstance(values, dict):
        repo, tag = values.get("repository"), values.get("tag")
        if isinstance(repo, str) and isinstance(tag, str | int | float):
            registry = values.get("registry")
            full = f"{registry}/{repo}" if isinstance(registry, str) and registry else repo
            yield path, f"{full}:{tag or app_version}"
            return
        for key, value in values.items():
            yield from declared_images(value, app_version, f"{path}.{key}" if path else str(key))
    elif isinstance(values, list):
        for i, value in enumerate(values):
            yield from declared_images(value, app_version, f"{path}[{i}]")


def rendered_images(rendered: Rendered) -> set[str]:
    """Every container, init container and ephemeral container image of a render (hooks included)."""
    found: set[str] = set()
    stack: list[Any] = [obj.body for obj in rendered]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for field in ("containers", "initContainers", "ephemeralContainers"):
                for container in node.get(field) or []:
                    if isinstance(container, dict) and isinstance(container.get("image"), str):
                        found.add(container["image"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def split_image(image: str) -> tuple[str, str]:
    """``"nvcr.io/nvidia/x:v1"`` -> (``"nvcr.io/nvidia/x"``, ``"v1"``); a port in the registry is not a tag."""
    name, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return image, ""
    return name, tag


def main_image(values: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(values path, ``{repository, tag}`` block) of the chart's main image, the first of MAIN_IMAGE_PATHS."""
    for path in MAIN_IMAGE_PATHS:
        image = lookup(values, path)
        if isinstance(image, dict) and "repository" in image:
            return path, image
    return None


def check_app_version(chart: ChartUnderCheck) -> None:
    if chart.is_library:
        return
    app_version = chart.meta.get("appVersion")
    if not isinstance(app_version, str) or not app_version:
        chart.fail("app-version", "Chart.yaml has no appVersion; set it to the main image's default tag")
        return
    found = main_image(chart.values)
    if found is None:
        chart.fail("app-version", f"values.yaml has no main image at {' or '.join(MAIN_IMAGE_PATHS)}")
        return
    path, image = found
    tag = str(image.get("tag") or "")
    if tag and tag != app_version:
        chart.fail("app-version", (
            f"appVersion {app_version!r} differs from {path}.tag {tag!r} in values.yaml; set appVersion in "
            f"Chart.yaml to {tag!r} (or the tag to {app_version!r}) so they name the same release"
        ))  # fmt: skip
    rendered = chart.default_render()
    if rendered is None:
        return
    repo = str(image["repository"])
    tags = sorted({split_image(i)[1] for i in rendered_images(rendered) if split_image(i)[0] == repo})
    if not tags:
        chart.fail("app-version", f"the default render runs no container of the main image {repo} ({path})")
    elif tags != [app_version]:
        chart.fail("app-version", (
            f"the default render runs {repo} with tag(s) {', '.join(tags)}, not appVersion {app_version!r}"
        ))  # fmt: skip
