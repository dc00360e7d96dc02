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
  probation  the default (COLLSCOPE_TIMING unset = auto) with COLLSCOPE_PROFILER_PROBES=8: the
             first ops are event-timed probes compared with the plugin's stamps, then the
             plugin alone times every later op (a clean switch by seq); log says "trusted"
  reject     the sim sends wrong kernel stamps (COLLSCOPE_SIM_PROFILER_FAULT=nokch|long|skew):
             the probation rejects the plugin, every op keeps "gpu_event", one log line
             names the reason; results unchanged
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
                  "COLLSCOPE_PROFILER_PROBES", "COLLSCOPE_SIM_PROFILER_FAULT", "COLLSCOPE_LOG"):
            env.pop(k, None)
        env.update({
            "RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": str(n),
            "COLLSCOPE_HOSTNAME": "h1", "PROBE_DIR": probe_dir, "COLLSCOPE_DIR": dump,
            "COLLSCOPE_JOB_ID": "proftest", "COLLSCOPE_RING": "0",
            "LD_LIBRARY_PATH": args.sim_dir + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
            "LD_PRELOAD": args.shim,
        })
        env.update(env_extra)
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


def case_capture(args):
    _, pr = run(args, "capture", {"COLLSCOPE_TIMING": "auto", "COLLSCOPE_PROFILER_PROBES": "0"})
    check(len(pr) == 2, "capture: dump files %d" % len(pr))
    n = check_profiler_records(pr, "capture")
    ncap = sum(1 for r in pr for x in ops(pr[r]) if x["captured"])
    check(ncap > 0, "capture: no captured ops")
    print("capture: %d captured, %d profiler-timed" % (ncap, n))


def case_failopen(args):
    _, ev = run(args, "mix", {"COLLSCOPE_TIMING": "events"})
    for label, extra in (("abi3", {"COLLSCOPE_TIMING": "auto", "COLLSCOPE_SIM_PROFILER_ABI": "3"}),
                         ("badpath", {"COLLSCOPE_TIMING": "auto", "NCCL_PROFILER_PLUGIN": "/nonexistent/libx.so"}),
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
    probes = 8
    o_ev, ev = run(args, "steps", {"COLLSCOPE_TIMING": "events"})
    outs, pr = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": str(probes), "COLLSCOPE_LOG": "info"})
    check(len(pr) == 2, "probation: dump files %d" % len(pr))
    for r in pr:
        xs = by_seq(pr[r])
        check(len(xs) == 96, "probation rank %d: %d step ops" % (r, len(xs)))
        kinds = [x["timing"] for x in xs]
        check(set(kinds) <= {"gpu_event", "profiler"}, "probation rank %d timings %s" % (r, set(kinds)))
        n_ev, n_pr = kinds.count("gpu_event"), kinds.count("profiler")
        check(n_ev >= probes, "probation rank %d: %d event-timed ops, want >= %d probes" % (r, n_ev, probes))
        check(n_pr >= 40, "probation rank %d: only %d plugin-timed ops after the verdict" % (r, n_pr))
        # one switch: every event-timed op comes before every plugin-timed op
        check(kinds == sorted(kinds), "probation rank %d: timing not a clean switch: %s" % (r, "".join(k[0] for k in kinds)))
        for x in xs:  # the plugin's facts on its own ops and on the probes
            if x["timing"] == "profiler":
                check(x.get("algo") == "Ring" and x.get("nchannels") == 2, "probation rank %d: no algo on %s" % (r, x))
            check(0 < x["start_ns"] <= x["end_ns"] and x["end_ns"] - x["start_ns"] < 10**9, "probation span %s" % x)
        n_probe = sum(1 for x in xs if x["timing"] == "gpu_event" and x.get("algo") == "Ring")
        check(n_probe >= probes, "probation rank %d: %d probes (event-timed ops with algo)" % (r, n_probe))
        foot = pr[r][-1]
        check(foot["type"] == "footer" and foot.get("profiler") == "trusted" and foot.get("prof_probes") == probes
              and foot.get("prof_agreed") == probes, "probation rank %d: footer %s" % (r, foot))
        foot_ev = ev[r][-1]
        check(foot_ev["type"] == "footer" and "profiler" not in foot_ev, "events mode footer %s" % foot_ev)
        log = outs[r][2]
        check("NCCL profiler timing trusted: %d of %d probe ops agreed" % (probes, probes) in log,
              "probation rank %d: no trusted line: %s" % (r, log[-800:]))
        res = lambda out: [l for l in out.splitlines() if l.startswith(("result", "expect"))]
        check(res(outs[r][1]) == res(o_ev[r][1]), "probation rank %d: results differ from events mode" % r)
        print("probation rank %d: %d event-timed (probes and ops before the verdict), then %d plugin-timed"
              % (r, n_ev, n_pr))


def case_reject(args):
    _, ev = run(args, "steps", {"COLLSCOPE_TIMING": "events", "PROBE_STEPS": "16"})
    for fault, reason in (("nokch", r"(\d+) had no kernel timer stamps"), ("long", r"(\d+) a kernel span longer"),
                          ("skew", r"(\d+) a clock over 1 s off")):
        outs, pr = run(args, "steps", {"COLLSCOPE_PROFILER_PROBES": "8", "COLLSCOPE_SIM_PROFILER_FAULT": fault,
                                       "PROBE_STEPS": "16"})
        check(len(pr) == 2, "reject %s: dump files %d" % (fault, len(pr)))
        for r in pr:
            xs = by_seq(pr[r])
            check(len(xs) == 32 and all(x["timing"] == "gpu_event" for x in xs),
                  "reject %s rank %d: timings %s" % (fault, r, [x["timing"] for x in xs]))
            foot = pr[r][-1]
            check(foot["type"] == "footer" and foot.get("profiler") == "rejected" and foot.get("prof_probes") == 8
                  and foot.get("prof_agreed", 9) <= 1, "reject %s rank %d: footer %s" % (fault, r, foot))
            log = outs[r][2]
            m = re.search(reason, log)  # the fault's own reason counts most of the 8 probes
            check(log.count("NCCL profiler timing rejected") == 1 and m and int(m.group(1)) >= 7,
                  "reject %s rank %d: log %s" % (fault, r, log[-800:]))
            a = collections.Counter(key(x) for x in ops(pr[r]))
            b = collections.Counter(key(x) for x in ops(ev.get(r, [])))
            check(a == b, "reject %s rank %d: records differ from the events mode" % (fault, r))
        print("reject %s: every op event-timed, reason logged" % fault)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--shim", required=True)
    ap.add_argument("--sim-dir", required=True)
    ap.add_argument("--probe", required=True)
    args = ap.parse_args()
    args.shim, args.sim_dir, args.probe = (os.path.abspath(p) for p in (args.shim, args.sim_dir, args.probe))
    if args.case == "auto":
        case_auto(args)
    elif args.case == "v4":
        case_auto(args, "4")
    elif args.case == "capture":
        case_capture(args)
    elif args.case == "failopen":
        case_failopen(args)
    elif args.case == "probation":
        case_probation(args)
    elif args.case == "reject":
        case_reject(args)
    else:
        print("unknown case", args.case)
        return 2
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
