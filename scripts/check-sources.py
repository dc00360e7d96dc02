#!/usr/bin/env python3
"""scripts/check-sources.py: fails when a product file name repeats or a source is compiled twice alike.

Two checks:
  1. names: no base name (file name without its folder) twice among the product's files
     (the layers' folders, include/ and integrations/; meson.build and README.md excepted),
     so a name in a log line, a comment or a stack trace points at one file;
  2. compiles (with --build DIR): every source is compiled once per build directory (the
     layers are static libraries the shim, the CLI, the tests and the benchmarks link). A
     source compiled twice must be compiled differently (its -D/-f/-m flags differ: a fuzz
     target per parser, an instrumented copy for libFuzzer); two compiles with the same such
     flags are one compile too many (DIR/compile_commands.json).
Exit status 0 when both hold, 1 otherwise (one line per finding).
"""
import argparse
import collections
import json
import os
import shlex
import subprocess
import sys

PRODUCT = ("shim", "hooks", "stats", "analysis", "topology", "tools", "include", "integrations")
NAMES_ALLOWED_TWICE = {"meson.build", "README.md"}


def check_names(src_root):
    out = subprocess.run(["git", "-C", src_root, "ls-files", *PRODUCT], capture_output=True, text=True)
    if out.returncode:
        return [f"git ls-files failed: {out.stderr.strip()}"]
    where = collections.defaultdict(list)
    for path in out.stdout.split():
        name = os.path.basename(path)
        if name not in NAMES_ALLOWED_TWICE:
            where[name].append(path)
    return [f"{name}: {' and '.join(paths)}: one name, several files" for name, paths in sorted(where.items())
            if len(paths) > 1]


def flags_of(entry):
    """The flags that make a compile of a source different from another: -D, -U, -f, -m."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    return tuple(sorted(a for a in args if a.startswith(("-D", "-U", "-f", "-m"))))


def check_compiles(build_dir):
    path = os.path.join(build_dir, "compile_commands.json")
    try:
        with open(path, encoding="utf-8") as fh:
            entries = json.load(fh)
    except (OSError, ValueError) as e:
        return [f"{path}: {e}"]
    seen = collections.defaultdict(list)  # (source, flags) -> outputs
    for e in entries:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        seen[(src, flags_of(e))].append(e.get("output", "?"))
    root = os.path.normpath(os.path.join(build_dir, ".."))
    return [f"{os.path.relpath(src, root)} is compiled {len(outs)} times alike ({', '.join(sorted(outs))}): "
            "link one library instead, or say why the copies differ" for (src, _), outs in sorted(seen.items())
            if len(outs) > 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--build", help="a configured build directory (its compile_commands.json)")
    a = ap.parse_args()
    bad = check_names(os.path.abspath(a.src))
    if a.build:
        bad += check_compiles(os.path.abspath(a.build))
    for b in bad:
        print(b)
    if bad:
        print(f"check-sources: {len(bad)} findings")
        return 1
    print("check-sources: every product file name is its own" + (", every source compiled once" if a.build else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
