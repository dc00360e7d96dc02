#!/usr/bin/env python3
"""scripts/suite-targets.py: the build outputs the tests of some suites need, for ninja.

Usage: scripts/suite-targets.py BUILD_DIR SUITE...
Prints, one a line, the outputs (relative to BUILD_DIR) of every target a test of those
suites runs or depends on (meson introspect --tests: its program and `depends:`), the way
`meson test --suite` rebuilds before it runs. scripts/test.sh builds the sanitizer stages
with `ninja -C BUILD_DIR $(scripts/suite-targets.py BUILD_DIR SUITE...)`: only what their
suites run, not the benchmarks or the tests of other suites.
"""
import json
import os
import subprocess
import sys


def introspect(build_dir, what):
    out = subprocess.run(["meson", "introspect", what, build_dir], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build_dir, suites = os.path.abspath(sys.argv[1]), set(sys.argv[2:])
    files = {t["id"]: t["filename"] for t in introspect(build_dir, "--targets")}
    wanted = set()
    for test in introspect(build_dir, "--tests"):
        # meson names a test's suites "<project>:<suite>" and also plain "<suite>"
        names = {s.split(":", 1)[-1] for s in test["suite"]}
        if names & suites:
            for dep in test["depends"]:
                wanted.update(files.get(dep, []))
    for path in sorted(os.path.relpath(f, build_dir) for f in wanted):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
