#!/usr/bin/env python3
"""tests/sdc/test_sdc.py: SDC checks end to end on the simulator.

  test_sdc.py COLLSCOPE SDC_JOB WORKDIR MODE [ARGS]

Runs tests/sdc/sdc_job under `collscope run -n 4 --hosts simhost[1-2] --sim` (shim
preloaded, COLLSCOPE_SDC=all, COLLSCOPE_SDC_MIN_BYTES=0) with COLLSCOPE_SIM_FAULTS flip
faults, then reads `collscope report --json` and checks the "sdc" section.

Modes:
  flips DTYPE [OP]   one flip per seq: every bit of the element, at=out (rank b%4) then
                     at=hop; out flips must all be caught by the fingerprint naming the
                     flipped rank; hop flips: the detection rate per bit class is printed
                     (sign/exponent bits must all be caught); no finding on other seqs.
  clean DATA STEPS   no faults, mixed ops and dtypes: 0 findings.
  kstats             the simulator's kernel accounting (COLLSCOPE_SIM_KERNEL_STATS, used by
                     bench/sdc_overhead.py): sdc_reduce launches per rank = 2 x the
                     collectives the dump says were checked, for all / sample:4 / off.
  failcall KIND      rank 1 makes one extra call NCCL rejects (--bad-call, KIND dtype or
                     redop) at step 20 of 80; rank 2 is slowed (slow:us=3000), rank 3's
                     output at seq 50 flipped: rank 2 is the only straggler, seq 50 naming
                     rank 3 the only SDC finding, the failed call's record has seq -1.
  failcall-sample    COLLSCOPE_SDC=sample:4 with that failed call (redop, eligible for a
                     check) on rank 1 at step 5: every rank checks the same seqs.
  straggler [--group] slow:rank=2,us=3000, 80 AllReduces (--group: each in a group): rank 2
                     is the only straggler with COLLSCOPE_SDC=off and with all (each
                     collective then checked), and its collectives' measured durations do
                     not include the check kernels.
Prints a per-bit table; exit 0 on success."""
import json
import os
import shutil
import subprocess
import time
import sys

NRANKS = 4
BITS = {"int8": 8, "uint8": 8, "int32": 32, "uint32": 32, "int64": 64, "uint64": 64,
        "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64,
        "float8e4m3": 8, "float8e5m2": 8}
# (sign bit, exponent bits) of each float type
FLOAT = {"float16": (15, range(10, 15)), "bfloat16": (15, range(7, 15)),
         "float32": (31, range(23, 31)), "float64": (63, range(52, 63)),
         "float8e4m3": (7, range(3, 7)), "float8e5m2": (7, range(2, 7))}


def bit_class(dtype, b):
    if dtype not in FLOAT:
        return "int"
    sign, exp = FLOAT[dtype]
    if b == sign:
        return "sign"
    if b in exp:
        return "exponent"
    mant = min(exp)
    return "mantissa-high" if b >= mant // 2 else "mantissa-low"


def run(cli, job, wd, faults, job_args, env_extra=None, log=None):
    d = os.path.join(wd, "dump")
    shutil.rmtree(d, ignore_errors=True)
    env = dict(os.environ)
    env.update({"COLLSCOPE_DIR": d, "COLLSCOPE_SDC": "all", "COLLSCOPE_SDC_MIN_BYTES": "0",
                "COLLSCOPE_SIM_FAULTS": faults, "COLLSCOPE_LOG": "warn"})
    env.update(env_extra or {})
    p = subprocess.run([cli, "run", "-n", str(NRANKS), "--hosts", "simhost[1-2]", "--sim", "--", job] + job_args,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
        raise SystemExit("job failed: rc=%d" % p.returncode)
    if log is not None:
        log.append(p.stderr)
    rep = subprocess.run([cli, "report", d, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if rep.returncode != 0:
        sys.stderr.write(rep.stderr)
        raise SystemExit("report failed")
    return json.loads(rep.stdout)


def sdc_records(wd):
    """(seq, comm_rank) -> the "sdc" object of every checked op record in the last dump"""
    d = os.path.join(wd, "dump")
    recs = {}
    for name in os.listdir(d):
        for line in open(os.path.join(d, name)):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("type") == "op" and r.get("sdc"):
                recs[(r["seq"], r["comm_rank"])] = r["sdc"]
    return recs


def fingerprints(wd):
    return {k: v["fp"] for k, v in sdc_records(wd).items() if v.get("fp")}


# unit roundoff, smallest-subnormal/2 (include/collscope/sdc.h)
UNIT = {"float16": (2.0 ** -11, 2.0 ** -25), "bfloat16": (2.0 ** -8, 2.0 ** -134),
        "float32": (2.0 ** -24, 2.0 ** -150), "float64": (2.0 ** -53, 0.0)}


def sum_change(op, dtype, count, seq, ref, got, root):
    """(|change of the compared output sum|, tolerance): is the flip above tolerance?"""
    ranks = range(NRANKS)
    if op in ("Broadcast", "AllGather"):
        # every rank's output against the inputs (fp64 rounding only)
        pairs = [(ref[(seq, r)]["out_sum"], got[(seq, r)]["out_sum"]) for r in ranks]
        if any(a is None or b is None for a, b in pairs):
            return float("inf"), 0.0
        if dtype not in UNIT:
            m = 2 ** min(BITS[dtype], 52)
            return (0.0 if all((a - b) % m == 0 for a, b in pairs) else float("inf")), 0.0
        S = sum(ref[(seq, r)]["in_abs"] or 0 for r in ranks)
        nin = sum(1 for r in ranks if ref[(seq, r)]["in_abs"] is not None)
        return max(abs(a - b) for a, b in pairs), 1.0625 * (count * nin + 64) * 2.0 ** -53 * S
    if op == "ReduceScatter":
        a = sum(ref[(seq, r)]["out_sum"] or 0 for r in ranks)
        b = sum(got[(seq, r)]["out_sum"] or 0 for r in ranks)
    else:
        k = (seq, root if op == "Reduce" else 0)
        a, b = ref[k]["out_sum"], got[k]["out_sum"]
    if a is None or b is None:
        return float("inf"), 0.0
    if dtype not in UNIT:   # integers: exact modulo 2^min(bits, 52)
        m = 2 ** min(BITS[dtype], 52)
        return (0.0 if (a - b) % m == 0 else float("inf")), 0.0
    u, d = UNIT[dtype]
    S = sum(ref[(seq, r)]["in_abs"] for r in ranks)
    N = count * NRANKS * (NRANKS if op == "ReduceScatter" else 1)
    tol = 1.0625 * (((NRANKS - 1) * u + (N + 64) * 2.0 ** -53) * S + (NRANKS - 1) * count * d)
    return abs(a - b), tol


def flips(cli, job, wd, dtype, op="AllReduce", count=4096, extra=()):
    """Ground truth: the same job without faults gives the reference fingerprints; a seq
    whose flip run differs from it on any rank was corrupted (a flip can land where it
    changes nothing, e.g. an AllGather hop flip on the ring's last rank)."""
    nb = BITS[dtype]
    job_args = ["--steps", str(2 * nb), "--op", op, "--dtype", dtype, "--count", str(count)] + list(extra)
    run(cli, job, wd, "", job_args)
    ref_recs = sdc_records(wd)
    ref = {k: v["fp"] for k, v in ref_recs.items() if v.get("fp")}
    plan = {}
    faults = []
    for b in range(nb):
        for k, at in enumerate(("out", "hop")):
            seq = k * nb + b
            # Reduce/Broadcast: root = seq % NRANKS; a Reduce output exists on the root only
            rank = seq % NRANKS if op == "Reduce" else b % NRANKS
            elem = (b * 37 + 5) % count
            plan[seq] = (at, b, rank)
            faults.append("flip:rank=%d,seq=%d,elem=%d,bit=%d,at=%s" % (rank, seq, elem, b, at))
    rep = run(cli, job, wd, ";".join(faults), job_args)
    got_recs = sdc_records(wd)
    got = {k: v["fp"] for k, v in got_recs.items() if v.get("fp")}
    corrupted = {seq for (seq, r), fp in got.items() if ref.get((seq, r)) != fp}
    checks = rep["sdc_checks"]
    by_seq = {}
    for f in rep["sdc"]:
        by_seq.setdefault(f["seq"], []).append(f)
    ok = True
    if checks["compared"] != 2 * nb:
        print("FAIL: %d collectives compared, want %d" % (checks["compared"], 2 * nb))
        ok = False
    stats = {}
    for seq, (at, b, rank) in sorted(plan.items()):
        fs = by_seq.get(seq, [])
        cls = bit_class(dtype, b)
        key = (at, cls)
        st = stats.setdefault(key, [0, 0, []])
        if seq not in corrupted:
            # no corrupted output: nothing to catch (a finding would be a false positive)
            if fs:
                print("FAIL: seq %d: finding without corruption: %s" % (seq, fs))
                ok = False
            if at == "out":
                print("FAIL: seq %d: out flip on rank %d did not corrupt anything" % (seq, rank))
                ok = False
            continue
        st[1] += 1
        fp_op = op in ("AllReduce", "Broadcast", "AllGather")
        if at == "out" and fp_op:
            # delivered data of an op whose outputs are identical everywhere: fingerprint,
            # naming the flipped rank, always
            good = any(f["check"] == "fingerprint" and f["suspect_rank"] == rank for f in fs)
            wrong = [f for f in fs if f["suspect_rank"] not in (None, rank)]
            if wrong:
                print("FAIL: seq %d (bit %d at=out rank %d): wrong suspect %s" % (seq, b, rank, wrong))
                ok = False
            must = True
        else:
            # sum check: must catch every flip whose change exceeds the tolerance
            good = len(fs) > 0
            if at == "out" and op == "Reduce" and good and not any(f["suspect_rank"] == rank for f in fs):
                print("FAIL: seq %d: Reduce out flip on the root %d not named" % (seq, rank))
                ok = False
            if dtype in ("float8e4m3", "float8e5m2"):
                # fingerprint only: the records carry no sums (null)
                must = False
                if any(v.get(k) is not None for v in got_recs.values() for k in ("in_sum", "in_abs", "out_sum")):
                    print("FAIL: %s records carry sums" % dtype)
                    ok = False
            else:
                change, tol = sum_change(op, dtype, count, seq, ref_recs, got_recs, seq % NRANKS)
                must = change > tol
            if must and not good:
                print("FAIL: seq %d (bit %d at=%s): change %.3g > tol %.3g not caught" % (seq, b, at, change, tol))
                ok = False
        if good:
            st[0] += 1
        else:
            st[2].append(b)
    print("%s %s: detection by bit class (%d ranks, %d elements)" % (op, dtype, NRANKS, count))
    for (at, cls), (c, n, missed) in sorted(stats.items()):
        print("  at=%-3s %-14s %3d/%-3d caught%s" % (at, cls, c, n, ("  missed bits " + ",".join(map(str, missed)))
                                                     if missed else ""))
        if at == "out" and c != n and op in ("AllReduce", "Broadcast", "AllGather"):
            print("FAIL: delivered-data flips must all be caught")
            ok = False
    stray = [s for s in by_seq if s not in plan]
    if stray:
        print("FAIL: findings on unflipped seqs %s" % stray)
        ok = False
    return ok


def clean(cli, job, wd, data, steps, extra):
    rep = run(cli, job, wd, "", ["--steps", str(steps), "--op", "mix", "--dtype", "mix", "--data", data] + extra)
    c = rep["sdc_checks"]
    print("clean data=%s %s: %s" % (data, " ".join(extra), json.dumps(c)))
    ok = True
    if rep["sdc"]:
        print("FAIL: false positives: %s" % json.dumps(rep["sdc"][:10]))
        ok = False
    if c["compared"] != steps:
        print("FAIL: %d compared, want %d" % (c["compared"], steps))
        ok = False
    return ok


def policy(cli, job, wd):
    """COLLSCOPE_SDC=sample:N / off / MIN_BYTES, and COLLSCOPE_TIMING=off (results then
    complete through the kernel's done tag alone)."""
    ok = True
    args = ["--steps", "20", "--op", "AllReduce", "--dtype", "float32", "--count", "4096"]   # 16 KiB
    cases = [({"COLLSCOPE_SDC": "sample:4"}, [0, 4, 8, 12, 16]),
             ({"COLLSCOPE_SDC": "sample:4", "COLLSCOPE_TIMING": "off"}, [0, 4, 8, 12, 16]),
             ({"COLLSCOPE_SDC": "off"}, []),
             ({"COLLSCOPE_SDC": "all", "COLLSCOPE_SDC_MIN_BYTES": "16385"}, []),
             ({"COLLSCOPE_SDC": "all", "COLLSCOPE_SDC_MIN_BYTES": "16384"}, list(range(20)))]
    for env, want in cases:
        run(cli, job, wd, "", args, env)
        recs = sdc_records(wd)
        for r in range(NRANKS):
            seqs = sorted(s for (s, rank) in recs if rank == r and recs[(s, rank)]["checked"] == 3)
            if seqs != want:
                print("FAIL: %s rank %d: checked seqs %s, want %s" % (env, r, seqs, want))
                ok = False
        print("policy %s: checked seqs %s" % (env, want))
    return ok


def kstats(cli, job, wd):
    """The accounting the overhead benchmark divides by: every checked AllReduce is two
    sdc_reduce launches (input, output) on that rank's simulated GPU, an unchecked one
    none, plus the self-test's launches once per context when checks are on; each rank
    process writes one file."""
    ok = True
    steps = 12
    args = ["--steps", str(steps), "--op", "AllReduce", "--dtype", "float32", "--count", "4096"]
    ks = os.path.join(wd, "kstats")
    for sdc, want in (("all", steps), ("sample:4", 3), ("off", 0)):
        shutil.rmtree(ks, ignore_errors=True)
        os.makedirs(ks)
        run(cli, job, wd, "", args, {"COLLSCOPE_SDC": sdc, "COLLSCOPE_SIM_KERNEL_STATS": ks})
        recs = sdc_records(wd)
        files = [json.load(open(os.path.join(ks, f))) for f in sorted(os.listdir(ks))]
        if len(files) != NRANKS:
            print("FAIL: %s: %d kstats files, want %d" % (sdc, len(files), NRANKS))
            ok = False
            continue
        launches = []
        for f in files:
            k = [e for e in f["fns"] if e["kind"] == "kernel" and e["name"] == "sdc_reduce"]
            n = sum(e["count"] for e in k)
            ns = sum(e["ns"] for e in k)
            launches.append(n)
            if (n > 0) != (ns > 0) or ns > f["busy_ns"] or f["items"] < steps + n:
                print("FAIL: %s pid %d: %d launches, %d ns of %d busy ns, %d items"
                      % (sdc, f["pid"], n, ns, f["busy_ns"], f["items"]))
                ok = False
        checked = sorted(sum(1 for (s, r), v in recs.items() if r == rank and v["checked"] == 3)
                         for rank in range(NRANKS))
        setup = SELFTEST_LAUNCHES if sdc != "off" else 0
        if sorted(launches) != [2 * c + setup for c in checked] or checked != [want] * NRANKS:
            print("FAIL: %s: sdc_reduce launches per rank %s, checked collectives per rank %s, want %d each"
                  % (sdc, sorted(launches), checked, want))
            ok = False
        print("kstats %s: launches per rank %s, checked %s" % (sdc, sorted(launches), checked))
    return ok


SELFTEST_LAUNCHES = 8   # hooks/sdc_check.c: the kernel self-test's cases, once per context


def sdc_ranks(rep):
    """summary.sdc_ranks without the zero counts: the ranks' footers' SDC standing"""
    return {k: v for k, v in rep["summary"]["sdc_ranks"].items() if v}


def selftest(cli, job, wd):
    """The kernel self-test at set-up: passes on the simulator's GPU (whose kernel is the
    host twin itself), and a GPU kernel that reads one bit wrong during it
    (COLLSCOPE_SIM_KERNEL_FAULT) turns the checks off on that rank -- one WARN line, no
    checked collectives, the job's exit status and results unchanged."""
    ok = True
    args = ["--steps", "6", "--op", "AllReduce", "--dtype", "float32", "--count", "4096"]
    log = []
    rep = run(cli, job, wd, "", args, {"COLLSCOPE_LOG": "info"}, log)
    passed = log[0].count("kernel self-test passed")
    checked = sum(1 for v in sdc_records(wd).values() if v["checked"] == 3)
    if passed != NRANKS or checked != 6 * NRANKS or sdc_ranks(rep) != {"ready": NRANKS}:
        print("FAIL: clean: %d ranks passed the self-test, %d checked collectives, standing %s (want %d, %d, ready)"
              % (passed, checked, sdc_ranks(rep), NRANKS, 6 * NRANKS))
        ok = False
    rep = run(cli, job, wd, "", args, {"COLLSCOPE_SDC": "off"})
    if sdc_ranks(rep):
        print("FAIL: COLLSCOPE_SDC=off: footers say %s" % sdc_ranks(rep))
        ok = False
    for launch in range(1, SELFTEST_LAUNCHES + 1):
        log = []
        rep = run(cli, job, wd, "", args, {"COLLSCOPE_SIM_KERNEL_FAULT": "sdc_reduce:%d" % launch}, log)
        failed = log[0].count("SDC kernel self-test failed")
        recs = sdc_records(wd)
        named = sorted(e["rank"] for e in rep["summary"]["sdc_selftest_failed"])
        if failed != NRANKS or recs or rep.get("sdc") or sdc_ranks(rep) != {"selftest_failed": NRANKS} or \
                named != list(range(NRANKS)):
            print("FAIL: fault in self-test launch %d: %d ranks turned the checks off (want %d), %d checked records, "
                  "%d findings" % (launch, failed, NRANKS, len(recs), len(rep.get("sdc") or [])))
            ok = False
        print("selftest: a read fault in launch %d: checks off on %d ranks, %d checked records"
              % (launch, failed, len(recs)))
    # one host's GPUs get it wrong, the other's pass: the report names the failing ranks as
    # suspects (their hosts), the passing ranks keep checking
    log = []
    rep = run(cli, job, wd, "", args, {"COLLSCOPE_SIM_KERNEL_FAULT": "sdc_reduce:2@simhost2"}, log)
    named = sorted((e["rank"], e["host"]) for e in rep["summary"]["sdc_selftest_failed"])
    checked = sorted({r for (s, r), v in sdc_records(wd).items() if v["checked"] == 3})
    bad_host = sorted(r for r, h in named)
    if sdc_ranks(rep) != {"ready": NRANKS // 2, "selftest_failed": NRANKS // 2} or \
            any(h != "simhost2" for r, h in named) or sorted(set(checked) | set(bad_host)) != list(range(NRANKS)) or \
            set(checked) & set(bad_host) or rep.get("sdc"):
        print("FAIL: a fault on simhost2 only: standing %s, self-test failed on %s, checking ranks %s"
              % (sdc_ranks(rep), named, checked))
        ok = False
    print("selftest: a read fault on simhost2's GPUs: standing %s, suspects %s, ranks still checking %s"
          % (sdc_ranks(rep), named, checked))
    # a GPU too busy to run the self-test within the set-up's 2 s bound: checks off, no hang
    log = []
    t0 = time.time()
    rep = run(cli, job, wd, "", args, {"COLLSCOPE_SIM_KERNEL_FAULT": "sdc_reduce:3:delay=3000"}, log)
    late = log[0].count("did not finish within 2000 ms")
    recs = sdc_records(wd)
    if late != NRANKS or recs or rep.get("sdc") or sdc_ranks(rep) != {"selftest_timeout": NRANKS}:
        print("FAIL: a self-test kernel 3 s late: %d ranks gave up (want %d), %d checked records" % (late, NRANKS, len(recs)))
        ok = False
    print("selftest: a self-test kernel 3 s late: %d ranks gave up waiting, %d checked records, job %.1f s"
          % (late, len(recs), time.time() - t0))
    return ok


def op_records(wd):
    """every op record of the last dump"""
    d = os.path.join(wd, "dump")
    out = []
    for name in os.listdir(d):
        for line in open(os.path.join(d, name)):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("type") == "op":
                out.append(r)
    return out


def stragglers(rep):
    return [(x["rank"], x["first_flag_instance"]) for x in rep["stragglers"] if x["rank"] >= 0]


STRAGGLER_STEPS = 80
SLOW = "slow:rank=2,us=3000"
NCCL_INVALID_ARGUMENT = 4


def failcall(cli, job, wd, kind):
    """A call NCCL rejects on one rank is no collective instance: the ranks' later calls
    still pair up, so the slowed rank stays the only straggler and the one flipped output
    the only SDC finding (before: every checked collective after the failed call differed
    on rank 1, and the straggler windows mixed different collectives)."""
    ok = True
    bad_rank, bad_step, flip_rank, flip_seq = 1, 20, 3, 50
    args = ["--steps", str(STRAGGLER_STEPS), "--op", "AllReduce", "--dtype", "float32", "--count", "4096",
            "--bad-call", "%d:%d:%s" % (bad_rank, bad_step, kind)]
    faults = "%s;flip:rank=%d,seq=%d,elem=77,bit=30,at=out" % (SLOW, flip_rank, flip_seq)
    rep = run(cli, job, wd, faults, args)
    recs = op_records(wd)
    failed = [r for r in recs if r["status"] != 0]
    want_failed = [(bad_rank, -1, NCCL_INVALID_ARGUMENT, "error")]
    got_failed = [(r["rank"], r["seq"], r["status"], r["timing"]) for r in failed]
    if got_failed != want_failed:
        print("FAIL: failed-call records %s, want %s" % (got_failed, want_failed))
        ok = False
    seqs = {r: sorted(x["seq"] for x in recs if x["rank"] == r and x["status"] == 0) for r in range(NRANKS)}
    if any(v != list(range(STRAGGLER_STEPS)) for v in seqs.values()):
        print("FAIL: successful calls' seqs per rank are not 0..%d: %s"
              % (STRAGGLER_STEPS - 1, {r: (v[:3], v[-3:], len(v)) for r, v in seqs.items()}))
        ok = False
    findings = [(f["seq"], f["check"], f["suspect_rank"]) for f in rep["sdc"]]
    print("failcall %s: failed-call records %s; SDC findings %s (%d compared); stragglers %s"
          % (kind, got_failed, findings[:6], rep["sdc_checks"]["compared"], stragglers(rep)))
    if findings != [(flip_seq, "fingerprint", flip_rank)]:
        print("FAIL: SDC findings %s, want only seq %d fingerprint naming rank %d"
              % (findings[:10], flip_seq, flip_rank))
        ok = False
    if rep["sdc_checks"]["compared"] != STRAGGLER_STEPS:
        print("FAIL: %d collectives compared, want %d" % (rep["sdc_checks"]["compared"], STRAGGLER_STEPS))
        ok = False
    if [r for r, _ in stragglers(rep)] != [2]:
        print("FAIL: stragglers %s, want rank 2 only" % rep["stragglers"])
        ok = False
    return ok


def failcall_sample(cli, job, wd):
    """sample:N counts eligible collectives per communicator before the call: a call that
    NCCL rejects gives its count back, so the failing rank checks the same seqs as its peers."""
    ok = True
    args = ["--steps", "20", "--op", "AllReduce", "--dtype", "float32", "--count", "4096", "--bad-call", "1:5:redop"]
    run(cli, job, wd, "", args, {"COLLSCOPE_SDC": "sample:4"})
    recs = sdc_records(wd)
    got = {r: sorted(s for (s, rank) in recs if rank == r and recs[(s, rank)]["checked"] == 3) for r in range(NRANKS)}
    print("failcall-sample: checked seqs per rank %s" % got)
    for r, seqs in got.items():
        if seqs != [0, 4, 8, 12, 16]:
            print("FAIL: rank %d checked seqs %s, want [0, 4, 8, 12, 16]" % (r, seqs))
            ok = False
    return ok


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else 0.0


# the straggler cases on the modeled clock (docs/simulator.md), every op timed by CUDA events:
# the same first flag with and without checks, exactly
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1"}
STRAGGLER_FIRST_FLAG = 15


def straggler(cli, job, wd, extra=()):
    """The slowed rank arrives last at every collective, so its measured durations are the
    shortest: only if the collective's end event sits where NCCL's work ends. Before, a
    checked collective's end event came after collscope's output check, and the simulated
    stall (which follows the collective's work and the event right after it) fell inside
    rank 2's measured collective: not flagged with COLLSCOPE_SDC=all."""
    ok = True
    args = ["--steps", str(STRAGGLER_STEPS), "--op", "AllReduce", "--dtype", "float32", "--count", "4096"] + list(extra)
    res = {}
    for sdc in ("off", "all"):
        rep = run(cli, job, wd, SLOW, args, dict(MODEL, COLLSCOPE_SDC=sdc))
        recs = [r for r in op_records(wd) if r["timing"] == "gpu_event" and r["seq"] >= 1]
        dur = {r: median([x["dur_us"] for x in recs if x["rank"] == r]) for r in range(NRANKS)}
        res[sdc] = stragglers(rep)
        checked = rep["sdc_checks"]["compared"]
        print("straggler%s COLLSCOPE_SDC=%s: stragglers (rank, first flagged instance) %s; median dur_us per rank %s; "
              "%d compared" % ("".join(" " + x for x in extra), sdc, res[sdc], {r: round(d, 1) for r, d in dur.items()}, checked))
        if [r for r, _ in res[sdc]] != [2]:
            print("FAIL: COLLSCOPE_SDC=%s: stragglers %s, want rank 2 only" % (sdc, rep["stragglers"]))
            ok = False
        if dur[2] >= min(d for r, d in dur.items() if r != 2):
            print("FAIL: COLLSCOPE_SDC=%s: the slowed rank's median duration is not the shortest" % sdc)
            ok = False
        if res[sdc] != [(2, STRAGGLER_FIRST_FLAG)]:
            print("FAIL: COLLSCOPE_SDC=%s: first flagged at %s, want instance %s"
                  % (sdc, res[sdc], STRAGGLER_FIRST_FLAG))
            ok = False
        if sdc == "all" and checked != STRAGGLER_STEPS:
            print("FAIL: %d collectives compared, want %d" % (checked, STRAGGLER_STEPS))
            ok = False
    return ok


def main():
    cli, job, wd, mode = sys.argv[1:5]
    args = sys.argv[5:]
    os.makedirs(wd, exist_ok=True)
    if mode == "flips":
        ok = flips(cli, job, wd, args[0], (args[1:2] or ["AllReduce"])[0], 4096, args[2:])
    elif mode == "policy":
        ok = policy(cli, job, wd)
    elif mode == "selftest":
        ok = selftest(cli, job, wd)
    elif mode == "kstats":
        ok = kstats(cli, job, wd)
    elif mode == "failcall":
        ok = failcall(cli, job, wd, args[0])
    elif mode == "failcall-sample":
        ok = failcall_sample(cli, job, wd)
    elif mode == "straggler":
        ok = straggler(cli, job, wd, args)
    elif mode == "clean":
        ok = clean(cli, job, wd, args[0], int(args[1]), args[2:])
    else:
        raise SystemExit("unknown mode " + mode)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
