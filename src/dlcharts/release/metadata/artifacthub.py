"""``artifacthub``: ``artifacthub.io/license``; ``artifacthub.io/images`` lists exactly the images values.yaml
declares, with their pinned tags, and covers every image the default render runs; ``artifacthub.io/changes`` is
this version's CHANGELOG entry."""

from __future__ import annotations

from typing import Any

import yaml

from dlcharts.release.metadata.changelog import CHANGE_KINDS, ChangelogEntry, entry_for
from dlcharts.release.metadata.chart import ChartUnderCheck
from dlcharts.release.metadata.images import declared_images, rendered_images, split_image

LICENSE = "Apache-2.0"


def check_artifacthub(chart: ChartUnderCheck, changelog: list[ChangelogEntry] | None) -> None:
    license_ = chart.annotations.get("artifacthub.io/license")
    if license_ != LICENSE:
        chart.fail("artifacthub", f"annotations.artifacthub.io/license is {license_!r}; set it to {LICENSE!r}")
    check_changes(chart, changelog)
    check_images(chart)


def parse_annotation(chart: ChartUnderCheck, key: str) -> Any:
    """The annotation ``key`` read as YAML (None when it is missing or not YAML: the latter is a problem)."""
    text = chart.annotations.get(key)
    if text is None:
        return None
    try:
        return yaml.safe_load(str(text))
    except yaml.YAMLError as exc:
        chart.fail("artifacthub", f"annotations.{key} is not YAML: {exc}")
        return None


def check_changes(chart: ChartUnderCheck, changelog: list[ChangelogEntry] | None) -> None:
    key = "artifacthub.io/changes"
    changes = parse_annotation(chart, key)
    if changes is None:
        chart.fail("artifacthub", f"annotations.{key} is missing; list this version's CHANGELOG entries "
                   "as `- kind: added` / `description: ...` items")  # fmt: skip
        return
    if not isinstance(changes, list) or not changes:
        chart.fail("artifacthub", f"annotations.{key} must be a non-empty YAML list")
        return
    have = []
    for i, item in enumerate(changes):
        if (
            not isinstance(item, dict)
            or set(item) - {"kind", "description", "links"}
            or item.get("kind") not in CHANGE_KINDS
            or not isinstance(item.get("description"), str)
        ):
            chart.fail("artifacthub", f"annotations.{key}[{i}] must be {{kind: one of {', '.join(CHANGE_KINDS)}, "
                       f"description: text}}, got {item!r}")  # fmt: skip
            continue
        have.append((item["kind"], " ".join(item["description"].split())))
    entry = entry_for(changelog, str(chart.meta.get("version")))
    if entry is not None:
        want = [(k, " ".join(d.split())) for k, d in entry.changes]
        if sorted(have) != sorted(want):
            chart.fail("artifacthub", (
                f"annotations.{key} {have} differs from CHANGELOG.md's entry for {entry.version} {want}; "
                "make the annotation list exactly that entry's changes"
            ))  # fmt: skip


def check_images(chart: ChartUnderCheck) -> None:
    key = "artifacthub.io/images"
    listed = parse_annotation(chart, key)
    if chart.is_library:
        if listed:
            chart.fail("artifacthub", f"annotations.{key}: a library chart runs no image; remove it")
        return
    if not isinstance(listed, list) or not listed:
        chart.fail("artifacthub", f"annotations.{key} is missing; list every image as `- name: ...` / "
                   "`image: repository:tag`")  # fmt: skip
        return
    images: set[str] = set()
    for i, item in enumerate(listed):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("image"), str)
        ):
            chart.fail("artifacthub", f"annotations.{key}[{i}] must be {{name: ..., image: repository:tag}}")
            continue
        images.add(item["image"])
    _check_listed_images(chart, key, images)


def _check_listed_images(chart: ChartUnderCheck, key: str, images: set[str]) -> None:
    """The images the annotation ``key`` lists are those values.yaml declares, pinned, and all the default render
    runs."""
    declared = dict((image, path) for path, image in declared_images(chart.values, chart.meta.get("appVersion")))
    for image in sorted(images - set(declared)):
        chart.fail("artifacthub", (
            f"annotations.{key} lists {image}, which values.yaml does not declare; remove it or fix its tag"
        ))  # fmt: skip
    for image in sorted(set(declared) - images):
        chart.fail("artifacthub", f"annotations.{key} misses {image} (values.yaml {declared[image]}); add it")
    for image in sorted(images):
        if not split_image(image)[1] or split_image(image)[1] == "latest":
            chart.fail("artifacthub", f"annotations.{key} image {image} has no pinned tag")
    rendered = chart.default_render()
    if rendered is not None:
        for image in sorted(rendered_images(rendered) - images):
            chart.fail("artifacthub", f"the default render runs {image}, which annotations.{key} does not list")
