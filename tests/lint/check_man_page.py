#!/usr/bin/env python3
"""tests/lint/check_man_page.py: the built manual page collscope(1) renders without a groff
warning and carries what `collscope help` prints: every command's whole help text, line for
line as the CLI prints it (ASCII hyphens, so options copy from the page), and every variable of
include/collscope/env_vars.def.

Usage: check_man_page.py PAGE COLLSCOPE ENV_VARS_DEF"""
import importlib.util
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("gen_man", os.path.join(here, "..", "..", "scripts", "gen-man.py"))
gen_man = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen_man)


def main():
    page, exe, env_def = sys.argv[1:4]
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P-cbou", "-rLL=200n", page],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8"))
    bad = []
    if r.returncode != 0 or r.stderr.strip():
        bad.append("groff: exit %d: %s" % (r.returncode, r.stderr.strip()))
    rendered = set(line.strip() for line in r.stdout.split("\n"))
    first_words = set(line.split()[0] for line in r.stdout.split("\n") if line.split())  # .TP tags
    overview = gen_man.help_text(exe)
    cmds = gen_man.commands(overview)
    if not cmds:
        bad.append("no commands in `collscope help`")
    for name, _ in cmds:
        if name == "help":
            continue
        for line in gen_man.help_text(exe, name).split("\n"):
            if line.strip() and line.strip() not in rendered:
                bad.append("`collscope help %s` line missing from the page: %s" % (name, line.strip()))
    for row in gen_man.load_env_rows(env_def):
        if row[1] not in first_words:
            bad.append("variable %s missing from ENVIRONMENT" % row[1])
    for b in bad[:20]:
        print("man-page: " + b)
    if bad:
        print("man-page: %d problems" % len(bad))
        return 1
    print("man-page: %s renders cleanly with %d commands and every variable" % (os.path.basename(page), len(cmds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
