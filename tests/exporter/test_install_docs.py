#!/usr/bin/env python3
"""tests/exporter/test_install_docs.py CASE --build DIR --source DIR

What an install ships, checked from the build's own install plan
(DIR/meson-info/intro-installed.json, what `meson install` would put where):
  links  every relative link of every installed Markdown page (README.md, docs/*.md,
         DESIGN.md, ...) resolves to a file that is installed too, so the README a package
         ships has no dead link; links to a web address or a page anchor are not files.
  unit   README's systemd snippet (the ```ini block after "Under systemd") says what the
         packaged unit says: each of its lines is a line of the installed
         collscope-exporter.service as the Debian package builds it (prefix /usr)."""
import argparse, json, os, re, sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def installed(build):
    with open(os.path.join(build, "meson-info", "intro-installed.json")) as f:
        return json.load(f)   # {file in the source or build tree: its installed path}


def case_links(a):
    plan = installed(a.build)
    dests = set(os.path.normpath(v) for v in plan.values())
    bad = []
    pages = 0
    for src, dest in sorted(plan.items()):
        if not dest.endswith(".md"):
            continue
        pages += 1
        text = open(src, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)   # code blocks hold no links
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue   # a web address, mailto:, man: or an anchor of this page
            path = os.path.normpath(os.path.join(os.path.dirname(dest), target.split("#")[0]))
            if path not in dests:
                line = text.count("\n", 0, m.start()) + 1
                bad.append("%s:%d: (%s) -> %s, which is not installed" % (os.path.relpath(src, a.source), line, target, path))
    print("links: %d installed pages" % pages)
    if bad:
        sys.exit("FAIL: links of installed pages that do not resolve:\n  " + "\n  ".join(bad))


def case_unit(a):
    readme = open(os.path.join(a.source, "README.md"), encoding="utf-8").read()
    m = re.search(r"Under systemd.*?```ini\n(.*?)```", readme, re.S)
    if not m:
        sys.exit("FAIL: README.md has no ```ini block after 'Under systemd'")
    snippet = [l for l in m.group(1).splitlines() if l.strip()]
    unit_in = open(os.path.join(a.source, "integrations", "systemd", "collscope-exporter.service.in")).read()
    unit = unit_in.replace("@BINDIR@", "/usr/bin").replace("@SYSCONFDIR@", "/etc")
    lines = set(l.strip() for l in unit.splitlines())
    print("README's snippet:\n  " + "\n  ".join(snippet))
    missing = [l for l in snippet if l.strip() not in lines]
    if missing:
        sys.exit("FAIL: README's systemd lines that the packaged unit does not have:\n  " + "\n  ".join(missing))
    # the package installs that unit (debian/collscope.install) with the prefix /usr
    inst = open(os.path.join(a.source, "debian", "collscope.install")).read()
    if "collscope-exporter.service" not in inst or "usr/bin/collscope" not in inst:
        sys.exit("FAIL: debian/collscope.install does not ship the unit and /usr/bin/collscope")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    globals()["case_" + a.case](a)
    print("PASS", a.case)


if __name__ == "__main__":
    main()
