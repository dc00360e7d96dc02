#!/usr/bin/env python3
"""tests/tools/check_env_table.py: the docs' variable tables agree with the one table of
variables (include/collscope/env_vars.def), as `collscope help` prints it.

Fails when
  - a row of a hand-written variable table in README.md, DESIGN.md or docs/*.md (a markdown
    table whose first header cell is "variable" and that has a "default" column; the generated
    docs/environment.md heads its tables "name" and is checked by scripts/gen-env-doc.py --check) names a variable that is not in the
    table, names more than one variable, or gives a different default;
  - a COLLSCOPE_ variable of the table is in no doc table;
  - a C/C++/CUDA source of the shim, the CLI or the simulator names a COLLSCOPE_ variable
    that is not in the table.
Usage: check_env_table.py --cli COLLSCOPE --root SOURCE_ROOT [--readme F] [--design F]"""
import argparse
import os
import re
import subprocess
import sys

HELP_ROW = re.compile(r"^  (\S+) +default: (.*?)  \[(.*)\]$")
NAME = re.compile(r"`([A-Z][A-Z0-9_]*)`")
SOURCE_DIRS = ("shim", "hooks", "stats", "tools", "topology", "include", "tests/sim", "tests/apps")
SOURCE_EXT = (".c", ".h", ".cc", ".cu", ".def")
VAR_IN_SOURCE = re.compile(r'"(COLLSCOPE_[A-Z0-9_]*[A-Z0-9])')

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def table_from_help(cli):
    out = subprocess.run([cli, "help"], stdout=subprocess.PIPE, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        m = HELP_ROW.match(line)
        if not m:
            continue
        name, default, _ = m.groups()
        if name in rows:
            fail("collscope help lists %s twice" % name)
        rows[name] = default.strip()
    if len(rows) < 20:
        fail("collscope help lists only %d variables; its format changed?" % len(rows))
    return rows


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def doc_rows(path):
    """(line number, names, default) of every row of the variable tables of a markdown file"""
    rows = []
    with open(path) as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        head = cells(lines[i]) if lines[i].lstrip().startswith("|") else []
        if head and head[0].lower() == "variable" and "default" in [h.lower() for h in head]:
            col = [h.lower() for h in head].index("default")
            i += 2  # the |---| line
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                c = cells(lines[i])
                names = NAME.findall(c[0])
                default = c[col].replace("`", "").strip() if col < len(c) else ""
                rows.append((i + 1, names, default))
                i += 1
        i += 1
    return rows


def check_doc(path, table, seen, required=True):
    rows = doc_rows(path)
    if not rows and required:
        fail("%s: no variable table (| variable | default | ...) found" % path)
    here = set()
    for lineno, names, default in rows:
        where = "%s:%d" % (os.path.basename(path), lineno)
        if len(names) != 1:
            fail("%s: a row must name exactly one variable, found %s" % (where, names or "none"))
            continue
        name = names[0]
        if name in here:
            fail("%s: %s is listed twice in this file" % (where, name))
        here.add(name)
        seen.add(name)
        if name not in table:
            fail("%s: %s is not in include/collscope/env_vars.def (collscope help)" % (where, name))
        elif default != table[name]:
            fail("%s: %s default '%s', the table (collscope help) says '%s'" % (where, name, default, table[name]))


def check_sources(root, table):
    for d in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for fn in files:
                if not fn.endswith(SOURCE_EXT):
                    continue
                p = os.path.join(dirpath, fn)
                with open(p, errors="replace") as f:
                    text = f.read()
                for name in sorted(set(VAR_IN_SOURCE.findall(text))):
                    if name not in table:
                        fail("%s reads %s, which is not in include/collscope/env_vars.def"
                             % (os.path.relpath(p, root), name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--readme")
    ap.add_argument("--design")
    a = ap.parse_args()
    readme = a.readme or os.path.join(a.root, "README.md")
    design = a.design or os.path.join(a.root, "DESIGN.md")
    table = table_from_help(a.cli)
    seen = set()
    check_doc(readme, table, seen, required=False)
    check_doc(design, table, seen)
    docs = os.path.join(a.root, "docs")
    for fn in sorted(os.listdir(docs)) if os.path.isdir(docs) else []:
        if fn.endswith(".md"):
            check_doc(os.path.join(docs, fn), table, seen, required=False)
    for name in sorted(table):
        if name.startswith("COLLSCOPE_") and name not in seen:
            fail("%s (default '%s') is in no hand-written variable table of README.md, DESIGN.md or docs/"
                 % (name, table[name]))
    check_sources(a.root, table)
    print("env-table: %d variables, %s" % (len(table), "FAILED (%d)" % len(failures) if failures else "ok"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
