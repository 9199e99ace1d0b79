#!/usr/bin/env python3
"""Render the scripts of a chart (charts/<chart>/scripts/*.sh, and scripts/*.py but this one: the start watch's
Python) into charts/<chart>/templates/_shell.tpl, one define each: dl-common's scripts, which every chart's pods
run, and a chart's own (tensorflow-dist's TF_CONFIG entrypoint).

The scripts are real files so that shellcheck reads them (`make lint`); helm cannot read a library chart's
files from the chart that depends on it, nor a chart's files from its templates but through .Files, so this
script writes them into a template, which is committed:

    python charts/dl-common/scripts/build.py            # write templates/_shell.tpl of every chart with scripts/
    python charts/dl-common/scripts/build.py --check    # exit 1 when one differs from its scripts
    python charts/dl-common/scripts/build.py charts/tensorflow-dist    # only the charts named

A script is the text its define renders, except for the lines meant for the tools, which are dropped:
  #: <text>          the define's comment; the first of these lines starts with its name and a colon, the
                     name starting with the chart's ("#: dl-common.pod.watchdogScript: POSIX sh run as ..."),
                     as every helper's comment does
  #@ <name> = <tpl>  a placeholder: "@<name>@" in the script stands for the template text <tpl>, for values
                     only the template knows ("#@ port = {{ int .context.Values.mpi.sshPort }}", "port=@port@");
                     prefer environment variables the pod sets, which keep the script plain shell
  # shellcheck ...   shellcheck's directives (any indentation), e.g. "# shellcheck shell=sh" in a script
                     run with `sh -c`, which has no #! line, or "# shellcheck disable=SC2086 # <why>"
and for the lines that only some renders hold, which the define keeps without their "#":
  #{{- if <cond> }}  the lines up to the matching "#{{- end }}" (or "#{{- else }}", "#{{- else if <cond> }}")
                     are rendered only when <cond> holds, for a choice the template makes once (a value of the
                     chart); shellcheck reads every branch. Prefer a test in the script where the pod can make it
"{{" anywhere else would start a template action in the rendered text, so it is refused.
"""

import argparse
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve()
CHARTS = HERE.parent.parent.parent
SHELLCHECK = re.compile(r"^\s*# shellcheck ")
PLACEHOLDER = re.compile(r"^#@ ([a-z_]+) = (.+)$")
USED = re.compile(r"@([a-z_]+)@")
CONDITION = re.compile(r"^#(\{\{- (if|else if) [^{}]+ \}\}|\{\{- (else|end) \}\})$")
FIX = "python charts/dl-common/scripts/build.py"

HEADER = """\
{{{{/*
The chart's shell scripts, one define each. GENERATED from charts/{chart}/scripts/*.sh by
charts/dl-common/scripts/build.py: edit the script there (shellchecked by `make lint`), then run
`{fix}`. Never edit this file.
*/}}}}
"""


class ScriptError(Exception):
    pass


def chart_name(chart: pathlib.Path) -> str:
    """The chart's name (Chart.yaml), which starts the name of every define it holds."""
    match = re.search(r"^name:\s*([-a-z0-9]+)\s*$", (chart / "Chart.yaml").read_text(), re.M)
    if not match:
        raise ScriptError(f"{chart / 'Chart.yaml'}: no name")
    return match[1]


def define(path: pathlib.Path, chart: str) -> tuple[str, str]:
    """(name, template text) of one script of the chart named ``chart``: its comment, then its define."""
    doc: list[str] = []
    values: dict[str, str] = {}
    body: list[str] = []
    depth = 0
    for number, line in enumerate(path.read_text().splitlines(), 1):
        where = f"{path.name} line {number}"
        if line.startswith("#:"):
            if "*/" in line:
                raise ScriptError(f"{where}: '*/' would end the define's comment early; reword it")
            doc.append(line[3:] if line.startswith("#: ") else line[2:])
        elif line.startswith("#@"):
            match = PLACEHOLDER.match(line)
            if not match:
                raise ScriptError(f"{where}: {line!r} is not a placeholder; write '#@ <name> = <template text>'")
            values[match[1]] = match[2]
        elif line.startswith("#{{"):
            match = CONDITION.match(line)
            if not match:
                raise ScriptError(f"{where}: {line!r} is not a condition; write '#{{{{- if <condition> }}}}', "
                                  "'#{{- else if <condition> }}', '#{{- else }}' or '#{{- end }}'")  # fmt: skip
            depth += {"if": 1, "end": -1}.get(match[2] or match[3], 0)
            if depth < 0 or (depth == 0 and match[3] == "else") or (depth == 0 and match[2] == "else if"):
                raise ScriptError(f"{where}: {line!r} closes or continues no '#{{{{- if ... }}}}'")
            body.append(line[1:])
        elif not SHELLCHECK.match(line):
            if "{{" in line:
                raise ScriptError(f"{where}: '{{{{' would start a template action; use a placeholder (#@ <name> = ...)")
            body.append(line)
    if depth:
        raise ScriptError(f"{path.name}: '#{{{{- if ... }}}}' without its '#{{{{- end }}}}'")
    name = re.match(rf"^({re.escape(chart)}(?:\.[A-Za-z]+)+): ", doc[0]) if doc else None
    if not name:
        raise ScriptError(f"{path.name}: its first '#:' line must start with the define's name and a colon, the name "
                          f"starting with the chart's ({chart}.), e.g. '#: dl-common.pod.watchdogScript: POSIX sh run "
                          "as ...'")  # fmt: skip
    text = "\n".join(body).strip("\n")
    if text != text.strip():
        raise ScriptError(f"{path.name}: the script starts or ends with spaces, which the define would trim")
    used = set(USED.findall(text))
    if used - set(values) or set(values) - used:
        raise ScriptError(f"{path.name}: placeholders used but not declared with '#@': {sorted(used - set(values))}; "
                          f"declared but not used: {sorted(set(values) - used)}")  # fmt: skip
    text = USED.sub(lambda m: values[m[1]], text)
    comment = "\n".join([*doc, f"Source: scripts/{path.name}."])
    return name[1], f'{{{{/*\n{comment}\n*/}}}}\n{{{{- define "{name[1]}" -}}}}\n{text}\n{{{{- end -}}}}\n'


def scripts(chart: pathlib.Path) -> list[pathlib.Path]:
    folder = chart / "scripts"
    return sorted([*folder.glob("*.sh"), *(p for p in folder.glob("*.py") if p.resolve() != HERE)])


def render(chart: pathlib.Path) -> str:
    name = chart_name(chart)
    defines = [define(path, name) for path in scripts(chart)]
    names = [name for name, _ in defines]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ScriptError(f"defined by more than one script: {', '.join(twice)}")
    return "\n".join([HEADER.format(chart=chart.name, fix=FIX), *(text for _, text in defines)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report drift instead of writing")
    parser.add_argument("charts", nargs="*", type=pathlib.Path, help="chart folders (default: every one with scripts/)")
    args = parser.parse_args()
    charts = args.charts or sorted(p.parent for p in CHARTS.glob("*/scripts") if p.is_dir())
    drift = False
    for chart in charts:
        try:
            new = render(chart)
        except ScriptError as exc:
            print(f"{chart / 'scripts'}: {exc}", file=sys.stderr)
            return 2
        out = chart / "templates" / "_shell.tpl"
        old = out.read_text() if out.exists() else None
        if new == old:
            continue
        if args.check:
            print(f"{out}: differs from {chart / 'scripts'}/*.sh and *.py; run: {FIX}")
            drift = True
            continue
        out.write_text(new)
        print(f"{out}: updated")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
