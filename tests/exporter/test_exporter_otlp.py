#!/usr/bin/env python3
"""tests/exporter/test_exporter_otlp.py --cli COLLSCOPE --apps DIR

`collscope exporter --otlp`: the exporter's metrics pushed over OTLP/HTTP to a receiver on
127.0.0.1 (tests/exporter/otlp_receiver.mjs) that decodes them with OpenTelemetry's own OTLP
definitions. On the rings of a seeded 8-rank dp_train job with rank 5 slowed (modeled clock):
  - `--once --otlp URL`: every sample of the exposition printed on stdout is in the pushed
    request, with the same labels (as string attributes) and value: a gauge as a Gauge point,
    a counter as a cumulative monotonic Sum named without _total, a histogram as a cumulative
    Histogram (per-bucket counts, the finite bounds, count and sum); nothing else is in it;
    rank 5's straggler gauge is 1;
  - a collector that is not there: --once exits 1 with one line naming the URL;
  - the daemon with --listen none --otlp-interval 1 pushes again and again (3 requests).
Every process it starts is stopped by its pid."""
import argparse, json, os, re, signal, socket, subprocess, sys, tempfile, time

MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1", "COLLSCOPE_KEEP_SHM": "1",
         "COLLSCOPE_SIM_FAULTS": "link:a=*,b=*,us=300;slow:rank=5,pct=20"}
# the rings' times are the modeled clock's (its epoch is 2026-01-01): a grace period that keeps
# the exited ranks' rings in view
GRACE = "100000000"
HERE = os.path.dirname(os.path.abspath(__file__))


def parse_exposition(text):
    """{(family, kind)}: [(sample name, {labels}, value)] of a Prometheus text exposition"""
    fams, kind, cur = {}, {}, None
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            cur = m.group(1)
            kind[cur] = m.group(2)
            fams[cur] = []
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$", line)
        assert m, line
        labels = dict((k, v.encode().decode("unicode_escape"))
                      for k, v in re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        v = m.group(3)
        fams[cur].append((m.group(1), labels, float("inf") if v == "+Inf" else float(v)))
    return fams, kind


def attrs(point):
    return {a["key"]: a["value"]["stringValue"] for a in point.get("attributes", [])}


def check_request(req, text):
    fams, kind = parse_exposition(text)
    rm = req["resourceMetrics"]
    assert len(rm) == 1, rm
    res = attrs(rm[0]["resource"])
    assert res.get("service.name") == "collscope" and res.get("host.name"), res
    metrics = {m["name"]: m for sm in rm[0]["scopeMetrics"] for m in sm["metrics"]}
    seen, points = set(), 0
    for fam, samples in fams.items():
        if not samples:
            continue
        k = kind[fam]
        name = fam[:-6] if k == "counter" and fam.endswith("_total") else fam
        assert name in metrics, "family %s not pushed" % name
        m = metrics[name]
        seen.add(name)
        if k == "gauge":
            dps = m["gauge"]["dataPoints"]
            want = sorted((json.dumps(l, sort_keys=True), v) for _, l, v in samples)
            got = sorted((json.dumps(attrs(p), sort_keys=True), p["asDouble"]) for p in dps)
            assert want == got, (name, want[:3], got[:3])
        elif k == "counter":
            s = m["sum"]
            assert s["isMonotonic"] is True and s["aggregationTemporality"] == "AGGREGATION_TEMPORALITY_CUMULATIVE", s
            want = sorted((json.dumps(l, sort_keys=True), v) for _, l, v in samples)
            got = sorted((json.dumps(attrs(p), sort_keys=True), p.get("asDouble", 0)) for p in s["dataPoints"])
            assert want == got, (name, want[:3], got[:3])
            assert all(int(p["startTimeUnixNano"]) <= int(p["timeUnixNano"]) for p in s["dataPoints"]), name
        else:
            h = m["histogram"]
            assert h["aggregationTemporality"] == "AGGREGATION_TEMPORALITY_CUMULATIVE", h
            want = {}
            for sname, l, v in samples:
                key = json.dumps({a: b for a, b in l.items() if a != "le"}, sort_keys=True)
                w = want.setdefault(key, {"le": [], "cum": []})
                if sname.endswith("_bucket"):
                    w["le"].append(float(l["le"]) if l["le"] != "+Inf" else float("inf"))
                    w["cum"].append(int(v))
                elif sname.endswith("_sum"):
                    w["sum"] = v
                else:
                    w["count"] = int(v)
            assert len(h["dataPoints"]) == len(want), (name, len(h["dataPoints"]), len(want))
            for p in h["dataPoints"]:
                w = want[json.dumps(attrs(p), sort_keys=True)]
                per = [c - (w["cum"][i - 1] if i else 0) for i, c in enumerate(w["cum"])]
                assert [int(x) for x in p["bucketCounts"]] == per, (name, p["bucketCounts"], per)
                assert p["explicitBounds"] == [x for x in w["le"] if x != float("inf")], (name, p["explicitBounds"])
                assert int(p["count"]) == w["count"] and abs(p["sum"] - w["sum"]) <= 1e-9 * max(1, abs(w["sum"])), name
        points += len(samples)
    assert seen == set(metrics), "pushed but not in the exposition: %s" % sorted(set(metrics) - seen)
    return len(seen), points


class Receiver:
    def __init__(self, tmp):
        self.out = os.path.join(tmp, "otlp.jsonl")
        open(self.out, "w").close()
        self.p = subprocess.Popen(["node", os.path.join(HERE, "otlp_receiver.mjs"), self.out],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.p.stdout.readline()
        m = re.match(r"port (\d+)", line)
        if not m:
            self.stop()
            sys.exit("FAIL: the OTLP receiver did not start: %s%s" % (line, self.p.stdout.read()))
        self.url = "http://127.0.0.1:%s/v1/metrics" % m.group(1)

    def requests(self):
        return [json.loads(l) for l in open(self.out) if l.strip()]

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-otlp-")
    shm = os.path.join(tmp, "shm")
    os.makedirs(shm)
    env = dict(os.environ, COLLSCOPE_DIR=os.path.join(tmp, "dumps"), COLLSCOPE_SHM_DIR=shm, **MODEL)
    p = subprocess.run([a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--",
                        os.path.join(a.apps, "dp_train"), "--steps", "20", "--compute-us", "2000"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:]
    rx = Receiver(tmp)
    try:
        ex = subprocess.run([a.cli, "exporter", "--once", "--shm-dir", shm, "--grace", GRACE, "--otlp", rx.url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert ex.returncode == 0, ex.stderr
        reqs = rx.requests()
        assert len(reqs) == 1 and "error" not in reqs[0], reqs[:1]
        fams, points = check_request(reqs[0], ex.stdout)
        strag = [pt for m in reqs[0]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
                 if m["name"] == "collscope_straggler" for pt in m["gauge"]["dataPoints"] if pt["asDouble"] == 1]
        assert [attrs(pt)["rank"] for pt in strag] == ["5"], [attrs(pt) for pt in strag]
        print("--once: %d families, %d samples of the exposition pushed as they are; straggler rank 5" % (fams, points))

        # a collector that is not there
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        dead = "http://127.0.0.1:%d/v1/metrics" % s.getsockname()[1]
        s.close()
        ex = subprocess.run([a.cli, "exporter", "--once", "--shm-dir", shm, "--grace", GRACE, "--otlp", dead],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        lines = [l for l in ex.stderr.splitlines() if "OTLP" in l]
        assert ex.returncode == 1 and len(lines) == 1 and dead in lines[0], (ex.returncode, ex.stderr)
        print("no collector: exit 1, %s" % lines[0])

        # the daemon pushes every --otlp-interval
        d = subprocess.Popen([a.cli, "exporter", "--listen", "none", "--shm-dir", shm, "--grace", GRACE, "--interval", "0.2",
                              "--otlp", rx.url, "--otlp-interval", "1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        try:
            t0 = time.time()
            while len(rx.requests()) < 4 and time.time() - t0 < 60 and d.poll() is None:
                time.sleep(0.2)
        finally:
            d.send_signal(signal.SIGTERM)
            err = d.communicate(timeout=30)[1]
        reqs = rx.requests()[1:]
        assert len(reqs) >= 3 and all("error" not in r for r in reqs), (len(reqs), err)
        print("daemon: %d pushes decoded" % len(reqs))
    finally:
        rx.stop()


if __name__ == "__main__":
    main()
