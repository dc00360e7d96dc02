#!/usr/bin/env python3
"""tests/html/test_html.py --cli COLLSCOPE --apps DIR --shim LIBCOLLSCOPE --sim-dir DIR [--keep DIR] [--case hang]

`collscope report --html` looked at in a real browser. A simulated job of 8 ranks of dp_train on
4 hosts (ranks 2h, 2h+1 on simhost<h+1>; the shim preloaded and wrapping the sim's network
plugin, SDC checks on every collective) with three faults: rank 5 slowed (a straggler), the
link simhost2 <-> simhost3 delayed (a slow pair), one bit of rank 3's output flipped at seq 20
(an SDC finding). The hosts of simhost4 are then renamed in the dump headers to a name holding
<script> markup. The page is opened in headless Chromium (Debian's chromium, a fresh profile,
driven over --remote-debugging-pipe, its proxy a local listener that records every connection):
a full-page screenshot is taken and the DOM it built is checked:
  - every chart is there (notes, busbw, lateness, links, hangs, sdc), each an <svg role=img>
    with a <title>, a <desc> and a table beside it, but hangs: the job does not hang, so one
    line per communicator instead;
  - the straggler `report --json` names is marked (data-flagged-rank) in the cell of its comm
    rank's group and its first flagged seq's column, and it is rank 5; the slow pair of
    `slow_links` is marked (data-slow-pair) and it is simhost2 -> simhost3; the SDC chart
    counts the finding;
  - the hostile host name shows as text: no <script> element in the DOM;
  - the page made no request: no DevTools network request but the page itself, no policy or
    console error, no proxy connection but the browser's own service calls. Control pages
    with an outside image (without and with the page's policy) must trip those checks.
--case hang: a job hung at seq 10; the hangs chart marks that seq (read from the page, no browser).
--case axes: the page's axis ticks on 1-2-5 values, the log-scale legend, and no hangs chart for a
clean job whose ranks' last seqs are one apart (read from the page, no browser).
Exit 0 on success, 77 (skip) when chromium is not installed."""
import argparse, base64, glob, html.parser, math, select, json, os, shutil, socket, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hung_jobs  # noqa: E402  (tests/hung_jobs.py)

FAULTS = "slow:rank=5,us=3000;link:a=simhost2,b=simhost3,us=3000;flip:rank=3,seq=20,elem=77,bit=30,at=out"
HOSTILE = 'sim<script>alert("x")</script>host4'
CHARTS = ["notes", "busbw", "lateness", "links", "hangs", "sdc", "balance", "steps"]


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


# the browser's own services, which it calls whatever page it shows (update checks, sign-in,
# network time); every other connection the proxy sees fails the test
BROWSER_SERVICES = ("update.googleapis.com", "accounts.google.com", "clients2.google.com",
                    "optimizationguide-pa.googleapis.com", "content-autofill.googleapis.com")


class Cdp:
    """Chromium driven over --remote-debugging-pipe (fd 3: commands in, fd 4: replies out;
    NUL-terminated JSON), headless, a fresh profile, behind the counting proxy."""

    def __init__(self, browser, tmp, tag, proxy_port):
        r_cmd, w_cmd = os.pipe()
        r_out, w_out = os.pipe()
        args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                "--user-data-dir=" + os.path.join(tmp, "profile-" + tag),
                "--proxy-server=http://127.0.0.1:%d" % proxy_port, "--proxy-bypass-list=<-loopback>",
                "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-dev-shm-usage",
                "--hide-scrollbars", "about:blank"]

        def fds():
            os.dup2(r_cmd, 3)
            os.dup2(w_out, 4)
        self.p = subprocess.Popen(args, preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        os.close(r_cmd)
        os.close(w_out)
        self.w, self.r = w_cmd, r_out
        self.buf, self.id, self.events = b"", 0, []

    def _read(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("no reply from chromium")
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, target_session=None, timeout=60):
        self.id += 1
        m = {"id": self.id, "method": method, "params": params or {}}
        if target_session:
            m["sessionId"] = target_session
        os.write(self.w, json.dumps(m).encode() + b"\0")
        while True:
            r = self._read(timeout)
            if r.get("id") == self.id:
                assert "error" not in r, (method, r)
                return r.get("result", {})
            self.events.append(r)

    def wait_event(self, method, timeout=60):
        for e in self.events:
            if e.get("method") == method:
                return e
        while True:
            e = self._read(timeout)
            self.events.append(e)
            if e.get("method") == method:
                return e

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        os.close(self.w)
        os.close(self.r)


def browse(browser, url, tmp, tag, shot=None):
    """Opens url. Returns (dom, the page's requests other than itself, CSP/console errors,
    the proxy's connections other than the browser's own services, load seconds)."""
    lis = Listener()
    b = Cdp(browser, tmp, tag, lis.port)
    try:
        tid = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = b.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        for m in ("Network.enable", "Page.enable", "Log.enable", "Runtime.enable"):
            b.call(m, target_session=sid)
        b.call("Emulation.setDeviceMetricsOverride", {"width": 1200, "height": 900, "deviceScaleFactor": 1,
                                                       "mobile": False}, target_session=sid)
        t0 = time.time()
        b.call("Page.navigate", {"url": url}, target_session=sid)
        b.wait_event("Page.loadEventFired")
        load = time.time() - t0
        dom = b.call("Runtime.evaluate", {"expression": "document.documentElement.outerHTML", "returnByValue": True},
                     target_session=sid)["result"]["value"]
        if shot:
            png = b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, target_session=sid)
            open(shot, "wb").write(base64.b64decode(png["data"]))
        time.sleep(0.5)
        b.call("Runtime.evaluate", {"expression": "1"}, target_session=sid)   # drains the events so far
        reqs = [e["params"]["request"]["url"] for e in b.events if e.get("method") == "Network.requestWillBeSent"
                and e["params"]["request"]["url"] != url]
        errs = [e["params"]["entry"]["text"] for e in b.events if e.get("method") == "Log.entryAdded"
                and e["params"]["entry"]["level"] == "error"]
        errs += [str(e["params"].get("args")) for e in b.events if e.get("method") == "Runtime.consoleAPICalled"]
        wire = [c for c in lis.conns if not any(h in c for h in BROWSER_SERVICES)]
        return dom, reqs, errs, wire, load
    finally:
        b.close()
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


# the jobs run on the modeled clock (docs/simulator.md), every op timed by CUDA events: the
# verdicts the pages mark are the same under any host load
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1"}


def run_job(a, tmp):
    d = os.path.join(tmp, "dump")
    env = dict(os.environ, COLLSCOPE_DIR=d, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_DIR=a.sim_dir,
               NCCL_NET_PLUGIN=a.shim, COLLSCOPE_NET_INNER="simnet", COLLSCOPE_SDC="all", COLLSCOPE_SDC_MIN_BYTES="0",
               COLLSCOPE_SIM_FAULTS=FAULTS, COLLSCOPE_LOG="warn", **MODEL)
    cmd = [a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--no-kill-on-fail", "--", os.path.join(a.apps, "dp_train"),
           "--steps", "30", "--size", "256K"]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    # rank 3's own result check sees its flipped output (and only that)
    fails = [l for l in p.stdout.splitlines() if l.startswith("result ") and "FAIL" in l]
    assert p.returncode in (0, 1) and all("rank=3 " in l for l in fails), p.stdout[-3000:]
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


def check_views(r, d):
    """The new sections against the dump files, computed here independently: busbw_pct's
    percentiles (nearest rank; the report's histogram is within 0.5 %) and, per communicator
    and rank, the largest lateness over the job (the max of its grid row, 8 ranks = 8 rows)."""
    recs = []
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            if '"type":"op"' in line:
                o = json.loads(line)
                timed = o["timing"] in ("gpu_event", "profiler", "host_span")
                if o["seq"] >= 0 and timed and o["status"] == 0 and o["end_ns"] > o["start_ns"]:
                    recs.append(o)
    rows = {}
    for o in recs:
        if o["bytes"] > 0 and o["op"] == "AllReduce":
            n = o["comm_size"]
            bw = o["bytes"] / ((o["end_ns"] - o["start_ns"]) / 1e3 * 1e3) * 2 * (n - 1) / n
            rows.setdefault((o["comm_size"], 1 << (o["bytes"].bit_length() - 1)), []).append(bw)
    got = {(x["comm_size"], x["bucket_lo"]): x for x in r["busbw_pct"] if x["op"] == "AllReduce"}
    assert set(got) == set(rows), (sorted(got), sorted(rows))
    for k, v in rows.items():
        v.sort()
        for p in (10, 50, 90):
            want = v[-(-p * len(v) // 100) - 1]
            assert abs(got[k]["busbw_p%d" % p] - want) <= 0.01 * want + 1e-4, (k, p, got[k], want)
    inst = {}
    for o in recs:
        inst.setdefault((o["comm"], o["seq"]), []).append(o)
    worst = {}
    for (comm, seq), v in inst.items():
        if len(v) < 2:
            continue
        durs = sorted((o["end_ns"] - o["start_ns"]) / 1e3 for o in v)
        med = durs[(len(durs) + 1) // 2 - 1]
        for o in v:
            late = max(0.0, med - (o["end_ns"] - o["start_ns"]) / 1e3)
            key = (comm, o["comm_rank"])
            worst[key] = max(worst.get(key, 0.0), late)
    for c in r["lateness"]["comms"]:
        assert c["groups"] == c["comm_size"] == 8, c["groups"]
        for g, row in enumerate(c["lateness_us"]):
            m = max(x for x in row if x is not None)
            assert abs(m - worst[(c["comm"], g)]) <= 0.1, (c["comm"], g, m, worst[(c["comm"], g)])
    print("busbw_pct: %d AllReduce rows agree with the dumps; lateness: %d grid rows agree" % (
        len(rows), sum(len(c["lateness_us"]) for c in r["lateness"]["comms"])))


def case_hang(a):
    """Rank 5 blocks at seq 10 (hang fault; every shim reports its op hung after 2 s; the job is
    killed once `collscope top` shows all 8 hang reports): the hangs chart marks the seq `hangs`
    names, and every bar is at it (all ranks entered it). Read from the page itself (no browser
    needed)."""
    tmp = tempfile.mkdtemp(prefix="collscope-html-hang-")
    try:
        d = os.path.join(tmp, "dump")
        env = dict(os.environ, COLLSCOPE_DIR=d, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_DIR=a.sim_dir,
                   COLLSCOPE_SIM_FAULTS="hang:rank=5,seq=10", COLLSCOPE_HANG_TIMEOUT="2", COLLSCOPE_LOG="warn")
        p = subprocess.Popen([a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--no-kill-on-fail", "--",
                              "timeout", "-s", "KILL", "100", os.path.join(a.apps, "dp_train"), "--steps", "20",
                              "--size", "256K"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hung_jobs.kill_when_hung(p, a.cli, tmp, lambda hung: len(hung) == 8)
        p.wait(timeout=120)
        r = json.loads(subprocess.run([a.cli, "report", d, "--json"], stdout=subprocess.PIPE, text=True).stdout)
        assert len(r["hangs"]) == 1, r["hangs"]
        h = r["hangs"][0]
        page = os.path.join(tmp, "p.html")
        assert subprocess.run([a.cli, "report", d, "--html", "-o", page]).returncode == 0
        P = Dom()
        P.feed(open(page, encoding="utf-8").read())
        lines = [at for t, at, anc in P.elems if "data-hang-seq" in at and "hangs" in anc]
        assert [int(x["data-hang-seq"]) for x in lines] == [h["seq"]], (lines, h)
        hung = [at for t, at, anc in P.elems if t == "figure" and at.get("data-hung") == "1"]
        assert [x["data-comm"] for x in hung] == [h["comm"]], hung
        bars = [int(at["data-last-seq"]) for t, at, anc in P.elems if "data-last-seq" in at]
        want = h["seq"] if not h["missing_ranks"] else h["reached"]
        assert bars and min(bars) == want, (bars, h)
        print("hang: stuck at seq %d marked; lowest bar at seq %d; %d bars" % (h["seq"], min(bars), len(bars)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")
    return 0


def nice(v):
    """v is 0 or 1, 2 or 5 x 10^k"""
    if v == 0:
        return True
    m = abs(v) / 10 ** math.floor(math.log10(abs(v)))
    return any(abs(m - x) < 1e-6 for x in (1, 2, 5, 10))


class Texts(html.parser.HTMLParser):
    """(class, svg id, text) of every <text> element of a page"""

    def __init__(self):
        super().__init__()
        self.svg, self.cur, self.items = None, None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
        if tag == "text":
            self.cur = [a.get("class"), self.svg, ""]

    def handle_endtag(self, tag):
        if tag == "text" and self.cur:
            self.items.append(tuple(self.cur))
            self.cur = None

    def handle_data(self, d):
        if self.cur:
            self.cur[2] += d


def case_axes(a):
    """A clean job with a straggler (rank 5 slowed), SDC checks on, rank 0's last op record cut
    from its dump (its last seq one under the others'): read from the page itself (no
    browser). Every axis (bus bandwidth, seq, time) ticks in equal steps of 1, 2 or 5 x 10^k,
    each tick a multiple of the step; the lateness legend (log scale) does not start at 0; the
    hangs section has no chart, one line per communicator instead (no hang, last seqs one
    apart)."""
    tmp = tempfile.mkdtemp(prefix="collscope-html-axes-")
    try:
        d = os.path.join(tmp, "dump")
        env = dict(os.environ, COLLSCOPE_DIR=d, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_DIR=a.sim_dir, COLLSCOPE_SDC="all",
                   COLLSCOPE_SDC_MIN_BYTES="0", COLLSCOPE_SIM_FAULTS="slow:rank=5,us=3000", COLLSCOPE_LOG="warn",
                   **MODEL)
        p = subprocess.run([a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--no-kill-on-fail", "--",
                            os.path.join(a.apps, "dp_train"), "--steps", "20", "--size", "256K"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        assert p.returncode == 0, p.stdout[-3000:]
        f = glob.glob(os.path.join(d, "*-r0-*.jsonl"))[0]
        lines = open(f).read().split("\n")
        last = max(i for i, l in enumerate(lines) if '"type":"op"' in l.replace(" ", ""))
        open(f, "w").write("\n".join(lines[:last] + lines[last + 1:]))
        r = json.loads(subprocess.run([a.cli, "report", d, "--json"], stdout=subprocess.PIPE, text=True).stdout)
        assert not r["hangs"], r["hangs"]
        spread = [(min(x for x in c["entered_min"] if x is not None), max(x for x in c["entered_max"] if x is not None))
                  for c in r["progress"]["comms"]]
        assert spread and all(hi - lo <= 1 for lo, hi in spread) and any(hi - lo == 1 for lo, hi in spread), spread
        page = os.path.join(tmp, "p.html")
        assert subprocess.run([a.cli, "report", d, "--html", "-o", page]).returncode == 0
        src = open(page, encoding="utf-8").read()
        T = Texts()
        T.feed(src)
        ticks = {}
        for cls, svg, text in T.items:
            if cls in ("ytick", "seqtick", "timetick"):
                ticks.setdefault((cls, svg), []).append(float(text.split()[0]))
        kinds = {k[0] for k in ticks}
        assert kinds == {"ytick", "seqtick", "timetick"}, ticks
        assert ("timetick", "sdc-svg") in ticks, ticks
        for k, v in ticks.items():
            # equal steps of 1, 2 or 5 x 10^k, every tick a multiple of the step
            assert len(v) >= 2, (k, v)
            steps = {round(y - x, 9) for x, y in zip(v, v[1:])}
            assert len(steps) == 1, (k, v)
            step = steps.pop()
            assert nice(step) and all(abs(x / step - round(x / step)) < 1e-6 for x in v), (k, v)
        print("ticks: " + "; ".join("%s %s: %s" % (k[0], k[1], v) for k, v in sorted(ticks.items())))
        legend = [text for cls, svg, text in T.items if svg and svg.startswith("late-")]
        lo = [legend[i + 1] for i, t in enumerate(legend) if t == "lateness (log scale)"]
        assert lo and all(not x.startswith("0") and x.endswith("or less") for x in lo), lo
        P = Dom()
        P.feed(src)
        assert not any(t == "svg" and "hangs" in anc for t, at, anc in P.elems), "a hangs chart that tells nothing"
        said = [at["data-comm"] for t, at, anc in P.elems if t == "p" and "hangs" in anc and "data-comm" in at]
        assert sorted(said) == sorted(c["comm"] for c in r["progress"]["comms"]), said
        print("legend from %s; hangs: %d communicators in one line each, no chart" % (lo, len(said)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="page", choices=["page", "hang", "axes"])
    for k in ("--cli", "--apps", "--shim", "--sim-dir"):
        ap.add_argument(k, required=True)
    ap.add_argument("--keep", help="copy the page and the screenshot here")
    a = ap.parse_args()
    if a.case == "hang":
        return case_hang(a)
    if a.case == "axes":
        return case_axes(a)
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

        check_views(r, d)

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
        dom, reqs, errs, wire, load = browse(browser, "file://" + page, tmp, "page", shot=shot)
        print("chromium: loaded in %.3f s; page requests %s; errors %s; proxy connections (other than the "
              "browser's own services) %s" % (load, reqs, errs, wire))
        assert reqs == [] and errs == [] and wire == [], (reqs, errs, wire)
        assert os.path.getsize(shot) > 10000
        P = Dom()
        P.feed(dom)
        assert not any(t == "script" for t, _, _ in P.elems), "a <script> element in the DOM"
        assert HOSTILE in "".join(P.text), "the hostile host name does not show as text"
        for c in CHARTS:
            secs = [e for e in P.elems if e[1].get("data-chart") == c]
            assert len(secs) == 1, (c, len(secs))
            if c == "notes":
                continue
            if c == "hangs" and not r["hangs"]:   # a clean job: one line per communicator, no chart
                assert not any(t == "svg" and c in anc for t, _, anc in P.elems), c
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
        for m, s in zip(marks, flagged):   # drawn in the cell of its comm rank's group and its seq's column
            lc = [c for c in r["lateness"]["comms"] if c["comm"] == s["comm"]][0]
            col, row = int(m["x"]), int(m["y"])
            cs = lc["column_seq"] + [float("inf")]
            assert cs[col] <= s["first_flag_seq"] < cs[col + 1], (col, cs, s)
            assert row * lc["ranks_per_group"] <= s["comm_rank"] < (row + 1) * lc["ranks_per_group"], (row, s)
            assert lc["lateness_us"][row][col] is not None and lc["lateness_us"][row][col] > 0, (row, col)
        # the steps chart: each rank's four parts, their shares the JSON's
        parts = {(int(at["data-rank"]), at["data-part"]): float(at["data-share"]) for t, at, anc in P.elems
                 if "data-part" in at and "steps" in anc}
        assert r["steps"]["ranks"] == 8 and len(parts) == 32, parts
        for x in r["steps"]["per_rank"]:
            assert all(abs(parts[(x["rank"], k)] - v) < 1e-4 for k, v in x["share"].items()), (x["rank"], parts)
        pairs = [(at["data-src-host"], at["data-dst-host"]) for t, at, anc in P.elems
                 if at.get("data-slow-pair") == "1" and "links" in anc]
        assert pairs == slow, pairs
        hosts = {at.get("data-src-host") for t, at, anc in P.elems if "data-src-host" in at}
        assert HOSTILE in hosts, hosts   # the attribute round-trips to the very name
        sdc = [at for t, at, anc in P.elems if t == "section" and at.get("data-chart") == "sdc"][0]
        assert int(sdc["data-findings"]) == len(r["sdc"]), sdc
        finds = sum(int(at["data-findings"]) for t, at, anc in P.elems if t == "path" and "data-findings" in at)
        assert finds == len(r["sdc"]) - r["sdc_timeline"]["untimed_findings"], finds
        print("DOM: 6 sections; flagged rank %s at seq %s; slow pair %s; %d SDC finding(s)" % (
            [m["data-flagged-rank"] for m in marks], [m["data-seq"] for m in marks], pairs, finds))

        # the controls: an outside image must show as a page request and on the wire without the
        # policy, and as a request or a policy error with it (so the checks above can fail)
        img = '<img src="http://collscope-test.invalid/x.png">'
        for tag, head in (("control", ""), ("control-csp", src[src.index("<meta http-equiv"):src.index(">", src.index("<meta http-equiv")) + 1])):
            ctl = os.path.join(tmp, tag + ".html")
            open(ctl, "w").write("<!DOCTYPE html><html><head>%s</head><body>%s</body></html>" % (head, img))
            _, creqs, cerrs, cwire, _ = browse(browser, "file://" + ctl, tmp, tag)
            print("%s page: requests %s; errors %s; proxy %s" % (tag, creqs, cerrs, cwire))
            if head:
                assert creqs or cerrs, "a blocked fetch would go unseen"
            else:
                assert creqs and any("collscope-test.invalid" in c for c in cwire), "a fetch would go unseen"
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
