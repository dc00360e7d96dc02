#!/usr/bin/env python3
"""bench/html_report.py --cli COLLSCOPE --dumps DIR [--runs N]

The HTML page's bound measured (docs/html-report.md): on a dump set (tests/tools/gen_dumps makes
one of 10,000 ranks), the time `collscope report --json` and `report --html` take, the sizes of
both, and the time headless Chromium takes to load the page (navigation to its load event)
and to render all of it (a full-page screenshot). Best of N runs each."""
import argparse, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "html"))
import test_html  # noqa: E402  (its Chromium driver)


def timed(cmd):
    t = time.time()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    return time.time() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--dumps", required=True)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-html-bench-")
    try:
        js, page = os.path.join(tmp, "r.json"), os.path.join(tmp, "r.html")
        tj = min(timed([a.cli, "report", a.dumps, "--json", "-o", js]) for _ in range(a.runs))
        th = min(timed([a.cli, "report", a.dumps, "--html", "-o", page]) for _ in range(a.runs))
        print("report --json: %.2f s, %d bytes" % (tj, os.path.getsize(js)))
        print("report --html: %.2f s, %d bytes" % (th, os.path.getsize(page)))
        browser = test_html.chromium()
        if not browser:
            print("chromium not installed: no load time")
            return 0
        loads, shots = [], []
        for i in range(a.runs):
            shot = os.path.join(tmp, "s%d.png" % i)
            t = time.time()
            _, reqs, errs, wire, load = test_html.browse(browser, "file://" + page, tmp, "b%d" % i, shot=shot)
            shots.append(time.time() - t)
            loads.append(load)
            assert not reqs and not errs and not wire, (reqs, errs, wire)
        print("chromium: load event %.3f s (best of %d), browser start + load + full-page screenshot %.2f s" %
              (min(loads), a.runs, min(shots)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
