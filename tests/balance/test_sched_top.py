#!/usr/bin/env python3
"""tests/balance/test_sched_top.py CASE --cli COLLSCOPE --apps DIR

`collscope top` and the exporter judge the rings' stragglers against the pipeline schedule
and the peers' waits as the report does (tools/ring/ring_sched.c; docs/detection.md
"Pipelines"), on the modeled clock (seed 1, every op timed), the rings kept after the job:
  train3d: tensor 2 x pipeline 2 x data 2, rank 5's compute 50 % longer: `top` flags rank 5
      alone STRAGGLER, its three findings (TP, its exchange with rank 1, DP) and no other: the
      healthy ranks the detector flags `link` (rank 1 waits in its Recvs for rank 5, rank 4 at
      TP for rank 5, rank 0 in its Recvs for rank 4) are moved to the peer they waited for;
  mp_clean: megatron_pp, 4 stages x 2 replicas, 1F1B, the grad-norm and tied-embedding
      AllReduces across the stages: no straggler in `top` and every exporter gauge 0 (the
      drain's stage order at the cross-stage collectives is no slow GPU);
  mp_slow: the same with rank 2 (stage 1) 10 % slower: `top` flags rank 2 alone and the
      exporter's gauge is 1 for rank 2 alone (it never arrives last at a cross-stage
      collective: the schedule names it from its compute gap against its stage's peer);
  mp_stage_slow: megatron_pp without a collective across the stages (--no-grad-norm, no tied
      embedding), rank 5 (stage 2) 10 % slower: `top` (the whole ring: 29 steps) flags rank 5
      alone (its stage peer rank 4 is as late at their reduce-scatter: the schedule names it
      from its compute gap there, a weighted sign test); the exporter's gauge is 1 for rank 5
      alone: its detector window (the last 512 op records a rank, about 10 steps here: 12
      instances above rank 4, 6 below, p 0.007) is too short for the test's 0.001 / 8, so it
      keeps each rank's collectives' compute gaps across its reads (exporter_gaps.h) and the
      stage comparison sees every step the ring held."""
import argparse, json, os, re, shutil, subprocess, tempfile

# every op of a job (megatron_pp's 30 steps: 2,850 a rank) GPU-timed even if collscope's harvest
# thread, which tops the event pool up, is not scheduled while the job runs (a machine at load
# ~300 left 26 ops of rank 0 untimed and the balance figures short)
EVENTS_ALL = "8192"
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1",
         "COLLSCOPE_EVENT_PREFILL": EVENTS_ALL, "COLLSCOPE_KEEP_SHM": "1"}
GRACE = "100000000"  # the rings' times are the modeled clock's: keep them in view
T3D = ["--size", "64K", "--tp", "2", "--pp", "2", "--microbatches", "4", "--compute-us", "1000"]
MP = ["--size", "64K", "--tp", "1", "--pp", "4", "--microbatches", "4", "--layers", "2", "--compute-us", "1000",
      "--tied-embedding", "--pause-ms", "20"]


def job(a, tmp, app, args, steps, faults):
    shm = os.path.join(tmp, "shm")
    os.makedirs(shm)
    env = dict(os.environ, COLLSCOPE_DIR=os.path.join(tmp, "dumps"), COLLSCOPE_SHM_DIR=shm,
               COLLSCOPE_SIM_FAULTS=faults, **MODEL)
    p = subprocess.run([a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--",
                        os.path.join(a.apps, app), "--steps", str(steps)] + args,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout[-3000:]
    out = lambda *c: subprocess.run([a.cli] + list(c), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    check=True).stdout
    top = json.loads(out("top", "--json", "--shm-dir", shm))
    flags = {p["rank"]: p["flags"] for p in top["processes"]}
    found = sorted((s["rank"], s["kind"]) for s in top["stragglers"])
    gauge = {}
    for l in out("exporter", "--once", "--shm-dir", shm, "--grace", GRACE).splitlines():
        m = re.match(r'collscope_straggler\{(?:.*,)?rank="(\d+)".*\} (\S+)$', l)
        if m:
            gauge[int(m.group(1))] = float(m.group(2))
    print("%s: top flags %s, findings %s, exporter %s" % (app, flags, found, gauge))
    assert sorted(flags) == list(range(8)) and sorted(gauge) == list(range(8)), (flags, gauge)
    return flags, found, gauge


def case_train3d(a, tmp):
    flags, found, gauge = job(a, tmp, "train3d", T3D, 16, "link:a=*,b=*,us=300;jitter:pct=2;slow:rank=5,compute=50")
    assert [r for r, f in sorted(flags.items()) if "STRAGGLER" in f] == [5], flags
    assert found == [(5, "compute")] * 3, found
    assert {r: v for r, v in gauge.items() if v} == {5: 1.0}, gauge


def case_mp_clean(a, tmp):
    flags, found, gauge = job(a, tmp, "megatron_pp", MP, 30, "")
    assert all("STRAGGLER" not in f for f in flags.values()) and found == [], (flags, found)
    assert all(v == 0 for v in gauge.values()), gauge


def case_mp_slow(a, tmp):
    flags, found, gauge = job(a, tmp, "megatron_pp", MP, 30, "slow:rank=2,compute=10")
    assert [r for r, f in sorted(flags.items()) if "STRAGGLER" in f] == [2], flags
    assert {r for r, _ in found} == {2}, found
    assert {r: v for r, v in gauge.items() if v} == {2: 1.0}, gauge


def case_mp_stage_slow(a, tmp):
    args = [x for x in MP if x != "--tied-embedding"] + ["--no-grad-norm"]
    flags, found, gauge = job(a, tmp, "megatron_pp", args, 30, "slow:rank=5,compute=10")
    assert [r for r, f in sorted(flags.items()) if "STRAGGLER" in f] == [5], flags
    assert {r for r, _ in found} == {5}, found
    assert {r: v for r, v in gauge.items() if v} == {5: 1.0}, gauge


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cs-schedtop-")
    try:
        {"train3d": case_train3d, "mp_clean": case_mp_clean, "mp_slow": case_mp_slow,
         "mp_stage_slow": case_mp_stage_slow}[a.case](a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
