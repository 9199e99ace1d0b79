#!/usr/bin/env python3
"""Render the scripts of dl-common (scripts/*.sh, and scripts/*.py but this one: the start watch's Python) into
templates/_shell.tpl, one define each.

The scripts are real files so that shellcheck reads them (`make lint`); helm cannot read a library chart's
files from the chart that depends on it, so this script writes them into a template, which is committed:

    python charts/dl-common/scripts/build.py            # write templates/_shell.tpl
    python charts/dl-common/scripts/build.py --check    # exit 1 when it differs from the scripts

A script is the text its define renders, except for the lines meant for the tools, which are dropped:
  #: <text>          the define's comment; the first of these lines starts with its name and a colon
                     ("#: dl-common.pod.watchdogScript: POSIX sh run as ..."), as every helper's comment does
  #@ <name> = <tpl>  a placeholder: "@<name>@" in the script stands for the template text <tpl>, for values
                     only the template knows ("#@ port = {{ int .context.Values.mpi.sshPort }}", "port=@port@");
                     prefer environment variables the pod sets, which keep the script plain shell
  # shellcheck ...   shellcheck's directives (any indentation), e.g. "# shellcheck shell=sh" in a script
                     run with `sh -c`, which has no #! line, or "# shellcheck disable=SC2086 # <why>"
"{{" anywhere else would start a template action in the rendered text, so it is refused.
"""

import argparse
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parent / "templates" / "_shell.tpl"
SHELLCHECK = re.compile(r"^\s*# shellcheck ")
PLACEHOLDER = re.compile(r"^#@ ([a-z_]+) = (.+)$")
USED = re.compile(r"@([a-z_]+)@")
NAME = re.compile(r"^(dl-common\.[A-Za-z]+\.[A-Za-z]+): ")

HEADER = """\
{{/*
The chart's shell scripts, one define each. GENERATED from charts/dl-common/scripts/*.sh by
charts/dl-common/scripts/build.py: edit the script there (shellchecked by `make lint`), then run
`python charts/dl-common/scripts/build.py`. Never edit this file.
*/}}
"""


class ScriptError(Exception):
    pass


def define(path: pathlib.Path) -> tuple[str, str]:
    """(name, template text) of one script: its comment, then its define."""
    doc: list[str] = []
    values: dict[str, str] = {}
    body: list[str] = []
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
        elif not SHELLCHECK.match(line):
            if "{{" in line:
                raise ScriptError(f"{where}: '{{{{' would start a template action; use a placeholder (#@ <name> = ...)")
            body.append(line)
    name = NAME.match(doc[0]) if doc else None
    if not name:
        raise ScriptError(f"{path.name}: its first '#:' line must start with the define's name and a colon, e.g. "
                          "'#: dl-common.pod.watchdogScript: POSIX sh run as ...'")  # fmt: skip
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


def render(scripts: list[pathlib.Path]) -> str:
    defines = [define(path) for path in scripts]
    names = [name for name, _ in defines]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ScriptError(f"defined by more than one script: {', '.join(twice)}")
    return "\n".join([HEADER, *(text for _, text in defines)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report drift instead of writing")
    args = parser.parse_args()
    try:
        new = render(sorted([*HERE.glob("*.sh"), *(p for p in HERE.glob("*.py") if p.name != "build.py")]))
    except ScriptError as exc:
        print(f"{HERE}: {exc}", file=sys.stderr)
        return 2
    old = OUT.read_text() if OUT.exists() else None
    if new == old:
        return 0
    if args.check:
        print(f"{OUT}: differs from {HERE}/*.sh and *.py; run: python charts/dl-common/scripts/build.py")
        return 1
    OUT.write_text(new)
    print(f"{OUT}: updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
