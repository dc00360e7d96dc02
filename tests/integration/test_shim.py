#!/usr/bin/env python3
"""tests/integration/test_shim.py: libcollscope end to end on the simulator.

Runs the probe job (linked against the real libnccl/libcudart) with and without the
shim, then checks transparency (same output, same exit codes) and the dump files
(schema, exact record counts by op, groups, comm ids, seq, timing sources).
Usage: test_shim.py CASE --shim SO --sim-dir DIR --probe EXE ... (see meson.build)."""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

OP_FIELDS = {
    "type": str, "comm": str, "comm_size": int, "comm_rank": int, "rank": int, "seq": int,
    "op": str, "dtype": str, "count": int, "bytes": int, "redop": (str, type(None)),
    "root": int, "peer": int, "stream": str, "group": int, "enqueue_ns": int,
    "start_ns": int, "end_ns": int, "dur_us": (int, float), "timing": str,
    "captured": bool, "site": str, "status": int,
}
XFER_FIELDS = {
    "type": str, "op": str, "api": str, "kind": str, "bytes": int, "stream": str,
    "async": bool, "enqueue_ns": int, "start_ns": int, "end_ns": int,
    "dur_us": (int, float), "timing": str, "site": str, "status": int,
}
HEADER_FIELDS = {
    "type": str, "schema": int, "collscope": str, "host": str, "pid": int, "rank": int,
    "local_rank": int, "world_size": int, "job": str, "device": int, "pci_bus_id": str,
    "nccl_version": int, "cuda_driver_version": int, "clock": dict, "exe": str,
}

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def run_ranks(args, n, argv, shim=True, extra_env=None, hosts=2, timeout=120):
    """Start n ranks like a launcher would; return [(rc, stdout, stderr)] and the dump dir."""
    work = tempfile.mkdtemp(prefix="cs-test-")
    dump = os.path.join(work, "dump")
    probe_dir = os.path.join(work, "probe")
    os.makedirs(probe_dir)
    procs = []
    per_host = max(1, n // hosts)
    for r in range(n):
        env = dict(os.environ)
        env.update({
            "RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r % per_host),
            "LOCAL_WORLD_SIZE": str(per_host), "COLLSCOPE_HOSTNAME": "h%d" % (r // per_host + 1),
            "PROBE_DIR": probe_dir, "COLLSCOPE_DIR": dump, "COLLSCOPE_JOB_ID": "test",
            "LD_LIBRARY_PATH": args.sim_dir + ":" + env.get("LD_LIBRARY_PATH", ""),
            # every op on the event path timed: these checks are per op (the sampled event
            # path has its own tests, stats-sim-sampled_counts)
            "COLLSCOPE_EVENT_SAMPLE": "1",
        })
        env.pop("LD_PRELOAD", None)
        if shim:
            env["LD_PRELOAD"] = args.shim
        if extra_env:
            env.update(extra_env)
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
            check(False, "rank timed out: %s" % argv)
        out.append((p.returncode, o, e))
    return out, dump, work


def lines_with(text, prefix):
    return [l for l in text.splitlines() if l.startswith(prefix)]


def parse_expect(stdout):
    line = lines_with(stdout, "expect ")
    if not line:
        return {}
    return {k: int(v) for k, v in (kv.split("=") for kv in line[-1].split()[1:])}


def load_dumps(dump):
    files = sorted(glob.glob(os.path.join(dump, "*.jsonl")))
    docs = []
    for f in files:
        st = os.stat(f)
        check(st.st_mode & 0o777 == 0o600, "%s mode %o, want 0600" % (f, st.st_mode & 0o777))
        recs = []
        with open(f) as fh:
            for i, line in enumerate(fh, 1):
                try:
                    recs.append(json.loads(line))
                except ValueError as e:
                    check(False, "%s:%d not JSON: %s" % (f, i, e))
        docs.append((f, recs))
    return docs


def check_fields(rec, spec, where):
    for k, t in spec.items():
        if not check(k in rec, "%s: field %s missing in %s" % (where, k, rec.get("type"))):
            continue
        check(isinstance(rec[k], t), "%s: field %s has type %s" % (where, k, type(rec[k]).__name__))


def by_rank(docs):
    out = {}
    for f, recs in docs:
        if recs and recs[0].get("type") == "header":
            out[recs[0]["rank"]] = (f, recs)
    return out


def transparent(base, shimmed):
    for r, (a, b) in enumerate(zip(base, shimmed)):
        check(a[0] == b[0], "rank %d exit code %d without shim, %d with" % (r, a[0], b[0]))
        for key in ("result", "codes", "expect", "errstr", "rc "):
            check(lines_with(a[1], key) == lines_with(b[1], key),
                  "rank %d '%s' differs: %s vs %s" % (r, key, lines_with(a[1], key), lines_with(b[1], key)))


def counts_match(stdout, recs, rank):
    want = parse_expect(stdout)
    got = {}
    for x in recs:
        if x.get("type") in ("op", "xfer"):
            got[x["op"]] = got.get(x["op"], 0) + 1
    for op, n in want.items():
        check(got.get(op, 0) == n, "rank %d: %d %s records, program issued %d" % (rank, got.get(op, 0), op, n))
    extra = set(got) - set(want)
    check(not extra, "rank %d: records for ops never issued: %s" % (rank, extra))


def case_mix(args, scenario="mix", n=4, expect_files=None):
    base, _, w0 = run_ranks(args, n, [args.probe, scenario], shim=False)
    shim, dump, w1 = run_ranks(args, n, [args.probe, scenario])
    for r, (rc, o, e) in enumerate(shim):
        check(rc == 0, "rank %d failed: rc=%d stderr=%s" % (r, rc, e[-2000:]))
    transparent(base, shim)
    docs = load_dumps(dump)
    check(len(docs) == (expect_files or n), "%d dump files, want %d" % (len(docs), expect_files or n))
    ranks = by_rank(docs)
    for r in range(n):
        if not check(r in ranks, "no dump for rank %d" % r):
            continue
        f, recs = ranks[r]
        check_fields(recs[0], HEADER_FIELDS, f)
        check(recs[0]["host"] == "h%d" % (r // max(1, n // 2) + 1), "rank %d host %s" % (r, recs[0]["host"]))
        check(recs[-1]["type"] == "footer", "%s: no footer at clean exit" % f)
        counts_match(shim[r][1], recs, r)
        for x in recs:
            if x["type"] == "op":
                check_fields(x, OP_FIELDS, f)
                check(x["rank"] == r, "op record rank %s in rank %d's file" % (x["rank"], r))
            elif x["type"] == "xfer":
                check_fields(x, XFER_FIELDS, f)
    shutil.rmtree(w0, ignore_errors=True)
    return shim, ranks, dump, w1


def ops_of(recs):
    return [x for x in recs if x["type"] == "op"]


def test_mix(args):
    shim, ranks, dump, work = case_mix(args)
    n = 4
    # timing: every op timed from GPU events, sane times
    for r, (f, recs) in ranks.items():
        for x in ops_of(recs):
            check(x["timing"] == "gpu_event", "rank %d %s seq %d timing %s" % (r, x["op"], x["seq"], x["timing"]))
            check(x["end_ns"] >= x["start_ns"] > 0, "rank %d bad start/end %s" % (r, x))
            check(abs(x["dur_us"] * 1000 - (x["end_ns"] - x["start_ns"])) < 2000, "dur_us mismatch %s" % x)
            check(x["start_ns"] >= x["enqueue_ns"] - 5_000_000, "GPU start long before enqueue: %s" % x)
            check(x["site"] != "", "no call site: %s" % x)
        # bytes rule
        for x in ops_of(recs):
            ts = 4
            want = x["count"] * ts * (n if x["op"] in ("AllGather", "ReduceScatter", "AlltoAll", "Gather", "Scatter") else 1)
            if x["comm_size"] == 2:
                want = x["count"] * ts
            check(x["bytes"] == want, "bytes %d want %d for %s" % (x["bytes"], want, x["op"]))
        grouped = [x for x in ops_of(recs) if x["group"]]
        sr = [x for x in grouped if x["op"] in ("Send", "Recv")]
        check(len(sr) == 2 and sr[0]["group"] == sr[1]["group"], "send/recv not one group: %s" % sr)
        ars = [x for x in grouped if x["op"] == "AllReduce"]
        check(len(ars) == 2 and ars[0]["group"] == ars[1]["group"] != sr[0]["group"], "nested group ids: %s" % ars)
        check(ars[0]["stream"] != ars[1]["stream"], "grouped ops should be on two streams")
        peers = {x["op"]: x["peer"] for x in sr}
        check(peers.get("Send") == (r + 1) % n and peers.get("Recv") == (r - 1) % n, "peers %s" % peers)
        # seq contiguous per comm
        seqs = {}
        for x in ops_of(recs):
            seqs.setdefault(x["comm"], []).append(x["seq"])
        for c, s in seqs.items():
            check(sorted(s) == list(range(len(s))), "rank %d comm %s seqs %s" % (r, c, sorted(s)))
    # comm ids: world shared by all, split shared by parity
    world = {r: ops_of(recs)[0]["comm"] for r, (f, recs) in ranks.items()}
    check(len(set(world.values())) == 1, "world comm ids differ: %s" % world)
    sub = {}
    for r, (f, recs) in ranks.items():
        subs = [x for x in ops_of(recs) if x["comm"] != world[r]]
        check(len(subs) == 1 and subs[0]["comm_size"] == 2, "rank %d split comm ops %s" % (r, subs))
        if subs:
            sub[r] = subs[0]["comm"]
        comms = [x for x in recs if x["type"] == "comm"]
        check([c["event"] for c in comms] == ["init", "split", "destroy", "destroy"], "comm events %s" % comms)
    if len(sub) == 4:
        check(sub[0] == sub[2] and sub[1] == sub[3] and sub[0] != sub[1], "split ids %s" % sub)
    # same (comm, seq) is the same op on every rank
    inst = {}
    for r, (f, recs) in ranks.items():
        for x in ops_of(recs):
            inst.setdefault((x["comm"], x["seq"]), set()).add((x["op"], x["count"]))
    for k, v in inst.items():
        if k[0] == world[0] and len(v) > 1 and not v <= {("Send", 1000), ("Recv", 1000)}:
            check(False, "instance %s differs across ranks: %s" % (k, v))
    # memcpy kinds
    f, recs = ranks[0]
    kinds = sorted(x["kind"] for x in recs if x["type"] == "xfer")
    check("HtoD" in kinds and "DtoH" in kinds and "DtoD" in kinds, "xfer kinds %s" % kinds)
    apis = {x["api"] for x in recs if x["type"] == "xfer"}
    check({"cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpy2D"} <= apis, "xfer apis %s" % apis)
    for x in recs:
        if x["type"] == "xfer":
            want = "gpu_event" if x["async"] else "host_span"
            check(x["timing"] == want and x["end_ns"] >= x["start_ns"] > 0, "xfer timing %s" % x)
    # the CLI reads them
    if args.cli and os.path.exists(args.cli):
        p = subprocess.run([args.cli, "report", dump, "--json"], capture_output=True, text=True)
        if check(p.returncode == 0, "report failed: %s" % p.stderr[-500:]):
            rep = json.loads(p.stdout)
            check(len(rep.get("ranks", [])) == 4, "report ranks %s" % rep.get("ranks"))
            total = sum(o["count"] for o in rep.get("ops", []) if o["op"] == "AllReduce")
            check(total == 4 * 6, "report AllReduce count %d, want 24" % total)
        tr = os.path.join(work, "trace.json")
        p = subprocess.run([args.cli, "trace", dump, "-o", tr], capture_output=True, text=True)
        if check(p.returncode == 0, "trace failed: %s" % p.stderr[-500:]):
            ev = json.load(open(tr))["traceEvents"]
            xs = [e for e in ev if e.get("ph") == "X" and e.get("cat") != "xfer"]
            nops = sum(len(ops_of(recs)) for f, recs in ranks.values())
            check(len([e for e in ev if e.get("ph") == "X"]) >= nops, "trace has %d X events for %d ops" % (len(xs), nops))
    shutil.rmtree(work, ignore_errors=True)


def test_capture(args):
    shim, ranks, dump, work = case_mix(args, "capture", n=2)
    for r, (f, recs) in ranks.items():
        ops = ops_of(recs)
        cap = [x for x in ops if x["captured"]]
        check(len(cap) == 1 and cap[0]["timing"] == "captured" and cap[0]["dur_us"] == 0,
              "rank %d captured records: %s" % (r, cap))
        check(sum(1 for x in ops if x["timing"] == "gpu_event") == 3, "rank %d timed ops %s" % (r, ops))
        rep = [x for x in ops if x.get("graph")]
        check([x.get("replay") for x in rep] == [1, 2] and all(x["timing"] == "gpu_event" for x in rep),
              "rank %d replay records %s" % (r, rep))
    shutil.rmtree(work, ignore_errors=True)


def test_threads(args):
    shim, ranks, dump, work = case_mix(args, "threads", n=2)
    for r, (f, recs) in ranks.items():
        comms = {x["comm"] for x in ops_of(recs)}
        check(len(comms) == 2, "rank %d: ops on %d comms, want 2" % (r, len(comms)))
        check(all(x["timing"] == "gpu_event" for x in ops_of(recs)), "untimed ops in threads case")
    shutil.rmtree(work, ignore_errors=True)


def test_fork(args):
    shim, ranks, dump, work = case_mix(args, "fork", n=2)
    shutil.rmtree(work, ignore_errors=True)


def test_errors(args):
    shim, ranks, dump, work = case_mix(args, "errors", n=2)
    for r, (f, recs) in ranks.items():
        ops = ops_of(recs)
        bad = [x for x in ops if x["status"] != 0]
        check(len(bad) == 5, "rank %d: %d failed-call records, want 5" % (r, len(bad)))
        check(all(x["timing"] == "error" for x in bad), "failed calls must have timing error: %s" % bad)
        codes = lines_with(shim[r][1], "codes")[0].split()[1:]
        check(codes[0] != "0" and codes[1] != "0" and codes[4] != "0", "invalid calls succeeded: %s" % codes)
    shutil.rmtree(work, ignore_errors=True)


def test_local(args):
    base, _, w0 = run_ranks(args, 1, [args.local_main, args.local_lib], shim=False)
    shim, dump, w1 = run_ranks(args, 1, [args.local_main, args.local_lib])
    transparent(base, shim)
    check(shim[0][0] == 0, "RTLD_LOCAL job failed: %s" % shim[0][2][-1000:])
    docs = load_dumps(dump)
    ops = [x for f, recs in docs for x in recs if x.get("type") == "op"]
    check(len(ops) == 1 and ops[0]["op"] == "AllReduce" and ops[0]["timing"] == "gpu_event",
          "RTLD_LOCAL-loaded NCCL not recorded: %s" % ops)
    shutil.rmtree(w0, ignore_errors=True)
    shutil.rmtree(w1, ignore_errors=True)


def test_nolib(args):
    shim, dump, w = run_ranks(args, 1, [args.local_main, "nolib"])
    rc, o, e = shim[0]
    check(rc == 0, "job crashed without NCCL: rc %d %s" % (rc, e))
    check(lines_with(o, "codes") == ["codes 2 2"], "missing real symbol must return ncclSystemError: %r" % o)
    check(e.count("was not found") == 1, "want exactly one log line, got: %r" % e)
    shutil.rmtree(w, ignore_errors=True)


def test_failopen(args):
    base, _, w0 = run_ranks(args, 2, [args.probe, "mix"], shim=False, hosts=1)
    # 1. unwritable COLLSCOPE_DIR
    blocker = tempfile.NamedTemporaryFile(delete=False)
    res, dump, w = run_ranks(args, 2, [args.probe, "mix"], extra_env={"COLLSCOPE_DIR": blocker.name + "/sub"}, hosts=1)
    transparent(base, res)
    for rc, o, e in res:
        check(e.count("cannot create") == 1, "unwritable dir: want one log line, got %r" % e[-500:])
    os.unlink(blocker.name)
    shutil.rmtree(w, ignore_errors=True)
    # 2. no libcuda: host timing only
    res, dump, w = run_ranks(args, 2, [args.probe, "mix"], extra_env={"COLLSCOPE_LIBCUDA": "/nonexistent/libcuda.so.1"}, hosts=1)
    transparent(base, res)
    ops = [x for f, recs in load_dumps(dump) for x in recs if x.get("type") == "op"]
    check(ops and all(x["timing"] == "host" for x in ops), "missing libcuda: timing %s" % {x["timing"] for x in ops})
    shutil.rmtree(w, ignore_errors=True)
    # 3. event creation fails
    res, dump, w = run_ranks(args, 2, [args.probe, "mix"], extra_env={"COLLSCOPE_LIBCUDA": args.evfail}, hosts=1)
    transparent(base, res)
    ops = [x for f, recs in load_dumps(dump) for x in recs if x.get("type") == "op"]
    check(ops and all(x["timing"] == "host" for x in ops), "failing cuEventCreate: timing %s" % {x["timing"] for x in ops})
    for rc, o, e in res:
        check(e.count("cuEventCreate failed") == 1, "failing events: want one log line, got %r" % e[-500:])
    shutil.rmtree(w, ignore_errors=True)
    # 4. COLLSCOPE_DISABLE=1: pure pass-through, nothing written
    res, dump, w = run_ranks(args, 2, [args.probe, "mix"], extra_env={"COLLSCOPE_DISABLE": "1"}, hosts=1)
    transparent(base, res)
    check(not os.path.exists(dump), "COLLSCOPE_DISABLE=1 still wrote %s" % dump)
    shutil.rmtree(w, ignore_errors=True)
    # 5. garbage in numeric env: logged, defaulted
    res, dump, w = run_ranks(args, 2, [args.probe, "mix"], extra_env={"COLLSCOPE_QUEUE": "lots"}, hosts=1)
    transparent(base, res)
    check(len(load_dumps(dump)) == 2, "bad COLLSCOPE_QUEUE must fall back to the default")
    shutil.rmtree(w, ignore_errors=True)
    shutil.rmtree(w0, ignore_errors=True)


def test_schema(args):
    """A dump cut off by a crash is readable up to its last whole line; files are 0600."""
    shim, dump, w = run_ranks(args, 2, [args.probe, "mix"], hosts=1)
    docs = load_dumps(dump)
    for f, recs in docs:
        data = open(f, "rb").read()
        check(data.endswith(b"\n"), "%s does not end with a whole line" % f)
        cut = data[: len(data) // 2]
        whole = cut[: cut.rfind(b"\n") + 1]
        for line in whole.splitlines():
            json.loads(line)
    shutil.rmtree(w, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    for a in ("--shim", "--sim-dir", "--probe", "--local-main", "--local-lib", "--evfail", "--cli"):
        ap.add_argument(a, default="")
    args = ap.parse_args()
    globals()["test_" + args.case](args)
    print("%s: %s" % (args.case, "FAILED (%d)" % len(failures) if failures else "ok"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
