#!/usr/bin/env python3
"""tests/online/test_online_pipeline.py CASE --cli COLLSCOPE --build BUILDDIR

The online exchange judged against a pipeline's schedule (analysis/online_sched.c,
docs/online.md) on the simulator's modeled clock (seed 1, every op timed, 2 % jitter):
megatron_pp, 1F1B, 4 stages x 2 data-parallel replicas, with the exit decision's AllReduce
over the world each step (--exit-check: what starts the exchange), an exchange every 4 world
collectives, 120 steps. The findings are the lines rank 0 logs during the run.
  clean: with the grad-norm AllReduce across the stages: no finding (the first stage, last
      there and at the world's AllReduce every step by the drain, is no slow GPU; judged
      without the schedule: ranks 0 and 1 last in 100 % and their stage-1 peers, 4 findings);
  clean_nogn: --no-grad-norm (only the world's AllReduce crosses the stages): no finding
      (without the schedule: ranks 0 to 3, 4 findings);
  slow_stage: --no-grad-norm with rank 5 (stage 2) 10 % slower: never late at a collective,
      named alone, kind compute, by the stage comparison at its stage's communicator (slow: rank
      2, named by the rules at another communicator first, is not named again by it);
  slow: clean's job with rank 2 (stage 1) 10 % slower: rank 2
      alone, kind compute (its compute gap above its peers'), last in none, lateness 0, within
      SLOW_WITHIN sampled instances. The count and the median duration are not pinned: which
      records an exchange carries is what the harvest thread had fed when the exchange's
      thread started, wall-clock timing beside the modeled clock (15 and 18 instances,
      median 1754 to 1765 us, seen in 16 runs beside two busy loops)."""
import argparse, os, re, shutil, subprocess, sys, tempfile

# every op of a job (megatron_pp's 30 steps: 2,850 a rank) GPU-timed even if collscope's harvest
# thread, which tops the event pool up, is not scheduled while the job runs (a machine at load
# ~300 left 26 ops of rank 0 untimed and the balance figures short)
EVENTS_ALL = "8192"
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1",
         "COLLSCOPE_EVENT_PREFILL": EVENTS_ALL, "COLLSCOPE_ONLINE_EVERY": "4", "COLLSCOPE_LOG": "warn"}
MP = ["--steps", "120", "--size", "64K", "--tp", "1", "--pp", "4", "--microbatches", "4", "--layers", "2",
      "--compute-us", "1000", "--pause-ms", "20", "--exit-check"]


def findings(a, tmp, args, faults):
    env = dict(os.environ, COLLSCOPE_DIR=os.path.join(tmp, "dumps"), COLLSCOPE_SHM_DIR=tmp,
               COLLSCOPE_SIM_FAULTS=faults, **MODEL)
    p = subprocess.run([a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--",
                        os.path.join(a.build, "tests", "apps", "megatron_pp")] + MP + args,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    if p.returncode != 0 or "PASS" not in p.stdout:
        print(p.stdout[-3000:])
        sys.exit("job failed (%d)" % p.returncode)
    st = [re.sub(r"^collscope\[\d+\]: ", "", l) for l in p.stdout.splitlines() if "online: straggler" in l]
    print("\n".join(st) or "no finding")
    return [re.sub(r"on comm [0-9a-f]+", "on comm C", l) for l in st]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cs-onlpipe-")
    try:
        if a.case == "clean":
            st = findings(a, tmp, [], "jitter:pct=2")
            assert st == [], st
        elif a.case == "clean_nogn":
            st = findings(a, tmp, ["--no-grad-norm"], "jitter:pct=2")
            assert st == [], st
        elif a.case == "slow":
            st = findings(a, tmp, [], "jitter:pct=2;slow:rank=2,compute=10")
            m = re.fullmatch(SLOW, st[0]) if len(st) == 1 else None
            assert m and int(m.group(1)) <= SLOW_WITHIN, st
        elif a.case == "slow_stage":
            # rank 5 (stage 2) 10 % slower without the grad-norm AllReduce: never late at a
            # collective (its pipeline copy waits for it), named by the stage comparison at its
            # stage's communicator (2 members, its peer rank 4), as the report names it
            st = findings(a, tmp, ["--no-grad-norm"], "jitter:pct=2;slow:rank=5,compute=10")
            m = re.fullmatch(SLOW_STAGE, st[0]) if len(st) == 1 else None
            assert m and int(m.group(1)) <= SLOW_STAGE_WITHIN, st
        else:
            sys.exit("unknown case " + a.case)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


SLOW = (r"online: straggler rank 2 \(simhost2\) on comm C: last in 0% of (\d+) sampled instances, lateness 0 us "
        r"\(median duration \d+ us\), kind compute")
SLOW_WITHIN = 30  # twice the count most runs show
SLOW_STAGE = SLOW.replace("rank 2 ", "rank 5 ").replace("simhost2", "simhost3")
SLOW_STAGE_WITHIN = 70  # twice the count seen (35): the sign test needs 18 of its stage's instances

if __name__ == "__main__":
    main()
