"""The in-process renderer (dlcharts.render_server, native/helm-render): the binary's text and errors, PyYAML's objects,
and the helm binary wherever the server cannot render."""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from dlcharts import native, render_server, toolchain
from dlcharts.helm import find_helm, without_link_notices
from dlcharts.render import Renderer, RenderRequest, difference, same_data
from tests.support import CHARTS, ROOT

EXAMPLE = ROOT / "examples" / "chart-author" / "charts" / "hello-batch"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@pytest.fixture(scope="module", params=toolchain.HELM_MATRIX)
def server(request: pytest.FixtureRequest) -> render_server.RenderServer:
    found = render_server.server_for(find_helm(request.param))
    assert found is not None, f"no in-process renderer for {request.param}: run `make tools`"
    return found


@pytest.fixture
def own_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers and notices of this test only (the module keeps one server per helm for the whole process)."""
    monkeypatch.setattr(render_server, "_servers", {})
    monkeypatch.setattr(render_server, "_noticed", set())


def test_the_servers_link_the_pinned_helms():
    for key in toolchain.HELM_MATRIX:
        tool = toolchain.TOOLS[key]
        go_mod = (ROOT / "native" / "helm-render" / f"helm{tool.major}" / "go.mod").read_text()
        assert re.search(rf"^\s*helm\.sh/helm/v{tool.major} {re.escape(tool.version)}$", go_mod, re.M), key
        assert render_server.server_for(find_helm(key)).helm.version == tool.version  # the server says it too


# Plain scalars whose type YAML 1.1 decides: each must decode as PyYAML decodes it, or be left to PyYAML.
SCALARS = """
yes Yes YES no No NO on On ON off Off OFF true True TRUE false False FALSE y n Y N yES oN
~ null Null NULL nULL
0 -0 +0 00 0777 -0777 0_7 08 0o17 0x1F -0x1f 0x_1 0b101 -0b1_1 0b 0x 12 +12 -12 1_000 1__0 _1 1_
12345678901234567890123456789 1:20 -1:20:30 1:60 190:20:30
1.0 1. -1. +1.5 .5 -.5 1e3 1E3 1.0e3 1.0e+3 1.0E-3 1.e+5 6.8523015e+5 685.230_15e+03 0.1 3.14159 1_0.5 100.0
1e400 190:20:30.15 .inf -.Inf +.INF .nan .NaN
2001-12-14 2001-12-14t21:59:43.10-05:00 2002-1-2 1:2:3
= << a-string /path a:b a,b 0.0.0 1.2.3 v1 -- -a 'x' "y"
""".split()  # noqa: SIM905 - a table, read as one


@pytest.mark.parametrize("value", SCALARS)
def test_each_plain_scalar_decodes_as_pyyaml_decodes_it(server, value):
    for text in (f"k: {value}\n", f"- {value}\n", f"{value}: v\n", f"k: [{value}]\n"):
        assert_decodes_like_pyyaml(server, text)


def assert_decodes_like_pyyaml(server: render_server.RenderServer, text: str) -> bool:
    """The server's decoding of ``text`` equals PyYAML's, types and key order included, unless it left the piece
    to PyYAML; returns whether it decoded it."""
    objects, fallback = server.decode(text)
    if 0 in fallback:
        return False
    expected = yaml.load(text, Loader=_Loader)  # noqa: S506
    assert same_data(objects[0], expected), f"{text!r}: server {objects[0]!r}, PyYAML {expected!r}"
    return True


@pytest.mark.parametrize(
    "value",
    ["yes", "On", "0777", "0x1F", "0b101", "1_000", "1:20", "1e3", "1.0e+3", ".5", "~", "", "12345678901234567890123"],
)
def test_common_scalars_are_decoded_by_the_server(server, value):
    assert assert_decodes_like_pyyaml(server, f"k: {value}\n"), f"{value!r} was left to PyYAML"


@pytest.mark.parametrize("value", ["2001-12-14", ".inf", ".nan", "1.0e+400", "190:20:30.15", "=", "<<", "0b_"])
def test_what_json_cannot_hold_is_left_to_pyyaml(server, value):
    """JSON has no date, infinity, NaN or merge; PyYAML raises for `=` and `0b_`, and is left to say so."""
    objects, fallback = server.decode(f"k: {value}\n")
    assert fallback == {0} and objects == [None]


STRUCTURES = {
    "non-specific tag": "a: ! 12\nb: ! yes\n",
    "explicit tags": "a: !!str 12\nb: !!int '3'\nc: !!float 1\n",
    "anchor and alias": "a: &x {b: 1}\nc: *x\n",
    "merge key": "a: &x {b: 1}\nc:\n  <<: *x\n  d: 2\n",
    "duplicate keys": "a: 1\nb: 2\na: 3\n",
    "non-string keys": "1: a\ntrue: b\n~: c\n1.5: d\n",
    "two documents": "a: 1\n--- {b: 2}\n",
    "document markers": "--- # start\na: 1\n...\n",
    "block scalars": "a: |\n  x\n\n\nb: |-\n  y\nc: >+\n  folded\n  text\n\nd: |2\n   indented\n",
    "quoted escapes": "a: \"\\t\\x41\\u00e9\\U0001F600\\N\\_\\L\\P\\\\\"\nb: 'it''s'\n",
    "control character": "a: \x01\n",
    "tab in value": "a: x\ty\nb:\t1\n",
    "byte order mark": "\ufeffa: 1\n",
    "comments only": "# Source: x.yaml\n# nothing\n",
    "empty": "",
    "invalid": "a: [1, 2\n",
    "bad indentation": "a:\n  b: 1\n c: 2\n",
    "flow mapping": "a: {b: [1, {c: d}], e: 'f'}\n",
    "multi-line plain": "a: one\n  two\n\n  three\n",
    "unicode": "name: caf\u00e9 \u2028 \U0001f600\n",
    "long key": "? |\n  complex\n: v\n",
    "sequence of mappings": "- a: 1\n  b: [x, y]\n- ~\n",
}


@pytest.mark.parametrize("text", list(STRUCTURES.values()), ids=list(STRUCTURES))
def test_each_structure_decodes_as_pyyaml_decodes_it_or_is_left_to_it(server, text):
    objects, fallback = server.decode(text)
    if 0 not in fallback:
        assert same_data(objects[0], yaml.load(text, Loader=_Loader))  # noqa: S506


text = st.text(st.characters(blacklist_categories=("Cs",)))  # a lone surrogate is no UTF-8 for either side
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)


@given(json_like)
def test_what_pyyaml_dumps_the_server_decodes_back(data):
    server = render_server.server_for(find_helm())
    assert server is not None
    text = yaml.safe_dump({"data": data}, allow_unicode=True)
    assert assert_decodes_like_pyyaml(server, text) or "\ufeff" in text


def test_pieces_are_the_harness_pieces(server):
    text = "---\n# Source: a\nx: 1\n---   \n\n--- \t\ny: yes\n---x: 1\n"
    objects, fallback = server.decode(text)
    assert objects == [None, {"x": 1}, None, {"y": True, "---x": 1}] and not fallback


@pytest.mark.parametrize(
    ("case", "args"),
    [
        ("schema", ["--set", "completions=0"]),
        ("set syntax", ["--set", "a[x]=1"]),
        ("set-json", ["--set-json", "a={"]),
        ("set-file", ["--set-file", "message=/no/such/file"]),
        ("values file", ["--values", "/no/such/values.yaml"]),
        ("values not yaml", ["--values", str(ROOT / "README.md")]),
        ("kube version", ["--kube-version", "one"]),
        ("missing chart", ["--namespace", "x"]),
        ("three names", ["extra"]),
        ("bad release name", []),
        ("fine", ["--set-string", "message=yes", "--api-versions", "a/v1,b/v2", "--is-upgrade", "--skip-tests"]),
    ],
)
def test_errors_and_flags_come_out_as_the_binary_prints_them(server, case, args):
    chart = "/no/such/chart" if case == "missing chart" else str(EXAMPLE)
    release = "Bad_Name" if case == "bad release name" else "r"
    argv = ["template", release, chart, *args]
    reply = server.template(argv)
    assert reply is not None, f"{case}: the server sent it to the binary"
    binary = server.helm.run(argv, check=False)
    assert difference(reply, binary) is None, case
    assert (reply.status == 0) == (case == "fine"), without_link_notices(reply.stderr)


@pytest.mark.parametrize(
    "args",
    [["template", "r", "stable/nginx"], ["template", "r", str(EXAMPLE), "--debug"], ["version"], ["template"]],
    ids=["repository chart", "global flag", "other command", "no chart"],
)
def test_what_the_server_does_not_do_goes_to_the_binary(server, args):
    assert server.template(args) is None


def test_an_edited_chart_is_rendered_anew(server, tmp_path):
    chart = tmp_path / "hello-batch"
    shutil.copytree(EXAMPLE, chart)
    argv = ["template", "r", str(chart)]
    before = server.template(argv)
    job = chart / "templates" / "job.yaml"
    job.write_text(job.read_text().replace("completions:", "# edited\n  completions:", 1))
    after = server.template(argv)
    assert before is not None and after is not None and "# edited" in after.stdout and "# edited" not in before.stdout
    assert difference(after, server.helm.run(argv, check=False)) is None


def _parent_with_subchart(root):
    """A chart whose subchart is switched by a condition and exports a value the parent imports: the two things
    helm changes in the chart it renders (it drops a disabled subchart, it merges imported values)."""
    chart, sub = root / "parent", root / "parent" / "charts" / "sub"
    (chart / "templates").mkdir(parents=True)
    (sub / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n"
        "  condition: sub.enabled\n  import-values:\n  - child: exported\n    parent: imported\n"
    )
    (chart / "values.yaml").write_text("sub:\n  enabled: true\nimported: {}\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: parent\n"
        "data:\n  imported: {{ toJson .Values.imported | quote }}\n"
    )
    (sub / "Chart.yaml").write_text("apiVersion: v2\nname: sub\nversion: 0.1.0\n")
    (sub / "values.yaml").write_text("exported:\n  greeting: hello\n")
    (sub / "values.schema.json").write_text('{"type": "object", "properties": {"exported": {"type": "object"}}}')
    (sub / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n")
    return chart


def test_each_render_gets_the_chart_as_loaded(server, tmp_path):
    """The server keeps a loaded chart between renders: what one render did to it (a subchart dropped, values
    imported) must not reach the next."""
    chart = _parent_with_subchart(tmp_path)
    for enabled in ("true", "false", "true", "false"):
        argv = ["template", "r", str(chart), "--set", f"sub.enabled={enabled}"]
        reply = server.template(argv)
        assert reply is not None and reply.status == 0, reply and reply.stderr
        assert ("name: sub" in reply.stdout) == (enabled == "true"), f"sub.enabled={enabled}"
        assert difference(reply, server.helm.run(argv, check=False)) is None, f"sub.enabled={enabled}"


def test_an_edited_schema_judges_the_next_render(server, tmp_path):
    """Schemas are compiled once and kept: an edited schema (here, the subchart's) must judge the next render,
    and values it refuses get helm's own error."""
    chart = _parent_with_subchart(tmp_path)
    argv = ["template", "r", str(chart), "--set", "sub.exported=text"]
    assert server.template(argv).status != 0  # the subchart's schema wants an object
    schema = chart / "charts" / "sub" / "values.schema.json"
    schema.write_text(schema.read_text().replace('"object"}}', '"string"}}'))
    accepted = server.template(argv)
    assert accepted is not None and accepted.status == 0, accepted and accepted.stderr
    refused = server.template(["template", "r", str(chart)])
    assert refused is not None and refused.status != 0
    for args in (argv, ["template", "r", str(chart)]):
        assert difference(server.template(args), server.helm.run(args, check=False)) is None, args


def test_difference_names_what_differs(server):
    argv = ["template", "r", str(EXAMPLE)]
    reply = server.template(argv)
    assert reply is not None
    binary = server.helm.run(argv, check=False)
    edited = subprocess.CompletedProcess(binary.args, 0, binary.stdout.replace("completions: 1", "completions: 2"), "")
    assert "printed document 1 otherwise: '  completions: 1', the binary '  completions: 2'" in str(
        difference(reply, edited)
    )
    failed = subprocess.CompletedProcess(binary.args, 1, "", "Error: other\n")
    assert "exited 0, the binary 1" in str(difference(reply, failed))
    errors = "Error: values don't meet the specifications:\nc:\n- at '/a': got object\n- at '/b': 'anyOf' failed\n"
    refused = dataclasses.replace(reply, status=1, stdout="", stderr=errors + "  - at '/b': got number\n")
    reordered = "Error: values don't meet the specifications:\nc:\n- at '/b': 'anyOf' failed\n  - at '/b': got number\n"
    assert difference(refused, subprocess.CompletedProcess([], 1, "", reordered + "- at '/a': got object\n")) is None
    moved = reordered.replace("  - at '/b'", "- at '/b'") + "  - at '/a': got object\n"
    assert "failed with other text" in str(difference(refused, subprocess.CompletedProcess([], 1, "", moved)))
    # Helm 4 nests a map's failures under it, also in map order (CI saw the binary and the server differ so)
    nested = "Error: values don't meet the specifications:\nc:\n- at '/d': validation failed\n"
    inside = ["  - at '/d/x': got object\n", "  - at '/d/y': additional properties 'z' not allowed\n"]
    refused = dataclasses.replace(reply, status=1, stdout="", stderr=nested + "".join(inside))
    swapped = subprocess.CompletedProcess([], 1, "", nested + "".join(reversed(inside)))
    assert difference(refused, swapped) is None
    other = subprocess.CompletedProcess([], 1, "", nested + inside[0] + inside[1].replace("'z'", "'w'"))
    assert "failed with other text" in str(difference(refused, other))
    objects = copy.deepcopy(reply.objects)
    objects[1]["spec"]["completions"] = "1"  # as a decoder that took `1` for a string would have it
    wrong = dataclasses.replace(reply, objects=objects)
    assert "decoded Job/default/r-hello (batch/v1) otherwise than PyYAML" in str(difference(wrong, binary))


def test_secret_data_may_differ_and_nothing_else(server):
    argv = ["template", "r", str(CHARTS / "horovod-mpi"), "--kube-version", "1.35.0"]
    first, second = server.template(argv), server.template(argv)
    assert first is not None and second is not None
    assert first.stdout != second.stdout, "the chart's ssh key is generated per render"
    assert difference(first, server.helm.run(argv, check=False)) is None


def _render_in_a_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "dlcharts.cli", "render", str(EXAMPLE), "--no-cache"]
    return subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, check=False, timeout=120)


def test_a_server_that_does_not_start_leaves_a_notice_and_the_binary_renders(tmp_path):
    broken = tmp_path / "helm4-render"
    broken.write_text("#!/bin/sh\necho 'no such luck' >&2\nexit 3\n")
    broken.chmod(0o755)
    proc = _render_in_a_process({native.LOCATED_ENV: f"helm4-render={broken}"})
    assert proc.returncode == 0 and "kind: Job" in proc.stdout, proc.stderr
    notices = [line for line in proc.stderr.splitlines() if "in-process renderer unavailable" in line]
    assert len(notices) == 1 and "rendering with" in notices[0] and str(broken) in notices[0], proc.stderr


def test_a_server_that_was_not_built_leaves_a_notice(tmp_path):
    tools = tmp_path / "tools"
    for key in toolchain.HELM_MATRIX:
        (tools / key).mkdir(parents=True)
        (tools / key / "helm").symlink_to(toolchain.binary_path(key))
    proc = _render_in_a_process({"DLCHARTS_TOOLS_DIR": str(tools), native.LOCATED_ENV: ""})
    assert proc.returncode == 0 and "kind: Job" in proc.stdout, proc.stderr
    assert "helm4-render not built (build once: dlcharts tools" in proc.stderr


def test_binary_on_request_and_a_clear_error_for_other_values(monkeypatch, own_servers):
    monkeypatch.setenv(render_server.RENDERER_ENV, "binary")
    assert render_server.server_for(find_helm()) is None
    assert "DLCHARTS_RENDERER=binary" in render_server.describe(find_helm())
    monkeypatch.setenv(render_server.RENDERER_ENV, "fast")
    with pytest.raises(render_server.ToolchainError, match="DLCHARTS_RENDERER='fast': choose server or binary"):
        render_server.server_for(find_helm())


def test_a_server_that_dies_hands_over_to_the_binary(own_servers, capsys):
    helm = find_helm()
    server = render_server.server_for(helm)
    assert server is not None
    server._proc.kill()
    server._proc.wait()
    rendered = Renderer(helm).render(RenderRequest(EXAMPLE, set_values=("completions=3",)))
    assert rendered.get("Job", "release-hello").body["spec"]["completions"] == 3
    assert render_server.server_for(helm) is None
    assert capsys.readouterr().err.count("in-process renderer unavailable") == 1
