#!/usr/bin/env python3
"""tests/dump/test_zstd.py CASE --cli COLLSCOPE --apps DIR --job OPCOUNT_JOB

Compressed dumps (COLLSCOPE_COMPRESS=zstd, *.jsonl.zst) and the byte budget (COLLSCOPE_BUDGET)
end to end on the simulator.
  same:    8 ranks of dp_train with a slow rank on the modeled clock, once with plain dumps and
           once with zstd ones: `collscope report --json` gives the same busbw table, summary and
           straggler figures (the communicator ids and host-clock gaps differ between any two
           runs, so they are left out); prints the bytes per op line of both.
  sigkill: 4 ranks of opcount_job with zstd dumps, SIGKILLed mid-run: every file is whole frames
           that the report reads (no footer); then one file is cut inside its last frame as a
           crash in a write would leave it: the report reads the frames before it, the same op
           records as the file cut at that frame's start, and counts the torn frame and its bytes.
  budget:  4 ranks of opcount_job with COLLSCOPE_BUDGET=64K, zstd and plain: no file passes 64 KiB,
           every file has its header and footer, and ops run == op records read + the footer's
           budget_drops (nothing lost uncounted); the report's notes print the drop line.
Prints the measured figures."""
import argparse, glob, json, os, shutil, signal, subprocess, sys, tempfile, time

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def env_for(dumps, shm, extra):
    env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_JOB_ID="zstdtest",
               COLLSCOPE_HEALTH_MS="0")
    env.update(extra)
    return env


def report(cli, d, text=False):
    p = subprocess.run([cli, "report", d] + ([] if text else ["--json"]), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "report %s: %s" % (d, p.stderr))
    return (p.stdout + p.stderr) if text else json.loads(p.stdout)


MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1", "COLLSCOPE_SIM_FAULTS": "slow:rank=5,us=3000"}
# differ between two runs of one seeded job: the communicator's id, the gaps (they read the host's
# enqueue stamps) and a finding's cost as a share of its span (the span's ends are GPU times put on
# the host's clock by the clock anchor, a few ns apart run to run; cost_us itself is exact)
HOST_CLOCK_KEYS = ("comm", "gap_us", "peer_gap_us", "cost_pct")


def op_line_bytes(d):
    n = b = 0
    for p in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(p, "rb"):
            if line.startswith(b'{"type":"op"'):
                n += 1
                b += len(line)
    return n, b


def case_same(a, tmp):
    out = {}
    for mode in ("off", "zstd"):
        d = os.path.join(tmp, mode)
        cmd = [a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--no-kill-on-fail", "--",
               os.path.join(a.apps, "dp_train"), "--steps", "300", "--size", "256K"]
        p = subprocess.run(cmd, env=env_for(d, os.path.join(tmp, "shm" + mode), dict(MODEL, COLLSCOPE_COMPRESS=mode)),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        check(p.returncode == 0, "%s job: %s" % (mode, p.stdout))
        names = sorted(os.listdir(d))
        suffix = ".jsonl.zst" if mode == "zstd" else ".jsonl"
        check(len(names) == 8 and all(n.endswith(suffix) for n in names), "%s: 8 %s files: %s" % (mode, suffix, names))
        out[mode] = (d, report(a.cli, d), sum(os.path.getsize(os.path.join(d, n)) for n in names))
    (dp, rp, sp), (dz, rz, sz) = out["off"], out["zstd"]
    nops, bops = op_line_bytes(dp)
    check(nops == 8 * 300 * 3 and rz["summary"]["ops"] == nops, "op records: %d plain, %d zstd" % (nops, rz["summary"]["ops"]))
    recs = nops + rz["summary"]["xfers"]
    print("bytes per op line: plain %.1f (op lines alone); files per op+xfer line: plain %.1f, zstd %.1f (%.1fx)"
          % (bops / nops, sp / recs, sz / recs, sp / sz))
    for k in ("ops", "busbw_pct", "summary"):
        check(rp[k] == rz[k], "report %s: plain %s\n zstd %s" % (k, json.dumps(rp[k])[:800], json.dumps(rz[k])[:800]))

    def model_figures(stragglers):
        return [{k: v for k, v in s.items() if k not in HOST_CLOCK_KEYS} for s in stragglers]
    check(len(rz["stragglers"]) == 1 and rz["stragglers"][0]["rank"] == 5, "zstd: rank 5 flagged: %s" % rz["stragglers"])
    check(model_figures(rp["stragglers"]) == model_figures(rz["stragglers"]),
          "stragglers: plain %s\n zstd %s" % (rp["stragglers"], rz["stragglers"]))
    print("straggler:", json.dumps(model_figures(rz["stragglers"])))
    return 0


def opcount(a, dumps, counts, steps, extra, pace="0"):
    os.makedirs(counts, exist_ok=True)
    env = env_for(dumps, counts, dict(extra, OPCOUNT_DIR=counts, OPCOUNT_PACE_US=pace))
    cmd = [a.cli, "run", "-n", "4", "--sim", "--no-kill-on-fail", "--", a.job, "--steps", str(steps), "--size", "4K"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def ran_ops(counts):
    return sum(int.from_bytes(open(os.path.join(counts, "ops.r%d" % r), "rb").read(8), "little") for r in range(4))


def frames(path):
    """[(offset, length)] of the zstd frames of a file (RFC 8878 3.1.1), the writer's own."""
    data, out, pos = open(path, "rb").read(), [], 0
    while pos < len(data):
        start, fhd = pos, data[pos + 4]
        single, did, fcs = (fhd >> 5) & 1, (0, 1, 2, 4)[fhd & 3], fhd >> 6
        pos += 5 + (not single) + did + ((1 if single else 0) if fcs == 0 else 1 << fcs)
        while True:
            bh = int.from_bytes(data[pos:pos + 3], "little")
            pos += 3 + (1 if (bh >> 1) & 3 == 1 else bh >> 3)
            if bh & 1:
                break
        pos += 4 if (fhd >> 2) & 1 else 0
        out.append((start, pos - start))
    return out


def case_sigkill(a, tmp):
    dumps, counts = os.path.join(tmp, "dumps"), os.path.join(tmp, "counts")
    p = opcount(a, dumps, counts, 1000000, {"COLLSCOPE_COMPRESS": "zstd", "COLLSCOPE_FLUSH_MS": "50"}, pace="200")
    def written():  # every rank wrote 4 frames or more
        try:
            f = glob.glob(os.path.join(dumps, "*.zst"))
            return len(f) == 4 and all(len(frames(x)) >= 4 for x in f)
        except IndexError:  # a frame being written
            return False
    end = time.time() + 60
    while time.time() < end and not written():
        time.sleep(0.1)
    for pid in subprocess.run(["pgrep", "-f", "-P", str(p.pid), "opcount_job"], stdout=subprocess.PIPE,
                              text=True).stdout.split():
        os.kill(int(pid), signal.SIGKILL)
    p.communicate(timeout=60)
    files = sorted(glob.glob(os.path.join(dumps, "*.jsonl.zst")))
    check(len(files) == 4, "4 zstd dumps: %s" % files)
    r = report(a.cli, dumps)
    s = r["summary"]
    print("killed: %d op records read from %d files, %d frames, ran %d ops"
          % (s["ops"], s["files"], sum(len(frames(f)) for f in files), ran_ops(counts)))
    # (a kill inside a write(2) could leave a torn frame: counted, never an error)
    check(s["files_without_footer"] == 4 and s["bad_frames"] == 0 and s["malformed_lines"] == 0 and s["ops"] > 0,
          "killed files: frames read, no footer: %s" % s)
    # a crash inside a write: the file ends inside its last frame
    victim = files[0]
    fr = frames(victim)
    last_off, last_len = fr[-1]
    cut = os.path.join(tmp, "cut")
    at_start = os.path.join(tmp, "at_start")
    for d, n in ((cut, last_off + last_len // 2), (at_start, last_off)):
        os.makedirs(d)
        with open(victim, "rb") as f:
            open(os.path.join(d, os.path.basename(victim)), "wb").write(f.read(n))
    rc, rs = report(a.cli, cut)["summary"], report(a.cli, at_start)["summary"]
    whole = next(x["ops"] for x in r["ranks"] if x["file"] == os.path.basename(victim))
    print("cut inside the last frame (%d of its %d bytes kept): %d op records read, %d with the file cut at the "
          "frame's start, %d in the whole file; torn frames %d, bytes %d"
          % (last_len // 2, last_len, rc["ops"], rs["ops"], whole, rc["torn_frames"], rc["torn_frame_bytes"]))
    check(rc["ops"] == rs["ops"] and rs["ops"] < whole, "the frames before the torn one are read, not it")
    check(rc["torn_frames"] == 1 and rc["torn_frame_bytes"] == last_len // 2, "the torn frame counted: %s" % rc)
    check(rc["truncated_lines"] == 0 and rc["malformed_lines"] == 0, "no partial line read: %s" % rc)
    text = report(a.cli, cut, text=True)
    check("zstd frames cut short, skipped:          1 (%d compressed bytes)" % (last_len // 2) in text, text)
    return 0


BUDGET = 64 << 10


def case_budget(a, tmp):
    for mode in ("zstd", "off"):
        dumps, counts = os.path.join(tmp, mode), os.path.join(tmp, "counts" + mode)
        steps = 20000 if mode == "zstd" else 4000
        p = opcount(a, dumps, counts, steps, {"COLLSCOPE_COMPRESS": mode, "COLLSCOPE_BUDGET": "64K",
                                              "COLLSCOPE_FLUSH_MS": "20"})
        out = p.communicate(timeout=240)[0]
        check(p.returncode == 0, "%s job: %s" % (mode, out))
        files = sorted(os.listdir(dumps))
        sizes = [os.path.getsize(os.path.join(dumps, f)) for f in files]
        r = report(a.cli, dumps)
        s = r["summary"]
        ran = ran_ops(counts)
        print("%s: ran %d ops, file sizes %s (budget %d), %d op records read, budget_drops %d, lost %d, drops %d"
              % (mode, ran, sizes, BUDGET, s["ops"], s["budget_drops"], s["lost"], s["drops"]))
        check(len(files) == 4 and max(sizes) <= BUDGET, "%s: every file within the budget: %s" % (mode, sizes))
        check(s["files_without_footer"] == 0 and all(x["footer"] for x in r["ranks"]), "%s: footers: %s" % (mode, s))
        check(s["budget"] == BUDGET and s["budget_drops"] > 0, "%s: the budget was reached: %s" % (mode, s))
        check(s["ops"] + s["budget_drops"] == ran and s["lost"] == 0 and s["drops"] == 0,
              "%s: op records %d + budget drops %d == ops run %d" % (mode, s["ops"], s["budget_drops"], ran))
        # op lines fill the budget less its reserve (stats/dump_writer.c: budget / 8, 16 KiB at least)
        check(min(sizes) > (BUDGET - (16 << 10)) * 0.9, "%s: the budget is used, not wasted: %s" % (mode, sizes))
        text = report(a.cli, dumps, text=True)
        check("%d op/xfer records not written: budget of %d bytes reached" % (s["budget_drops"], BUDGET) in text,
              text[-2000:])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    ap.add_argument("--job", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-zstd-")
    try:
        rc = globals()["case_" + a.case](a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures or rc:
        print("%d check(s) failed" % len(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
