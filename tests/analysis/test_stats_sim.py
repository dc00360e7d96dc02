#!/usr/bin/env python3
"""tests/analysis/test_stats_sim.py CASE --cli COLLSCOPE --apps DIR

Straggler, link and hang detection end to end: 8 ranks of dp_train on 4 simulated hosts
(collscope run --sim, the shim preloaded), faults from COLLSCOPE_SIM_FAULTS, then
`collscope report --json`, `collscope top --once --json` and `collscope salvage`.
Cases: slow (3 ms), link, clean, hang (stream hang: stuck), missing (failed call), salvage,
top, slow5/slow20 (sensitivity, quiet job shape), clean_quiet, clean_mixed (10,000 mixed
instances), stall (host-side hang before enqueue: missing), slow5_sampled/slow20_sampled (the
sensitivity cases with 1 in 16 small instances timed), sampled_counts (records, counts and
CUDA events of the sampled event path), model_determinism (the same straggler job twice on the
modeled clock, once beside two busy loops: identical durations and verdict). The slow, top,
slow5/slow20 and sampled cases run on the modeled clock (COLLSCOPE_SIM_CLOCK=model) and assert
exact figures. Prints the measured figures."""
import collections, glob, json, os, re, shutil, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import case_main  # noqa: E402  (tests/case_main.py: the shared command line)
import hung_jobs  # noqa: E402  (tests/hung_jobs.py)

HOSTS = "simhost[1-4]"
HOST_OF = {r: "simhost%d" % (r // 2 + 1) for r in range(8)}


def run_job(cli, apps, tmp, faults="", steps=30, env_extra=None, kill_after=None, size="256K", args=(), timeout=180,
            app="dp_train", n=8, hosts=HOSTS):
    out = os.path.join(tmp, "dumps")
    shm = os.path.join(tmp, "shm")
    os.makedirs(shm, exist_ok=True)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults)
    env.update(env_extra or {})
    cmd = [cli, "run", "-n", str(n), "--hosts", hosts, "--sim", "--no-kill-on-fail", "--"]
    if kill_after:
        cmd += ["timeout", "-s", "KILL", str(kill_after)]
    cmd += [os.path.join(apps, app), "--steps", str(steps), "--size", size] + list(args)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p, out, shm


def run_until_hung(cli, apps, tmp, faults, hung, env_extra=None, steps=20, limit=120):
    """A job that hangs: runs it until `collscope top` shows `hung` processes flagged HUNG (each
    shim writes its hang record and flushes its dump before its ring says so), then SIGKILLs
    every rank that still has a ring, as a job's scheduler would. The verdict follows the
    shims' reports, whenever the host gets there; `limit` s (each rank under `timeout`) only
    bounds a run whose shims never report. Returns the job's output, the dumps and the rings."""
    out, shm = os.path.join(tmp, "dumps"), os.path.join(tmp, "shm")
    os.makedirs(shm, exist_ok=True)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults,
               COLLSCOPE_HANG_TIMEOUT="2")
    env.update(env_extra or {})
    cmd = [cli, "run", "-n", "8", "--hosts", HOSTS, "--sim", "--no-kill-on-fail", "--", "timeout", "-s", "KILL",
           str(limit), os.path.join(apps, "dp_train"), "--steps", str(steps), "--size", "256K"]
    log = open(os.path.join(tmp, "job.log"), "w+")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    t0 = time.monotonic()
    hung_jobs.kill_when_hung(p, cli, shm, lambda pids: len(pids) >= hung)
    p.wait(timeout=limit + 60)
    print("job ran %.1f s" % (time.monotonic() - t0))
    log.seek(0)
    return subprocess.CompletedProcess(cmd, p.returncode, log.read()), out, shm


# hooks/timing.h CS_ROW_TIMED: besides the seqs the event sample takes (seq % N == 0), the first
# 4 sampled-out ops of every (communicator, op, bytes) row of a rank get events
ROW_TIMED = 4


def sample_timed(ops, n):
    """The (comm, seq) the event sample (COLLSCOPE_EVENT_SAMPLE=n) times among one rank's small
    op records: seq % n == 0, and the first ROW_TIMED others of each non-empty row."""
    rescued, out = collections.Counter(), set()
    for o in sorted(ops, key=lambda o: (o["comm"], o["seq"])):
        row = (o["comm"], o["op"], o["bytes"])
        if o["seq"] % n == 0:
            out.add((o["comm"], o["seq"]))
        elif o["bytes"] and rescued[row] < ROW_TIMED:
            rescued[row] += 1
            out.add((o["comm"], o["seq"]))
    return out


def report(cli, d):
    p = subprocess.run([cli, "report", d, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def top(cli, shm):
    p = subprocess.run([cli, "top", "--once", "--json", "--shm-dir", shm], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return json.loads(p.stdout)


def figures(d):
    """share_last and median lateness per rank, from the dump files (independent of detect.c)."""
    inst = {}
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "op" and o["timing"] == "gpu_event" and o["seq"] >= 0:
                inst.setdefault((o["comm"], o["seq"]), []).append((o["dur_us"], o["rank"]))
    last = {r: [] for r in range(8)}
    for v in inst.values():
        if len(v) < 2:
            continue
        med = statistics.median_low([x[0] for x in v])
        dmin, r = min(v)
        last[r].append(med - dmin)
    n = sum(len(x) for x in last.values())
    out = {}
    for r in range(8):
        out[r] = (len(last[r]) / n if n else 0, statistics.median(last[r]) if last[r] else 0.0)
    return n, out


def print_figures(tag, d):
    n, f = figures(d)
    print("%s: %d instances; per rank share_last / median lateness_us when last:" % (tag, n))
    for r in range(8):
        print("  rank %d (%s): share_last %.2f lateness %.1f us" % (r, HOST_OF[r], f[r][0], f[r][1]))


def main():
    case_main.run(globals(), "collscope-stats-")


# slow and top on the modeled clock (MODEL_EVENTS, below): rank 5, stalled 3 ms before its
# collectives, is last in 89 of the 90 instances, 3000 us late, and first flagged at instance
# 15, in the report and in `collscope top`'s ring alike
SLOW3MS = {"share_last": 89 / 90, "lateness_us": 3000.0, "first_flag_instance": 15}


def case_slow(cli, apps, tmp):
    p, d, shm = run_job(cli, apps, tmp, "slow:rank=5,us=3000", steps=30, env_extra=MODEL_EVENTS)
    assert p.returncode == 0, p.stdout
    r = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1))
    print_figures("slow rank 5, 3000 us", d)
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    assert len(s) == 1, r["stragglers"]
    assert s[0]["rank"] == 5 and s[0]["host"] == "simhost3" and s[0]["kind"] == "compute", s
    assert {k: round(s[0][k], 9) for k in SLOW3MS} == {k: round(v, 9) for k, v in SLOW3MS.items()}, (s, SLOW3MS)
    assert r["hangs"] == []
    assert os.listdir(shm) == [], os.listdir(shm)  # rings removed at clean exit


# a 2-rank communicator (a tensor- or pipeline-parallel pair): rank 1, stalled 3 ms before its
# collectives, is last in every instance and 3000 us late: its peer's wait, in the report and in
# `collscope top` (the median of two durations is the last's own: measured against the peer)
PAIR3MS = {"share_last": 1.0, "lateness_us": 3000.0, "first_flag_instance": 15}


def case_pair(cli, apps, tmp):
    p, d, shm = run_job(cli, apps, tmp, "slow:rank=1,us=3000", steps=40, n=2, hosts="simhost[1-2]",
                        env_extra=dict(MODEL_EVENTS, COLLSCOPE_KEEP_SHM="1"))
    assert p.returncode == 0, p.stdout
    r = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1))
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    assert len(s) == 1 and s[0]["rank"] == 1, r["stragglers"]
    assert {k: round(s[0][k], 9) for k in PAIR3MS} == PAIR3MS, (s, PAIR3MS)
    t = top(cli, shm)
    p1 = t["processes"][1]
    print(json.dumps(p1, indent=1))
    assert [x["rank"] for x in t["stragglers"]] == [1], t["stragglers"]
    assert p1["share_last"] == 1.0 and p1["lateness_us"] == 3000.0, p1


# link on the modeled clock: the simhost1-simhost2 edge's 3 ms per ring step makes every
# instance 42204.971 us on every rank; the slow link is named over the job's 30 instances
LINK3MS = {"median_dur_us": 42204.971, "window_instances": 30, "first_flag_instance": 30}


def case_link(cli, apps, tmp):
    p, d, shm = run_job(cli, apps, tmp, "link:a=simhost1,b=simhost2,us=3000", steps=10, env_extra=MODEL_EVENTS)
    assert p.returncode == 0, p.stdout
    r = report(cli, d)
    print(json.dumps(r["stragglers"], indent=1))
    print_figures("link simhost1-simhost2, 3000 us", d)
    assert not [x for x in r["stragglers"] if x["kind"] == "compute" or x["rank"] >= 0], r["stragglers"]
    links = [x for x in r["stragglers"] if x["kind"] == "link"]
    assert len(links) == 1 and links[0]["rank"] == -1 and links[0]["host"] is None, links
    assert {k: links[0][k] for k in LINK3MS} == LINK3MS, (links, LINK3MS)


def case_clean(cli, apps, tmp):
    # the default job shape on the modeled clock with 2% seeded noise: no straggler, no hang
    p, d, shm = run_job(cli, apps, tmp, "jitter:pct=2", steps=60, env_extra=MODEL_EVENTS)
    assert p.returncode == 0, p.stdout
    r = report(cli, d)
    print_figures("clean", d)
    print("clean: %d instances, stragglers %s" % (r["summary"]["instances"], r["stragglers"]))
    assert r["stragglers"] == [] and r["hangs"] == [], (r["stragglers"], r["hangs"])


def check_hang_logs(out):
    lines = [l for l in out.splitlines() if "hang: AllReduce seq 10" in l]
    assert lines, out[-2000:]
    return lines


def case_hang(cli, apps, tmp):
    # rank 5 blocks at seq 10 (the simulator's stream never joins); every rank's shim
    # reports its op as hung after 2 s; then the job is SIGKILLed
    p, d, shm = run_until_hung(cli, apps, tmp, "hang:rank=5,seq=10", 8)
    check_hang_logs(p.stdout)
    r = report(cli, d)
    print(json.dumps(r["hangs"], indent=1))
    assert len(r["hangs"]) == 1, r["hangs"]
    h = r["hangs"][0]
    assert h["reached"] == 9 and h["seq"] == 10, h
    assert 5 in h["stuck_ranks"] + h["missing_ranks"], h
    i = (h["stuck_ranks"] + h["missing_ranks"]).index(5)
    assert (h["stuck_hosts"] + h["hosts"])[i] == "simhost3"
    t = top(cli, shm)
    assert len(t["processes"]) == 8
    assert all("HUNG" in x["flags"] for x in t["processes"]), [x["flags"] for x in t["processes"]]
    assert len(t["hangs"]) == 1 and t["hangs"][0]["seq"] == 10, t["hangs"]


def case_hang_sampled(cli, apps, tmp):
    # the hang at a sampled-out instance: events on every 2nd small instance (and on the first
    # 4 sampled-out ones of each of dp_train's 3 bucket rows: odd seqs up to 23), rank 5's
    # stream blocks at seq 25 (sampled out); the shims see their timed seq 26 (enqueued in the
    # same step) pending and report it; the report, reading seq 25's records as entered (not
    # known to be complete), places the hang at 25
    p, d, shm = run_until_hung(cli, apps, tmp, "hang:rank=5,seq=25", 8,
                               env_extra={"COLLSCOPE_TIMING": "events", "COLLSCOPE_EVENT_SAMPLE": "2"})
    assert [l for l in p.stdout.splitlines() if "hang: AllReduce seq 26" in l], p.stdout[-2000:]
    r = report(cli, d)
    print(json.dumps(r["hangs"], indent=1))
    assert r["summary"]["sampled_out"] > 0, r["summary"]
    assert len(r["hangs"]) == 1, r["hangs"]
    h = r["hangs"][0]
    assert h["reached"] == 24 and h["seq"] == 25, h
    assert sorted(h["stuck_ranks"]) == list(range(8)) and h["missing_ranks"] == [], h
    t = top(cli, shm)
    assert len(t["hangs"]) == 1 and t["hangs"][0]["seq"] == 25, t["hangs"]


def case_missing(cli, apps, tmp):
    # rank 5's call of seq 10 fails, so it never enters it; the others hang in it
    p, d, shm = run_until_hung(cli, apps, tmp, "fail:rank=5,seq=10,code=SystemError", 7)
    check_hang_logs(p.stdout)
    r = report(cli, d)
    print(json.dumps(r["hangs"], indent=1))
    assert len(r["hangs"]) == 1
    h = r["hangs"][0]
    assert h["seq"] == 10 and h["missing_ranks"] == [5] and h["hosts"] == ["simhost3"], h
    assert sorted(h["stuck_ranks"]) == [0, 1, 2, 3, 4, 6, 7], h
    t = top(cli, shm)  # the 7 rings of the killed ranks; rank 5 exited and removed its ring
    assert len(t["hangs"]) == 1 and t["hangs"][0]["stuck_ranks"] == [0, 1, 2, 3, 4, 6, 7], t["hangs"]


def case_salvage(cli, apps, tmp):
    p, d, shm = run_until_hung(cli, apps, tmp, "hang:rank=5,seq=10", 8)
    rings = sorted(os.listdir(shm))
    assert len(rings) == 8, rings
    for n in rings:
        st = os.lstat(os.path.join(shm, n))
        assert st.st_mode & 0o777 == 0o600, oct(st.st_mode)
    out = os.path.join(tmp, "salvaged")
    s = subprocess.run([cli, "salvage", "--shm-dir", shm, "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    print(s.stdout, s.stderr)
    assert s.returncode == 0
    assert os.listdir(shm) == []  # removed after salvage
    files = glob.glob(os.path.join(out, "*.salvage.jsonl"))
    assert len(files) == 8
    r = report(cli, out)
    assert r["summary"]["ops"] == 8 * 10, r["summary"]  # seq 0..9 complete on every rank
    assert len(r["hangs"]) == 1 and r["hangs"][0]["seq"] == 10
    assert r["summary"]["files_without_footer"] == 8


def case_top(cli, apps, tmp):
    p, d, shm = run_job(cli, apps, tmp, "slow:rank=5,us=3000", steps=30,
                        env_extra=dict(MODEL_EVENTS, COLLSCOPE_KEEP_SHM="1"))
    assert p.returncode == 0
    t = top(cli, shm)
    print(json.dumps(t["processes"][5], indent=1))
    assert set(t) >= {"time_ns", "dir", "processes", "stragglers", "hangs"}
    assert len(t["processes"]) == 8
    keys = {"job", "rank", "pid", "host", "device", "ring", "comms", "comm", "seq", "ops_per_s", "busbw_gbs",
            "since_last_s", "share_last", "lateness_us", "offset_us", "pending", "drops", "records", "lost", "alive",
            "clean_exit", "flags"}
    for i, x in enumerate(t["processes"]):
        assert set(x) == keys, set(x) ^ keys
        assert x["rank"] == i and x["host"] == HOST_OF[i] and x["clean_exit"] is True
        assert x["seq"] == 89 and x["records"] >= 90
        assert ("STRAGGLER" in x["flags"]) == (i == 5), (i, x["flags"])
    assert [s["rank"] for s in t["stragglers"]] == [5]
    p5, s5 = t["processes"][5], t["stragglers"][0]
    assert round(p5["share_last"], 9) == round(SLOW3MS["share_last"], 9) and p5["lateness_us"] == 3000.0, p5
    assert s5["first_flag_instance"] == SLOW3MS["first_flag_instance"], s5
    txt = subprocess.run([cli, "top", "--once", "--shm-dir", shm], stdout=subprocess.PIPE, text=True).stdout
    assert "STRAGGLER" in txt


# Sensitivity. The job is shaped so that the simulator's timing, not the 2-core host's CPU
# scheduling, sets when ranks arrive: every ring step sleeps 300 us on every edge (a wire
# latency, `link:a=*,b=*`; the collectives then take ~6 ms) and each bucket's "backward
# pass" sleeps 2 ms on the stream (a busy GPU costs the host no CPU). The slowdown is
# `slow:pct=P`: P% of the slowed rank's own measured collective duration (it arrives last,
# so that is the collective's undisturbed duration). The simulator can only apply it once
# the rank has measured a collective after the warm-up one (seq 1, so from seq 2); it logs
# the first delayed seq (NCCL_DEBUG=INFO), and the bar is checked on the instances from
# there: first_flag_instance - that seq (first_flag_instance is 1-based, seq 0-based).
QUIET = "link:a=*,b=*,us=300"
QUIET_ARGS = ("--compute-us", "2000")
RUNS = 3


def case_slow5(cli, apps, tmp):
    # on the modeled clock: one run, an exact figure (on the wall clock 20 runs gave 12-42
    # instances after the onset on a calm machine and over 100 under load)
    since = model_slow_run(cli, apps, tmp, 5, steps=40)
    assert since == SLOW5_SINCE, (since, SLOW5_SINCE)


# Exact figures on the modeled clock (COLLSCOPE_SIM_CLOCK=model, seed 1; MODEL below): instances
# from the first delayed seq to the flag. Every op is timed by CUDA events (MODEL_EVENTS): the
# `auto` path's probation and its wait for KernelCh stamps are judged on the host's monotonic
# clock (docs/timing.md), so under load a process may keep or drop the plugin at another op.
SLOW5_SINCE = 13
SLOW20_SINCE = 13
# The sampled cases, exact too: the dumps are identical run to run, and the report's instance
# merge keeps each file's records of a communicator in seq order (the shim writes a timed op
# after the sampled-out ops that finished while its events were pending), so the verdict does
# not follow the records' order in the files. Timed instances from the first delayed one (the
# first 4 sampled-out ops of each bucket row are timed too: sample_timed).
SLOW5_SAMPLED_SINCE = 13
SLOW20_SAMPLED_SINCE = 13
SLOW5_SAMPLED_STEPS = 560
SAMPLED_BAR = 30


def model_slow_run(cli, apps, tmp, pct, steps):
    p, d, shm = run_job(cli, apps, tmp, QUIET + ";slow:rank=5,pct=%g" % pct, steps=steps, args=QUIET_ARGS,
                        env_extra=MODEL_EVENTS)
    assert p.returncode == 0, p.stdout
    m = re.findall(r"slow fault: rank 5 first stall (\d+) us, before seq (\d+)", p.stdout)
    assert len(m) == 1, p.stdout[-3000:]
    onset = int(m[0][1])
    r = report(cli, d)
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    print("model slow %g%%: %s" % (pct, json.dumps(s)))
    assert len(s) == 1 and s[0]["rank"] == 5 and s[0]["host"] == "simhost3", r["stragglers"]
    assert s[0]["kind"] == "compute", s
    assert s[0]["gap_us"] >= 0 and s[0]["peer_gap_us"] >= 0, s
    assert s[0]["offset_us"] >= 0.5 * pct / 100 * s[0]["median_dur_us"], s
    since = s[0]["first_flag_instance"] - onset
    print("model slow %g%%: first_flag_instance %d, onset seq %d: %d instances after it" %
          (pct, s[0]["first_flag_instance"], onset, since))
    return since


def case_slow20(cli, apps, tmp):
    # on the modeled clock: one run, an exact figure (on the wall clock 20 runs gave 11-15 on
    # a calm machine, up to 21 and one run not flagged within 30 under load)
    since = model_slow_run(cli, apps, tmp, 20, steps=16)
    assert since == SLOW20_SINCE, (since, SLOW20_SINCE)


# The same slowdowns on the CUDA-event path with 1 in 16 small instances timed
# (COLLSCOPE_TIMING=events COLLSCOPE_EVENT_SAMPLE=16; dp_train's 256 KiB buckets are all under
# COLLSCOPE_EVENT_SAMPLE_BYTES). The detector sees the timed instances only, the same seqs on
# every rank (seq % 16 == 0, and the first 4 others of each bucket's row: sample_timed), so the
# bar counts those: timed instances from the first delayed one to the flag. In job instances
# that is about 16 times as many (printed).
SAMPLED = {"COLLSCOPE_TIMING": "events", "COLLSCOPE_EVENT_SAMPLE": "16"}


def sampled_slow_runs(cli, apps, tmp, pct, steps, bar, runs=RUNS, env=None, want=None):
    since_timed, since_seq = [], []
    for i in range(runs):
        t = os.path.join(tmp, "run%d" % i)
        p, d, shm = run_job(cli, apps, t, QUIET + ";slow:rank=5,pct=%g" % pct, steps=steps, args=QUIET_ARGS,
                            env_extra=dict(SAMPLED, NCCL_DEBUG="INFO") | (env or {}), timeout=400)
        assert p.returncode == 0, p.stdout
        # the job's communicator (the process's first); collscope's online exchange logs the
        # stall on its own communicator too once the job is long enough for an exchange
        m = [x for x in re.findall(r":(\d+):(\d+) \[\d+\] NCCL INFO slow fault: rank 5 first stall (\d+) us, "
                                   r"before seq (\d+) \(comm (\d+) of", p.stdout) if x[4] == "0"]
        assert len(m) == 1, p.stdout[-3000:]
        onset = int(m[0][3])
        timing, sample_want = {}, None
        for f in glob.glob(os.path.join(d, "*.jsonl")):
            ops = [o for o in map(json.loads, open(f)) if o.get("type") == "op" and o["seq"] >= 0]
            for o in ops:
                timing.setdefault(o["seq"], set()).add(o["timing"])
            sample_want = sample_want or sorted(q for c, q in sample_timed(ops, 16))
        timed = sorted(q for q, v in timing.items() if v == {"gpu_event"})
        assert timed and timed == sample_want, (timed[:20], sample_want[:20])
        assert all(v == {"sampled_out"} for q, v in timing.items() if q not in sample_want), "unsampled seqs not sampled_out"
        r = report(cli, d)
        s = [x for x in r["stragglers"] if x["rank"] >= 0]
        print("sampled slow %g%%, run %d: %s" % (pct, i, json.dumps(s)))
        assert len(s) == 1 and s[0]["rank"] == 5 and s[0]["host"] == "simhost3", r["stragglers"]
        assert s[0]["kind"] == "compute", s
        # a compute gap is measured only between consecutive timed ops (a span over sampled-out
        # ones would hold their waits for rank 5 on every rank alike, analysis/detect.c): the
        # first timed ops of the bucket rows (seqs 0..12) are consecutive, the later ones
        # (seq % 16 == 0) follow sampled-out ones and have none
        assert s[0]["offset_us"] >= 0.5 * pct / 100 * s[0]["median_dur_us"], s
        before = sum(1 for q in timed if q < onset)  # timed instances before the first delayed one
        since_timed.append(s[0]["first_flag_instance"] - before)
        since_seq.append(s[0]["first_flag_seq"] - onset)
    print("sampled slow %g%% (1 in 16 timed): timed instances from the first delayed one to the flag %s (bar %d); "
          "job instances %s" % (pct, since_timed, bar, since_seq))
    assert max(since_timed) <= bar, since_timed
    if want is not None:
        assert since_timed == [want] * runs, (since_timed, want)
    return since_timed


def case_slow5_sampled(cli, apps, tmp):
    # on the modeled clock, one run; dp_train: 3 collectives per step
    sampled_slow_runs(cli, apps, tmp, 5, steps=SLOW5_SAMPLED_STEPS, bar=SAMPLED_BAR, runs=1, env=MODEL,
                      want=SLOW5_SAMPLED_SINCE)


# The modeled clock (COLLSCOPE_SIM_CLOCK=model, docs/simulator.md): GPU time is virtual, so
# the same job with the same seed writes the same GPU durations under any host load. Timed by
# CUDA events alone: with `auto` the op where a process switches to the profiler plugin's
# stamps (integer ns; events give float ms) depends on when its harvest thread judged the
# probes (docs/timing.md), so a few records around it could differ by a nanosecond.
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "NCCL_DEBUG": "INFO"}
MODEL_EVENTS = dict(MODEL, COLLSCOPE_TIMING="events", COLLSCOPE_EVENT_SAMPLE="1")  # every op timed
MODEL_FAULTS = QUIET + ";slow:rank=5,pct=5;jitter:pct=2"
SIM_EPOCH_NS = 1767225600000000000  # the modeled clock's CLOCK_REALTIME origin (tests/sim/simcuda.h)
MODEL_FIRST_FLAG = 15  # rank 5 first flagged at instance 15 with seed 1 (11 after the onset)


def gpu_durations(d):
    """(rank, seq, op) -> dur_us of every GPU-timed op record (CUDA events or the NCCL profiler
    plugin's KernelCh stamps: both read the modeled clock) of the dumps."""
    out = {}
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "op" and o.get("timing") in ("gpu_event", "profiler"):
                out[(o["rank"], o["seq"], o.get("op"))] = o["dur_us"]
    return out


def model_straggler(cli, apps, tmp, busy):
    loops = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(busy)]
    try:
        t0 = time.monotonic()
        p, d, shm = run_job(cli, apps, tmp, MODEL_FAULTS, steps=60, args=QUIET_ARGS, env_extra=MODEL_EVENTS)
        wall = time.monotonic() - t0
    finally:
        for y in loops:
            y.kill()
            y.wait()
    assert p.returncode == 0, p.stdout[-3000:]
    m = re.findall(r"slow fault: rank 5 first stall (\d+) us, before seq (\d+)", p.stdout)
    assert len(m) == 1, p.stdout[-3000:]
    r = report(cli, d)
    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    ends = [o["end_ns"] for f in glob.glob(os.path.join(d, "*.jsonl")) for o in map(json.loads, open(f))
            if o.get("type") == "op" and o.get("timing") == "gpu_event"]
    print("model, %d busy loops: %.1f s wall for %.3f s of modeled GPU time, onset seq %s, stragglers %s" % (
        busy, wall, (max(ends) - SIM_EPOCH_NS) / 1e9, m[0][1], json.dumps(s)))
    assert len(s) == 1 and s[0]["rank"] == 5 and s[0]["host"] == "simhost3", r["stragglers"]
    return gpu_durations(d), s[0]["first_flag_instance"], int(m[0][1])


def case_model_determinism(cli, apps, tmp):
    # the same 8-rank straggler job twice with seed 1, the second time beside two busy loops:
    # every op record's dur_us and the first-flag instance are identical
    da, fa, onset_a = model_straggler(cli, apps, os.path.join(tmp, "calm"), 0)
    db, fb, onset_b = model_straggler(cli, apps, os.path.join(tmp, "busy"), 2)
    assert da and set(da) == set(db), (len(da), len(db))
    diff = [k for k in da if da[k] != db[k]]
    assert not diff, ["%s: %s vs %s" % (k, da[k], db[k]) for k in diff[:10]]
    assert onset_a == onset_b and fa == fb, (onset_a, onset_b, fa, fb)
    print("rank 5 first flagged at instance %d with seed 1 (onset seq %d, %d instances after it); %d op "
          "durations identical" % (fa, onset_a, fa - onset_a, len(da)))
    assert fa - onset_a <= 30, (fa, onset_a)
    assert fa == MODEL_FIRST_FLAG, (fa, MODEL_FIRST_FLAG)


def case_model_hostdelay(cli, apps, tmp):
    # a late CPU (a slow data loader) on the modeled clock: after each step's synchronize rank
    # 3's host thread spends 400 us more (hostdelay:) before it enqueues the next step; its GPU
    # is not slowed. The first collective of every later step then waits exactly 400 us for
    # rank 3 on every other rank: their durations exceed rank 3's by 400 us (CUDA events,
    # float ms: to 0.01 us). The rest of the step runs in lockstep again (equal durations).
    p, d, shm = run_job(cli, apps, tmp, QUIET + ";hostdelay:rank=3,us=400", steps=20, args=("--compute-us", "0"),
                        env_extra=MODEL_EVENTS)
    assert p.returncode == 0, p.stdout[-3000:]
    dur = {}
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "op" and o["timing"] == "gpu_event":
                dur.setdefault(o["seq"], {})[o["rank"]] = o["dur_us"]
    assert sorted(dur) == list(range(60)) and all(len(v) == 8 for v in dur.values()), sorted(dur)
    for seq in range(3, 60):
        v = dur[seq]
        others = [v[r] for r in range(8) if r != 3]
        wait = [x - v[3] for x in others]
        if seq % 3 == 0:
            assert all(abs(w - 400.0) < 0.01 for w in wait), (seq, v)
        else:
            assert all(abs(w) < 0.01 for w in wait), (seq, v)
    print("model hostdelay: the first collective of steps 1-19 waits 400 us for rank 3 on the 7 other ranks "
          "(e.g. seq 3: rank 3 %.3f us, rank 0 %.3f us); the others run in lockstep" % (dur[3][3], dur[3][0]))


# kind in jobs with several communicators, on the modeled clock: a rank's compute gap is its
# stream's idle time since its previous op of the same communicator there, not since its
# previous op of any (docs/detection.md). multicomm: four world communicators on four streams,
# their AllReduces in flight at once, rank 5 stalled 20% before each; train3d (TP 2, PP 2, DP 2):
# rank 5's modeled compute 50% longer. Per finding (sorted; communicator ids change from run to
# run): rank, kind, gap_us, peer_gap_us, first_flag_seq. Before the
# gap was per communicator, multicomm's rank 5 was `link` in 3 of its 4 communicators (gap 0,
# the other streams' ops in between) and train3d's in its TP communicator.
MULTICOMM_KIND = [(5, "compute", 2909.293, 2025.804, 14)] * 4
TRAIN3D_KIND = [(5, "compute", 1505.631, 1013.013, 14),  # TP: one compute before each
                # PP: the grouped Send/Recv exchange, a pair (2 members): 69, its sign test a
                # binomial tail within offset_z
                (5, "compute", 3029.442, 2025.221, 69),
                (5, "compute", 12067.437, 8052.394, 14)]  # DP: a step's computes summed
# The healthy ranks the detector flags `link` there, each moved to the peer it waited for
# (analysis/peer_wait.c): rank 1 waits in its Recvs for rank 5 (a Recv ends when its Send's
# data lands) and is late at DP; rank 4 waits at TP for rank 5 and is late at DP; rank 0 waits
# in its Recvs for rank 4 and is late at DP. (rank, peer). Rank 4, late also at its exchange
# with rank 0 (the pipeline's Send/Recv) without a longer gap, is the schedule's order there
# (analysis/schedule.c cs_sched_judge), not moved.
TRAIN3D_MOVED = [(0, 4), (1, 5), (4, 5)]


def kind_findings(cli, apps, tmp, app, faults, steps, size, args):
    p, d, _ = run_job(cli, apps, tmp, QUIET + ";jitter:pct=2;" + faults, steps=steps, size=size, args=args,
                      env_extra=MODEL_EVENTS, app=app)
    assert p.returncode == 0, p.stdout[-3000:]
    r = report(cli, d)
    got = sorted((s["rank"], s["kind"], s["gap_us"], s["peer_gap_us"], s["first_flag_seq"]) for s in r["stragglers"])
    print("%s: %s" % (app, json.dumps(got)))
    moved = sorted((m["rank"], m["peer"]) for m in r["pipeline"]["moved_to_peer"])
    assert r["pipeline"]["explained_by_peer_wait"] == len(moved), r["pipeline"]
    print("%s moved to a peer: %s" % (app, moved))
    return got, moved


def same(got, want):
    """gaps to 100 ns: start and end are GPU times placed on the host's clock by collscope's
    calibration, which rounds them a few ns either way from run to run (test_zoo.py); the
    modeled durations themselves are exact"""
    return len(got) == len(want) and all(
        g[0] == w[0] and g[1] == w[1] and abs(g[2] - w[2]) <= 0.1 and abs(g[3] - w[3]) <= 0.1 and g[4] == w[4]
        for g, w in zip(got, want))


def case_kind_multicomm(cli, apps, tmp):
    got, moved = kind_findings(cli, apps, tmp, "multicomm", "slow:rank=5,pct=20", 120, "256K",
                               ("--comms", "4", "--compute-us", "2000"))
    assert same(got, MULTICOMM_KIND) and moved == [], (got, MULTICOMM_KIND, moved)
    shutil.rmtree(os.path.join(tmp, "dumps"))
    got, moved = kind_findings(cli, apps, tmp, "train3d", "slow:rank=5,compute=50", 16, "64K",
                               ("--tp", "2", "--pp", "2", "--microbatches", "4", "--compute-us", "1000"))
    assert same(got, TRAIN3D_KIND) and moved == TRAIN3D_MOVED, (got, TRAIN3D_KIND, moved)


def case_slow20_sampled(cli, apps, tmp):
    sampled_slow_runs(cli, apps, tmp, 20, steps=240, bar=SAMPLED_BAR, runs=1, env=MODEL,
                      want=SLOW20_SAMPLED_SINCE)


def kstats(d):
    """per pid: the simulator's event records and the collectives its NCCL ran (its work items)"""
    out = {}
    for f in glob.glob(os.path.join(d, "kstats-*.json")):
        k = json.load(open(f))
        colls = sum(x["count"] for x in k["fns"] if x["kind"] == "fn" and x["name"].startswith("libnccl.so"))
        out[k["pid"]] = (k["event_records"], colls)
    return out


def case_sampled_counts(cli, apps, tmp):
    # events mode, 1 in 16 small instances timed: every call still has its record (the report
    # counts every one; percentiles from the timed ones), the timed seqs are the same on every
    # rank, and a sampled-out op records no CUDA event (the simulator counts cuEventRecord)
    # first every op timed (N = 1), the figures to compare with
    kb = os.path.join(tmp, "base", "kstats")
    os.makedirs(kb)
    p, db, _ = run_job(cli, apps, os.path.join(tmp, "base"), "", steps=30,
                       env_extra=dict(SAMPLED, COLLSCOPE_EVENT_SAMPLE="1", COLLSCOPE_SIM_KERNEL_STATS=kb))
    assert p.returncode == 0, p.stdout
    base = sorted(v[0] for v in kstats(kb).values())
    # CUDA events collscope recorded for its timed records, per rank, from the dumps: 2 per op
    # or copy (the simulator's count adds the clock anchor, one per 2 s of wall time)
    def timed_events(folder):
        ev = collections.Counter()
        for f in glob.glob(os.path.join(folder, "*.jsonl")):
            rank = int(re.search(r"-r(\d+)-p\d+\.jsonl$", f).group(1))
            for line in open(f):
                o = json.loads(line)
                if o.get("type") in ("op", "xfer") and o["timing"] == "gpu_event":
                    ev[rank] += 2
        return ev
    base_ev = timed_events(db)
    ks = os.path.join(tmp, "kstats")
    os.makedirs(ks)
    p, d, shm = run_job(cli, apps, tmp, "", steps=30,
                        env_extra=dict(SAMPLED, COLLSCOPE_SIM_KERNEL_STATS=ks))
    assert p.returncode == 0, p.stdout
    per_pid, seqs = {}, {}
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        last = {}   # a file's op records of one communicator come in seq order (stats/harvest.c)
        want = sample_timed([o for o in map(json.loads, open(f)) if o.get("type") == "op"], 16)
        for line in open(f):
            o = json.loads(line)
            if o.get("type") not in ("op", "xfer"):
                continue
            if o["type"] == "op":
                assert o["seq"] > last.get(o["comm"], -1), (f, o["comm"], last.get(o["comm"]), o["seq"])
                last[o["comm"]] = o["seq"]
            pid = int(re.search(r"-p(\d+)\.jsonl$", f).group(1))
            c = per_pid.setdefault(pid, {"ops": 0, "events": 0, "sampled_out": 0})
            if o["type"] == "op":
                c["ops"] += 1
                c["rank"] = o["rank"]
                assert o["timing"] in ("gpu_event", "sampled_out"), o
                assert (o["timing"] == "gpu_event") == ((o["comm"], o["seq"]) in want), o
                if o["timing"] == "sampled_out":
                    c["sampled_out"] += 1
                    assert o["enqueue_ns"] > 0 and o["start_ns"] == 0 and o["dur_us"] == 0, o
                seqs.setdefault(o["rank"], set()).add((o["seq"], o["timing"]))
            if o["timing"] == "gpu_event":
                c["events"] += 2  # a start and an end event per timed op or copy
    assert len(seqs) == 8 and all(v == seqs[0] for v in seqs.values()), "ranks disagree on the timed seqs"
    k = kstats(ks)
    assert set(k) == set(per_pid), (sorted(k), sorted(per_pid))
    ops = sampled = 0
    for pid, c in per_pid.items():
        records, colls = k[pid]
        # collscope's events: 2 per timed op or copy, plus its clock anchor (one per 2 s)
        print("pid %d: %d collectives run, %d op records (%d sampled out), %d event records (%d for timed "
              "records)" % (pid, colls, c["ops"], c["sampled_out"], records, c["events"]))
        assert colls == c["ops"], (colls, c)
        assert c["events"] <= records <= c["events"] + 10, (records, c)
        ops += c["ops"]
        sampled += c["sampled_out"]
    # 1 in 16 timed, and the first ROW_TIMED sampled-out ops of each of dp_train's 3 bucket rows
    assert sampled >= ops * 14 // 16 - len(per_pid) * 3 * ROW_TIMED, (sampled, ops)
    print("event records per process: every op timed %s; 1 in 16 small ones %s" %
          (base, sorted(v[0] for v in k.values())))
    assert all(b >= v[0] for b, v in zip(base, sorted(k.values()))), (base, k)
    # exactly 2 events fewer per sampled-out op than with every op timed, on every rank
    assert all(base_ev[c["rank"]] - c["events"] == 2 * c["sampled_out"] for c in per_pid.values()), (base_ev, per_pid)
    r = report(cli, d)
    s = r["summary"]
    print("report: ops %d, timed %d, sampled_out %d" % (s["ops"], s["timed"], s["sampled_out"]))
    assert s["ops"] == ops and s["sampled_out"] == sampled and s["timed"] == ops - sampled, s
    rows = r["ops"]
    assert sum(x["count"] for x in rows) == ops and sum(x["timed"] for x in rows) == ops - sampled, rows
    txt = subprocess.run([cli, "report", d], stdout=subprocess.PIPE, text=True).stdout
    assert re.search(r"sampled-out ops \(counted, not timed\): +%d " % sampled, txt), txt[-3000:]


def case_clean_quiet(cli, apps, tmp):
    # the quiet shape without a slowdown, on the modeled clock with the determinism case's
    # 2% seeded jitter on every compute phase and collective: noise alone is never flagged
    p, d, shm = run_job(cli, apps, tmp, QUIET + ";jitter:pct=2", steps=100, args=QUIET_ARGS, env_extra=MODEL_EVENTS)
    assert p.returncode == 0, p.stdout
    r = report(cli, d)
    print("clean quiet (model, jitter 2%%, seed 1): %d instances, stragglers %s" % (r["summary"]["instances"],
                                                                                  r["stragglers"]))
    assert r["summary"]["instances"] == 300, r["summary"]
    assert r["stragglers"] == [] and r["hangs"] == [], r["stragglers"]


def case_clean_mixed(cli, apps, tmp):
    # AllReduce/AllGather/ReduceScatter/Broadcast of 8 B .. 256 KiB on the modeled clock with 2%
    # seeded noise (the wall clock's CPU-bound timing followed the host's load); the
    # 100,000-instance run on the wall clock is bench/clean_fp.py. 256 KiB: the model's
    # latency-bound and bandwidth-bound sizes both (an inter-host ring step moves 256 KiB in
    # 21 us at 100 Gbit/s, against its 14 us latency) at a fifth of the simulator's data
    # movement for 4 MiB (about 25 s here instead of 95 s).
    p, d, shm = run_job(cli, apps, tmp, "jitter:pct=2", steps=2500, size="256K", args=("--ops", "mixed"), timeout=540,
                        env_extra=MODEL_EVENTS)
    assert p.returncode == 0, p.stdout
    r = report(cli, d)
    print("clean mixed: %d instances, stragglers %s" % (r["summary"]["instances"], r["stragglers"]))
    assert r["summary"]["instances"] == 10000
    assert r["stragglers"] == [] and r["hangs"] == [], (r["stragglers"], r["hangs"])


def case_stall(cli, apps, tmp):
    # rank 5's host thread blocks inside its call of seq 10 before anything is enqueued: it
    # never enters seq 10 (the shim pushes a record only when the call returns); the other
    # ranks enter it and wait; their shims report the hang after 2 s; then SIGKILL
    p, d, shm = run_until_hung(cli, apps, tmp, "stall:rank=5,seq=10", 7)
    check_hang_logs(p.stdout)
    r = report(cli, d)
    print(json.dumps(r["hangs"], indent=1))
    assert len(r["hangs"]) == 1, r["hangs"]
    h = r["hangs"][0]
    assert h["reached"] == 9 and h["seq"] == 10, h
    assert h["missing_ranks"] == [5] and h["hosts"] == ["simhost3"], h
    assert sorted(h["stuck_ranks"]) == [0, 1, 2, 3, 4, 6, 7], h
    t = top(cli, shm)
    print(json.dumps(t["hangs"], indent=1))
    assert len(t["hangs"]) == 1, t["hangs"]
    th = t["hangs"][0]
    assert th["seq"] == 10 and th["missing_ranks"] == [5] and th["hosts"] == ["simhost3"], th
    assert sorted(th["stuck_ranks"]) == [0, 1, 2, 3, 4, 6, 7], th
    flags = {x["rank"]: x["flags"] for x in t["processes"]}
    assert "HUNG" not in flags[5] and all("HUNG" in flags[k] for k in flags if k != 5), flags


def case_gpuhang(cli, apps, tmp):
    # rank 5's GPU hangs in the first work its stream runs after seq 9 (the simulator's gpuhang:
    # its compute, a kernel that never ends): its seq 10 is enqueued but its start event never
    # completes, the other ranks' GPUs start seq 10 and wait inside it. Every shim reports its op
    # after 2 s, rank 5's with its start not reached: the GPU that holds is named
    p, d, shm = run_until_hung(cli, apps, tmp, "gpuhang:rank=5,seq=10", 8)
    check_hang_logs(p.stdout)
    assert [l for l in p.stdout.splitlines() if "hang: AllReduce seq 10" in l and "GPU start not reached" in l
            and "rank 5 of 8" in l], p.stdout[-3000:]
    r = report(cli, d)
    print(json.dumps(r["hangs"], indent=1))
    assert len(r["hangs"]) == 1, r["hangs"]
    h = r["hangs"][0]
    assert h["reached"] == 9 and h["seq"] == 10 and h["missing_ranks"] == [], h
    assert h["unstarted_ranks"] == [5] and h["unstarted_hosts"] == ["simhost3"], h
    assert sorted(h["stuck_ranks"]) == [0, 1, 2, 3, 4, 6, 7], h
    t = top(cli, shm)
    print(json.dumps(t["hangs"], indent=1))
    assert len(t["hangs"]) == 1, t["hangs"]
    th = t["hangs"][0]
    assert th["seq"] == 10 and th["unstarted_ranks"] == [5] and th["unstarted_hosts"] == ["simhost3"], th
    assert sorted(th["stuck_ranks"]) == [0, 1, 2, 3, 4, 6, 7], th


def case_stall0(cli, apps, tmp):
    # rank 5 blocks inside its very first collective: it has no op record on the comm at all,
    # only the comm's init record; the report still names it as the missing rank
    p, d, shm = run_until_hung(cli, apps, tmp, "stall:rank=5,seq=0", 7)
    r = report(cli, d)
    print(json.dumps(r["hangs"], indent=1))
    assert len(r["hangs"]) == 1, r["hangs"]
    h = r["hangs"][0]
    assert h["reached"] == -1 and h["seq"] == 0, h
    assert h["missing_ranks"] == [5] and h["hosts"] == ["simhost3"], h
    assert sorted(h["stuck_ranks"]) == [0, 1, 2, 3, 4, 6, 7], h



# ---- stats rings without dumps, and stale rings (docs/rings.md)

RING_FAULTS = QUIET + ";slow:rank=5,pct=20"


def job_lines(out):
    """the job's own output, in order: every line but the shims' log lines and NCCL's debug
    lines (those name pids and addresses, and the run with dumps has collscope's own
    communicator for the online exchange)"""
    return [l for l in out.splitlines() if not l.startswith("collscope[") and " NCCL INFO " not in l]


def ring_names(shm):
    return sorted(n for n in os.listdir(shm) if n.endswith(".ring"))


def nocomm(stragglers):
    """the findings on the modeled clock: without the communicator's id (NCCL's unique id
    differs run to run), the gaps (gap_us, peer_gap_us: they read the host's enqueue
    stamps, 1 ns apart run to run) and cost_pct (its span's ends are put on the host's clock by
    the clock anchor, a few ns apart run to run; cost_us is exact)"""
    return [{k: v for k, v in s.items() if k not in ("comm", "gap_us", "peer_gap_us", "cost_pct")} for s in stragglers]


def exporter_once(cli, shm):
    # the modeled clock stamps the rings in 2026-01-01: a grace that keeps exited processes
    p = subprocess.run([cli, "exporter", "--once", "--grace", "1000000000", "--shm-dir", shm],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def case_ring_only(cli, apps, tmp):
    # dp_train with rank 5 slowed by 20% on the modeled clock, three times: with its dumps, with
    # COLLSCOPE_DIR under a regular file (unusable, whoever runs the test: root writes to
    # read-only directories) and with COLLSCOPE_DIR=none. Without dumps every rank still has
    # its ring, says so in one line, and `top` and the exporter flag rank 5 exactly as the
    # run with dumps does; the job's status and output are unchanged.
    env = dict(MODEL_EVENTS, COLLSCOPE_KEEP_SHM="1", COLLSCOPE_JOB_ID="ringonly")
    p0, d0, shm0 = run_job(cli, apps, os.path.join(tmp, "dumps"), RING_FAULTS, steps=16, args=QUIET_ARGS,
                           env_extra=env)
    assert p0.returncode == 0, p0.stdout
    assert len(glob.glob(os.path.join(d0, "*.jsonl"))) == 8
    want = top(cli, shm0)["stragglers"]
    print("with dumps: top's stragglers %s" % json.dumps(want))
    assert [s["rank"] for s in want] == [5], want
    blocker = os.path.join(tmp, "not-a-directory")
    open(blocker, "w").close()
    assert not os.path.exists("none")
    for mode, dirval, line in (
            ("unusable", os.path.join(blocker, "dumps"), "dumps off (COLLSCOPE_DIR unusable), stats ring on: "),
            ("none", "none", "dumps off (COLLSCOPE_DIR=none), stats ring on: ")):
        t = os.path.join(tmp, mode)
        p, d, shm = run_job(cli, apps, t, RING_FAULTS, steps=16, args=QUIET_ARGS,
                            env_extra=dict(env, COLLSCOPE_DIR=dirval, COLLSCOPE_LOG="info"))
        print("%s: status %d" % (mode, p.returncode))
        assert p.returncode == p0.returncode, p.stdout[-3000:]
        assert job_lines(p.stdout) == job_lines(p0.stdout), (job_lines(p.stdout), job_lines(p0.stdout))
        said = [l for l in p.stdout.splitlines() if line in l]
        print(said[0] if said else p.stdout[-2000:])
        assert len(said) == 8, p.stdout[-3000:]
        assert not os.path.exists("none") and not os.path.exists(os.path.join(blocker, "dumps"))
        assert ring_names(shm) == ["collscope-%d-ringonly-r%d.ring" % (os.geteuid(), r) for r in range(8)], \
            ring_names(shm)
        got = top(cli, shm)
        assert len(got["processes"]) == 8, got["processes"]
        assert nocomm(got["stragglers"]) == nocomm(want), (got["stragglers"], want)
        exp = exporter_once(cli, shm)
        flagged = sorted(int(re.search(r'rank="(\d+)"', l).group(1)) for l in exp.splitlines()
                         if l.startswith("collscope_straggler{") and l.endswith(" 1"))
        ups = [l for l in exp.splitlines() if l.startswith("collscope_up{")]
        print("%s: exporter flags ranks %s, %d processes" % (mode, flagged, len(ups)))
        assert flagged == [5] and len(ups) == 8, exp[-3000:]
    # a clean exit removes the rings (COLLSCOPE_KEEP_SHM unset)
    env.pop("COLLSCOPE_KEEP_SHM")
    p, d, shm = run_job(cli, apps, os.path.join(tmp, "gone"), RING_FAULTS, steps=4, args=QUIET_ARGS,
                        env_extra=dict(env, COLLSCOPE_DIR="none"))
    assert p.returncode == 0 and ring_names(shm) == [], (p.returncode, ring_names(shm))



NOBODY = 65534


def as_user(uid):
    """the prefix that runs a command as uid (root only)"""
    return ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups"]


def salvage_run(cli, args, user=None):
    p = subprocess.run((as_user(user) if user is not None else []) + [cli, "salvage"] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    print("salvage %s -> %d\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def wait_dead(pid, limit=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            if open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z":
                return
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.05)
    raise AssertionError("pid %d still alive" % pid)


def clean_line(job, uid, salvaged, removed, bad, live, kept):
    return ("salvage --clean: job %s, uid %d: %d rings salvaged (%d removed), %d unreadable removed, %d live left "
            "untouched, %d kept" % (job, uid, salvaged, removed, bad, live, kept))


def case_ring_clean(cli, apps, tmp):
    # 8 ranks hang at seq 10 (rank 5's stream); rank 3 is then SIGKILLed, so its ring stays.
    # As root the job runs as uid 65534 and root cleans up for it (--uid), as a Slurm epilog
    # does; otherwise the caller cleans its own rings. Planted beside them: an unreadable ring
    # of a dead writer (-p<rank 3's pid>), one of a live writer (-p<rank 0's pid>), and a copy
    # of rank 3's ring named for uid 0 but owned by the job's user.
    cli, apps = os.path.abspath(cli), os.path.abspath(apps)
    root = os.geteuid() == 0 and shutil.which("setpriv") is not None
    owner = NOBODY if root else os.geteuid()
    print("root path tested: %s" % root)
    os.chmod(tmp, 0o755)
    shm, dumps, out = (os.path.join(tmp, x) for x in ("shm", "dumps", "salvaged"))
    os.makedirs(shm)
    os.chmod(shm, 0o1777)
    os.makedirs(dumps)
    if root:
        os.chown(dumps, owner, owner)
    job = "stale%d" % os.getpid()
    env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS="hang:rank=5,seq=10",
               COLLSCOPE_HANG_TIMEOUT="2", COLLSCOPE_JOB_ID=job)
    cmd = (as_user(owner) if root else []) + [
        cli, "run", "-n", "8", "--hosts", HOSTS, "--sim", "--no-kill-on-fail", "--", "timeout", "-s", "KILL", "120",
        os.path.join(apps, "dp_train"), "--steps", "20", "--size", "256K"]
    log = open(os.path.join(tmp, "job.log"), "w+")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=dumps)
    try:
        t0, procs = time.monotonic(), []
        while not (len(procs) == 8 and all("HUNG" in x["flags"] for x in procs)):
            assert p.poll() is None and time.monotonic() - t0 < 100, open(log.name).read()[-3000:]
            time.sleep(0.1)
            procs = hung_jobs.top_processes(cli, shm)
        pid = {x["rank"]: x["pid"] for x in procs}
        os.kill(pid[3], 9)
        wait_dead(pid[3])
        ring = lambda r, u=owner, tail="": "collscope-%d-%s-r%s%s.ring" % (u, job, r, tail)
        live = [ring(r) for r in range(8) if r != 3]
        planted = {"bad_dead": ring(9, tail="-p%d" % pid[3]), "bad_live": ring(10, tail="-p%d" % pid[0]),
                   "foreign": ring(11, u=0)}
        for k, n in planted.items():
            path = os.path.join(shm, n)
            if k == "foreign":
                shutil.copyfile(os.path.join(shm, ring(3)), path)
            else:
                open(path, "wb").write(bytes(64))
            os.chmod(path, 0o600)
            if root:
                os.chown(path, owner, owner)
        assert ring_names(shm) == sorted(live + [ring(3)] + list(planted.values())), ring_names(shm)
        # a caller that is not root names only itself
        q = salvage_run(cli, ["--clean", "--job", job, "--uid", "0", "--shm-dir", shm, "-o", out],
                        user=owner if root else None)
        if owner != 0:
            assert q.returncode == 2 and "only root may" in q.stderr, q
        # the clean-up: rank 3 salvaged and removed, the dead unreadable ring removed, the live
        # ones untouched, the foreign one not even looked at
        q = salvage_run(cli, ["--clean", "--job", job, "--shm-dir", shm, "-o", out] +
                        (["--uid", str(owner)] if root else []))
        assert q.returncode == 0, q
        assert q.stdout.splitlines()[-1] == clean_line(job, owner, 1, 1, 1, 8, 0), q.stdout
        assert ring_names(shm) == sorted(live + [planted["bad_live"], planted["foreign"]]), ring_names(shm)
        files = os.listdir(out)
        assert files == ["collscope-simhost2-r3-p%d.salvage.jsonl" % pid[3]], files
        st, dst = os.lstat(os.path.join(out, files[0])), os.lstat(out)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (owner, os.lstat(dumps).st_gid if not root else owner,
                                                              0o600), (st.st_uid, st.st_gid, oct(st.st_mode))
        assert dst.st_uid == owner, dst.st_uid
        r = report(cli, out)
        assert r["summary"]["ops"] == 10 and r["summary"]["files_without_footer"] == 1, r["summary"]
        # the others end on SIGTERM, which the shim handles: their rings go with them
        for k in range(8):
            if k != 3:
                os.kill(pid[k], 15)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            for x in hung_jobs.top_processes(cli, shm):
                os.kill(x["pid"], 9)
            p.wait(timeout=60)
    print(open(log.name).read()[-1500:])
    assert ring_names(shm) == sorted([planted["bad_live"], planted["foreign"]]), ring_names(shm)
    # rank 0 is gone now: its unreadable neighbour goes too; the foreign one stays, whoever asks
    q = salvage_run(cli, ["--clean", "--job", job, "--shm-dir", shm, "-o", out] +
                    (["--uid", str(owner)] if root else []))
    assert q.returncode == 0 and q.stdout.splitlines()[-1] == clean_line(job, owner, 0, 0, 1, 0, 0), q
    if root:
        # (root's own rings go to a directory of root's: 65534's is refused)
        q = salvage_run(cli, ["--clean", "--job", job, "--shm-dir", shm, "-o", out])
        assert q.returncode == 1 and "neither root nor the rings' owner" in q.stderr, q
        q = salvage_run(cli, ["--clean", "--job", job, "--shm-dir", shm, "-o", out + "-root"])
        assert q.returncode == 0 and q.stdout.splitlines()[-1] == clean_line(job, 0, 0, 0, 0, 0, 1), q
    assert ring_names(shm) == [planted["foreign"]], ring_names(shm)
    assert os.listdir(out) == files, os.listdir(out)



def case_ring_pidns(cli, apps, tmp):
    # A job in another pid namespace (a container sharing /dev/shm): its rings carry pids of
    # that namespace, which here are gone or other processes. While it runs (hung at seq 10),
    # salvage --clean must leave every ring alone: the writers' heartbeats still advance.
    # Needs root (unshare); elsewhere it says so and checks nothing.
    cli, apps = os.path.abspath(cli), os.path.abspath(apps)
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("SKIP-ROOT: unshare --pid needs root; the pid-namespace path is not tested here")
        return
    shm, dumps, out = (os.path.join(tmp, x) for x in ("shm", "dumps", "salvaged"))
    os.makedirs(shm)
    job = "pidns%d" % os.getpid()
    env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS="hang:rank=5,seq=10",
               COLLSCOPE_HANG_TIMEOUT="2", COLLSCOPE_JOB_ID=job)
    cmd = ["unshare", "--pid", "--fork", "--mount-proc", cli, "run", "-n", "8", "--hosts", HOSTS, "--sim",
           "--no-kill-on-fail", "--", "timeout", "-s", "KILL", "120", os.path.join(apps, "dp_train"), "--steps", "20",
           "--size", "256K"]
    log = open(os.path.join(tmp, "job.log"), "w+")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        t0, procs = time.monotonic(), []
        while not (len(procs) == 8 and all("HUNG" in x["flags"] for x in procs)):
            assert p.poll() is None and time.monotonic() - t0 < 100, open(log.name).read()[-3000:]
            time.sleep(0.1)
            procs = hung_jobs.top_processes(cli, shm)
        print("pids in the job's namespace: %s" % sorted(x["pid"] for x in procs))
        before = ring_names(shm)
        q = salvage_run(cli, ["--clean", "--job", job, "--shm-dir", shm, "-o", out])
        assert q.returncode == 0, q
        assert q.stdout.splitlines()[-1] == clean_line(job, 0, 0, 0, 0, 8, 0), q.stdout
        assert ring_names(shm) == before, (ring_names(shm), before)
        assert not os.path.exists(out) or os.listdir(out) == [], os.listdir(out)
    finally:
        os.killpg(p.pid, 9)
        p.wait(timeout=60)



def case_ring_abort(cli, apps, tmp):
    # COLLSCOPE_SDC_ACTION=abort: the online exchange finds the flipped output of rank 2's seq
    # 13 and every rank exits with status 86; each had a ring, and each removed it on the way
    p, d, shm = run_job(cli, apps, tmp, "flip:rank=2,seq=13,elem=7,bit=30,at=out", steps=400, size="64K", n=4,
                        hosts="simhost[1-2]",
                        env_extra={"COLLSCOPE_ONLINE_EVERY": "8", "COLLSCOPE_SDC": "all", "COLLSCOPE_SDC_MIN_BYTES": "0",
                                   "COLLSCOPE_SDC_ACTION": "abort", "COLLSCOPE_LOG": "info"})
    made = re.findall(r"stats ring (\S+/collscope-\d+-\S+\.ring) \(", p.stdout)
    print("status %d, rings made: %d, left: %s" % (p.returncode, len(made), ring_names(shm)))
    assert p.returncode == 86 and "COLLSCOPE_SDC_ACTION=abort" in p.stdout, p.stdout[-3000:]
    assert len(made) == 4 and all(os.path.dirname(m) == shm for m in made), made
    assert ring_names(shm) == [], ring_names(shm)


if __name__ == "__main__":
    main()
