#!/usr/bin/env python3
"""tests/dump/test_snapshot.py CASE --cli COLLSCOPE --apps APPS_DIR

The always-on recording's defaults and `collscope snapshot` (docs/always-on.md), end to end on
the simulator's modeled clock (COLLSCOPE_SIM_CLOCK=model, seed 1).
  compress: COLLSCOPE_COMPRESS unset gives *.jsonl.zst files in summary mode and *.jsonl in full
            mode; a value that is set wins in both (off in summary mode, zstd in full mode); the
            report reads the compressed summary-mode dumps (every op counted from summaries).
  snapshot: a summary-mode job of 4 ranks that runs until it is stopped: `collscope snapshot JOB`
            while it runs prints one line per process and a count (exit 0), every rank's dump
            then holds a window with reason "snapshot" and the report's flight section lists
            them; decoy rings in the same directory are never written: a copy of a live ring
            renamed to another job (its pid alive), one whose name carries another uid than its
            owner, one whose header uid differs from its name's, and the rings of a second
            running job (COLLSCOPE_DIR=none): its header's request counter stays 0; `collscope
            snapshot` of that job says its 2 processes write no dump, of a third job in full mode
            that its 2 processes flushed their dumps, of a job with no ring exits 1. The job is then stopped (SIGTERM) and ends with its footers.
  demo:     `collscope demo`'s always-on step: the flight section lists a finding window of each of
            the 8 ranks, the report read 2400 ops from 48 summary lines, the finding window's last op
            shows rank 5's GPU time 3000 us (its lateness) under the others', and summary mode wrote at
            least 20x fewer bytes than full mode.
Prints the measured figures."""
import argparse, json, os, re, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hung_jobs  # noqa: E402  (tests/hung_jobs.py)

MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1"}
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def job_env(tmp, name, extra):
    out, shm = os.path.join(tmp, name, "dumps"), os.path.join(tmp, name, "shm")
    os.makedirs(shm, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "COLLSCOPE_COMPRESS"}
    env.update(COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, COLLSCOPE_JOB_ID="snap" + name, **MODEL)
    env.update(extra)
    return env, out, shm


def job_cmd(cli, apps, n, steps):
    return [cli, "run", "-n", str(n), "--hosts", "simhost[1-2]", "--sim", "--no-kill-on-fail", "--",
            os.path.join(apps, "dp_train"), "--steps", str(steps), "--size", "256K"]


def report(cli, dumps):
    p = subprocess.run([cli, "report", "--json", dumps], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if not check(p.returncode == 0, "report %s: rc %d: %s" % (dumps, p.returncode, p.stderr[-400:])):
        return {}
    return json.loads(p.stdout)


def case_compress(a, tmp):
    steps = 5
    for name, extra, suffix in (("summary", {"COLLSCOPE_RECORD": "summary"}, ".jsonl.zst"),
                                ("full", {"COLLSCOPE_RECORD": "full"}, ".jsonl"),
                                ("summaryoff", {"COLLSCOPE_RECORD": "summary", "COLLSCOPE_COMPRESS": "off"}, ".jsonl"),
                                ("fullzstd", {"COLLSCOPE_RECORD": "full", "COLLSCOPE_COMPRESS": "zstd"}, ".jsonl.zst")):
        env, out, _ = job_env(tmp, name, extra)
        p = subprocess.run(job_cmd(a.cli, a.apps, 2, steps), env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        check(p.returncode == 0, "%s job: rc %d: %s" % (name, p.returncode, p.stdout[-400:]))
        names = sorted(os.listdir(out)) if os.path.isdir(out) else []
        print("%-10s %s: %s" % (name, json.dumps(extra), names))
        check(len(names) == 2 and all(n.endswith(suffix) and (suffix == ".jsonl.zst" or not n.endswith(".zst"))
                                      for n in names), "%s: 2 %s files wanted, got %s" % (name, suffix, names))
        if name == "summary":
            fl = report(a.cli, out).get("flight", {})
            check(fl.get("summary_ops") == 2 * steps * 3,
                  "the compressed summary-mode dumps: summary_ops %s, want %d" % (fl.get("summary_ops"), 2 * steps * 3))


# struct cs_ring_hdr (include/collscope/ring.h): where uid, job, and snap_asked and snap_seen sit
HDR_UID, HDR_JOB, HDR_SNAP = 44, 184, 2056
RING_OPS, AFTER_OPS = 64, 16


def decoy(shm, src, name, job=None, uid=None):
    """a copy of ring file src as shm/name, its header's job or uid changed; returns (path, bytes)"""
    data = bytearray(open(src, "rb").read())
    if job is not None:
        data[HDR_JOB:HDR_JOB + 128] = job.encode().ljust(128, b"\0")
    if uid is not None:
        data[HDR_UID:HDR_UID + 4] = uid.to_bytes(4, "little")
    path = os.path.join(shm, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.write(fd, bytes(data))
    os.close(fd)
    return path, bytes(data)


def case_snapshot(a, tmp):
    env, out, shm = job_env(tmp, "job", {"COLLSCOPE_RECORD": "summary", "COLLSCOPE_FLIGHT_OPS": str(RING_OPS),
                                         "COLLSCOPE_FLIGHT_AFTER": str(AFTER_OPS)})
    job, uid = "snapjob", os.geteuid()
    log = open(os.path.join(tmp, "job.log"), "w+")
    p = subprocess.Popen(job_cmd(a.cli, a.apps, 4, 1000000), env=env, stdout=log, stderr=subprocess.STDOUT)
    # a second job in the same ring directory, without dumps (COLLSCOPE_DIR=none)
    env_none = dict(env, COLLSCOPE_DIR="none", COLLSCOPE_JOB_ID="snapnone")
    q = subprocess.Popen(job_cmd(a.cli, a.apps, 2, 1000000), env=env_none, stdout=log, stderr=subprocess.STDOUT)
    # a third one in full mode: asked to flush its dump
    env_full = dict(env, COLLSCOPE_DIR=os.path.join(tmp, "full"), COLLSCOPE_JOB_ID="snapfull", COLLSCOPE_RECORD="full")
    fj = subprocess.Popen(job_cmd(a.cli, a.apps, 2, 1000000), env=env_full, stdout=log, stderr=subprocess.STDOUT)
    try:
        # every rank past op 100: its flight ring is full when the window is asked
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and p.poll() is None and q.poll() is None and fj.poll() is None:
            top = hung_jobs.top_processes(a.cli, shm)
            procs = [x for x in top if x.get("job") == job]
            nodump = [x for x in top if x.get("job") == "snapnone"]
            full = [x for x in top if x.get("job") == "snapfull"]
            if (len(procs) == 4 and len(nodump) == 2 and len(full) == 2 and
                    all((x.get("seq") or 0) >= 100 for x in procs + nodump + full)):
                break
            time.sleep(0.1)
        if not check(p.poll() is None and q.poll() is None and fj.poll() is None and len(procs) == 4 and
                     len(nodump) == 2 and len(full) == 2, "the jobs are not running with 4, 2 and 2 rings: %s" % top):
            return
        before_none = {f: open(os.path.join(shm, f), "rb").read()[:4096] for f in os.listdir(shm) if "snapnone" in f}
        src = os.path.join(shm, "collscope-%d-%s-r0.ring" % (uid, job))
        check(open(src, "rb").read()[HDR_JOB:HDR_JOB + 8] == b"snapjob\0", "the ring header's job is not at %d" % HDR_JOB)
        decoys = [decoy(shm, src, "collscope-%d-snapother-r0.ring" % uid, job="snapother"),
                  decoy(shm, src, "collscope-%d-%s-r9.ring" % (uid + 4242, job)),
                  decoy(shm, src, "collscope-%d-%s-r8.ring" % (uid, job), uid=uid + 4242)]
        s = subprocess.run([a.cli, "snapshot", job, "--shm-dir", shm, "--wait", "60"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        print(s.stdout + s.stderr)
        check(s.returncode == 0, "snapshot: rc %d" % s.returncode)
        lines = s.stdout.splitlines()
        ranks = sorted(int(l.split()[3]) for l in lines if l.startswith("job %s rank " % job))
        check(ranks == [0, 1, 2, 3], "snapshot's process lines: ranks %s, want 0-3" % ranks)
        check(all(l.endswith("flight window asked: window written") for l in lines if l.startswith("job ")),
              "a process line is not 'flight window asked: window written'")
        check(any(l.startswith("collscope snapshot: 4 processes of job snapjob: 4 windows written,") for l in lines),
              "snapshot's count line is not 4 processes, 4 windows")
        check(s.stderr.count("skipping") == 2, "snapshot did not refuse the 2 rings of a mismatched uid")
        for path, data in decoys:
            check(open(path, "rb").read() == data, "decoy %s was written" % os.path.basename(path))
        snap = open(src, "rb").read()[HDR_SNAP:HDR_SNAP + 16]
        check(snap == (1).to_bytes(8, "little") * 2, "snapjob's rank 0: snap_asked/snap_seen %s, want 1/1" % snap.hex())
        # the other job's rings: snapjob's request left their headers' counters alone
        for f, head in before_none.items():
            now = open(os.path.join(shm, f), "rb").read()[:4096]
            check(now[HDR_SNAP:HDR_SNAP + 16] == head[HDR_SNAP:HDR_SNAP + 16] == bytes(16),
                  "%s: snap_asked/snap_seen changed by another job's snapshot" % f)
        n = subprocess.run([a.cli, "snapshot", "snapnone", "--shm-dir", shm], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        print(n.stdout)
        check(n.returncode == 0 and n.stdout.count("nothing asked: the process writes no dump (COLLSCOPE_DIR=none)") == 2
              and "2 processes of job snapnone: 0 windows written, 0 dumps flushed, 2 without a dump" in n.stdout,
              "snapshot of the COLLSCOPE_DIR=none job does not say that its 2 processes write no dump")
        n = subprocess.run([a.cli, "snapshot", "snapfull", "--shm-dir", shm, "--wait", "60"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        print(n.stdout)
        check(n.returncode == 0 and n.stdout.count("flush asked (full recording: every op goes to the dump): dump "
                                                   "flushed") == 2 and
              "2 processes of job snapfull: 0 windows written, 2 dumps flushed," in n.stdout,
              "snapshot of the full-mode job does not say that its 2 processes flushed their dumps")
        n = subprocess.run([a.cli, "snapshot", "nosuchjob", "--shm-dir", shm], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        check(n.returncode == 1, "snapshot of a job without rings: rc %d" % n.returncode)
        for path, data in decoys:
            os.unlink(path)
    finally:
        for x in (p, q, fj):
            if x.poll() is None:
                x.send_signal(signal.SIGTERM)
        for x in (p, q, fj):
            x.wait(timeout=120)
    r = report(a.cli, out)
    wins = [w for w in r.get("flight", {}).get("windows", []) if w["reason"] == "snapshot"]
    print("snapshot windows: %s" % [(w["rank"], w["ring_ops"], w["after_ops"]) for w in wins])
    check(sorted((w["rank"], w["ring_ops"], w["after_ops"]) for w in wins) ==
          [(k, RING_OPS, AFTER_OPS) for k in range(4)],
          "the report's snapshot windows: %s, want ranks 0-3 with %d ops before, %d after" %
          ([(w["rank"], w["ring_ops"], w["after_ops"]) for w in wins], RING_OPS, AFTER_OPS))
    text = subprocess.run([a.cli, "report", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120).stdout
    flight = text[text.find("# Flight recorder"):]
    check(flight.count(" snapshot ") == 4, "the report's flight section lists %d snapshot windows, want 4:\n%s" %
          (flight.count(" snapshot "), flight[:1500]))


def case_demo(a, tmp):
    """`collscope demo`'s always-on step: the straggler job in summary mode, its windows"""
    p = subprocess.run([a.cli, "demo", "--steps", "2", "--keep", os.path.join(tmp, "demo")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=220)
    check(p.returncode == 0, "demo: rc %d" % p.returncode)
    sec = p.stdout.split("collscope demo: always-on")[-1] if "collscope demo: always-on" in p.stdout else ""
    print("collscope demo: always-on" + sec)
    check("# Flight recorder (COLLSCOPE_RECORD=summary): 8 windows," in sec, "the flight section's 8 windows")
    wins = sorted(int(m.group(1)) for m in re.finditer(r"^    rank +(\d+)  finding +\d+ records before, up to 64 after",
                                                      sec, re.M))
    check(wins == list(range(8)), "the flight section lists finding windows of ranks %s, want 0-7" % wins)
    check("# read 2400 ops from 48 summary lines (and 4800 CUDA memcpys)" in sec, "the flight section's summary count")
    check("ops read from summaries (RECORD=summary): 2400 in 48 lines" in sec, "the report's summaries note")
    det = {int(m.group(1)): float(m.group(2)) for m in
           re.finditer(r"^    rank (\d)  AllReduce seq \d+ +([0-9.]+) us on the GPU$", sec, re.M)}
    check(sorted(det) == list(range(8)) and all(abs(det[r] - det[5] - 3000.0) < 0.05 for r in det if r != 5),
          "the window's detail: rank 5's GPU time 3000 us under every other rank's (its lateness), got %s" % det)
    m = re.search(r"bytes written: summary mode (\d+) in 8 files \(\d+ per rank\), full mode (\d+) ", sec)
    check(m and int(m.group(2)) >= 20 * int(m.group(1)), "summary mode's bytes not 20x under full mode's: %s" %
          str(m.groups() if m else None))
    check("collscope snapshot JOB" in sec, "the demo does not name collscope snapshot")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["compress", "snapshot", "demo"])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cs-snapshot-")
    try:
        {"compress": case_compress, "snapshot": case_snapshot, "demo": case_demo}[a.case](a, tmp)
    finally:
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept", tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
