#!/usr/bin/env python3
"""tests/profiler/test_profiler_sim.py: the NCCL profiler plugin mode end to end on the
simulator. Ranks of tests/integration/shim_probe (linked against the real -lnccl -lcudart,
run on the sim) with libcollscope LD_PRELOADed; the sim's libnccl.so.2 loads the plugin named
by NCCL_PROFILER_PLUGIN, which collscope sets to itself under COLLSCOPE_TIMING=auto.

cases:
  auto       v5 (NCCL 2.28 model): AllReduce/Broadcast/Reduce/AllGather/ReduceScatter/Send/Recv
             timed "profiler" (sane start/end, algo Ring, proto Simple, nchannels 2 / 1),
             AlltoAll/Gather/Scatter keep "gpu_event"; same op records as the events mode
  v4         COLLSCOPE_SIM_PROFILER_ABI=4 (NCCL 2.27 model): the same through ncclProfiler_v4
  capture    graph-captured ops stay "captured" in auto mode, the others are profiler-timed
  failopen   plugin never initialised (ABI=3: an NCCL without v4/v5; a user-set plugin path
             that does not load): auto keeps the CUDA event path; results unchanged
  probation  the default (COLLSCOPE_TIMING unset = auto) with COLLSCOPE_PROFILER_PROBES=8: per
             op type the first ops are event-timed probes compared with the plugin's stamps,
             then the plugin alone times every later op of that type (a clean switch by
             seq); log says "trusted"; the dump footer says so
  reject     the sim sends wrong kernel stamps (COLLSCOPE_SIM_PROFILER_FAULT=nokch|long|skew):
             the probation rejects the plugin, every op keeps "gpu_event", one log line per
             op type names the reason; results unchanged; nokch:Broadcast: only Broadcast
             keeps events (footer "mixed")
  nonblocking  ops of a non-blocking communicator keep CUDA events (the same job on
             blocking ones is plugin-timed)
  revoke     after trust, NCCL stops sending AllReduce events (sim stop=40:AllReduce): 8
             host-timed AllReduce records, then CUDA events again; one WARN line
  v5         COLLSCOPE_SIM_PROFILER_ABI=5 (NCCL 2.28 model): through ncclProfiler_v5 (the default,
             ABI 6, is NCCL 2.29+: ncclProfiler_v6)
  chain      a small plugin of the test's own (example_inner.c, writes its events to a file)
             loaded by collscope (COLLSCOPE_PROFILER_INNER=example), and by `auto` when
             NCCL_PROFILER_PLUGIN=example is set at start-up: its file has exactly the lines it
             writes when NCCL loads it alone, and collscope's records are profiler-timed as
             without it; one INFO line per process for the auto chaining
  chain-v5   the same through ncclProfiler_v5 (ABI=5), the inner asking for Coll only
  chain-ce   copy-engine AllGather (COLLSCOPE_SIM_PROFILER_CE=1, v6): the inner, asking for
             CeColl too, sees the same CeColl events as alone; collscope times those AllGathers
             with CUDA events on the stream NCCL names (gpu_event), the others by the plugin
  chain-fail the inner's init fails / the library has no profiler symbols / the path does not
             load: one WARN line per process says it is dropped, collscope keeps timing
The auto, v4 and capture cases set COLLSCOPE_PROFILER_PROBES=0 (trust at once) to check
the plugin-timed records from the first op on.
"""
import argparse
import collections
import glob
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

FAILS = []
PROF_OPS = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "Send", "Recv"}


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL: " + msg, file=sys.stderr)
    return cond


def run(args, scenario, env_extra, n=2):
    work = tempfile.mkdtemp(prefix="cs-prof-")
    dump = os.path.join(work, "dump")
    probe_dir = os.path.join(work, "probe")
    os.makedirs(probe_dir)
    procs = []
    for r in range(n):
        env = dict(os.environ)
        for k in ("LD_PRELOAD", "NCCL_PROFILER_PLUGIN", "COLLSCOPE_TIMING", "COLLSCOPE_SIM_PROFILER_ABI",
                  "COLLSCOPE_PROFILER_PROBES", "COLLSCOPE_SIM_PROFILER_FAULT", "COLLSCOPE_LOG", "NCCL_COMM_BLOCKING",
                  "COLLSCOPE_PROFILER_INNER", "COLLSCOPE_SIM_PROFILER_CE", "EXAMPLE_INNER_OUT", "EXAMPLE_INNER_MASK",
                  "EXAMPLE_INNER_FAIL"):
            env.pop(k, None)
        env.update({
            "RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": str(n),
            "COLLSCOPE_HOSTNAME": "h1", "PROBE_DIR": probe_dir, "COLLSCOPE_DIR": dump,
            "COLLSCOPE_JOB_ID": "proftest", "COLLSCOPE_RING": "0",
            "LD_LIBRARY_PATH": args.sim_dir + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
            "LD_PRELOAD": args.shim,
            # every op left to CUDA events is timed: the checks below are per op (the sampled
            # event path has its own tests, stats-sim-sampled_counts)
            "COLLSCOPE_EVENT_SAMPLE": "1",
        })
        if getattr(args, "example", None):
            env["LD_LIBRARY_PATH"] = os.path.dirname(args.example) + ":" + env["LD_LIBRARY_PATH"]
        env.update(env_extra)
        env = {k: v for k, v in env.items() if v is not None}  # None: unset
        procs.append(subprocess.Popen([args.probe, scenario], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
            check(False, "rank timed out (%s %s)" % (scenario, env_extra))
        outs.append((p.returncode, o, e))
    recs = {}
    for f in glob.glob(os.path.join(dump, "*.jsonl")):
        lines = [json.loads(l) for l in open(f) if l.strip()]
        recs[lines[0]["rank"]] = lines
    shutil.rmtree(work, ignore_errors=True)
    for r, (rc, o, e) in enumerate(outs):
        check(rc == 0, "%s %s rank %d rc %d: %s" % (scenario, env_extra, r, rc, e[-1500:]))
    return outs, recs


def ops(recs):
    return [x for x in recs if x.get("type") == "op"]


def key(x):
    return (x["comm_size"], x["seq"], x["op"], x["count"], x["group"] > 0, x["status"])  # comm ids are per run


def check_profiler_records(recs, label, v_expect_profiler=True):
    n_prof = 0
    for r, lines in recs.items():
        for x in ops(lines):
            if x["status"] != 0:
                continue
            if x["captured"]:
                check(x["timing"] == "captured", "%s rank %d captured op timing %s" % (label, r, x["timing"]))
                continue
            if x.get("graph"):  # a graph replay: the events collscope set on the graph's nodes time it
                # (the profiler plugin gets no kernel events on a replay: tests/sim/nccl/profiler.c)
                check(x["timing"] == "gpu_event" and x.get("replay", 0) >= 1,
                      "%s rank %d replay %s timing %s" % (label, r, x.get("replay"), x["timing"]))
                continue
            if x["op"] in PROF_OPS and v_expect_profiler:
                if not check(x["timing"] == "profiler", "%s rank %d %s seq %s timing %s" %
                             (label, r, x["op"], x["seq"], x["timing"])):
                    continue
                n_prof += 1
                check(0 < x["start_ns"] <= x["end_ns"], "%s start/end %s" % (label, x))
                check(x["start_ns"] >= x["enqueue_ns"] - 5000000, "%s starts before enqueue: %s" % (label, x))
                check(x["end_ns"] - x["start_ns"] < 10 * 10**9, "%s duration %s" % (label, x))
                p2p = x["op"] in ("Send", "Recv")
                check(x.get("nchannels") == (1 if p2p else 2), "%s nchannels %s" % (label, x))
                if not p2p:
                    check(x.get("algo") == "Ring" and x.get("proto") == "Simple", "%s algo/proto %s" % (label, x))
                else:
                    check("algo" not in x and "proto" not in x, "%s p2p algo %s" % (label, x))
            else:
                check(x["timing"] == "gpu_event", "%s rank %d %s timing %s" % (label, r, x["op"], x["timing"]))
                check("algo" not in x and "nchannels" not in x, "%s event op with profiler fields %s" % (label, x))
    return n_prof


def case_auto(args, abi=None):
    extra = {"COLLSCOPE_TIMING": "auto", "COLLSCOPE_PROFILER_PROBES": "0"}
    if abi:
        extra["COLLSCOPE_SIM_PROFILER_ABI"] = abi
        extra["NCCL_DEBUG"] = "INFO"
    label = "auto" + ("-v" + abi if abi else "")
    o_ev, ev = run(args, "mix", {"COLLSCOPE_TIMING": "events"})
    o_pr, pr = run(args, "mix", extra)
    check(len(pr) == 2 and len(ev) == 2, "%s: dump files %d / %d" % (label, len(pr), len(ev)))
    n = check_profiler_records(pr, label)
    check(n >= 2 * 10, "%s: only %d profiler-timed ops" % (label, n))
    for r in pr:
        a = collections.Counter(key(x) for x in ops(pr[r]))
        b = collections.Counter(key(x) for x in ops(ev.get(r, [])))
        check(a == b, "%s rank %d: op records differ from the events mode: %s" % (label, r, (a - b) + (b - a)))
        check(pr[r][-1]["type"] == "footer", "%s rank %d: no footer" % (label, r))
        res = lambda out: [l for l in out.splitlines() if l.startswith(("result", "expect", "codes"))]
        check(res(o_pr[r][1]) == res(o_ev[r][1]), "%s rank %d: results differ from events mode" % (label, r))
        if abi:  # NCCL_DEBUG=INFO: the sim names the plugin version it loaded
            check("(v%s)" % abi in o_pr[r][1] + o_pr[r][2], "%s rank %d: plugin v%s not loaded" % (label, r, abi))
    print("%s: %d profiler-timed op records, counts identical to events mode" % (label, n))


def inner_lines(folder):
    lines = []
    for f in glob.glob(os.path.join(folder, "inner.*.txt")):
        lines += [l.rstrip("\n") for l in open(f)]
    return sorted(lines)


def chain_run(args, label, env, alone_env=None, ce=False):
    """Run the mix scenario with the example plugin alone (NCCL loads it, no collscope) and
    with collscope in front (env); the plugin's lines must be identical."""
    d_alone, d_chain = tempfile.mkdtemp(prefix="cs-inner-"), tempfile.mkdtemp(prefix="cs-inner-")
    base = dict(alone_env or {})
    a = dict(base, NCCL_PROFILER_PLUGIN="example", EXAMPLE_INNER_OUT=d_alone, LD_PRELOAD=None)
    o_alone, _ = run(args, "mix", a)
    c = dict(base, EXAMPLE_INNER_OUT=d_chain, COLLSCOPE_PROFILER_PROBES="0", COLLSCOPE_LOG="info")
    c.update(env)
    o_chain, pr = run(args, "mix", c)
    la, lc = inner_lines(d_alone), inner_lines(d_chain)
    shutil.rmtree(d_alone, ignore_errors=True)
    shutil.rmtree(d_chain, ignore_errors=True)
    check(len(la) > 50, "%s: the plugin alone wrote only %d lines" % (label, len(la)))
    check(not any("BAD" in l for l in la + lc), "%s: bad handles: %s" % (label, [l for l in la + lc if "BAD" in l][:5]))
    if not check(la == lc, "%s: inner output differs with collscope in front" % label):
        ca, cc = collections.Counter(la), collections.Counter(lc)
        print("only alone:", list((ca - cc).items())[:8], "\nonly chained:", list((cc - ca).items())[:8])
    res = lambda out: [l for l in out.splitlines() if l.startswith(("result", "expect", "codes"))]
    for r in range(2):
        check(res(o_alone[r][1]) == res(o_chain[r][1]), "%s rank %d: results differ" % (label, r))
    check(len(pr) == 2, "%s: dump files %d" % (label, len(pr)))
    return o_chain, pr, len(la)


def prof_timed(pr, label, ce_ops=()):
    n = 0
    for r in pr:
        for x in ops(pr[r]):
            if x["status"] != 0 or x["captured"] or x["op"] not in PROF_OPS:
                continue
            want = "gpu_event" if x["op"] in ce_ops else "profiler"
            check(x["timing"] == want, "%s rank %d %s seq %s timing %s, want %s" % (label, r, x["op"], x["seq"],
                                                                                  x["timing"], want))
            check(0 < x["start_ns"] <= x["end_ns"], "%s start/end %s" % (label, x))
            n += 1
    return n


def case_chain(args, abi=None):
    label = "chain" + ("-v" + abi if abi else "")
    extra = {"COLLSCOPE_SIM_PROFILER_ABI": abi} if abi else {}
    if abi:
        extra["EXAMPLE_INNER_MASK"] = "0x2"  # Coll only: the KernelCh collscope asks for must not reach it
    for how, env in (("explicit", {"COLLSCOPE_PROFILER_INNER": "example"}),
                     ("auto", {"NCCL_PROFILER_PLUGIN": "example"})):
        outs, pr, nl = chain_run(args, "%s %s" % (label, how), env, extra)
        n = prof_timed(pr, "%s %s" % (label, how))
        check(n >= 2 * 10, "%s %s: only %d profiler-timed ops" % (label, how, n))
        for r in range(2):
            log = outs[r][2]
            check(log.count("profiler chaining: NCCL's profiler events are forwarded to example") == 1,
                  "%s %s rank %d: forwarding line: %s" % (label, how, r, log[-800:]))
            n_auto = log.count("NCCL_PROFILER_PLUGIN=example was set: collscope takes NCCL's profiler slot")
            check(n_auto == (1 if how == "auto" else 0), "%s %s rank %d: %d auto lines" % (label, how, r, n_auto))
        print("%s %s: inner output identical (%d lines), %d profiler-timed ops" % (label, how, nl, n))


def case_chain_ce(args):
    extra = {"COLLSCOPE_SIM_PROFILER_CE": "1", "EXAMPLE_INNER_MASK": "0x1042"}  # Coll | KernelCh | CeColl
    outs, pr, nl = chain_run(args, "chain-ce", {"COLLSCOPE_PROFILER_INNER": "example"}, extra)
    n = prof_timed(pr, "chain-ce", ce_ops=("AllGather",))
    nag = sum(1 for r in pr for x in ops(pr[r]) if x["op"] == "AllGather" and x["status"] == 0)
    check(nag > 0, "chain-ce: no AllGather records")
    # collscope alone (no inner), v6: the copy-engine AllGathers are timed by events, no revocation
    outs2, pr2 = run(args, "mix", {"COLLSCOPE_SIM_PROFILER_CE": "1", "COLLSCOPE_PROFILER_PROBES": "0"})
    n2 = prof_timed(pr2, "ce-alone", ce_ops=("AllGather",))
    for r in range(2):
        check("revoked" not in outs2[r][2], "ce-alone rank %d: %s" % (r, outs2[r][2][-600:]))
    # and with the probation on: CE AllGathers leave it uncounted, AllGather is not rejected
    outs3, pr3 = run(args, "mix", {"COLLSCOPE_SIM_PROFILER_CE": "1", "COLLSCOPE_PROFILER_PROBES": "4"})
    for r in pr3:
        for x in ops(pr3[r]):
            if x["op"] == "AllGather" and x["status"] == 0 and not x["captured"]:
                check(x["timing"] == "gpu_event", "ce-probation rank %d AllGather timing %s" % (r, x["timing"]))
        check("rejected" not in outs3[r][2] or "AllGather rejected" not in outs3[r][2],
              "ce-probation rank %d: %s" % (r, outs3[r][2][-600:]))
    print("chain-ce: inner output identical (%d lines); %d ops timed (AllGather by events, %d records), alone %d" %
          (nl, n, nag, n2))


def case_chain_fail(args):
    for how, env, want in (
            ("initfail", {"COLLSCOPE_PROFILER_INNER": "example", "EXAMPLE_INNER_FAIL": "init"},
             "example (example, ncclProfiler_v6) failed to initialise (3); dropped"),
            ("nosym", {"COLLSCOPE_PROFILER_INNER": args.nosym},
             "exports no ncclProfiler_v6/v5/v4 that this NCCL would use; dropped"),
            ("missing", {"COLLSCOPE_PROFILER_INNER": "/nonexistent/libnccl-profiler-x.so"},
             "cannot load COLLSCOPE_PROFILER_INNER=/nonexistent/libnccl-profiler-x.so"),
            ("auto-missing", {"NCCL_PROFILER_PLUGIN": "nosuchplugin"},
             "cannot load COLLSCOPE_PROFILER_INNER=nosuchplugin")):
        env = dict(env, COLLSCOPE_PROFILER_PROBES="0", COLLSCOPE_LOG="info")
        outs, pr = run(args, "mix", env)
        check(len(pr) == 2, "chain-fail %s: dump files %d" % (how, len(pr)))
        n = prof_timed(pr, "chain-fail " + how)
        check(n >= 2 * 10, "chain-fail %s: only %d profiler-timed ops" % (how, n))
        for r in range(2):
            log = outs[r][2]
            check(log.count(want) == 1 and log.count("profiler chaining:") == 1,
                  "chain-fail %s rank %d: want one line with %r: %s" % (how, r, want, log[-800:]))
        print("chain-fail %s: one line, %d profiler-timed ops" % (how, n))


def case_capture(args):
    _, pr = run(args, "capture", {"COLLSCOPE_TIMING": "auto", "COLLSCOPE_PROFILER_PROBES": "0"})
    check(len(pr) == 2, "capture: dump files %d" % len(pr))
    n = check_profiler_records(pr, "capture")
    ncap = sum(1 for r in pr for x in ops(pr[r]) if x["captured"])
    nrep = sum(1 for r in pr for x in ops(pr[r]) if x.get("graph"))
    check(ncap > 0, "capture: no captured ops")
    check(nrep > 0, "capture: no replay records")
    print("capture: %d captured, %d replays, %d profiler-timed" % (ncap, nrep, n))


def case_failopen(args):
    _, ev = run(args, "mix", {"COLLSCOPE_TIMING": "events"})
    for label, extra in (("abi3", {"COLLSCOPE_TIMING": "auto", "COLLSCOPE_SIM_PROFILER_ABI": "3"}),
                         ("badpath", {"COLLSCOPE_TIMING": "auto", "NCCL_PROFILER_PLUGIN": "/nonexistent/libx.so",
                                      "COLLSCOPE_PROFILER_INNER": "none"}),  # no chaining: the user's choice
                         ("events", {"COLLSCOPE_TIMING": "events",
                                     "NCCL_PROFILER_PLUGIN": args.shim})):  # plugin refused in events mode
        outs, pr = run(args, "mix", extra)
        check(len(pr) == 2, "failopen %s: dump files %d" % (label, len(pr)))
        check_profiler_records(pr, "failopen-" + label, v_expect_profiler=False)
        for r in pr:
            a = collections.Counter(key(x) for x in ops(pr[r]))
            b = collections.Counter(key(x) for x in ops(ev.get(r, [])))
            check(a == b, "failopen %s rank %d: records differ" % (label, r))
            foot = pr[r][-1]
            want = None if label == "events" else "not_loaded"
            check(foot["type"] == "footer" and foot.get("profiler") == want,
                  "failopen %s rank %d: footer %s, want profiler=%s" % (label, r, foot, want))
    # profiler mode without a plugin: no CUDA events, enqueue time only
    _, pr = run(args, "mix", {"COLLSCOPE_TIMING": "profiler", "COLLSCOPE_SIM_PROFILER_ABI": "3"})
    for r in pr:
        for x in ops(pr[r]):
            if x["status"] == 0 and not x["captured"] and x["op"] in PROF_OPS:
                check(x["timing"] == "host", "profiler-mode without plugin: %s" % x)
    print("failopen: ok")


STEP_OPS = {"AllReduce", "Broadcast"}


def by_seq(lines):
    return sorted((x for x in ops(lines) if x["op"] in STEP_OPS and x["comm_size"] == 2), key=lambda x: x["seq"])


def case_probation(args):
    """The default (auto), 8 probes per op type: AllReduce and Broadcast (counted in bytes by
    NCCL) each switch cleanly from event-timed probes to plugin-timed records."""
    probes = 8
    o_ev, ev = run(args, "steps", {"COLLSCOPE_TIMING": "events"})
    outs, pr = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": str(probes), "COLLSCOPE_LOG": "info"})
    check(len(pr) == 2, "probation: dump files %d" % len(pr))
    for r in pr:
        xs = by_seq(pr[r])
        check(len(xs) == 96, "probation rank %d: %d step ops" % (r, len(xs)))
        for opname in sorted(STEP_OPS):
            ys = [x for x in xs if x["op"] == opname]
            kinds = [x["timing"] for x in ys]
            check(set(kinds) <= {"gpu_event", "profiler"}, "probation rank %d %s timings %s" % (r, opname, set(kinds)))
            n_ev, n_pr = kinds.count("gpu_event"), kinds.count("profiler")
            check(n_ev >= probes, "probation rank %d %s: %d event-timed, want >= %d probes" % (r, opname, n_ev, probes))
            check(n_pr >= 20, "probation rank %d %s: only %d plugin-timed after the verdict" % (r, opname, n_pr))
            # one switch per op type: every event-timed op comes before every plugin-timed one
            check(kinds == sorted(kinds), "probation rank %d %s: not a clean switch: %s"
                  % (r, opname, "".join(k[0] for k in kinds)))
            n_probe = sum(1 for x in ys if x["timing"] == "gpu_event" and x.get("algo") == "Ring")
            check(n_probe >= probes, "probation rank %d %s: %d probes (event-timed with algo)" % (r, opname, n_probe))
            check(("NCCL profiler timing of %s trusted: %d of %d probe ops agreed" % (opname, probes, probes))
                  in outs[r][2], "probation rank %d: no trusted line for %s: %s" % (r, opname, outs[r][2][-800:]))
            print("probation rank %d %s: %d event-timed (probes, ops before the verdict), then %d plugin-timed"
                  % (r, opname, n_ev, n_pr))
        for x in xs:  # the plugin's facts on its own ops
            if x["timing"] == "profiler":
                check(x.get("algo") == "Ring" and x.get("nchannels") == 2, "probation rank %d: no algo on %s" % (r, x))
            check(0 < x["start_ns"] <= x["end_ns"] and x["end_ns"] - x["start_ns"] < 10**9, "probation span %s" % x)
        foot = pr[r][-1]
        check(foot["type"] == "footer" and foot.get("profiler") == "trusted" and foot.get("prof_probes") == 2 * probes
              and foot.get("prof_agreed") == 2 * probes and foot.get("prof_trusted") == "AllReduce,Broadcast"
              and "prof_rejected" not in foot, "probation rank %d: footer %s" % (r, foot))
        foot_ev = ev[r][-1]
        check(foot_ev["type"] == "footer" and "profiler" not in foot_ev, "events mode footer %s" % foot_ev)
        res = lambda out: [l for l in out.splitlines() if l.startswith(("result", "expect"))]
        check(res(outs[r][1]) == res(o_ev[r][1]), "probation rank %d: results differ from events mode" % r)


def case_reject(args):
    _, ev = run(args, "steps", {"COLLSCOPE_TIMING": "events", "PROBE_STEPS": "16"})
    for fault, reason in (("nokch", r"(\d+) had no kernel timer stamps"), ("long", r"(\d+) a kernel span longer"),
                          ("skew", r"(\d+) a clock over 1 s off")):
        outs, pr = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": "8", "COLLSCOPE_SIM_PROFILER_FAULT": fault,
                                       "PROBE_STEPS": "16", "COLLSCOPE_LOG": "info"})
        check(len(pr) == 2, "reject %s: dump files %d" % (fault, len(pr)))
        for r in pr:
            xs = by_seq(pr[r])
            check(len(xs) == 32 and all(x["timing"] == "gpu_event" for x in xs),
                  "reject %s rank %d: timings %s" % (fault, r, [x["timing"] for x in xs]))
            foot = pr[r][-1]
            check(foot["type"] == "footer" and foot.get("profiler") == "rejected" and foot.get("prof_probes") == 16
                  and foot.get("prof_agreed", 9) <= 2 and foot.get("prof_rejected") == "AllReduce,Broadcast",
                  "reject %s rank %d: footer %s" % (fault, r, foot))
            log = outs[r][2]
            for opname in sorted(STEP_OPS):  # the fault's own reason counts most of the 8 probes
                m = re.search(r"NCCL profiler timing of %s rejected: .*?" % opname + reason, log)
                check(m and int(m.group(1)) >= 7, "reject %s rank %d %s: log %s" % (fault, r, opname, log[-800:]))
            check(log.count("NCCL profiler timing of") == 2, "reject %s rank %d: lines %s" % (fault, r, log[-800:]))
            # every type probed was rejected: collscope clears NCCL's activation mask once
            check(log.count("NCCL's profiler events are switched off") == 1,
                  "reject %s rank %d: mask not cleared: %s" % (fault, r, log[-800:]))
            a = collections.Counter(key(x) for x in ops(pr[r]))
            b = collections.Counter(key(x) for x in ops(ev.get(r, [])))
            check(a == b, "reject %s rank %d: records differ from the events mode" % (fault, r))
        print("reject %s: every op event-timed, reason logged" % fault)
    # all types rejected early in a longer job: collscope clears NCCL's activation mask, and
    # NCCL (the sim reads the mask at every launch) sends no events for the later ops
    outs, pr = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": "8", "COLLSCOPE_SIM_PROFILER_FAULT": "nokch",
                                   "PROBE_STEPS": "300", "COLLSCOPE_LOG": "debug"})
    for r in pr:
        m = re.search(r"profiler: (\d+) ops linked, (\d+) events not matched", outs[r][2])
        n = int(m.group(1)) + int(m.group(2)) if m else -1
        check(m and 0 < n < 600 and "switched off" in outs[r][2],
              "reject quiet rank %d: %d of 600 ops got NCCL events: %s" % (r, n, outs[r][2][-600:]))
        print("reject quiet rank %d: NCCL sent events for %d of 600 ops, none after the switch-off" % (r, n))
    # one op type's stamps wrong: only that type keeps events. A probe without KernelCh
    # events settles 200 ms after its stop, and the AllReduce probes queued behind it on the
    # same stream wait for it: 150 steps (~0.4 s) leave time for both verdicts.
    outs, pr = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": "8", "COLLSCOPE_SIM_PROFILER_FAULT": "nokch:Broadcast",
                                   "PROBE_STEPS": "150"})
    for r in pr:
        xs = by_seq(pr[r])
        bc = [x["timing"] for x in xs if x["op"] == "Broadcast"]
        ar = [x["timing"] for x in xs if x["op"] == "AllReduce"]
        check(bc and all(t == "gpu_event" for t in bc), "reject one type rank %d: Broadcast %s" % (r, bc))
        check(ar.count("profiler") >= 4 and ar == sorted(ar), "reject one type rank %d: AllReduce %s" % (r, ar))
        foot = pr[r][-1]
        check(foot.get("profiler") == "mixed" and foot.get("prof_trusted") == "AllReduce"
              and foot.get("prof_rejected") == "Broadcast", "reject one type rank %d: footer %s" % (r, foot))
        check("switched off" not in outs[r][2], "reject one type rank %d: mask cleared with a type trusted" % r)
    print("reject nokch:Broadcast: Broadcast event-timed, AllReduce plugin-timed after its probation")


def case_nonblocking(args):
    """Ops of a non-blocking communicator (NCCL_COMM_BLOCKING=0) keep CUDA events even with
    the plugin trusted at once (PROBES=0): real NCCL launches their work on its own thread,
    where a Coll event cannot be matched to the call."""
    outs, pr = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": "0", "NCCL_COMM_BLOCKING": "0", "PROBE_STEPS": "12"})
    check(len(pr) == 2, "nonblocking: dump files %d" % len(pr))
    for r in pr:
        xs = by_seq(pr[r])
        check(len(xs) == 24 and all(x["timing"] == "gpu_event" and "algo" not in x for x in xs),
              "nonblocking rank %d: %s" % (r, [x["timing"] for x in xs]))
    _, pb = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": "0", "PROBE_STEPS": "12"})
    for r in pb:  # the same job on blocking communicators: plugin-timed
        xs = by_seq(pb[r])
        check(len(xs) == 24 and all(x["timing"] == "profiler" for x in xs),
              "blocking rank %d: %s" % (r, [x["timing"] for x in xs]))
    print("nonblocking: 24 event-timed ops per rank; blocking: 24 plugin-timed")


def case_revoke(args):
    """After the probation trusted the plugin, NCCL stops sending AllReduce events (the sim's
    stop=40:AllReduce: as when NCCL launches from a CUDA host callback): 8 AllReduce records
    get host timing only, then AllReduce is back on CUDA events; Broadcast is untouched."""
    outs, pr = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": "8", "COLLSCOPE_SIM_PROFILER_FAULT": "stop=40:AllReduce",
                                   "PROBE_STEPS": "80"})
    check(len(pr) == 2, "revoke: dump files %d" % len(pr))
    for r in pr:
        xs = by_seq(pr[r])
        ar = "".join({"gpu_event": "e", "profiler": "p", "host": "h"}.get(x["timing"], "?")
                     for x in xs if x["op"] == "AllReduce")
        bc = [x["timing"] for x in xs if x["op"] == "Broadcast"]
        check(re.fullmatch(r"e{8,}p+h{8}e+", ar) is not None, "revoke rank %d: AllReduce timings %s" % (r, ar))
        check(bc == sorted(bc) and bc.count("profiler") >= 40, "revoke rank %d: Broadcast %s" % (r, bc))
        log = outs[r][2]
        check(log.count("NCCL profiler timing of AllReduce revoked: 8 calls") == 1, "revoke rank %d: %s" % (r, log[-600:]))
        foot = pr[r][-1]
        check(foot.get("profiler") == "mixed" and foot.get("prof_rejected") == "AllReduce"
              and foot.get("prof_trusted") == "Broadcast", "revoke rank %d: footer %s" % (r, foot))
        print("revoke rank %d: AllReduce %s" % (r, ar))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--shim", required=True)
    ap.add_argument("--sim-dir", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--example")
    ap.add_argument("--nosym")
    args = ap.parse_args()
    if args.example:
        args.example, args.nosym = os.path.abspath(args.example), os.path.abspath(args.nosym)
    args.shim, args.sim_dir, args.probe = (os.path.abspath(p) for p in (args.shim, args.sim_dir, args.probe))
    cases = {"auto": case_auto, "v4": lambda a: case_auto(a, "4"), "v5": lambda a: case_auto(a, "5"),
             "chain": case_chain, "chain-v5": lambda a: case_chain(a, "5"), "chain-ce": case_chain_ce,
             "chain-fail": case_chain_fail, "capture": case_capture,
             "failopen": case_failopen, "probation": case_probation, "reject": case_reject,
             "revoke": case_revoke, "nonblocking": case_nonblocking}
    if args.case not in cases:
        print("unknown case", args.case)
        return 2
    cases[args.case](args)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
