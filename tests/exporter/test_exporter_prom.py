#!/usr/bin/env python3
"""tests/exporter/test_exporter_prom.py CASE --cli COLLSCOPE [--apps DIR] [--dashboard FILE]

`collscope exporter` against the real Prometheus (Debian's prometheus and promtool).
  e2e:       an 8-rank dp_train job on 4 simulated hosts with rank 5 slowed
             (COLLSCOPE_SIM_FAULTS=slow:rank=5); its rings are kept (COLLSCOPE_KEEP_SHM=1, the
             exporter's grace period keeps exited ranks visible); the exporter and a Prometheus
             scraping it are started on 127.0.0.1 from a config generated here, and the test
             asks Prometheus' HTTP API for the straggler (rank 5 on simhost3) and the collective
             count (equal to the op records in the dumps); `promtool check metrics` on a scrape
             (text and OpenMetrics) and on the textfile.
  ident:     the GPU's identity labels (UUID, pci_bus_id) on a live 4-rank job scraped every
             few ms: with health sampling off (no NVML at all) every series of a rank whose
             device is known carries them; with it on, no series' labels change between two
             scrapes; the labels equal what the simulated NVML reports (the dump header).
  dashboard: every PromQL expression of the Grafana dashboard parses (promtool check rules on
             a generated rules file), names only metrics the exporter produces, and keeps the
             job label through every aggregation (by (..., job, ...)).
  dashboard_live: two 8-rank jobs with a slowed rank each (4 and 6) fill a real Prometheus;
             the dashboard's straggler ranking panel (read from the dashboard file), evaluated
             through Prometheus' HTTP API as Grafana would, puts each job's slowed rank on top,
             and every panel's result series carry `job`.
Every process it starts is stopped by its pid. Prints the measured figures."""
import argparse, glob, json, os, re, shutil, socket, subprocess, sys, tempfile, time, urllib.parse, urllib.request

HOSTS = "simhost[1-4]"


def need(prog):
    p = shutil.which(prog)
    if not p:
        sys.exit("FAIL: %s not found (scripts/setup.sh installs Debian's prometheus package)" % prog)
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, accept=None, timeout=5):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.headers.get("Content-Type"), r.read().decode()


class Proc:
    """A process started by the test, its output in a file, stopped by pid."""

    def __init__(self, argv, log, env=None):
        self.log = log
        self.f = open(log, "w")
        self.p = subprocess.Popen(argv, stdout=self.f, stderr=subprocess.STDOUT, env=env)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.p.poll() is None:
            os.kill(self.p.pid, 15)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.p.pid, 9)
                self.p.wait()
        self.f.close()


def wait_for(what, fn, timeout, procs=()):
    t0 = time.time()
    while time.time() - t0 < timeout:
        for p in procs:
            if not p.alive():
                sys.exit("FAIL: %s: %s exited early (rc %s):\n%s" % (what, p.p.args[0], p.p.returncode, p.text()))
        v = fn()
        if v:
            return v
        time.sleep(0.25)
    sys.exit("FAIL: timed out waiting for %s" % what)


def start_exporter(cli, shm, tmp, extra=()):
    ex = Proc([cli, "exporter", "--listen", "127.0.0.1:0", "--shm-dir", shm, "--interval", "0.2"] + list(extra),
              os.path.join(tmp, "exporter.log"))

    def port():
        m = re.search(r"serving http://127\.0\.0\.1:(\d+)/metrics", ex.text())
        return int(m.group(1)) if m else None
    return ex, wait_for("the exporter's listen line", port, 20, [ex])


def promtool_check(promtool, text, what):
    p = subprocess.run([promtool, "check", "metrics"], input=text, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    assert p.returncode == 0, "promtool check metrics (%s) failed:\n%s" % (what, p.stdout)
    print("promtool check metrics (%s): ok (%d lines)" % (what, text.count("\n")))


def dump_op_count(d):
    n = 0
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            if '"type":"op"' in line.replace(" ", "") and json.loads(line).get("type") == "op":
                n += 1
    return n


def dump_headers(d):
    """rank -> the dump's header line"""
    out = {}
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        with open(f) as fh:
            h = json.loads(fh.readline())
        out[h.get("rank")] = h
    return out


def nvml_bus(b):
    """the CUDA driver's bus id in NVML's form: an 8-digit domain, upper-case hex"""
    dom, rest = b.split(":", 1)
    return ("0" * 8 + dom)[-8:].upper() + ":" + rest.upper()


def start_prometheus(prometheus, tmp, exporter_port, watch):
    """Prometheus on 127.0.0.1 scraping the exporter every second, from a config generated
    here: (its Proc, API base URL, query(expr) -> result list or None); fails loudly when it
    does not start"""
    pport = free_port()
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: collscope\n    honor_labels: true\n"
                "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % exporter_port)
    pr = Proc([prometheus, "--config.file", cfg, "--storage.tsdb.path", os.path.join(tmp, "tsdb"),
               "--web.listen-address", "127.0.0.1:%d" % pport], os.path.join(tmp, "prometheus.log"))
    api = "http://127.0.0.1:%d" % pport

    def ready():
        try:
            return http_get(api + "/-/ready")[1]
        except OSError:
            return None
    try:
        wait_for("Prometheus to be ready", ready, 60, [pr] + list(watch))
    except SystemExit:
        pr.stop()
        raise

    def query(q):
        try:
            _, body = http_get(api + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
        except OSError:
            return None
        r = json.loads(body)
        assert r["status"] == "success", r
        return r["data"]["result"] or None
    return pr, api, query


def prometheus_target_up(api):
    def target_up():
        _, body = http_get(api + "/api/v1/targets")
        t = json.loads(body)["data"]["activeTargets"]
        return t if t and t[0]["health"] == "up" else None
    return target_up


def case_e2e(a, tmp):
    prometheus, promtool = need("prometheus"), need("promtool")
    shm, dumps, tf = (os.path.join(tmp, x) for x in ("shm", "dumps", "textfile"))
    for d in (shm, tf):
        os.makedirs(d)
    sysfs = os.path.join(tmp, "sysfs")
    env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_KEEP_SHM="1",
               COLLSCOPE_SIM_FAULTS="slow:rank=5,us=3000;ecc:rank=2,corrected=5,uncorrected=1,seq=30;"
                                    "xid:rank=2,code=79,seq=60",
               COLLSCOPE_HEALTH_MS="100", COLLSCOPE_SIM_SYSFS=sysfs, COLLSCOPE_SYSFS_ROOT=os.path.join(sysfs, "%h"))
    t0 = time.time()
    job = subprocess.run([a.cli, "run", "-n", "8", "--hosts", HOSTS, "--sim", "--no-kill-on-fail", "--",
                          os.path.join(a.apps, "dp_train"), "--steps", "30", "--size", "256K"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    assert job.returncode == 0, job.stdout
    nops = dump_op_count(dumps)
    print("job: %.1f s, %d op records in the dumps, rings %s" % (time.time() - t0, nops, sorted(os.listdir(shm))))
    assert nops > 0 and len(os.listdir(shm)) == 8

    # hostile files under ring names beside the job's: skipped with one line each, no series
    uid = os.geteuid()
    with open(os.path.join(shm, "collscope-%d-evil-r0.ring" % uid), "wb") as f:
        f.write(bytes((i * 131) & 0xff for i in range(8192)))
    os.symlink(os.path.join(shm, sorted(os.listdir(shm))[0]), os.path.join(shm, "collscope-%d-evil-r1.ring" % uid))

    procs = []
    try:
        ex, port = start_exporter(a.cli, shm, tmp, ["--textfile", tf])
        procs.append(ex)
        url = "http://127.0.0.1:%d/metrics" % port
        ct, text = http_get(url)
        assert ct.startswith("text/plain; version=0.0.4"), ct
        promtool_check(promtool, text, "scrape, text format")
        t1 = time.time()
        http_get(url)
        print("scrape of 8 ranks: %.1f ms (HTTP round trip)" % ((time.time() - t1) * 1e3))
        ct, om = http_get(url, "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5")
        assert ct.startswith("application/openmetrics-text"), ct
        assert om.endswith("# EOF\n") and "# TYPE collscope_collectives counter" in om
        # promtool reads the text format only; the OpenMetrics body is what Prometheus itself
        # parses when it scrapes (it asks for OpenMetrics first): checked by the target's health
        assert "# TYPE collscope_collective_duration_seconds histogram" in om and "_total{" in om
        prom_file = os.path.join(tf, "collscope.prom")
        wait_for("the textfile", lambda: os.path.exists(prom_file), 10, [ex])
        promtool_check(promtool, open(prom_file).read(), "textfile")
        assert not [f for f in os.listdir(tf) if f != "collscope.prom"], os.listdir(tf)  # no temporaries left

        pr, api, query = start_prometheus(prometheus, tmp, port, [ex])
        procs.append(pr)
        target_up = prometheus_target_up(api)
        tg = wait_for("the exporter's target to be up", target_up, 30, [pr, ex])[0]
        assert tg["lastError"] == "", tg
        print("Prometheus target: health %s, last scrape %.1f ms" % (tg["health"], tg["lastScrapeDuration"] * 1e3))
        t2 = time.time()
        strag = wait_for("collscope_straggler == 1 in Prometheus", lambda: query("collscope_straggler == 1"), 60,
                         [pr, ex])
        print("Prometheus: straggler series after %.1f s: %s" % (time.time() - t2, [s["metric"] for s in strag]))
        assert len(strag) == 1, strag
        m = strag[0]["metric"]
        assert m["rank"] == "5" and m["host"] == "simhost3", m
        assert m["job"] and m["local_rank"] == "1", m
        total = query("sum(collscope_collectives_total)")
        got = int(float(total[0]["value"][1]))
        print("Prometheus: sum(collscope_collectives_total) = %d, dumps: %d op records" % (got, nops))
        assert got == nops, (got, nops)
        ranks = query("count(collscope_up == 0)")  # the job exited: every rank in its grace period
        assert int(float(ranks[0]["value"][1])) == 8, ranks
        hist = query("sum(collscope_collective_duration_seconds_count)")
        assert 0 < int(float(hist[0]["value"][1])) <= nops, hist
        assert query('count(collscope_up{job="evil"})') is None
        # the GPU's identity as labels in dcgm-exporter's names and forms: the dump header's
        hdr = dump_headers(dumps)
        want_uuid, want_bus = hdr[5]["gpu_uuid"], nvml_bus(hdr[5]["gpu_pci_bus_id"])
        assert m.get("UUID") == want_uuid and m.get("pci_bus_id") == want_bus, (m, hdr[5])
        # health: every rank's GPU values in base units; rank 2's ECC and XID counters
        power = query("collscope_gpu_power_watts")
        assert power and len(power) == 8 and all(0 < float(x["value"][1]) < 2000 for x in power), power
        ecc = query('collscope_gpu_ecc_errors_total > 0')
        print("Prometheus: ECC series > 0: %s" % [(x["metric"]["rank"], x["metric"]["type"], x["value"][1]) for x in ecc])
        assert sorted((x["metric"]["rank"], x["metric"]["type"], x["value"][1]) for x in ecc) == \
            [("2", "corrected", "5"), ("2", "uncorrected", "1")], ecc
        xid = query("collscope_gpu_last_xid > 0")
        assert [(x["metric"]["rank"], x["value"][1]) for x in xid] == [("2", "79")], xid
        # a join on UUID as one with dcgm-exporter's series would be: one GPU per rank
        joined = query("count(collscope_up * on(UUID) group_left collscope_gpu_temperature_celsius)")
        assert joined and int(float(joined[0]["value"][1])) == 8, joined
        ib = query("count(collscope_ib_port_active)")
        print("Prometheus: IB port series: %s" % ib)
        assert ib and int(float(ib[0]["value"][1])) > 0, ib
    finally:
        for p in reversed(procs):
            p.stop()
    log = ex.text()
    print("exporter log:\n" + log)
    skips = [l for l in log.splitlines() if "skipping" in l]
    assert len(skips) == 2 and all("evil" in l for l in skips), log  # once each, however many passes


# job id, its straggler (slowed by 3 ms on every op), and a rank throttled for a moment only
# (5 collectives, by 4x the median duration): that one is last in a few instances by a lot,
# so its median lateness when last is the larger, while the straggler arrives late always
STRAGGLER_JOBS = (("collscope-strag-a", 4, 3), ("collscope-strag-b", 6, 5))
STRAGGLER_PANEL = re.compile(r"(?i)(straggler|lateness|arrival).*per rank")


def grafana_expr(e, job):
    """a dashboard expression as Grafana sends it, with the job variable set to JOB (a regex)"""
    e = e.replace("$__rate_interval", "1m").replace("$__interval", "1m")
    return re.sub(r"\$\{?job\}?", job, e)


def case_dashboard_live(a, tmp):
    """two 8-rank straggler jobs in one Prometheus: the dashboard's straggler panel, evaluated
    as Grafana would, ranks each job's slowed rank first; every panel's result keeps `job`"""
    prometheus = need("prometheus")
    dash = json.load(open(a.dashboard))
    panels = [(p.get("title", ""), promql_exprs(p, [])) for p in dash["panels"]]
    strag = [(t, e) for t, e in panels if STRAGGLER_PANEL.search(t)]
    assert len(strag) == 1 and len(strag[0][1]) >= 1, "one straggler ranking panel per rank expected: %s" % strag
    title, strag_exprs = strag[0]
    shm = os.path.join(tmp, "shm")
    os.makedirs(shm)
    for job_id, slow, blip in STRAGGLER_JOBS:
        dumps = os.path.join(tmp, "dumps-" + job_id)
        sysfs = os.path.join(tmp, "sysfs-" + job_id)  # IB ports: the IB panels get data too
        env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_KEEP_SHM="1",
                   COLLSCOPE_HEALTH_MS="100", COLLSCOPE_SIM_SYSFS=sysfs,
                   COLLSCOPE_SYSFS_ROOT=os.path.join(sysfs, "%h"),
                   COLLSCOPE_SIM_FAULTS="slow:rank=%d,us=3000;throttle:rank=%d,reason=thermal,pct=400,seq=30,until=35"
                                        % (slow, blip))
        t0 = time.time()
        job = subprocess.run([a.cli, "run", "-n", "8", "--hosts", HOSTS, "--sim", "--job-id", job_id,
                              "--no-kill-on-fail", "--", os.path.join(a.apps, "dp_train"), "--steps", "40", "--size",
                              "256K"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        assert job.returncode == 0, job.stdout
        print("job %s (rank %d slowed by 3 ms, rank %d for 5 collectives): %.1f s" % (job_id, slow, blip,
                                                                                     time.time() - t0))
    procs = []
    try:
        ex, port = start_exporter(a.cli, shm, tmp)
        procs.append(ex)
        pr, api, query = start_prometheus(prometheus, tmp, port, [ex])
        procs.append(pr)
        # the detectors have run over both jobs once each job's straggler is flagged
        want = {j[:2] for j in STRAGGLER_JOBS}

        def flagged():
            got = {(m["metric"]["job"], int(m["metric"]["rank"])) for m in query("collscope_straggler == 1") or []}
            return got if want <= got else None
        print("flagged by the live detector: %s" % sorted(wait_for("both jobs' straggler in Prometheus", flagged, 90,
                                                                   [pr, ex])))
        time.sleep(3)  # a few more scrapes: every series has samples in the range vectors
        for e in strag_exprs:
            for job_id, slow, _ in STRAGGLER_JOBS:
                for sel in (job_id, ".*"):  # the job picked in Grafana, or All
                    res = [x for x in query(grafana_expr(e, sel)) or [] if x["metric"].get("job") == job_id]
                    assert res, "%s: no series for %s" % (e, job_id)
                    ranked = sorted(((float(x["value"][1]), x["metric"].get("rank")) for x in res), reverse=True)
                    print("panel %r, job %s ($job=%s): %s" % (title, job_id, sel, ", ".join(
                        "r%s %.3f ms" % (r, v * 1e3) for v, r in ranked)))
                    assert ranked[0][1] == str(slow), "%s: the top series of %s is rank %s, not the straggler rank %d" % (
                        e, job_id, ranked[0][1], slow)
        for t, exprs in panels:
            for e in exprs:
                res = query(grafana_expr(e, ".*")) or []
                nojob = [x["metric"] for x in res if "job" not in x["metric"]]
                print("panel %r: %d series%s" % (t, len(res), "" if res else " (no data here: checked statically)"))
                assert not nojob, "panel %r: %s gives series without a job label: %s" % (t, e, nojob[:3])
    finally:
        for p in reversed(procs):
            p.stop()


LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
IDENT = ("gpu", "UUID", "pci_bus_id")


def rank_series(text):
    """[(name, labels)] of the exposition's samples that belong to a rank"""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or "{" not in line:
            continue
        name, rest = line.split("{", 1)
        labels = dict(LABEL.findall(rest.rsplit("}", 1)[0]))
        if "rank" in labels:
            out.append((name, labels))
    return out


def ident_phase(a, tmp, health_ms):
    """one live job scraped while it runs: {(host, rank): (UUID, pci_bus_id)}, dump headers, figures"""
    base = os.path.join(tmp, "health" + health_ms)
    shm, dumps = os.path.join(base, "shm"), os.path.join(base, "dumps")
    os.makedirs(shm)
    env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_KEEP_SHM="1",
               COLLSCOPE_HEALTH_MS=health_ms)
    ex, port = start_exporter(a.cli, shm, base, ["--interval", "0.05"])
    url = "http://127.0.0.1:%d/metrics" % port
    job = Proc([a.cli, "run", "-n", "4", "--hosts", "simhost[1-2]", "--sim", "--", os.path.join(a.apps, "dp_train"),
                "--steps", "60", "--size", "64K", "--compute-us", "3000"], os.path.join(base, "job.log"), env=env)
    seen = {}  # series (labels but the GPU's) -> (gpu, UUID, pci_bus_id) once its device is known
    scrapes = known = unknown = 0
    try:
        while True:
            running = job.alive()
            text = http_get(url)[1]
            scrapes += 1
            for name, l in rank_series(text):
                if l["gpu"] == "-1":  # no communicator yet: no device, no identity
                    unknown += 1
                    continue
                known += 1
                assert l.get("UUID", "").startswith("GPU-") and l.get("pci_bus_id"), \
                    "scrape %d: %s of rank %s has its device but not its GPU's identity: %s" % (scrapes, name, l["rank"], l)
                key = (name,) + tuple(sorted((k, v) for k, v in l.items() if k not in IDENT))
                got = tuple(l[k] for k in IDENT)
                assert seen.setdefault(key, got) == got, "scrape %d: %s changed its labels %s -> %s" % (
                    scrapes, key, seen[key], got)
            if not running:
                break
            time.sleep(0.01)
    finally:
        job.stop()
        ex.stop()
    assert job.p.returncode == 0, job.text()
    assert "differs from the CUDA driver's" not in job.text(), job.text()
    idents = {}
    for key, (gpu, uuid, bus) in seen.items():
        d = dict(key[1:])
        assert idents.setdefault((d["host"], d["rank"]), (uuid, bus)) == (uuid, bus), (key, idents)
    assert len(idents) == 4 and len(set(idents.values())) == 4, idents
    print("COLLSCOPE_HEALTH_MS=%s: %d scrapes while the job ran, %d samples with the device known (all with "
          "UUID and pci_bus_id, %d series, none changed), %d before it" % (health_ms, scrapes, known, len(seen), unknown))
    return idents, dump_headers(dumps)


def case_ident(a, tmp):
    off, hdr_off = ident_phase(a, tmp, "0")
    on, hdr_on = ident_phase(a, tmp, "100")
    assert off == on, (off, on)  # the same simulated GPUs: the same identity with or without NVML
    for (host, rank), (uuid, bus) in on.items():
        h = hdr_on[int(rank)]
        assert h["host"] == host, (h["host"], host)
        # NVML's (the sampler's dump header) and the CUDA driver's (the ring header) agree
        assert uuid == h["gpu_uuid"] and bus == nvml_bus(h["gpu_pci_bus_id"]), (uuid, bus, h)
        assert bus == nvml_bus(hdr_off[int(rank)]["pci_bus_id"]), (bus, hdr_off[int(rank)])
    print("identity of each rank's GPU (driver, as labels) == NVML's (dump header): %s" % sorted(on.items()))


def promql_exprs(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                out.append(v)
            else:
                promql_exprs(v, out)
    elif isinstance(node, list):
        for v in node:
            promql_exprs(v, out)
    return out


def exporter_metric_names(cli, tmp):
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty, exist_ok=True)
    p = subprocess.run([cli, "exporter", "--once", "--shm-dir", empty], stdout=subprocess.PIPE, text=True)
    assert p.returncode == 0
    names = set()
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", p.stdout, re.M):
        n, t = m.groups()
        names |= {n + s for s in ("_bucket", "_sum", "_count")} if t == "histogram" else {n}
    assert len(names) > 20, names
    return names


AGGREGATION = re.compile(r"\b(sum|min|max|avg|group|stddev|stdvar|count|count_values|bottomk|topk|quantile)\s*"
                         r"(?:(by|without)\s*\(([^)]*)\)\s*)?\(")
GROUPING_AFTER = re.compile(r"\s*(by|without)\s*\(([^)]*)\)")


def aggregations_without_job(expr):
    """the aggregations of a PromQL expression whose result has no job label: no grouping,
    `by (...)` without job, or `without (..., job, ...)`; the grouping may come before or
    after the argument"""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values are not operators
    out = []
    for m in AGGREGATION.finditer(e):
        kind, labels = m.group(2), m.group(3)
        if not kind:  # `sum(x) by (job)`: after the argument's closing parenthesis
            depth, i = 1, m.end()
            while i < len(e) and depth:
                depth += {"(": 1, ")": -1}.get(e[i], 0)
                i += 1
            after = GROUPING_AFTER.match(e, i)
            if after:
                kind, labels = after.groups()
        names = {x.strip() for x in (labels or "").split(",")}
        if kind == "by" and "job" in names or kind == "without" and "job" not in names:
            continue
        out.append(m.group(0).rstrip("(").strip() or m.group(1))
    return out


def case_dashboard(a, tmp):
    promtool = need("promtool")
    dash = json.load(open(a.dashboard))
    exprs = promql_exprs(dash, [])
    assert len(exprs) >= 6, exprs
    names = exporter_metric_names(a.cli, tmp)
    rules = os.path.join(tmp, "dashboard-rules.yml")
    with open(rules, "w") as f:
        f.write("groups:\n  - name: dashboard\n    rules:\n")
        for i, e in enumerate(exprs):
            e = e.replace("$__rate_interval", "1m").replace("$__interval", "1m")
            e = re.sub(r"\$\{?(\w+)\}?", "x", e)  # template variables: a plain label value
            f.write("      - record: dashboard:expr%d\n        expr: %s\n" % (i, json.dumps(e)))
    p = subprocess.run([promtool, "check", "rules", rules], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0, p.stdout + open(rules).read()
    used = set()
    for e in exprs:
        e = re.sub(r'"[^"]*"', '""', e)  # label values are not names
        used |= set(re.findall(r"\bcollscope_\w+", e))
    unknown = used - names
    assert not unknown, "the dashboard names metrics the exporter does not produce: %s" % sorted(unknown)
    lost = [(e, agg) for e in exprs for agg in aggregations_without_job(e)]
    assert not lost, "aggregations that drop the job label (they sum or compare across jobs):\n" + "\n".join(
        "  %s   in   %s" % (agg, e) for e, agg in lost)
    print("dashboard: %d expressions parse; metrics used: %s" % (len(exprs), sorted(used)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps")
    ap.add_argument("--dashboard")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-exporter-")
    try:
        globals()["case_" + a.case](a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS", a.case)


if __name__ == "__main__":
    main()
