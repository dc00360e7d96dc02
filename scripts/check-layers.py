#!/usr/bin/env python3
"""scripts/check-layers.py: fails when a dependency points up the layers.

The layers (DESIGN.md "Layers and where things are decided"), each a folder and a static
library (its meson.build):
    shim -> hooks -> stats -> analysis        tools -> analysis
    topology is a leaf library (used by hooks, shim and tools); include/collscope is the
    public headers every layer may use.
A file may include headers of its own folder and of the folders ALLOWED lists for it.

Three checks:
  1. includes: every #include "..." line of the C sources, resolved to a folder;
  2. symbols (with --lib LAYER=LIB.a, once per library): every undefined symbol of a layer's
     library must be defined by a library of its own layer or of a layer ALLOWED lists for
     it (symbols no layer defines -- libc, jansson -- are not judged). This catches what an
     include check cannot: an extern declaration of a higher layer's function or variable
     written inside a lower layer's file;
  3. the build (with --uses LAYER=A,B,..., once per layer): the layers each layer's
     meson.build links (layer_uses in meson.build) are the ones ALLOWED lists for it.
Exit status 0 when nothing points up, 1 otherwise (one line per finding).
"""
import argparse
import os
import re
import subprocess
import sys

ALLOWED = {
    "include": {"include"},
    "topology": {"include"},
    "analysis": {"include"},
    "stats": {"analysis", "include"},
    "hooks": {"stats", "analysis", "topology", "include"},
    "shim": {"hooks", "stats", "analysis", "topology", "include"},
    "tools": {"analysis", "topology", "include"},
}
LAYERS = ("shim", "hooks", "stats", "analysis", "topology", "tools")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# the layers linked into the job's process: uthash only through the wrapper that makes an
# allocation failure leave the element out instead of exiting
IN_JOB = {"shim", "hooks", "stats", "analysis", "topology", "include"}
UTHASH_RE = re.compile(r'^\s*#\s*include\s+[<"]uthash\.h[>"]')
UTHASH_WRAPPER = os.path.join("include", "collscope", "uthash_nonfatal.h")
SOURCE_EXT = (".c", ".h", ".cu", ".def")
# nm -A: "LIB.a:OBJ.o:ADDRESS T name" or "LIB.a:OBJ.o:                 U name"
NM_RE = re.compile(r"^(?P<obj>.*?\.o):\s*(?:[0-9a-fA-F]+\s+)?(?P<type>[A-Za-z])\s+(?P<sym>\S+)$")


def layer_of_path(rel):
    """The layer of a repository-relative path, or None (tests, bench, the simulator)."""
    parts = rel.split("/")
    if parts[0] == "include":
        return "include"
    if parts[0] in LAYERS:
        return parts[0]
    return None


def resolve(src_root, including_rel, name):
    """The layer of the header `name` included from `including_rel`, or None (system or
    outside the layers)."""
    here = os.path.dirname(including_rel)
    if os.path.exists(os.path.join(src_root, here, name)):  # next to the includer
        return layer_of_path(os.path.normpath(os.path.join(here, name)))
    if os.path.exists(os.path.join(src_root, "include", name)):  # -Iinclude
        return "include"
    if os.path.exists(os.path.join(src_root, name)):  # -I<root>
        return layer_of_path(os.path.normpath(name))
    top = here.split("/")[0]
    if top in LAYERS and os.path.exists(os.path.join(src_root, top, name)):  # -I<layer>: "dump/dumpfile.h"
        return top
    return None


def check_includes(src_root):
    bad = []
    for layer in ("include",) + LAYERS:
        top = os.path.join(src_root, layer)
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if not f.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, src_root)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for lineno, line in enumerate(fh, 1):
                        if layer in IN_JOB and UTHASH_RE.match(line) and rel != UTHASH_WRAPPER:
                            bad.append(f"{rel}:{lineno}: {layer}/ runs inside the job: include "
                                       f"\"collscope/uthash_nonfatal.h\" (uthash's default exits the process on "
                                       f"an allocation failure)")
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        target = resolve(src_root, rel, m.group(1))
                        if target is None or target == layer or target in ALLOWED[layer]:
                            continue
                        bad.append(f"{rel}:{lineno}: {layer}/ includes {m.group(1)} ({target}/): "
                                   f"{layer}/ may use only {', '.join(sorted(ALLOWED[layer]))}")
    return bad


def nm_symbols(lib, *flags):
    """(object, symbol) of `nm -A FLAGS LIB`, or an error line."""
    out = subprocess.run(["nm", "-A", *flags, lib], capture_output=True, text=True)
    if out.returncode:
        return None, f"{lib}: nm failed: {out.stderr.strip()}"
    syms = []
    for line in out.stdout.splitlines():
        m = NM_RE.match(line)
        if m:
            syms.append((os.path.basename(m.group("obj")), m.group("sym")))
    return syms, None


# The C library's functions the shim interposes (a definition in shim/ that every process's
# calls reach, collscope's own included): a lower layer calling one calls the C library's
# function, not the shim's code, so such a use is no upward dependency.
INTERPOSED = {"dlsym"}


def check_symbols(libs):
    """libs: [(layer, path)]. Every undefined symbol of a layer's objects that some layer
    defines must be defined by its own layer or one ALLOWED for it."""
    defined = {}  # symbol -> {layer: "lib(object)"}
    undefined = []  # (layer, "lib(object)", symbol)
    bad = []
    for layer, lib in libs:
        if layer not in ALLOWED:
            bad.append(f"{lib}: unknown layer {layer}")
            continue
        name = os.path.basename(lib)
        syms, err = nm_symbols(lib, "--defined-only", "-g")
        und, err2 = nm_symbols(lib, "-u")
        if err or err2:
            bad.append(err or err2)
            continue
        for obj, sym in syms:
            defined.setdefault(sym, {}).setdefault(layer, f"{name}({obj})")
        undefined += [(layer, f"{name}({obj})", sym) for obj, sym in und]
    for layer, where, sym in undefined:
        by = defined.get(sym)
        if not by or sym in INTERPOSED or layer in by or any(d in ALLOWED[layer] for d in by):
            continue
        dlayer, dwhere = sorted(by.items())[0]
        bad.append(f"{layer}/ {where} uses {sym}, defined in {dlayer}/ {dwhere}: {layer}/ may use only "
                   f"{', '.join(sorted(ALLOWED[layer]))}")
    return sorted(set(bad))


def check_uses(uses):
    """uses: [(layer, [layers its library links])], from meson.build's layer_uses."""
    bad = []
    for layer, used in uses:
        want = ALLOWED.get(layer, set()) - {"include", layer}
        if set(used) != want:
            bad.append(f"{layer}/meson.build links {', '.join(sorted(used)) or 'no layer'}; "
                       f"the table says {', '.join(sorted(want)) or 'no layer'}")
    return bad


def pair(text):
    k, sep, v = text.partition("=")
    if not sep or not k:
        raise argparse.ArgumentTypeError(f"expected LAYER=VALUE, got {text!r}")
    return k, v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--lib", type=pair, action="append", default=[],
                    help="LAYER=LIB.a: a layer's static library for the symbol check (repeat)")
    ap.add_argument("--uses", type=pair, action="append", default=[],
                    help="LAYER=A,B: the layers LAYER's meson.build links (repeat)")
    a = ap.parse_args()
    src_root = os.path.abspath(a.src)
    bad = check_includes(src_root)
    if a.lib:
        bad += check_symbols(a.lib)
    bad += check_uses([(k, [x for x in v.split(",") if x]) for k, v in a.uses])
    for b in bad:
        print(b)
    if bad:
        print(f"check-layers: {len(bad)} upward dependencies (DESIGN.md, \"Layers and where things are decided\")")
        return 1
    print("check-layers: every include" + (" and symbol" if a.lib else "") +
          (" and library" if a.uses else "") + " points down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
