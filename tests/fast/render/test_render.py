"""Rendering with the real helm: objects indexed with their source, errors with context, the cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dlcharts.errors import ManifestError, RenderError
from dlcharts.render import ObjectKey, Renderer, RenderRequest, parse_manifest
from dlcharts.suite import chart_meta, chart_name
from tests.support import ROOT

EXAMPLE = ROOT / "examples" / "chart-author" / "charts" / "hello-batch"


def test_objects_are_indexed_with_their_template(tmp_path):
    renderer = Renderer(cache_dir=tmp_path)
    rendered = renderer.render(RenderRequest(EXAMPLE, release="r1", namespace="team-a"))
    key = ObjectKey("batch/v1", "Job", "team-a", "r1-hello")
    assert rendered.objects[key].source == "hello-batch/templates/job.yaml"
    assert rendered.get("Job", "r1-hello").body["spec"]["completions"] == 1


def test_cache_hits_in_memory_and_on_disk(tmp_path):
    request = RenderRequest(EXAMPLE, set_values=("completions=2",))
    first = Renderer(cache_dir=tmp_path)
    first.render(request)
    first.render(request)
    assert (first.misses, first.hits) == (1, 1)
    second = Renderer(cache_dir=tmp_path)
    second.render(request)
    assert (second.misses, second.hits) == (0, 1)


def test_cache_key_follows_chart_content(tmp_path):
    chart = tmp_path / "chart"
    shutil.copytree(EXAMPLE, chart)
    renderer = Renderer()
    before = renderer.cache_key(RenderRequest(chart))
    (chart / "values.yaml").write_text((chart / "values.yaml").read_text().replace("hello", "bye"))
    assert renderer.cache_key(RenderRequest(chart)) != before


def test_chart_meta_is_kept_until_chart_yaml_changes(tmp_path):
    chart = tmp_path / "chart"
    shutil.copytree(EXAMPLE, chart)
    meta = chart_meta(chart)
    meta["name"] = "changed-by-a-caller"
    assert chart_name(chart) == "hello-batch"
    (chart / "Chart.yaml").write_text((chart / "Chart.yaml").read_text().replace("hello-batch", "renamed"))
    assert chart_name(chart) == "renamed"


def test_set_file_reads_the_file_and_its_content_keys_the_cache(tmp_path):
    message = tmp_path / "message.txt"
    message.write_text("from a file")
    renderer = Renderer(cache_dir=tmp_path / "cache")
    request = RenderRequest(EXAMPLE, set_files=(f"message={message}",))
    assert "--set-file message=" in request.describe()
    container = renderer.render(request).get("Job", "release-hello").body["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["echo", "from a file"]
    before = renderer.cache_key(request)
    message.write_text("changed")
    assert renderer.cache_key(request) != before
    container = renderer.render(request).get("Job", "release-hello").body["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["echo", "changed"]
    with pytest.raises(RenderError) as info:
        renderer.render(RenderRequest(EXAMPLE, set_files=(f"message={tmp_path / 'absent.txt'}",)))
    assert "absent.txt" in info.value.stderr


def test_render_error_carries_chart_inputs_and_stderr():
    with pytest.raises(RenderError) as info:
        Renderer().render(RenderRequest(EXAMPLE, set_values=("completions=0",)))
    err = info.value
    assert err.chart.endswith("hello-batch")
    assert "--set completions=0" in err.inputs
    assert "/completions" in err.stderr and "minimum" in err.stderr


def test_refusals_are_cached_and_raised_again_with_their_context(tmp_path):
    request = RenderRequest(EXAMPLE, set_values=("completions=0",))
    first, second = Renderer(cache_dir=tmp_path), Renderer(cache_dir=tmp_path)
    errors = []
    for renderer in (first, first, second):
        with pytest.raises(RenderError) as info:
            renderer.render(request)
        errors.append(info.value)
    assert (first.misses, first.hits, second.misses, second.hits) == (1, 1, 0, 1)
    assert len({(e.chart, e.inputs, e.stderr) for e in errors}) == 1
    assert "minimum" in errors[-1].stderr and "--set completions=0" in errors[-1].inputs


def test_duplicate_objects_are_refused():
    doc = "---\n# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    with pytest.raises(ManifestError, match="rendered twice"):
        parse_manifest(doc + doc.replace("a.yaml", "b.yaml"))


def test_non_object_documents_are_refused():
    with pytest.raises(ManifestError, match="without apiVersion"):
        parse_manifest("---\n# Source: a.yaml\nkind: ConfigMap\n")


def _chart_with_vendored_library(root: Path, linked: bool) -> tuple[Path, Path]:
    """An application chart whose ConfigMap comes from a library in its charts/ folder: unpacked there, or
    (as this repository's charts do) a committed link to the library folder next to it."""
    app, lib = root / "app", (root / "lib" if linked else root / "app" / "charts" / "lib")
    (app / "templates").mkdir(parents=True)
    (app / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (app / "templates" / "cm.yaml").write_text('{{ include "lib.configmap" . }}\n')
    (lib / "templates").mkdir(parents=True)
    (lib / "Chart.yaml").write_text("apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n")
    (lib / "templates" / "_cm.tpl").write_text(
        '{{- define "lib.configmap" -}}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n'
        "data: {greeting: hello}\n{{- end -}}\n"
    )
    if linked:
        (app / "charts").mkdir()
        (app / "charts" / "lib").symlink_to("../../lib")
    return app, lib / "templates" / "_cm.tpl"


@pytest.mark.parametrize("linked", [False, True], ids=["unpacked", "linked"])
def test_a_change_to_a_vendored_dependency_is_rendered_not_served_from_the_cache(tmp_path, linked):
    app, template = _chart_with_vendored_library(tmp_path / "src", linked)
    cache = tmp_path / "cache"
    assert Renderer(cache_dir=cache).render(RenderRequest(app)).get("ConfigMap", "cm").body["data"] == {
        "greeting": "hello"
    }
    template.write_text(template.read_text().replace("hello", "bye"))
    again = Renderer(cache_dir=cache)
    assert again.render(RenderRequest(app)).get("ConfigMap", "cm").body["data"] == {"greeting": "bye"}
    assert (again.misses, again.hits) == (1, 0)


def test_cache_key_follows_vendored_archives_and_the_lock_file(tmp_path):
    app, _ = _chart_with_vendored_library(tmp_path, linked=False)
    renderer = Renderer()
    keys = {renderer.cache_key(RenderRequest(app))}
    (app / "charts" / "other-1.0.0.tgz").write_bytes(b"an archive")
    keys.add(renderer.cache_key(RenderRequest(app)))
    (app / "charts" / "other-1.0.0.tgz").write_bytes(b"another archive")
    keys.add(renderer.cache_key(RenderRequest(app)))
    (app / "Chart.lock").write_text("dependencies: []\ndigest: sha256:0\n")
    keys.add(renderer.cache_key(RenderRequest(app)))
    assert len(keys) == 4
