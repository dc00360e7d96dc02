#!/usr/bin/env python3
"""tests/health/test_health_sim.py CASE --cli COLLSCOPE --apps DIR

GPU and network health end to end: 8 ranks of dp_train on 4 simulated hosts (collscope run
--sim, the shim preloaded, the simulated libnvidia-ml.so.1 and sysfs trees), health faults
from COLLSCOPE_SIM_FAULTS / COLLSCOPE_SIM_GPU_MODEL, then `collscope report` (JSON and text).
Cases: throttle, throttle_span (causes from the flagged span's samples), online (the online
exchange's log line names the cause), model (also report --by-model), half (4 ranks, half H100
and half A100: no majority model), nvlink, ecc_xid, ib, clean,
nvml_absent, nvml_fail (nvmlInit_v2 fails), nvml_all_fail (every device function fails),
field_fail (one function fails), demo (collscope demo's health step). throttle, throttle_span,
online, model, half, nvlink, ecc_xid and clean run on the modeled clock (COLLSCOPE_SIM_CLOCK=model)
with exact figures."""
import sys, glob, html.parser, json, os, subprocess

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import case_main  # noqa: E402  (tests/case_main.py: the shared command line)

HOSTS = "simhost[1-4]"
HOST_OF = {r: "simhost%d" % (r // 2 + 1) for r in range(8)}
QUIET = "link:a=*,b=*,us=300"          # the simulator, not the host's CPU, sets arrival order
QUIET_ARGS = ("--compute-us", "2000")


def run_job(cli, apps, tmp, faults="", steps=30, env_extra=None, args=QUIET_ARGS, ranks=8, hosts=HOSTS):
    out = os.path.join(tmp, "dumps")
    sysfs = os.path.join(tmp, "sysfs")
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_FAULTS=faults,
               COLLSCOPE_HEALTH_MS="100", COLLSCOPE_SIM_HEALTH_RAMP_MS="300", COLLSCOPE_SIM_SYSFS=sysfs,
               COLLSCOPE_SYSFS_ROOT=os.path.join(sysfs, "%h"), COLLSCOPE_LOG="info")
    env.update(env_extra or {})
    cmd = [cli, "run", "-n", str(ranks), "--hosts", hosts, "--sim", "--no-kill-on-fail", "--",
           os.path.join(apps, "dp_train"), "--steps", str(steps), "--size", "256K"] + list(args)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    return p, out


def report(cli, d):
    p = subprocess.run([cli, "report", d, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    t = subprocess.run([cli, "report", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert t.returncode == 0, t.stderr
    return json.loads(p.stdout), t.stdout


def causes(r, rank):
    return {c["kind"] for s in r["stragglers"] if s["rank"] == rank for c in s["causes"]}


def straggler_line(txt, rank):
    sec = txt.split("# Stragglers")[1].split("\n# Hangs")[0]
    return [l for l in sec.splitlines() if l.split()[:1] == [str(rank)]]


def health_rank(r, rank):
    return [x for x in r["health"]["ranks"] if x["rank"] == rank][0]


def top_flags(cli, shm):
    p = subprocess.run([cli, "top", "--once", "--json", "--shm-dir", shm], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    assert p.returncode == 0, p.stderr
    return {x["rank"]: x["flags"] for x in json.loads(p.stdout)["processes"]}


class DataAttrs(html.parser.HTMLParser):
    """Every element's data-* attributes of an HTML page (report --html), as a list of dicts."""

    def __init__(self):
        super().__init__()
        self.els = []

    def handle_starttag(self, tag, attrs):
        d = {k: v for k, v in attrs if k.startswith("data-")}
        if d:
            self.els.append(d)


def html_attrs(cli, d, *extra):
    out = os.path.join(d, "page.html")
    p = subprocess.run([cli, "report", d, "--html", "-o", out] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    parser = DataAttrs()
    parser.feed(open(out).read())
    return parser.els


# The modeled clock (docs/simulator.md), every op timed by CUDA events: GPU durations, and so
# the straggler verdict, are exact under any load. The health sampler paces and stamps its
# samples on CLOCK_REALTIME, which on the modeled clock is the job's timeline as collscope's
# harvest thread sees it (the end of the last GPU work it saw done), and the simulated NVML
# answers as of the caller's modeled time: which samples a rank takes, when, and what they hold
# follow from the job alone (docs/health.md "Sampling"). The cases that judge timing or causes
# run on it with exact figures (a sample per 100 ms of the job's modeled time).
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1"}
THROTTLE_FIRST_FLAG = 15  # rank 5, throttled 150% from seq 0 (its compute and collectives): first flagged at instance 15
SIM_EPOCH_NS = 1767225600000000000  # the modeled clock's CLOCK_REALTIME origin (tests/sim/simcuda.h)
HALF_FIRST_FLAG = 15      # the A100 ranks (speed 0.6) of `half`: first flagged at instance 15


def case_throttle(cli, apps, tmp):
    p, d = run_job(cli, apps, tmp, QUIET + ";throttle:rank=5,reason=power,pct=150",
                   env_extra=dict(MODEL, COLLSCOPE_KEEP_SHM="1"))
    assert p.returncode == 0, p.stdout[-3000:]
    r, txt = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1))
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    assert [x["rank"] for x in s] == [5], r["stragglers"]
    assert s[0]["first_flag_instance"] == THROTTLE_FIRST_FLAG, (s[0]["first_flag_instance"], THROTTLE_FIRST_FLAG)
    assert causes(r, 5) == {"power_cap"}, s
    assert health_rank(r, 5)["throttle_share"]["power_cap"] >= 0.9
    assert all(health_rank(r, k)["throttle_share"]["power_cap"] == 0 for k in range(8) if k != 5)
    line = straggler_line(txt, 5)
    assert line and line[0].split()[-1] == "power_cap", line
    assert r["health"]["unexplained"] == [], r["health"]["unexplained"]
    fl = top_flags(cli, tmp)   # collscope top: the health flag from the stats ring
    print(fl)
    assert len(fl) == 8 and all(("THROTTLED:POWER" in f) == (k == 5) for k, f in fl.items()), fl
    assert not any(x in f for f in fl.values() for x in ("NVLINK", "ECC", "XID", "IB", "THERMAL")), fl
    # report --html: the health chart's row of rank 5 has power-capped slices, no other row has any
    rows = {int(e["data-rank"]): int(e["data-power_cap"]) for e in html_attrs(cli, d) if "data-power_cap" in e}
    print(rows)
    assert sorted(rows) == list(range(8)) and rows[5] > 0 and all(v == 0 for k, v in rows.items() if k != 5), rows


# throttle_span: rank 5 is flagged from seq 131 to its last op (179), 132nd instance; of its 18
# samples (the baseline at the job's start, then one per 100 ms of the job's time, which the
# throttle's compute slowdown lengthens) 5 are power capped (up to seq 75) and 10 thermal (from
# seq 120), and those of the flagged span all thermal
SPAN = {"first_flag_seq": 131, "last_flag_seq": 179, "first_flag_instance": 132, "samples": 18, "power_cap": 5,
        "thermal": 10}


def case_throttle_span(cli, apps, tmp):
    # rank 5 is power capped early (no slowdown: pct=0) and slowed by heat late: the causes come
    # from the samples of the span it was flagged, so the early power cap is no cause
    p, d = run_job(cli, apps, tmp, QUIET + ";throttle:rank=5,reason=power,pct=0,until=75;"
                   "throttle:rank=5,reason=thermal,pct=150,seq=120", steps=60, env_extra=MODEL)
    assert p.returncode == 0, p.stdout[-3000:]
    r, txt = report(cli, d)
    h5 = health_rank(r, 5)
    print(json.dumps(r["stragglers"], indent=1), h5["samples"], json.dumps(h5["throttle_share"]))
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    assert [x["rank"] for x in s] == [5], r["stragglers"]
    got = {k: s[0][k] for k in ("first_flag_seq", "last_flag_seq", "first_flag_instance")}
    got.update(samples=h5["samples"], power_cap=round(h5["throttle_share"]["power_cap"] * h5["samples"]),
               thermal=round(h5["throttle_share"]["thermal"] * h5["samples"]))
    assert got == SPAN, (got, SPAN)
    assert s[0]["causes"] == [{"kind": "thermal", "detail": "thermal slowdown in 100% of samples (up to 91 C)"}], s
    assert straggler_line(txt, 5)[0].split()[-1] == "thermal"
    # each of rank 5's samples holds what its GPU reported at the sample's own stamp: power
    # capped while its last op ended by then is before seq 75, thermal from seq 120 on
    lines = [json.loads(l) for f in glob.glob(os.path.join(d, "*.jsonl")) for l in open(f)]
    ends = sorted((x["end_ns"], x["seq"]) for x in lines if x["type"] == "op" and x["rank"] == 5)
    for h in (x for x in lines if x["type"] == "health" and x["rank"] == 5):
        seq = max([q for e, q in ends if e <= h["t_ns"] + 1000], default=-1)   # op ends: +-ns of the anchor
        want = (4 if seq < 75 else 0) | (0x60 if seq >= 120 else 0)
        assert h["gpu"]["reasons"] == want, (h["t_ns"], seq, h["gpu"]["reasons"], want)
    assert all(health_rank(r, k)["throttle_share"] == {"power_cap": 0, "thermal": 0, "hw_slowdown": 0}
               for k in range(8) if k != 5), r["health"]["ranks"]


ONLINE_FINDING = ("straggler rank 5 (simhost3) on comm {comm}: last in 100% of 15 sampled instances, lateness 9612 us "
                  "(median duration 14021 us), kind compute, cause=power_cap")


def case_online(cli, apps, tmp):
    # the online exchange: rank 0 logs the straggler during the run, with the cause its own
    # health samples show (sent in its report): exactly one finding
    # 120 steps: the exchange polls on the wall clock and its communicator is set up on its own
    # thread, while a modeled job runs fast; this many keep its finding clear of the job's end
    p, d = run_job(cli, apps, tmp, QUIET + ";throttle:rank=5,reason=power,pct=150", steps=120,
                   env_extra=dict(MODEL, COLLSCOPE_ONLINE_EVERY="16", COLLSCOPE_LOG="warn"))
    assert p.returncode == 0, p.stdout[-3000:]
    st = [l.split("online: ", 1)[1] for l in p.stdout.splitlines() if "online: straggler" in l]
    print("\n".join(st))
    assert len(st) == 1, p.stdout[-3000:]
    comm = st[0].split(" on comm ")[1].split(":")[0]
    assert st[0] == ONLINE_FINDING.format(comm=comm), (st[0], ONLINE_FINDING)


def case_demo(cli, apps, tmp):
    # collscope demo's health step: the A100 host's ranks are explained by their GPU model,
    # rank 1 by its power cap
    p = subprocess.run([cli, "demo", "--steps", "2", "--keep", os.path.join(tmp, "demo")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=240)
    assert p.returncode == 0, p.stdout[-3000:]
    sec = p.stdout.split("collscope demo: GPU health")[1].split("collscope demo: balance")[0]
    print(sec)
    lines = [l.strip() for l in sec.splitlines() if l.strip().startswith("rank ")]
    assert any(l.startswith("rank 1 (simhost1): power_cap:") for l in lines), lines
    model = [l for l in lines if l.startswith(("rank 6 (simhost4)", "rank 7 (simhost4)"))]
    assert model and all(": gpu_model: NVIDIA A100" in l for l in model), lines
    assert len(lines) == 1 + len(model), lines


MODEL_FIRST_FLAG = 15      # the A100 ranks (speed 0.4) of `model`: first flagged at instance 15
# their samples (per 100 ms of the job's time) and median SM clock: H100 ranks, A100 ranks
MODEL_SAMPLES = {"NVIDIA H100 80GB HBM3": (14, 1980), "NVIDIA A100-SXM4-80GB": (15, 1410)}


def case_model(cli, apps, tmp):
    p, d = run_job(cli, apps, tmp, QUIET, env_extra=dict(MODEL, **{
        "COLLSCOPE_SIM_GPU_MODEL": "simhost[1-3]=NVIDIA H100 80GB HBM3;simhost4=NVIDIA A100-SXM4-80GB,speed=0.4"}))
    assert p.returncode == 0, p.stdout[-3000:]
    r, txt = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1))
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    assert [x["rank"] for x in s] == [6, 7], r["stragglers"]
    assert [x["first_flag_instance"] for x in s] == [MODEL_FIRST_FLAG] * 2, (s, MODEL_FIRST_FLAG)
    for x in s:
        assert x["causes"] == [{"kind": "gpu_model", "detail": "NVIDIA A100-SXM4-80GB, an older architecture than the "
                                "job's NVIDIA H100 80GB HBM3 (6 of 8 ranks)"}], x
    assert health_rank(r, 6)["gpu_name"] == "NVIDIA A100-SXM4-80GB"
    assert health_rank(r, 0)["gpu_name"] == "NVIDIA H100 80GB HBM3"
    got = {k: (health_rank(r, k)["samples"], health_rank(r, k)["sm_mhz_median"]) for k in range(8)}
    print(got)
    assert all(got[k] == MODEL_SAMPLES[health_rank(r, k)["gpu_name"]] for k in range(8)), (got, MODEL_SAMPLES)
    assert "gpu_model" in straggler_line(txt, s[0]["rank"])[0]
    # report --by-model: the ranks and ops tables split by the dump headers' GPU model
    p = subprocess.run([cli, "report", d, "--json", "--by-model"], stdout=subprocess.PIPE, text=True)
    bm = json.loads(p.stdout)
    a100, h100 = "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"
    assert [(x["rank"], x["gpu_model"]) for x in bm["ranks"]] == [(6, a100), (7, a100)] + [(k, h100) for k in range(6)]
    rows = {}
    for x in bm["ops"]:
        rows.setdefault((x["op"], x["bucket_lo"]), {})[x["gpu_model"]] = x
    whole = {(x["op"], x["bucket_lo"]): x for x in r["ops"]}
    assert set(rows) == set(whole) and all(set(v) == {a100, h100} for v in rows.values()), rows
    for key, v in rows.items():
        assert v[a100]["count"] * 3 == v[h100]["count"] and v[a100]["count"] + v[h100]["count"] == whole[key]["count"]
        # one communicator over both models: the A100 ranks arrive last, so their own collective
        # time is the undisturbed one and the H100 ranks' holds the wait for them: the A100's
        # 2000 us of compute per op at speed 0.4 take 5000 us, exactly 3000 us more
        print(key, v[a100]["time_us"]["p50"], v[h100]["time_us"]["p50"])
        assert round(v[h100]["time_us"]["p50"] - v[a100]["time_us"]["p50"], 3) == 3000, v
    t = subprocess.run([cli, "report", d, "--by-model"], stdout=subprocess.PIPE, text=True).stdout
    assert "# gpu %s: 2 ranks" % a100 in t and "# gpu %s: 6 ranks" % h100 in t, t
    ops_text = t.split("# Operations")[1].split("\n# Ranks")[0]
    assert sum(1 for l in ops_text.splitlines() if l.endswith(a100)) == len(rows), ops_text
    # report --html --by-model: one bus bandwidth line per GPU model
    series = {e.get("data-gpu-model") for e in html_attrs(cli, d, "--by-model") if "data-series" in e}
    assert series == {a100, h100}, series
    assert not any("data-gpu-model" in e for e in html_attrs(cli, d)), "a model series without --by-model"


def case_half(cli, apps, tmp):
    # half H100, half A100 (4 ranks on 2 hosts): no model is the job's majority. The report
    # (text, JSON, HTML) reads the set; the A100 ranks' gpu_model cause names the newer model
    # with its count and does not call it the job's
    h100, a100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
    p, d = run_job(cli, apps, tmp, QUIET, ranks=4, hosts="simh[1-2]", env_extra=dict(MODEL, **{
        "COLLSCOPE_SIM_GPU_MODEL": "simh1=%s;simh2=%s,speed=0.6" % (h100, a100)}))
    assert p.returncode == 0, p.stdout[-3000:]
    r, txt = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1))
    assert [health_rank(r, k)["gpu_name"] for k in range(4)] == [h100, h100, a100, a100]
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    assert s and all(x["rank"] in (2, 3) for x in s), r["stragglers"]
    assert sorted(x["rank"] for x in s) == [2, 3], s  # the same GPUs, the same durations
    assert [x["first_flag_instance"] for x in s] == [HALF_FIRST_FLAG] * 2, (s, HALF_FIRST_FLAG)
    for x in s:
        assert causes(r, x["rank"]) == {"gpu_model"}, x
        detail = [c for c in x["causes"] if c["kind"] == "gpu_model"][0]["detail"]
        assert detail == "%s, an older architecture than %s, which 2 of 4 ranks run" % (a100, h100), detail
        assert "gpu_model" in straggler_line(txt, x["rank"])[0]
    assert html_attrs(cli, d) is not None


def case_nvlink(cli, apps, tmp):
    # NVLink errors on rank 3 link 2 while rank 3 is also slowed: the cause names them; the
    # errors of rank 1 (not slow) are listed as errors with no finding
    p, d = run_job(cli, apps, tmp, QUIET + ";slow:rank=3,pct=150;nvlink:rank=3,link=2,crc=40,replay=7,recovery=1;"
                   "nvlink:rank=1,link=5,crc=9,replay=0,recovery=0", env_extra=dict(MODEL, COLLSCOPE_KEEP_SHM="1"))
    assert p.returncode == 0, p.stdout[-3000:]
    r, txt = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1), json.dumps(r["health"]["unexplained"]))
    assert causes(r, 3) == {"nvlink_errors"}, r["stragglers"]
    assert [(x["rank"], x["first_flag_instance"]) for x in r["stragglers"]] == [(3, 15)], r["stragglers"]
    h3 = health_rank(r, 3)["nvlink"]
    assert h3 == [{"link": 2, "crc": 40, "replay": 7, "recovery": 1}], h3
    un = r["health"]["unexplained"]
    assert [(u["rank"], u["host"]) for u in un] == [(1, "simhost1")], un
    assert "NVLink 5 crc 9" in un[0]["errors"], un
    assert "errors with no finding" in txt and "NVLink 5 crc 9" in txt
    fl = top_flags(cli, tmp)
    assert all(("NVLINK" in f) == (k in (1, 3)) for k, f in fl.items()), fl


def case_ecc_xid(cli, apps, tmp):
    # no straggler: the GPU errors are listed with no finding; XID with its time
    p, d = run_job(cli, apps, tmp, "ecc:rank=2,corrected=5,uncorrected=1,seq=30;xid:rank=2,code=79,seq=60;"
                   "remap:rank=2,pending=1", env_extra=MODEL)
    assert p.returncode == 0, p.stdout[-3000:]
    r, txt = report(cli, d)
    h = health_rank(r, 2)
    print(json.dumps(h))
    assert h["ecc_corrected"] == 5 and h["ecc_uncorrected"] == 1 and h["remap_pending"] is True, h
    # on the modeled clock: the first sample after rank 2's seq 60 ended, 200.522174 ms into the
    # job, of its 4 samples
    assert h["xid"] == [{"code": 79, "t_ns": SIM_EPOCH_NS + 200522174}] and h["samples"] == 4, h
    assert all(health_rank(r, k)["ecc_corrected"] == 0 and health_rank(r, k)["xid"] == [] for k in range(8) if k != 2)
    un = r["health"]["unexplained"]
    assert [u["rank"] for u in un] == [2] and "XID 79" in un[0]["errors"], un


def case_ib(cli, apps, tmp):
    # a slow host pair whose simhost2 end shows symbol errors and link downs
    p, d = run_job(cli, apps, tmp, "link:a=simhost1,b=simhost2,us=3000;"
                   "ib:host=simhost2,dev=mlx5_1,port=1,symbol_error=40,link_downed=2", steps=10, args=())
    assert p.returncode == 0, p.stdout[-3000:]
    r, txt = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1))
    links = [x for x in r["stragglers"] if x["kind"] == "link"]
    assert len(links) == 1, r["stragglers"]
    kinds = {c["kind"] for c in links[0]["causes"]}
    assert kinds == {"ib_errors"}, links
    det = [c["detail"] for c in links[0]["causes"]][0]
    assert "simhost2 mlx5_1/1" in det and "symbol_error 40" in det and "link_downed 2" in det, det
    hosts = {h["host"]: h["ports"] for h in r["health"]["hosts"]}
    assert sorted(hosts) == ["simhost1", "simhost2", "simhost3", "simhost4"], hosts
    p21 = [q for q in hosts["simhost2"] if q["dev"] == "mlx5_1"][0]
    assert p21["symbol_error"] == 40 and p21["link_downed"] == 2 and p21["state"] == "ACTIVE", p21
    assert all(q["symbol_error"] == 0 for h, ps in hosts.items() for q in ps if h != "simhost2")
    assert r["health"]["unexplained"] == [], r["health"]["unexplained"]


def case_clean(cli, apps, tmp):
    p, d = run_job(cli, apps, tmp, QUIET, env_extra=MODEL)
    assert p.returncode == 0, p.stdout[-3000:]
    r, txt = report(cli, d)
    assert r["stragglers"] == [], r["stragglers"]
    assert r["health"]["unexplained"] == [], r["health"]["unexplained"]
    assert len(r["health"]["ranks"]) == 8 and all(x["samples"] >= 2 for x in r["health"]["ranks"]), r["health"]["ranks"]
    assert len(r["health"]["hosts"]) == 4
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        hdr = json.loads(open(f).readline())
        assert hdr["gpu_name"] == "NVIDIA H100 80GB HBM3" and hdr["gpu_uuid"].startswith("GPU-"), hdr
        assert hdr["gpu_pci_bus_id"] == hdr["pci_bus_id"], hdr
    assert "health:" not in p.stdout, [l for l in p.stdout.splitlines() if "health:" in l]


def job_output(p):
    return [l for l in p.stdout.splitlines() if "collscope" not in l and "NCCL" not in l]


def static_sysfs(root):
    """Each host's port tree, as the simulated NVML would write it, for runs without it."""
    for h in set(HOST_OF.values()):
        for dev in ("mlx5_0", "mlx5_1"):
            d = os.path.join(root, h, "class", "infiniband", dev, "ports", "1")
            os.makedirs(os.path.join(d, "counters"))
            for c in ("symbol_error", "link_downed", "port_xmit_wait"):
                open(os.path.join(d, "counters", c), "w").write("0\n")
            open(os.path.join(d, "state"), "w").write("4: ACTIVE\n")
            open(os.path.join(d, "rate"), "w").write("400 Gb/sec (4X NDR)\n")


def one_line_cases(cli, apps, tmp, env_extra, want):
    p0, d0 = run_job(cli, apps, os.path.join(tmp, "ref"), "", steps=6, args=(), env_extra={"COLLSCOPE_HEALTH_MS": "0"})
    static_sysfs(os.path.join(tmp, "t", "sysfs"))
    p, d = run_job(cli, apps, os.path.join(tmp, "t"), "", steps=6, args=(), env_extra=env_extra)
    assert p.returncode == p0.returncode == 0, p.stdout[-3000:]
    assert job_output(p) == job_output(p0), (job_output(p), job_output(p0))
    lines = [l for l in p.stdout.splitlines() if "health:" in l]
    print("\n".join(lines))
    per_rank = {}
    for l in lines:
        per_rank.setdefault(l.split("]")[0], []).append(l)
    assert len(per_rank) == 8 and all(len(v) == 1 for v in per_rank.values()), lines
    assert all(want in l for l in lines), lines
    r, txt = report(cli, d)
    assert r["summary"]["ops"] == report(cli, d0)[0]["summary"]["ops"]
    return r


def case_nvml_absent(cli, apps, tmp):
    r = one_line_cases(cli, apps, tmp, {"COLLSCOPE_LIBNVML": "/nonexistent/libnvidia-ml.so.1"}, "not loaded")
    assert all(x["samples"] == 0 for x in r["health"]["ranks"]), r["health"]["ranks"]
    assert len(r["health"]["hosts"]) == 4   # the IB half still samples


def case_nvml_fail(cli, apps, tmp):
    r = one_line_cases(cli, apps, tmp, {"COLLSCOPE_SIM_NVML_FAIL": "nvmlInit_v2"}, "nvmlInit_v2 returned 999")
    assert all(x["samples"] == 0 for x in r["health"]["ranks"])


def case_nvml_all_fail(cli, apps, tmp):
    # nvmlInit_v2 succeeds, every device function fails: one line, no GPU samples, IB still sampled
    r = one_line_cases(cli, apps, tmp, {"COLLSCOPE_SIM_NVML_FAIL": "all"}, "returned 999: GPU health not sampled")
    assert all(x["samples"] == 0 for x in r["health"]["ranks"])
    assert len(r["health"]["hosts"]) == 4


def case_field_fail(cli, apps, tmp):
    # one function failing turns off its field alone
    r = one_line_cases(cli, apps, tmp, {"COLLSCOPE_SIM_NVML_FAIL": "nvmlDeviceGetPowerUsage"},
                       "nvmlDeviceGetPowerUsage returned 999: power not sampled")
    assert all(x["samples"] >= 1 and x["sm_mhz_median"] for x in r["health"]["ranks"]), r["health"]["ranks"]


def main():
    case_main.run(globals(), "collscope-health-")


if __name__ == "__main__":
    main()
