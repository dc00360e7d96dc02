#!/usr/bin/env python3
"""scripts/check-layers.py: fails when a dependency points up the layers.

The layers (DESIGN.md "Layers and where things are decided"), each a folder:
    shim -> hooks -> stats        tools -> stats
    topology is a leaf library (used by hooks, shim and tools); include/collscope is the
    public headers every layer may use.
A file may include headers of its own folder and of the folders ALLOWED lists for it.

Two checks:
  1. includes: every #include "..." line of the C sources, resolved to a folder;
  2. symbols (with --lib LIB.a, optional): every object of the shim's static library
     (objects are named after their source by meson: ".._hooks_timing.c.o") may only
     reference symbols defined by objects of its own or an allowed folder. This catches
     what an include check cannot: an extern declaration of a higher layer's function
     or variable written inside a lower layer's file.
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
    "stats": {"include"},
    "hooks": {"stats", "topology", "include"},
    "shim": {"hooks", "stats", "topology", "include"},
    "tools": {"stats", "topology", "include"},
}
LAYERS = ("shim", "hooks", "stats", "topology", "tools")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
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
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        target = resolve(src_root, rel, m.group(1))
                        if target is None or target == layer or target in ALLOWED[layer]:
                            continue
                        bad.append(f"{rel}:{lineno}: {layer}/ includes {m.group(1)} ({target}/): "
                                   f"{layer}/ may use only {', '.join(sorted(ALLOWED[layer]))}")
    return bad


def object_layer(member):
    """Layer of an object named by meson after its source, relative to the library's
    folder (shim/): "init.c.o" is shim/init.c, ".._hooks_timing.c.o" is hooks/timing.c."""
    name = member[:-2]  # the source's name: "init.c", ".._hooks_timing.c"
    if name.startswith("meson-generated_"):  # e.g. the SDC kernel's fatbin as C (hooks/)
        name = name[len("meson-generated_"):]
        if name.startswith(".._"):
            return "hooks", "hooks/(generated) " + name[3:]
    if name.startswith(".._"):
        name = name[3:]
        for layer in LAYERS:
            if name.startswith(layer + "_"):
                return layer, layer + "/" + name[len(layer) + 1:]
        return None, name
    return "shim", "shim/" + name


def check_symbols(lib):
    out = subprocess.run(["nm", "-A", "--defined-only", "-g", lib], capture_output=True, text=True)
    und = subprocess.run(["nm", "-A", "-u", lib], capture_output=True, text=True)
    if out.returncode or und.returncode:
        return [f"{lib}: nm failed: {out.stderr.strip() or und.stderr.strip()}"]
    defined = {}  # symbol -> (layer, source)
    for line in out.stdout.splitlines():
        m = NM_RE.match(line)
        if not m:
            continue
        layer, src = object_layer(os.path.basename(m.group("obj")))
        if layer:
            defined.setdefault(m.group("sym"), (layer, src))
    bad = []
    for line in und.stdout.splitlines():
        m = NM_RE.match(line)
        if not m:
            continue
        layer, src = object_layer(os.path.basename(m.group("obj")))
        sym = m.group("sym")
        if not layer or sym not in defined:
            continue
        dlayer, dsrc = defined[sym]
        if dlayer != layer and dlayer not in ALLOWED[layer]:
            bad.append(f"{src} uses {sym}, defined in {dsrc}: {layer}/ may use only "
                       f"{', '.join(sorted(ALLOWED[layer]))}")
    return sorted(set(bad))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--lib", help="the shim's static library (libcollscope_core.a) for the symbol check")
    a = ap.parse_args()
    src_root = os.path.abspath(a.src)
    bad = check_includes(src_root)
    if a.lib:
        bad += check_symbols(a.lib)
    for b in bad:
        print(b)
    if bad:
        print(f"check-layers: {len(bad)} upward dependencies (DESIGN.md, \"Layers and where things are decided\")")
        return 1
    print("check-layers: every include" + (" and symbol" if a.lib else "") + " points down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
