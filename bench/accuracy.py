#!/usr/bin/env python3
"""bench/accuracy.py: collscope's detection accuracy on the simulator's modeled clock
(docs/accuracy.md is this script's output; docs/detection.md explains the figures).

  accuracy.py --build BUILD --workload W --fault F --ranks N --seeds K [--json]
      [--noise 2|5t|10t] [--shape wire|bare]
      W: dp, fsdp, 3d, moe, accum, multicomm, hetero. F: none, slow:pct=P, intermittent:pct=P, host:pct=P, link, throttle,
      two, hang_host, hang_gpu, hang_kernel, compute:pct=P, hostdelay:pct=P, nic:pct=P. Prints one JSON object per (workload, fault,
      ranks, noise, shape): recall
      (the injected rank and host flagged), kind_ok (compute or link as injected), cause_ok
      (the report's `causes` name the injected cause; null where none is injected or the run
      has no health data), flag_after (per seed, instances from the fault's onset, the first
      delayed one counted as 1, to the first flag; null when missed), false_per_million
      (findings before the onset, or in a clean run, per 1M judged clean instances: those the
      detector's rules ran at) and judged_clean, plus mode (processes / in-process), collateral (seeds with a finding
      on a rank the fault did not touch) and wall_s.
  accuracy.py --build BUILD --sweep [--seeds K] [--results FILE]
      the whole sweep (plan() below), each row appended to FILE as it is done (rows already
      there are kept: a sweep can be run in parts).
  accuracy.py --build BUILD --sweep --machine [--seeds K] [--max-ranks N] [--min-ranks N] [--only MODE]
      [--workloads W,W] [--faults F,F] [--noises N,N]
      the machine faults (a GPU slower at its compute, a slow host, a slow NIC) and clean runs at
      every noise level, with and without the per-step wire latency (plan_machine() below).
  accuracy.py --generate docs/accuracy.md [--results FILE]   (bench/accuracy_page.py)
      the table of FILE's rows.

Up to 256 ranks run as real processes through the simulator (`collscope run --sim`,
COLLSCOPE_SIM_CLOCK=model, the shim timing every op with CUDA events, `collscope report
--json`); every workload also runs in process at 8 to 16,384 ranks
(bench/accuracy_driver.c and bench/accuracy_workloads.c: the simulator's cost model, linked,
fed into analysis/detect*.c, the detector the report and the online exchange link), and its
long clean in-process runs (--sweep) bring it to >= CLEAN_TARGET clean instances. In
process, `hetero`'s findings on the older GPU model's ranks come back apart (`explained`) and
are scored as the report's `gpu_model` cause; `pp1f1b` and `pp1f1b_x` (their 1F1B in
bench/accuracy_pipeline.c) are judged as the report judges a pipeline, the schedule and then
the peers' waits, and the findings those leave out come back apart and are scored as
explained, not false. Job shape (tests/stats): every ring step
300 us (`link:a=*,b=*,us=300`; --shape bare: without it), 2 ms of compute per bucket,
`jitter:pct=2` (--noise), seed K per run. Only rows of the detector as it is (current()) are
kept and shown.
Hangs run on the wall clock (the modeled clock never declares a hang: docs/simulator.md), each
job until `collscope top` shows its hung processes, then killed."""
import argparse, concurrent.futures, json, os, re, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import hung_jobs  # noqa: E402  (tests/hung_jobs.py: a hang job ends once collscope top shows it)
import accuracy_schedules as S  # noqa: E402  (bench/accuracy_schedules.py: the training-schedule rows)

QUIET = "link:a=*,b=*,us=300"
# noise levels: the simulator's jitter:pct=P,tail=T (each compute and collective instance
# 1 + P/100 u, u uniform in [-1, 1), plus T/100 an exponential draw of mean 1), and the
# driver's --jitter/--tail
NOISES = {"2": (2, 0), "5t": (5, 5), "10t": (10, 10)}
NOISE_NAMES = {"2": "2%", "5t": "5% + tail 5%", "10t": "10% + tail 10%"}
# job shapes: `wire` every ring step 300 us more (QUIET: the model, not the host, sets the
# arrivals; a 64-rank AllReduce then takes ~38 ms), `bare` the cost model alone (~1 ms)
SHAPES = {"wire": 300, "bare": 0}
# a step's compute per rank (us) of the apps whose host delay runs as processes: hostdelay:pct=P
# is P% of it after each step's synchronize
STEP_US = {"dp": 6000, "hetero": 6000}
# in process (bench/accuracy_driver.c): steps of a fault run, >= 100 instances of the
# culprit's communicators after the onset
STEPS = {"dp": 40, "3d": 30, "moe": 24, "fsdp": 16, "accum": 440, "multicomm": 120, "hetero": 40, "pp1f1b": 30,
         "pp1f1b_x": 30}


def app_cmd(w, n, steps=None, fault="none"):
    """the zoo app (tests/apps) that runs workload w as processes, its arguments and extra
    environment; steps: >= ~110 instances of the culprit's busiest communicator"""
    if w in S.WORKLOADS:
        return S.app_cmd(w, fault, n, steps)
    if w == "dp":
        return "dp_train", ["--steps", str(steps or 40), "--size", "256K", "--compute-us", "2000"], {}
    if w == "hetero":  # simhost2's GPUs are an older, half-speed model
        return "dp_train", ["--steps", str(steps or 40), "--size", "256K", "--compute-us", "2000"], {
            "COLLSCOPE_SIM_GPU_MODEL": "simhost2=NVIDIA A100-SXM4-80GB,speed=0.5"}
    if w == "fsdp":
        return "fsdp", ["--steps", str(steps or 16), "--size", "256K", "--layers", "4", "--compute-us", "2000"], {}
    if w == "3d":
        tp, pp = (2, 2) if n == 8 else (4, 4)
        return "train3d", ["--steps", str(steps or 16), "--size", "64K", "--tp", str(tp), "--pp", str(pp),
                           "--microbatches", "4", "--compute-us", "1000"], {}
    if w == "moe":
        return "moe", ["--steps", str(steps or 120), "--size", "64K", "--compute-us", "2000"], {}
    if w == "accum":
        return "accum", ["--steps", str(steps or 440), "--accum", "4", "--size", "256K", "--compute-us", "500"], {}
    if w == "multicomm":
        return "multicomm", ["--steps", str(steps or 120), "--size", "256K", "--comms", "4", "--compute-us", "2000"], {}
    return None
HANG_SEQ = 20
FAULTS = ["none", "slow:pct=20", "slow:pct=5", "slow:pct=2", "intermittent:pct=20", "host:pct=20", "link",
          "throttle", "two", "hang_host", "hang_gpu", "hang_kernel"]
WORKLOADS = ["dp", "fsdp", "3d", "moe", "accum", "multicomm", "hetero"]
DRIVER_WORKLOADS = WORKLOADS  # every workload runs in process too
SCALES = [8, 64, 256, 4096, 16384]
CLEAN_TARGET = 1000000  # judged clean instances per workload, in process
MIN_INSTANCES = 10  # the detector's min_instances (analysis/detect.c): the rules run from the 10th instance
BARS = {20: 12, 5: 30, 2: 100}  # slowdown % -> instances to the first flag


def ranks_per_host(n):
    return 2 if n == 8 else 8


def culprits(fault, n):
    """the ranks the fault touches and their host (bench/accuracy_driver.c picks the same)"""
    c = 5 if n == 8 else n // 2 + 5
    c2 = 1 if n == 8 else n // 4 + 1
    h = c // ranks_per_host(n)
    kind = fault.split(":")[0]
    if kind in ("none", "link"):
        return [], None
    if kind == "nic":  # the culprit's host's NIC: no rank to blame
        return [], "simhost%d" % (h + 1)
    if kind == "host":
        return list(range(h * ranks_per_host(n), (h + 1) * ranks_per_host(n))), "simhost%d" % (h + 1)
    if kind == "two":
        return sorted([c, c2]), "simhost%d" % (h + 1)
    return [c], "simhost%d" % (h + 1)


def pct_of(fault):
    m = re.search(r"pct=([0-9.]+)", fault)
    return float(m.group(1)) if m else None


# ---------------------------------------------------------------- in process

def run_driver(b, w, fault, n, seed, steps=None, min_instances=0, noise="2", shape="wire"):
    cmd = [os.path.join(b, "bench", "accuracy_driver"), "--workload", w, "--fault", fault, "--ranks", str(n),
           "--seed", str(seed), "--steps", str(steps or STEPS[w]), "--jitter", str(NOISES[noise][0]),
           "--tail", str(NOISES[noise][1]), "--wire-us", str(SHAPES[shape])]
    if min_instances:
        cmd += ["--min-instances", str(min_instances)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit("accuracy_driver failed: %s %s" % (" ".join(cmd), p.stderr))
    r = json.loads(p.stdout)
    hangs = [{"missing_ranks": h["missing"], "unstarted_ranks": h["unstarted"], "stuck": h["stuck"]} for h in r["hangs"]]
    st = [dict(s, causes=None) for s in r["stragglers"]]
    # the ranks on a GPU model other than the job's majority: the report's `gpu_model` cause
    st += [dict(s, causes=[{"kind": "gpu_model"}]) for s in r["explained"]]
    # a job with Send/Recv: the findings the report leaves out, as it judges them
    # (tools/report/report_agg.c): the pipeline's stage order explains them, or a flagged peer's wait
    st += [dict(s, causes=[{"kind": "schedule"}]) for s in r.get("explained_by_schedule", [])]
    st += [dict(s, causes=[{"kind": "peer_wait"}]) for s in r.get("moved_to_peer", [])]
    st += [dict(s, causes=[{"kind": "comm_elsewhere"}]) for s in r.get("explained_by_comm_elsewhere", [])]
    return {"instances": r["instances"], "judged": r["judged"], "stragglers": st, "hangs": hangs, "onset": None,
            "slow_links": [], "report_judged": "explained_by_comm_elsewhere" in r}


# ---------------------------------------------------------------- real processes

def sim_faults(fault, n, w="dp", noise="2", shape="wire"):
    kind = fault.split(":")[0]
    comm = ",comm=1" if w == "3d" else ""  # train3d: the world (0) carries nothing, TP is 1
    cs, chost = culprits(fault, n)
    p = pct_of(fault)
    jp, jt = NOISES[noise]
    f = ([QUIET] if SHAPES[shape] else []) + ["jitter:pct=%g%s" % (jp, ",tail=%g" % jt if jt else "")]
    if w in S.WORKLOADS:
        return S.sim_faults(w, fault, n, f)
    m = re.search(r"from=(\d+)", fault)  # a later onset: slow:pct=P,from=S (S: the culprit's seq)
    if kind == "slow":
        f.append("slow:rank=%d,pct=%g%s" % (cs[0], p, ",from=%s" % m.group(1) if m else ""))
    elif kind == "intermittent":  # every other collective of each of its communicators
        f.append("slow:rank=%d,pct=%g,every=2" % (cs[0], p))
    elif kind in ("host", "two"):
        f += ["slow:rank=%d,pct=%g" % (r, p or 20) for r in cs]
    elif kind == "link":
        f.append("link:a=simhost1,b=simhost2,us=3000")
    elif kind == "compute":  # its GPU's compute P% slower, from collective 3 (dp: the second step)
        f.append("slow:rank=%d,compute=%g,from=3" % (cs[0], p))
    elif kind == "hostdelay":  # its host P% of a step's compute late after each step's synchronize
        if w not in STEP_US:
            return None
        f.append("hostdelay:rank=%d,us=%d,from=3" % (cs[0], round(p / 100.0 * STEP_US[w])))
    elif kind == "nic":  # its host's NIC at 1 / (1 + P/100) of the bandwidth
        f.append("nic:host=%s,pct=%g" % (chost, p))
    elif kind == "throttle":
        f.append("throttle:rank=%d,reason=thermal,pct=30,seq=2" % cs[0])
    elif kind == "hang_host":  # on the culprit's first communicator with collectives
        f.append("stall:rank=%d,seq=%d%s" % (cs[0], HANG_SEQ, comm))
    elif kind == "hang_gpu":  # its GPU hangs in its own work after seq 19: seq 20 never starts there
        f.append("gpuhang:rank=%d,seq=%d%s" % (cs[0], HANG_SEQ, comm))
    elif kind == "hang_kernel":  # its stream blocks inside seq 20's kernel, started like its peers'
        f.append("hang:rank=%d,seq=%d%s" % (cs[0], HANG_SEQ, comm))
    elif kind != "none":
        return None
    return ";".join(f)


def comm_seqs(d):
    """(comm, rank) -> the seqs of its collectives (not Send/Recv) in the dumps of d"""
    v = {}
    for f in os.listdir(d):
        if not f.endswith(".jsonl"):
            continue
        with open(os.path.join(d, f)) as fh:
            for line in fh:
                if '"type":"op"' not in line:
                    continue
                o = json.loads(line)
                if o.get("op") in ("Send", "Recv") or o.get("seq", -1) < 0:
                    continue
                v.setdefault((o["comm"], o["rank"]), []).append(o["seq"])
    return v


HANG_LIMIT_S = 120  # bounds a hang run whose shims never report
HANG_SETTLE_S = 3   # the hung processes' set unchanged this long: every rank that will report has


def run_until_hung(cmd, env, cli, shm):
    """A hang job runs until `collscope top` shows processes flagged HUNG (each shim writes its
    hang record and flushes its dump before its ring says so) and that set has not grown for
    HANG_SETTLE_S, then every rank still alive is SIGKILLed, as a scheduler would: the figures
    follow the shims' reports, however slowly the host gets there."""
    log = tempfile.TemporaryFile("w+")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    seen = {"hung": set(), "since": time.monotonic()}

    def settled(now):
        if now - seen["hung"]:
            seen["hung"], seen["since"] = seen["hung"] | now, time.monotonic()
            return False
        return bool(seen["hung"]) and time.monotonic() - seen["since"] >= HANG_SETTLE_S

    hung_jobs.kill_when_hung(p, cli, shm, settled, poll=0.2)
    p.wait(timeout=HANG_LIMIT_S + 60)
    log.seek(0)
    return subprocess.CompletedProcess(cmd, p.returncode, log.read())


def run_processes(b, w, fault, n, seed, steps=None, noise="2", shape="wire"):
    faults = sim_faults(fault, n, w, noise, shape)
    app = app_cmd(w, n, steps, fault)
    if app is None or faults is None:
        return None
    hang = fault.startswith("hang")
    tmp = tempfile.mkdtemp(prefix="cs-acc-")
    try:
        out, shm = os.path.join(tmp, "d"), os.path.join(tmp, "shm")
        os.makedirs(shm)
        env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_SIM_FAULTS=faults,
                   COLLSCOPE_SIM_SEED=str(seed), COLLSCOPE_TIMING="events", COLLSCOPE_EVENT_SAMPLE="1",
                   NCCL_DEBUG="INFO", NCCL_NET_PLUGIN=os.path.join(b, "shim", "libcollscope.so"),
                   COLLSCOPE_NET_INNER="simnet")  # the NCCL_NET wrapper times the inter-host pairs
        if hang:
            env["COLLSCOPE_HANG_TIMEOUT"] = "2"
        else:
            env["COLLSCOPE_SIM_CLOCK"] = "model"
        cli = os.path.join(b, "tools", "collscope")
        cmd = [cli, "run", "-n", str(n), "--hosts", "simhost[1-%d]" % (n // ranks_per_host(n)), "--sim",
               "--no-kill-on-fail", "--"]
        if hang:
            cmd += ["timeout", "-s", "KILL", str(HANG_LIMIT_S)]
        env.update(app[2])
        cmd += [os.path.join(b, "tests", "apps", app[0])] + app[1]
        if hang:
            p = run_until_hung(cmd, env, cli, shm)
        else:
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
        if p.returncode and not hang:
            sys.exit("job failed (%d): %s" % (p.returncode, p.stdout[-3000:]))
        r = subprocess.run([cli, "report", out, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            sys.exit("report failed: %s" % r.stderr)
        rep = json.loads(r.stdout)
        onsets = [int(s) for s in re.findall(r"slow fault: rank \d+ first stall \d+ us, before seq (\d+)", p.stdout)]
        onset = min(onsets) if onsets else dict({"throttle": 2, "compute": 3, "hostdelay": 3}, **S.ONSETS).get(fault.split(":")[0])
        hangs = [{"missing_ranks": h.get("missing_ranks", []), "unstarted_ranks": h.get("unstarted_ranks", []),
                  "stuck": len(h.get("stuck_ranks", []))}
                 for h in rep.get("hangs", [])]
        seqs = comm_seqs(out) if onset is not None else {}
        st = []
        for s in rep["stragglers"]:
            after = None
            if onset is not None and s["rank"] >= 0:
                # the comm's collective instances from the onset to the first flag, both counted
                # (seq counts Send/Recv calls too; the detector's instances do not)
                # (a finding at a communicator of Send/Recv alone, whose instances are groups of
                # them, has none of these: no count, neither a delay nor a flag before the onset)
                v = seqs.get((s["comm"], s["rank"]), [])
                after = sum(1 for q in v if onset <= q <= s["first_flag_seq"]) if v else None
                if v and s["first_flag_seq"] < onset:
                    after = 0
                if s.get("rule") == "stage":
                    after = None  # the schedule's verdict over the whole job: no flag instance
            st.append({"rank": s["rank"], "host": s["host"], "kind": s["kind"], "after": after,
                       "first_flag_instance": s["first_flag_instance"], "causes": s.get("causes") or []})
        slow = [(x["src_host"], x["dst_host"]) for x in rep.get("slow_links", [])]
        nics = [x["host"] for x in rep.get("slow_nics", [])]
        return {"instances": rep["summary"]["instances"], "judged": rep["summary"]["judged_instances"], "stragglers": st, "hangs": hangs, "onset": onset,
                "slow_links": slow, "slow_nics": nics, "net": True, "report": rep}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- scoring

def explained(s):
    """a straggler the report explains: by the GPU inventory (an older, slower model: hetero), by
    the pipeline's stage order, by its wait for a flagged peer, or by its longer communication
    elsewhere (in process: the report leaves those three out, tools/report/report_agg.c)"""
    return any(c.get("kind") in ("gpu_model", "schedule", "peer_wait", "comm_elsewhere")
               for c in (s.get("causes") or []))


def score(fault, n, runs):
    cs, chost = culprits(fault, n)
    kind = fault.split(":")[0]
    rec = kok = cok = coll = expl = 0
    cause_n = 0
    after, false, clean = [], 0, 0
    for r in runs:
        st = [s for s in r["stragglers"]]
        ranked = [s for s in st if s["rank"] >= 0]
        if kind == "none":
            clean += r["judged"]
            false += len([s for s in st if not explained(s)]) + len(r["hangs"]) + len(r["slow_links"]) + len(r.get("slow_nics", []))
            expl += len([s for s in st if explained(s)])
            continue
        # before the onset the job is clean: findings there are false
        pre = [s for s in st if s["rank"] >= 0 and s.get("after") is not None and s["after"] <= 0 and not explained(s)]
        false += len(pre)
        if r.get("onset") is not None:  # the instances judged before the onset: from the min_instances'th
            clean += max(0, r["onset"] - (MIN_INSTANCES - 1))
        if kind in ("link", "nic"):
            # named: the NCCL_NET wrapper's slow pair, the comm's link entry (rank -1), or (nic) its
            # host among the wrapper's slow NICs
            ends = {"simhost1", "simhost2"} if kind == "link" else {chost}
            pair = ({("simhost1", "simhost2"), ("simhost2", "simhost1")} if kind == "link" else
                    {x for x in r["slow_links"] if chost in x})
            named = (bool(set(r["slow_links"]) & pair) or any(s["kind"] == "link" and s["rank"] < 0 for s in st) or
                     (kind == "nic" and chost in r.get("slow_nics", [])))
            on_end = [s for s in ranked if s["kind"] == "compute" and s["host"] in ends]
            rec += named
            kok += named and not on_end
            nics = r.get("slow_nics", [])
            if r.get("net") and (r["slow_links"] or nics or any(s["rank"] < 0 for s in st)):  # the wrapper's pairs
                cause_n += 1  # the cause: the slow pair alone (a link), or the host's NIC (a NIC)
                cok += ((bool(r["slow_links"]) and set(r["slow_links"]) <= pair and not nics) or
                        (kind == "nic" and nics == [chost]))
            # a finding the fault did not cause: on a host off the link's ends (the NIC's host), or
            # `compute` on one (kind_ok's miss too); one of kind link on an end is the fault's own
            coll += any(not explained(s) and (s["host"] not in ends or s["kind"] == "compute") for s in ranked)
            after.append(None)
            continue
        if kind in HANGS:  # the culprit named alone: as missing (its host) or unstarted (its GPU)
            named = any(h["missing_ranks"] + h["unstarted_ranks"] == cs for h in r["hangs"])
            rec += named
            kok += named
            after.append(None)
            continue
        hit = [s for s in ranked if s["rank"] in cs and s["host"] == "simhost%d" % (s["rank"] // ranks_per_host(n) + 1)]
        need = len(cs) if kind == "two" else 1
        got = len({s["rank"] for s in hit})
        ok = got >= need
        rec += ok
        kok += ok and all(s["kind"] == "compute" for s in hit)
        coll += any(s["rank"] not in cs and not explained(s) for s in ranked)
        fa = [s["after"] for s in hit if s.get("after") is not None and s["after"] > 0]
        after.append(min(fa) if ok and fa else None)
        if kind == "throttle" and any(s["causes"] is not None for s in hit):
            cause_n += 1
            cok += any(c.get("kind") == "thermal" for s in hit for c in (s["causes"] or []))
    k = len(runs)
    res = {"recall": None if kind == "none" else rec / k, "kind_ok": None if kind == "none" else kok / k,
           "cause_ok": cok / cause_n if cause_n else None, "flag_after": after if kind != "none" else [],
           "false_per_million": (false / clean * 1e6) if clean else None, "judged_clean": clean,
           "collateral": None if kind == "none" else coll / k, "explained": expl}
    return res


# A 2% straggler's bar is 100 instances: in 3d the communicator that shows it is the
# culprit's data-parallel one (its tensor-parallel pair halves the offset under the floor,
# docs/detection.md), one instance a step, so those rows run long enough to show 100 of it.
LONG_STEPS = {("3d", "slow:pct=2"): 110}
# 256 ranks as processes cost 2-5 minutes a seed on a 2-core host: a clean or slow-link run
# needs no onset, so it runs 16 steps (48 instances a seed; the in-process rows give each
# workload its 1M clean instances). A row run with other than its workload's steps says so
# (`steps`), and the page lists them.
SHORT_STEPS = {("dp", "none", 256): 16, ("dp", "link", 256): 16}


def steps_for(w, fault, n, max_proc):
    if n <= max_proc and (w, fault, n) in SHORT_STEPS:
        return SHORT_STEPS[(w, fault, n)]
    return LONG_STEPS.get((w, fault))


def evaluate(b, w, fault, n, seeds, max_proc, steps=None, min_instances=0, noise="2", shape="wire"):
    t0 = time.monotonic()
    steps = steps or steps_for(w, fault, n, max_proc)
    runs, mode = [], "in-process"
    if n <= max_proc:
        for s in range(1, seeds + 1):
            r = run_processes(b, w, fault, n, s, steps, noise, shape)
            if r is None:
                break
            mode = "processes"
            runs.append(r)
    if mode == "in-process":  # one driver a CPU: each seed is one single-threaded process
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as ex:
            runs = list(ex.map(lambda s: run_driver(b, w, fault, n, s, steps, min_instances, noise, shape),
                               range(1, seeds + 1)))
    o = {"workload": w, "fault": fault, "ranks": n, "seeds": seeds, "mode": mode, "noise": noise, "shape": shape,
         "detector": DETECTOR}
    if mode != "processes":
        o["model"] = DRIVER_MODEL.get(w, 1)
    if fault in HANGS:
        o["hang_model"] = HANG_MODEL
    o.update(S.score(w, fault, n, runs, ranks_per_host(n)) if w in S.WORKLOADS else score(fault, n, runs))
    if steps:
        o["steps"] = steps
    if mode == "in-process":  # the driver judged the findings as the report does (all of them)
        o["report_judged"] = all(r.get("report_judged") for r in runs)
    o["instances"] = sum(r["instances"] for r in runs)
    o["judged"] = sum(r["judged"] for r in runs)
    o["wall_s"] = round(time.monotonic() - t0, 2)
    return o


CORE = ["none", "slow:pct=20", "slow:pct=5", "slow:pct=2", "link"]
MORE = ["intermittent:pct=20", "host:pct=20", "throttle", "two"]
HANGS = ["hang_host", "hang_gpu", "hang_kernel"]
# the hang faults' version: 2, the shims' start events tell a GPU that never reached the hung op
# (`unstarted`), and hang_gpu is a GPU hung in its own work before the op (the simulator's
# gpuhang:), hang_kernel one hung inside the op's kernel (its `hang:`); 1: hang_gpu was `hang:`
HANG_MODEL = 2


def plan(seeds):
    """(workload, ranks, fault, seeds, max process ranks): the sweep, most telling first"""
    p = []
    for w in WORKLOADS:
        p += [(w, 8, f, seeds, 256) for f in CORE]
    for w in ("dp", "3d", "moe"):
        p += [(w, 8, f, seeds, 256) for f in MORE]
    for w in DRIVER_WORKLOADS:
        for n in SCALES:
            p += [(w, n, f, seeds, 0) for f in FAULTS]
    for w in ("dp", "3d"):
        p += [(w, 8, f, seeds, 256) for f in HANGS]
    for w in ("dp", "3d", "moe"):
        p += [(w, 64, f, seeds, 256) for f in ("none", "slow:pct=5", "link")]
    p += [("dp", 256, f, seeds, 256) for f in ("slow:pct=5", "none", "link")]
    return p


# the machine's faults (a GPU slower at its own compute, a host late to enqueue, a NIC at
# lower bandwidth) at each noise level, with and without the per-step wire latency
MACHINE = ["none", "compute:pct=20", "hostdelay:pct=20", "nic:pct=20"]
ENVS = [(nz, sh) for nz in ("2", "5t", "10t") for sh in ("wire", "bare")]
MACHINE_SCALES = [8, 64, 256, 1024, 4096, 16384]


def plan_machine(seeds):
    """(workload, ranks, fault, seeds, max process ranks, noise, shape): dp's machine faults as
    processes at 8 ranks and in process at every scale; every workload clean and 20% compute
    slow in process at 8 to 1,024 ranks and at 16,384"""
    p = []
    for nz, sh in ENVS:
        p += [("dp", 8, f, seeds, 8, nz, sh) for f in MACHINE]
    for nz, sh in ENVS:
        for n in MACHINE_SCALES:
            p += [("dp", n, f, seeds, 0, nz, sh) for f in MACHINE]
    for nz, sh in ENVS:
        for w in WORKLOADS:
            if w != "dp":
                for n in (8, 64, 1024, 16384):
                    p += [(w, n, f, seeds, 0, nz, sh) for f in ("none", "compute:pct=20")]
    return p


# the detector's verdicts' version: bumped whenever a rule changes what it flags, so that the rows
# of an older detector drop out of the page. 3: the share-last rule over fresh draws (an instance
# naming a last rank right after a tie), the gap bound of a rank whose gap excess explains its
# offset on its least gap, a pair's sign test a binomial tail within offset_z (docs/detection.md).
# 4: the offset rule over fresh draws, offsets against the members within 5 robust sigmas, the
# kind's gap excess paired per instance, the cost rule charging a delay carried through queued ops once
# 5: the offset rule over fresh draws with a rank test whose level is corrected for the members
# judged, from 8 members; the slow-link entry's floor 5 standard errors below its median. 6: the
# recent rule's median above the noise term of its own 16 instances (5 standard errors of a median
# of that many of the members' offsets), not the window's
DETECTOR = 6
# the page keeps rows of detector 5 not yet run on 6, marked: 6 differs from it only where the
# recent rule flagged a rank whose median offset over its 16 instances was within that noise term
# (a flag held back or later; docs/accuracy.md says which rows)
SHOWN_EARLIER = 5


# the in-process driver's model of a workload, when it was revised (a row of an earlier model
# is not current): 3d 2 = 1F1B with each Send meeting its Recv (bench/accuracy_pipeline.c),
# judged against its recovered schedule (1: Sends and Recvs unmatched, a fixed fill and drain)
DRIVER_MODEL = {"3d": 2}


def current(o, detectors=(DETECTOR,)):
    """a row of the detector as it is (DETECTOR) and, in process, of the workload's model as it is"""
    if o["fault"] in HANGS and o.get("hang_model", 1) != HANG_MODEL:
        return False
    return o.get("detector") in detectors and (o["mode"] == "processes" or
                                               o.get("model", 1) == DRIVER_MODEL.get(o["workload"], 1))


def shown(o):
    """a row the page shows: current, or of SHOWN_EARLIER where none is (marked)"""
    return current(o, (DETECTOR, SHOWN_EARLIER))


def key(o):
    return (o["workload"], o["ranks"], o["fault"], o["seeds"], o["mode"], o.get("noise", "2"), o.get("shape", "wire"))


def sweep(a):
    """run the plan, appending each result to a.results (JSON lines); rows already there are
    kept, so a sweep can be run in parts"""
    have = {}
    if os.path.exists(a.results):
        for line in open(a.results):
            o = json.loads(line)
            if current(o):
                have[key(o)] = o
    todo = plan_machine(a.seeds) if a.machine else [x + ("2", "wire") for x in plan(a.seeds)]
    if a.family:  # only these workloads' rows; the training schedules' from their own plan
        fam = a.family.split(",")
        todo = [x for x in (S.plan(a.seeds) if set(fam) <= set(S.WORKLOADS + S.DRIVER_WORKLOADS) else todo)
                if x[0] in fam]
    if a.long:
        todo = []
    for w, n, f, k, mp, nz, sh in todo:
        mode = "processes" if n <= mp and run_processes_ok(w, f) else "in-process"
        if (w, n, f, k, mode, nz, sh) in have or (a.only and a.only != mode) or (a.max_ranks and n > a.max_ranks):
            continue
        if (a.workloads and w not in a.workloads.split(",")) or (a.faults and f not in a.faults.split(",")):
            continue
        if (a.min_ranks and n < a.min_ranks) or (a.noises and nz not in a.noises.split(",")):
            continue
        o = evaluate(a.build, w, f, n, k, mp, noise=nz, shape=sh)
        with open(a.results, "a") as fh:
            fh.write(json.dumps(o) + "\n")
        print(json.dumps(o), flush=True)
    longs = a.long.split(",") if a.long else DRIVER_WORKLOADS
    for w in longs if a.only != "processes" and not a.machine and not a.no_long and not a.family else []:
        for n, nz in ((n, nz) for n in (8, 64) for nz in (a.noises.split(",") if a.noises else ("2", "5t", "10t"))):
            o = {"workload": w, "ranks": n, "fault": "none", "seeds": a.seeds, "mode": "in-process-long", "noise": nz,
                 "shape": "wire"}
            if key(o) in have:
                continue
            o = evaluate(a.build, w, "none", n, a.seeds, 0, steps=1, min_instances=CLEAN_TARGET // (2 * a.seeds) + 1,
                         noise=nz)
            o["mode"] = "in-process-long"
            with open(a.results, "a") as fh:
                fh.write(json.dumps(o) + "\n")
            print(json.dumps(o), flush=True)
    return 0


def run_processes_ok(w, f):
    return app_cmd(w, 8, fault=f) is not None and sim_faults(f, 8, w) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workload", choices=WORKLOADS + S.WORKLOADS + S.DRIVER_WORKLOADS, default="dp")
    ap.add_argument("--fault", default="none")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--noise", choices=sorted(NOISES), default="2",
                    help="jitter: 2 (2%%), 5t (5%% + tail 5%%), 10t (10%% + tail 10%%)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="wire",
                    help="wire: every ring step 300 us more (link:a=*,b=*,us=300); bare: the cost model alone")
    ap.add_argument("--max-process-ranks", type=int, default=256)
    ap.add_argument("--generate", metavar="FILE")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--machine", action="store_true", help="--sweep: the machine-fault and noise rows (plan_machine)")
    ap.add_argument("--max-ranks", type=int, default=0, help="--sweep: only rows of at most this many ranks")
    ap.add_argument("--min-ranks", type=int, default=0, help="--sweep: only rows of at least this many ranks")
    ap.add_argument("--workloads", metavar="W,W", help="--sweep: only rows of these workloads")
    ap.add_argument("--noises", metavar="N,N", help="--sweep: only rows of these noise levels (2, 5t, 10t)")
    ap.add_argument("--faults", metavar="F,F", help="--sweep: only rows of these faults (as written: compute:pct=20)")
    ap.add_argument("--no-long", action="store_true", help="--sweep: without the long clean in-process runs")
    ap.add_argument("--long", metavar="W,W", help="--sweep: only the long clean in-process runs of these workloads")
    ap.add_argument("--family", metavar="W,W", help="--sweep: only the rows of these workloads (the training "
                    "schedules': bench/accuracy_schedules.py plan())")
    ap.add_argument("--only", choices=["processes", "in-process"], help="--sweep: only these rows")
    ap.add_argument("--results", default="bench/accuracy_results.jsonl",
                    help="the sweep's rows, one JSON object a line (--sweep appends, --generate reads)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if a.sweep:
        return sweep(a)
    if a.generate:
        import accuracy_page  # bench/accuracy_page.py: the page from the rows
        return accuracy_page.generate(a)
    o = evaluate(a.build, a.workload, a.fault, a.ranks, a.seeds, a.max_process_ranks, a.steps, noise=a.noise,
                 shape=a.shape)
    print(json.dumps(o) if a.json else "\n".join("%s: %s" % kv for kv in o.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
