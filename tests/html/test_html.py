#!/usr/bin/env python3
"""tests/html/test_html.py --cli COLLSCOPE --apps DIR --shim LIBCOLLSCOPE --sim-dir DIR [--keep DIR]

`collscope report --html` looked at in a real browser. A simulated job of 8 ranks of dp_train on
4 hosts (ranks 2h, 2h+1 on simhost<h+1>; the shim preloaded and wrapping the sim's network
plugin, SDC checks on every collective) with three faults: rank 5 slowed (a straggler), the
link simhost2 <-> simhost3 delayed (a slow pair), one bit of rank 3's output flipped at seq 20
(an SDC finding). The hosts of simhost4 are then renamed in the dump headers to a name holding
<script> markup. The page is opened in headless Chromium (Debian's chromium, a fresh profile,
a proxy pointing at a local listener that counts every connection): a screenshot is taken and
the DOM it built is checked:
  - every chart is there (notes, busbw, lateness, links, hangs, sdc), each an <svg> with a
    <title>, a <desc> and a table or list beside it;
  - the straggler `report --json` names is marked (data-flagged-rank) at the seq it was first
    flagged, and it is rank 5; the slow pair of `slow_links` is marked (data-slow-pair) and it
    is simhost2 -> simhost3; the SDC chart counts the finding;
  - the hostile host name shows as text: no <script> element in the DOM;
  - the page made no request: the listener saw no connection. A control page with an
    outside image, opened the same way, must make it see one (so the check can fail).
Exit 0 on success, 77 (skip) when chromium is not installed."""
import argparse, glob, html.parser, json, os, shutil, socket, subprocess, sys, tempfile, threading, time

FAULTS = "slow:rank=5,us=3000;link:a=simhost2,b=simhost3,us=3000;flip:rank=3,seq=20,elem=77,bit=30,at=out"
HOSTILE = 'sim<script>alert("x")</script>host4'
CHARTS = ["notes", "busbw", "lateness", "links", "hangs", "sdc"]


def chromium():
    for c in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(c)
        if p:
            return p
    return None


class Listener:
    """A TCP listener on 127.0.0.1 counting connections (the browser's proxy: every fetch
    the page tried would come here)."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.port = self.s.getsockname()[1]
        self.conns = []
        self.stop = False
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        self.s.settimeout(0.2)
        while not self.stop:
            try:
                c, _ = self.s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(1)
            try:
                self.conns.append(c.recv(300).split(b"\r\n")[0].decode("latin-1"))
            except OSError:
                self.conns.append("(no request line)")
            c.close()

    def close(self):
        self.stop = True
        self.s.close()


def browse(browser, url, tmp, tag, shot=None):
    """Opens url in a fresh headless profile behind the counting proxy. Returns (dom, requests)."""
    lis = Listener()
    prof = os.path.join(tmp, "profile-" + tag)
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + prof,
            "--proxy-server=http://127.0.0.1:%d" % lis.port, "--proxy-bypass-list=<-loopback>",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-dev-shm-usage",
            "--hide-scrollbars", "--window-size=1200,2600", "--virtual-time-budget=3000"]
    try:
        if shot:
            p = subprocess.run(base + ["--screenshot=" + shot, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=120)
            assert p.returncode == 0 and os.path.getsize(shot) > 0, (p.returncode, p.stderr[-2000:])
        p = subprocess.run(base + ["--dump-dom", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120)
        assert p.returncode == 0 and "<html" in p.stdout, (p.returncode, p.stderr[-2000:])
        time.sleep(0.3)
        return p.stdout, list(lis.conns)
    finally:
        lis.close()


class Dom(html.parser.HTMLParser):
    """The elements of the dumped DOM: (tag, attrs, [ancestor ids/data-chart]) plus text."""

    def __init__(self):
        super().__init__()
        self.elems, self.stack, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elems.append((tag, a, [x[1].get("data-chart") for x in self.stack if x[1].get("data-chart")]))
        if tag not in ("rect", "circle", "line", "path", "polygon", "polyline", "meta", "br", "img", "input"):
            self.stack.append((tag, a))

    def handle_startendtag(self, tag, attrs):
        self.elems.append((tag, dict(attrs), [x[1].get("data-chart") for x in self.stack if x[1].get("data-chart")]))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, d):
        self.text.append(d)


def run_job(a, tmp):
    d = os.path.join(tmp, "dump")
    env = dict(os.environ, COLLSCOPE_DIR=d, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_DIR=a.sim_dir,
               NCCL_NET_PLUGIN=a.shim, COLLSCOPE_NET_INNER="simnet", COLLSCOPE_SDC="all", COLLSCOPE_SDC_MIN_BYTES="0",
               COLLSCOPE_SIM_FAULTS=FAULTS, COLLSCOPE_LOG="warn")
    cmd = [a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--", os.path.join(a.apps, "dp_train"),
           "--steps", "30", "--size", "256K"]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:]
    # the hosts of simhost4 get a hostile name (in every file, so the link ends still match)
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        lines = open(f).read().split("\n")
        for i, l in enumerate(lines):
            if '"type":"header"' in l.replace(" ", ""):
                o = json.loads(l)
                if o.get("host") == "simhost4":
                    o["host"] = HOSTILE
                    lines[i] = json.dumps(o, separators=(",", ":"))
        open(f, "w").write("\n".join(lines))
    return d


def main():
    ap = argparse.ArgumentParser()
    for k in ("--cli", "--apps", "--shim", "--sim-dir"):
        ap.add_argument(k, required=True)
    ap.add_argument("--keep", help="copy the page and the screenshot here")
    a = ap.parse_args()
    browser = chromium()
    if not browser:
        print("SKIP: chromium is not installed (scripts/setup.sh installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="collscope-html-")
    try:
        d = run_job(a, tmp)
        rep = subprocess.run([a.cli, "report", d, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert rep.returncode == 0, rep.stderr
        r = json.loads(rep.stdout)
        for s in ("busbw_pct", "lateness", "progress", "sdc_timeline"):
            assert s in r["sections"] and s in r, s
        flagged = [s for s in r["stragglers"] if s["comm_rank"] >= 0]
        assert [s["rank"] for s in flagged] == [5], r["stragglers"]
        slow = [(s["src_host"], s["dst_host"]) for s in r["slow_links"]]
        assert slow == [("simhost2", "simhost3")], r["slow_links"]
        assert len(r["sdc"]) >= 1 and all(s["suspect_rank"] == 3 for s in r["sdc"]), r["sdc"]

        page = os.path.join(tmp, "report.html")
        t0 = time.time()
        p = subprocess.run([a.cli, "report", d, "--html", "-o", page], stderr=subprocess.PIPE, text=True)
        wt = time.time() - t0
        assert p.returncode == 0, p.stderr
        src = open(page, encoding="utf-8").read()
        print("page: %d bytes, written in %.3f s" % (len(src), wt))
        low = src.lower()
        assert "<script" not in low, "unescaped markup from a dump"
        assert "&lt;script&gt;" in src, "the hostile host name is not on the page"
        assert "default-src 'none'" in src
        for bad in ("src=", "href=", "url(", "@import", "http:", "https:"):
            assert bad not in low, bad

        shot = os.path.join(tmp, "report.png")
        t0 = time.time()
        dom, reqs = browse(browser, "file://" + page, tmp, "page", shot=shot)
        lt = time.time() - t0
        print("chromium: screenshot and DOM in %.2f s; %d proxy connections %s" % (lt, len(reqs), reqs))
        assert reqs == [], reqs
        P = Dom()
        P.feed(dom)
        assert not any(t == "script" for t, _, _ in P.elems), "a <script> element in the DOM"
        assert HOSTILE in "".join(P.text), "the hostile host name does not show as text"
        for c in CHARTS:
            secs = [e for e in P.elems if e[1].get("data-chart") == c]
            assert len(secs) == 1, (c, len(secs))
            if c == "notes":
                continue
            svgs = [e for e in P.elems if e[0] == "svg" and c in e[2]]
            assert svgs, "chart %s has no svg" % c
            for t, at, _ in svgs:
                assert at.get("role") == "img" and at.get("aria-labelledby"), (c, at)
            for want in ("title", "desc"):
                assert any(t == want and c in anc for t, _, anc in P.elems), (c, want)
            assert any(t == "table" and c in anc for t, _, anc in P.elems), (c, "table")
        marks = [at for t, at, anc in P.elems if "data-flagged-rank" in at and "lateness" in anc]
        assert [int(m["data-flagged-rank"]) for m in marks] == [s["rank"] for s in flagged], marks
        assert [int(m["data-seq"]) for m in marks] == [s["first_flag_seq"] for s in flagged], marks
        pairs = [(at["data-src-host"], at["data-dst-host"]) for t, at, anc in P.elems
                 if at.get("data-slow-pair") == "1" and "links" in anc]
        assert pairs == slow, pairs
        hosts = {at.get("data-src-host") for t, at, anc in P.elems if "data-src-host" in at}
        assert HOSTILE in hosts, hosts   # the attribute round-trips to the very name
        sdc = [at for t, at, anc in P.elems if t == "section" and at.get("data-chart") == "sdc"][0]
        assert int(sdc["data-findings"]) == len(r["sdc"]), sdc
        finds = sum(int(at["data-findings"]) for t, at, anc in P.elems if t == "path" and "data-findings" in at)
        assert finds == len(r["sdc"]) - r["sdc_timeline"]["untimed_findings"], finds
        print("DOM: 6 charts; flagged rank %s at seq %s; slow pair %s; %d SDC finding(s)" % (
            [m["data-flagged-rank"] for m in marks], [m["data-seq"] for m in marks], pairs, finds))

        # the control: an outside image on a page without the policy must reach the listener
        ctl = os.path.join(tmp, "control.html")
        open(ctl, "w").write('<!DOCTYPE html><html><body><img src="http://collscope-test.invalid/x.png"></body></html>')
        _, creqs = browse(browser, "file://" + ctl, tmp, "control")
        print("control page: %d proxy connections %s" % (len(creqs), creqs))
        assert creqs, "the listener cannot see a request: the no-request check would prove nothing"
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            shutil.copy(page, os.path.join(a.keep, "report.html"))
            shutil.copy(shot, os.path.join(a.keep, "report.png"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
