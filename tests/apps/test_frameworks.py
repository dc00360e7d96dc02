#!/usr/bin/env python3
"""tests/apps/test_frameworks.py: the framework replicas (torch_pg, megatron_pp, xla_cmdbuf) with
and without collscope, on the modeled clock, 8 ranks on 2 simulated hosts.

Each case runs one replica in one capture mode through `collscope run --sim` twice, without the
shim and with it, and requires the same exit status (0) and the same output of every rank. Then
it checks collscope's dumps against the calls each rank says it issued (its `calls` lines,
tests/apps/calls.h): per communicator, every call is in the dumps with the communicator's id
(non-zero, the same on every member), comm_size and comm rank, consecutive seq, the call's bytes
and a timing kind: GPU-timed ("gpu_event" or "profiler") for eager and grouped calls, grouped
calls with "group" and, where several share their group's span, "group_ops"; a captured call's
graph gives one record per replay with "graph" and "replay" (GPU-timed too).

A check that waits for behaviour not in collscope yet may name a PENDING switch (below): while
the switch is off, its failing check prints "SKIP <reason>" instead of failing
(FRAMEWORKS_EXPECT=name,name turns switches on). None is pending now.

usage: test_frameworks.py CASE --cli collscope --apps DIR
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import case_main  # noqa: E402  (tests/case_main.py: the shared command line)

HOSTS = "simhost[1-2]"
N = 8
MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1"}

# Behaviour the checks require that collscope does not have yet: name -> why a check waits for
# it. Empty: every check is hard (communicator identity of non-blocking and split communicators,
# one record per graph replay, SDC checks safe under capture are all in). A check keeps the
# name of the behaviour it covers (its `pending` argument).
PENDING = {}
ENABLED = {x for x in os.environ.get("FRAMEWORKS_EXPECT", "").split(",") if x}
GPU_TIMED = ("gpu_event", "profiler")

APPS = {
    "torch_pg": ["--steps", "3", "--size", "4K", "--tp", "2", "--compute-us", "200"],
    "megatron_pp": ["--steps", "2", "--size", "4K", "--tp", "2", "--pp", "2", "--microbatches", "3",
                    "--layers", "2", "--compute-us", "200"],
    "xla_cmdbuf": ["--steps", "3", "--size", "4K", "--tp", "2", "--compute-us", "200"],
}


class Checks:
    """hard checks raise; a check under a pending switch that is off prints SKIP once per reason"""

    def __init__(self):
        self.skipped = collections.Counter()

    def that(self, ok, what, pending=None):
        if ok:
            return True
        if pending in PENDING and pending not in ENABLED:
            if not self.skipped[pending]:
                print("SKIP %s: %s (first: %s)" % (pending, PENDING[pending], what))
            self.skipped[pending] += 1
            return False
        raise AssertionError(what)


def launch(cli, apps, tmp, app, args, shim, env_extra=None):
    out = os.path.join(tmp, "dumps-%s-%d" % (app, len(os.listdir(tmp))))
    shm = os.path.join(tmp, "shm")
    os.makedirs(shm, exist_ok=True)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=shm, **MODEL)
    env.update(env_extra or {})
    cmd = [cli, "run", "-n", str(N), "--hosts", HOSTS, "--sim", "--tag-output"]
    cmd += [] if shim else ["--no-shim"]
    cmd += ["--", os.path.join(apps, app)] + list(args)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr, out


def per_rank(stdout):
    """each rank's stdout lines in order ("[R] line" from --tag-output)"""
    lines = collections.defaultdict(list)
    for line in stdout.splitlines():
        m = re.match(r"\[(\d+)\] (.*)$", line)
        if m:
            lines[int(m.group(1))].append(m.group(2))
        else:
            lines[-1].append(line)
    return dict(lines)


def same_run(cli, apps, tmp, app, args, env_extra=None):
    """the app without and with the shim: same status (0) and output; returns (rank lines, dumps)"""
    rc0, out0, err0, _ = launch(cli, apps, tmp, app, args, False, env_extra)
    rc1, out1, err1, dumps = launch(cli, apps, tmp, app, args, True, env_extra)
    for rc, err in ((rc0, err0), (rc1, err1)):
        if rc != 0:
            sys.stderr.write(err[-3000:])
    assert rc0 == 0, "%s without collscope exited %d" % (app, rc0)
    assert rc1 == rc0, "%s exited %d with collscope, %d without" % (app, rc1, rc0)
    a, b = per_rank(out0), per_rank(out1)
    assert a == b, "%s: output differs with collscope: %s" % (
        app, [(r, x, y) for r in sorted(set(a) | set(b)) for x, y in zip(a.get(r, []), b.get(r, [])) if x != y][:3])
    assert sorted(r for r in a if r >= 0) == list(range(N)), sorted(a)
    return a, dumps


def app_calls(lines):
    """rank -> [communicator's calls dict] from the `calls` lines"""
    out = {}
    for rank, ls in lines.items():
        for line in ls:
            m = re.match(r"calls \S+ rank=(\d+) (\{.*\})$", line)
            if m:
                assert int(m.group(1)) == rank, line
                out.setdefault(rank, []).append(json.loads(m.group(2)))
    return out


def load_ops(d):
    """rank -> op records of that rank's dump"""
    ops = collections.defaultdict(list)
    files = glob.glob(os.path.join(d, "*.jsonl"))
    assert len(files) == N, files
    for f in files:
        rank = None
        for line in open(f):
            x = json.loads(line)
            if x.get("type") == "header":
                rank = x["rank"]
            elif x.get("type") == "op":
                ops[rank].append(x)
    return ops


def kind_of(x):
    if "replay" in x:
        return "replay"
    if x.get("timing") == "captured":
        return "capture"
    return "group" if x.get("group", 0) else "eager"


def check_dumps(app, lines, dumps, nonblocking=False):
    """the dumps hold every call each rank counted; returns the Checks (skips counted)"""
    ck = Checks()
    calls, ops = app_calls(lines), load_ops(dumps)
    ids = collections.defaultdict(set)  # (comm name, color) -> comm ids seen on its members
    pend_id = "nonblocking_comms" if nonblocking else None
    for rank in range(N):
        assert rank in calls, "rank %d printed no calls" % rank
        # each communicator's calls are told apart by (op, bytes): the replicas give every
        # communicator sizes of its own
        owner = {}
        for c in calls[rank]:
            for op, nbytes, _, _, _ in c["ops"]:
                assert owner.setdefault((op, nbytes), c["comm"]) == c["comm"], (app, rank, op, nbytes)
        mine = collections.defaultdict(list)
        for x in ops[rank]:
            name = owner.get((x["op"], x["bytes"]))
            assert name is not None, "%s rank %d: a record of no call the app made: %s" % (app, rank, x)
            mine[name].append(x)
        for c in calls[rank]:
            recs, where = mine[c["comm"]], "%s rank %d comm %s" % (app, rank, c["comm"])
            want = collections.Counter()
            for op, nbytes, kind, group_ops, count in c["ops"]:
                want[(op, nbytes, kind, group_ops)] += count
            got = collections.Counter((x["op"], x["bytes"], kind_of(x), x.get("group_ops", 1)) for x in recs)
            # identity: one non-zero id, the app's size and rank
            cids = {x["comm"] for x in recs}
            ok = ck.that(len(cids) == 1 and "0000000000000000" not in cids, "%s: comm ids %s" % (where, cids), pend_id)
            ok &= ck.that(all(x["comm_size"] == c["size"] and x["comm_rank"] == c["crank"] for x in recs),
                          "%s: comm_size/comm_rank %s, want %d/%d" % (
                              where, {(x["comm_size"], x["comm_rank"]) for x in recs}, c["size"], c["crank"]), pend_id)
            if ok:
                ids[(c["comm"], c["color"])] |= cids
            # consecutive seq over the communicator's records
            seqs = sorted(x["seq"] for x in recs)
            ck.that(seqs == list(range(len(recs))), "%s: seqs %s" % (where, seqs[:20]),
                    pend_id if min(seqs, default=0) < 0 else ("replays" if want_replays(want) else None))
            # eager and grouped calls: every one, GPU-timed, group and group_ops as issued
            for kind in ("eager", "group"):
                w = {k: v for k, v in want.items() if k[2] == kind}
                g = {k: v for k, v in got.items() if k[2] == kind}
                ck.that(g == w, "%s: %s records %s, want %s" % (where, kind, sorted(g.items()), sorted(w.items())))
            bad = [x for x in recs if kind_of(x) in ("eager", "group") and x["timing"] not in GPU_TIMED]
            ck.that(not bad, "%s: eager or grouped records not GPU-timed: %s" % (where, bad[:2]))
            # the calls made while capturing: a record each (no GPU span, so no group_ops), or none
            w = collections.Counter({k[:2]: v for k, v in want.items() if k[2] == "capture"})
            g = collections.Counter(k[:2] for x in recs if kind_of(x) == "capture" for k in [(x["op"], x["bytes"])])
            ck.that(not g or g == w, "%s: capture records %s, want %s or none" % (
                where, sorted(g.items()), sorted(w.items())))
            # replays: one record per captured call and launch, with graph and replay, GPU-timed
            w = {k: v for k, v in want.items() if k[2] == "replay"}
            g = {k: v for k, v in got.items() if k[2] == "replay"}
            ck.that(g == w, "%s: replay records %s, want %s" % (where, sorted(g.items()), sorted(w.items())),
                    "replays")
            rep = [x for x in recs if "replay" in x]
            ck.that(all(x.get("graph") and x["timing"] in GPU_TIMED for x in rep),
                    "%s: replay records without graph or GPU timing" % where, "replays")
            launches = {(x.get("graph"), x["replay"]) for x in rep}
            ck.that(len(launches) == c["replays"], "%s: %d replays in the dumps, want %d" % (
                where, len(launches), c["replays"]), "replays" if c["replays"] else None)
    for (name, color), cids in sorted(ids.items()):
        ck.that(len(cids) == 1, "%s: members of %s (color %d) have comm ids %s" % (app, name, color, cids), pend_id)
    return ck


def want_replays(want):
    return any(k[2] == "replay" for k in want)


def run_case(cli, apps, tmp, app, mode, extra=(), nonblocking=False, env_extra=None):
    args = APPS[app] + ["--capture-mode", mode] + list(extra)
    lines, dumps = same_run(cli, apps, tmp, app, args, env_extra)
    assert any("summary %s" % app in x and "PASS" in x for x in lines[0]), lines[0][-3:]
    ck = check_dumps(app, lines, dumps, nonblocking)
    print("%s %s: output and status the same with collscope; dumps checked, %d checks skipped (%s)" % (
        app, mode, sum(ck.skipped.values()), ", ".join(sorted(ck.skipped)) or "none"))


def make_case(app, mode):
    # torch_pg's communicators are non-blocking by default (TORCH_NCCL_USE_COMM_NONBLOCKING=1)
    return lambda cli, apps, tmp: run_case(cli, apps, tmp, app, mode, nonblocking=app == "torch_pg")


for _app in APPS:
    for _mode in ("global", "thread_local", "relaxed"):
        globals()["case_%s_%s" % (_app, _mode)] = make_case(_app, _mode)


def case_torch_pg_blocking(cli, apps, tmp):
    """PyTorch's default, blocking communicators: every identity check is a hard one"""
    run_case(cli, apps, tmp, "torch_pg", "global", ["--nonblocking", "0"])


def case_sdc_capture(cli, apps, tmp):
    """SDC checks on: a GPU whose first eligible collective is captured (XLA's command buffers,
    a graph captured before any eager collective) must keep the job's status and results"""
    runs = [(app, mode, [], {"COLLSCOPE_SDC": "all", "COLLSCOPE_SDC_MIN_BYTES": "0"})
            for app, mode in (("torch_pg", "global"), ("megatron_pp", "thread_local"), ("xla_cmdbuf", "thread_local"))]
    # the defaults (sample:2048 from seq 0, 1 MiB and up) with 2 MiB messages (torch_pg's blocking
    # communicators: a split of a non-blocking one is not known to collscope, so not checked)
    runs += [("torch_pg", "thread_local", ["--size", "2M", "--steps", "1", "--nonblocking", "0"], {}),
             ("xla_cmdbuf", "thread_local", ["--size", "2M", "--steps", "1"], {})]
    for app, mode, extra, env in runs:
        args = APPS[app] + ["--capture-mode", mode] + extra
        what = "%s %s %s" % (app, " ".join(extra), " ".join("%s=%s" % kv for kv in sorted(env.items())) or "defaults")
        try:
            same_run(cli, apps, tmp, app, args, env)
        except AssertionError as e:
            Checks().that(False, "%s: %s" % (what, e), "sdc_capture")
            continue
        print("%s: output and status the same" % what)


def main():
    case_main.run(globals(), "collscope-frameworks-")


if __name__ == "__main__":
    sys.exit(main())
