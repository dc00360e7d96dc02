#!/usr/bin/env python3
"""tests/topology/test_topo.py: `collscope topo` end to end, `collscope run --topology`, and
the in-process reordering (COLLSCOPE_TOPOLOGY) on the simulator with its link stats.

usage: test_topo.py CASE --cli PATH [--app PATH] [--sim-dir DIR]
CASE: cli | scale | sim | failopen | apps | bounded | busbw
"""
import argparse
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_topo.py")

# 8 hosts over 4 leaves under 2 spines; launched h1..h8, i.e. interleaved across leaves
MAP = """# host leaf spine
h1 l1 s1
h2 l2 s1
h3 l3 s2
h4 l4 s2
h5 l1 s1
h6 l2 s1
h7 l3 s2
h8 l4 s2
"""
LEAF = {f"h{i}": f"l{(i - 1) % 4 + 1}" for i in range(1, 9)}
SPINE = {h: ("s1" if LEAF[h] in ("l1", "l2") else "s2") for h in LEAF}
SLURM = """# same network in Slurm's tree form
SwitchName=l1 Nodes=h[1,5]
SwitchName=l2 Nodes=h[2,6]
SwitchName=l3 Nodes=h[3,7]
SwitchName=l4 Nodes=h[4,8]
SwitchName=s1 Switches=l[1-2]
SwitchName=s2 Switches=l[3-4]
"""

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, env=None, **kw):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300, **kw)


def case_cli(a, d):
    mp = os.path.join(d, "net.map")
    sc = os.path.join(d, "topology.conf")
    open(mp, "w").write(MAP)
    open(sc, "w").write(SLURM)
    for topo in (mp, sc):
        r = run([a.cli, "topo", "plan", "--topology", topo, "--hosts", "h[1-8]", "--json", "--tasks-per-node", "2"])
        check(r.returncode == 0, f"plan --json ({os.path.basename(topo)}) exits 0: {r.stderr.strip()}")
        j = json.loads(r.stdout)
        check(j["order"] == ["h1", "h5", "h2", "h6", "h3", "h7", "h4", "h8"], f"order {j['order']}")
        cb, ca = j["crossings"]["before"], j["crossings"]["after"]
        check(cb == {"host": 8, "leaf": 8, "spine": 4}, f"ring crossings before {cb}")
        check(ca == {"host": 8, "leaf": 4, "spine": 2}, f"ring crossings after {ca} (= groups, the minimum)")
        tb, ta = j["tree_crossings"]["before"], j["tree_crossings"]["after"]
        check(tb["host"] == 14 and ta["host"] == 14 and ta["leaf"] < tb["leaf"] and ta["spine"] <= tb["spine"],
              f"tree crossings {tb} -> {ta}")
        check(j["groups"] == {"host": 8, "leaf": 4, "spine": 2}, f"groups {j['groups']}")
        check(j["rank_map"][1] == {"host": "h5", "node_rank": 1, "was": 4, "ranks": [2, 3]}, f"rank map {j['rank_map'][1]}")
        check(j["srun"]["hostfile"][:4] == ["h1", "h1", "h5", "h5"], "srun hostfile: one line per task")
        check(j["mpirun"]["hostfile"][0] == "h1 slots=2", "mpirun hostfile")
        check(j["torchrun"][2] == {"host": "h2", "node_rank": 2}, "torchrun node ranks")
    r = run([a.cli, "topo", "plan", "--topology", mp, "--hosts", "h[1-8]", "--form", "torchrun"])
    check(r.stdout.splitlines()[:2] == ["h1 0", "h5 1"], "--form torchrun")
    r = run([a.cli, "topo", "plan", "--topology", mp, "--hosts", "h[1-8]", "--form", "mpirun"])
    check(r.stdout.splitlines()[0] == "h1 slots=1", "--form mpirun")
    r = run([a.cli, "topo", "plan", "--topology", mp, "--hosts", "h[1-8]"])
    check(r.returncode == 0 and re.search(r"^leaf\s+4\s+8\s+4\s+", r.stdout, re.M) is not None,
          "text plan shows leaf groups 4, ring 8 -> 4")
    hf = os.path.join(d, "hostfile")
    open(hf, "w").write("# mpirun style\nh4 slots=8\nh3 slots=8\nh[1-2]\nh4\n")
    r = run([a.cli, "topo", "plan", "--topology", mp, "--hostfile", hf, "--form", "hosts"])
    check(r.stdout.split() == ["h4", "h3", "h1", "h2"], f"--hostfile (dups dropped): {r.stdout.split()}")
    # topo show
    r = run([a.cli, "topo", "show", sc])
    check(r.returncode == 0 and "8 hosts" in r.stdout and re.search(r"^  l1\s+\(level leaf, 2 hosts\): h\[1,5\]", r.stdout, re.M)
          is not None and re.search(r"^s1\s+\(level spine, 4 hosts\)", r.stdout, re.M) is not None, "topo show tree:\n" + r.stdout)
    # errors
    bad = os.path.join(d, "bad.conf")
    open(bad, "w").write("SwitchName=l1 Nodes=h[1-2]\n# c\nSwitchName=l2 Nodes=h[3-\n")
    r = run([a.cli, "topo", "show", bad])
    check(r.returncode == 1 and f"{bad}:3: bad hostlist in Nodes='h[3-'" in r.stderr, "bad file: file:line error: " + r.stderr.strip())
    r = run([a.cli, "topo", "plan", "--topology", mp, "--hosts", "h[1-2],x9"])
    check(r.returncode == 1 and "1 host is not in the topology: x9" in r.stderr, "unknown host reported: " + r.stderr.strip())
    r = run([a.cli, "topo", "plan", "--hosts", "h1"])
    check(r.returncode == 2, "usage error exits 2")
    r = run([a.cli, "help", "topo"])
    check(r.returncode == 0 and "topo plan" in r.stdout, "help topo")


def linkstats(prefix_dir):
    edges = []
    for f in glob.glob(os.path.join(prefix_dir, "*.json")):
        j = json.load(open(f))
        edges += j["edges"]
    return edges


def summarize(edges):
    cross = sum(e["bytes"] for e in edges if e["class"] == "cross_leaf")
    spine = sum(e["bytes"] for e in edges if e["src_host"] != e["dst_host"] and SPINE[e["src_host"]] != SPINE[e["dst_host"]])
    # ring hops = distinct host pairs that carried the AllReduce traffic (>= 64 KiB)
    pairs = {}
    for e in edges:
        if e["src_host"] != e["dst_host"]:
            k = (e["src_host"], e["dst_host"])
            pairs[k] = pairs.get(k, 0) + e["bytes"]
    hops = [k for k, b in pairs.items() if b >= 65536]
    leaf_hops = sum(1 for s, t in hops if LEAF[s] != LEAF[t])
    spine_hops = sum(1 for s, t in hops if SPINE[s] != SPINE[t])
    return cross, spine, len(hops), leaf_hops, spine_hops


def sim_run(a, d, name, extra_env, extra_args=()):
    ls = os.path.join(d, "ls-" + name)
    os.makedirs(ls)
    env = {"COLLSCOPE_SIM_TOPOLOGY": os.path.join(d, "net.map"), "COLLSCOPE_SIM_LINKSTATS": ls + "/s",
           "COLLSCOPE_DIR": os.path.join(d, "dump-" + name), "NCCL_DEBUG": "INFO", "COLLSCOPE_SIM_DIR": a.sim_dir,
           # the ring count and link bytes below are the user's and the reordered communicator's
           "COLLSCOPE_ONLINE": "0"}
    env.update(extra_env)
    cmd = [a.app] if not a.app.endswith(".sh") else [a.app, a.real_app]
    r = run([a.cli, "run", "-n", "16", "--hosts", "h[1-8]", "--sim", *extra_args, "--", *cmd, "--steps", "3",
             "--size", "1M"], env=env)
    out = [re.sub(r"^\[\d+\] ", "", l) for l in r.stdout.splitlines()]
    summary = [l for l in out if l.startswith("summary") or l.startswith("result")]
    rings = [l.split(":", 3)[-1].strip() for l in r.stdout.splitlines() if "Channel 00/02" in l]
    return r, summary, linkstats(ls), rings


def case_sim(a, d):
    open(os.path.join(d, "net.map"), "w").write(MAP)
    r0, s0, e0, rings0 = sim_run(a, d, "plain", {})
    check(r0.returncode == 0 and s0 and "PASS" in s0[0], "16 ranks on 8 interleaved hosts: job passes")
    r1, s1, e1, rings1 = sim_run(a, d, "env", {"COLLSCOPE_TOPOLOGY": os.path.join(d, "net.map"), "COLLSCOPE_LOG": "info"})
    check(r1.returncode == 0 and s1 == s0, f"COLLSCOPE_TOPOLOGY: same job results ({s1})")
    routed = [l for l in r1.stderr.splitlines() if "topology routing" in l and "reordered" in l]
    check(len(routed) == 1 and "crossing leaves 8 -> 4" in routed[0], "one rank-0 info line: " + (routed[0] if routed else r1.stderr[-500:]))
    check(len(rings1) == 2, f"NCCL_DEBUG rings: user comm and the reordered comm ({len(rings1)})")
    r2, s2, e2, rings2 = sim_run(a, d, "run", {}, ("--topology", os.path.join(d, "net.map"), "--no-shim"))
    check(r2.returncode == 0 and s2 == s0, "collscope run --topology: same job results")
    # no file: each rank's SLURM_TOPOLOGY_ADDR (set per host by a wrapper, as Slurm would)
    wrap = os.path.join(d, "addr.sh")
    open(wrap, "w").write("#!/bin/sh\ncase \"$COLLSCOPE_HOSTNAME\" in\n"
                          + "".join(f"  {h}) a={SPINE[h]}.{LEAF[h]};;\n" for h in LEAF)
                          + "esac\nSLURM_TOPOLOGY_ADDR=$a.$COLLSCOPE_HOSTNAME SLURM_TOPOLOGY_ADDR_PATTERN=switch.switch.node "
                          + "exec \"$@\"\n")
    os.chmod(wrap, 0o755)
    app = a.app
    a.app = wrap
    try:
        r3, s3, e3, _ = sim_run(a, d, "addr", {"COLLSCOPE_LOG": "info"}, ())
    finally:
        a.app = app
    c0, sp0, h0, lh0, sh0 = summarize(e0)
    c1, sp1, h1, lh1, sh1 = summarize(e1)
    c2, sp2, h2, lh2, sh2 = summarize(e2)
    print(f"figures: cross-leaf bytes plain={c0} COLLSCOPE_TOPOLOGY={c1} run--topology={c2}")
    print(f"figures: cross-spine bytes plain={sp0} COLLSCOPE_TOPOLOGY={sp1} run--topology={sp2}")
    print(f"figures: ring hops (host pairs) plain={h0} env={h1} run={h2}; crossing leaves {lh0} {lh1} {lh2}; "
          f"crossing spines {sh0} {sh1} {sh2}")
    check(lh0 == 8 and sh0 == 4, f"before: 8 ring hops cross leaves, 4 cross spines ({lh0}, {sh0})")
    check(lh1 == 4 and sh1 == 2, f"COLLSCOPE_TOPOLOGY: 4 leaf and 2 spine hops, the minimum ({lh1}, {sh1})")
    check(lh2 == 4 and sh2 == 2, f"run --topology: 4 leaf and 2 spine hops, the minimum ({lh2}, {sh2})")
    check(c1 < 0.55 * c0 and c2 < 0.55 * c0, "cross-leaf bytes about halved")
    c3, sp3, h3, lh3, sh3 = summarize(e3)
    print(f"figures: SLURM_TOPOLOGY_ADDR: cross-leaf bytes {c3}, ring hops crossing leaves {lh3}, spines {sh3}")
    check(r3.returncode == 0 and s3 == s0 and lh3 == 4 and sh3 == 2,
          f"SLURM_TOPOLOGY_ADDR (no file): same results, 4 leaf and 2 spine hops ({lh3}, {sh3})")


# busbw on the modeled clock's fabric (docs/simulator.md, tests/sim/nccl/model.c): the MAP's
# 4 leaves of 2 hosts, 2:1 uplinks (COLLSCOPE_SIM_OVERSUB=2), 100 Gbit/s NICs. An AllReduce step
# moves one chunk over every ring edge at once; the slowest edge sets its time. Launched
# h1..h8, every one of the 8 inter-host ring edges crosses leaves: 2 leave each leaf and share
# its uplink (2 hosts x NIC / 2 = one NIC), NIC/2 each. Reordered (COLLSCOPE_TOPOLOGY), 4 edges
# cross leaves, one per uplink: a full NIC each.
NIC = 100e9 / 8 / 1e9            # bytes per ns
NET_LAT, HOP, BASE = 14000.0, 1000.0, 8400.0


def predicted_ns(nranks, nbytes, flows_per_uplink):
    step = NET_LAT + HOP + (nbytes / nranks) / (NIC / flows_per_uplink)
    return BASE + 2 * (nranks - 1) * step


def busbw_run(a, d, name, extra_env):
    out = os.path.join(d, "dump-" + name)
    env = {"COLLSCOPE_SIM_TOPOLOGY": os.path.join(d, "net.map"), "COLLSCOPE_DIR": out, "COLLSCOPE_SIM_DIR": a.sim_dir,
           "COLLSCOPE_ONLINE": "0", "COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_OVERSUB": "2",
           "COLLSCOPE_TIMING": "events", "COLLSCOPE_EVENT_SAMPLE": "1"}
    env.update(extra_env)
    r = run([a.cli, "run", "-n", "16", "--hosts", "h[1-8]", "--sim", "--", a.app, "--steps", "2", "--size", "16M"],
            env=env)
    check(r.returncode == 0, f"busbw {name}: job passes ({r.stdout[-500:]})")
    durs = {}
    for f in glob.glob(os.path.join(out, "*.jsonl")):
        for line in open(f):
            o = json.loads(line)
            if o.get("type") == "op" and o.get("timing") == "gpu_event" and o["bytes"] == 16 << 20:
                durs.setdefault(o["seq"], []).append(o["dur_us"])
    # every member completes at the last arrival + the cost: the last to arrive measures the cost
    cost_us = [min(v) for k, v in sorted(durs.items()) if len(v) == 16]
    return cost_us


def case_busbw(a, d):
    open(os.path.join(d, "net.map"), "w").write(MAP)
    plain = busbw_run(a, d, "plain", {})
    ordered = busbw_run(a, d, "env", {"COLLSCOPE_TOPOLOGY": os.path.join(d, "net.map")})
    n, nbytes = 16, 16 << 20
    check(len(plain) == 2 and len(ordered) == 2, f"two 16 MiB AllReduces timed on 16 ranks ({plain}, {ordered})")
    if len(plain) != 2 or len(ordered) != 2:
        return
    bus = lambda us: nbytes / (us * 1e-6) / 1e9 * 2 * (n - 1) / n
    want_plain, want_ordered = predicted_ns(n, nbytes, 2) / 1e3, predicted_ns(n, nbytes, 1) / 1e3
    print(f"figures: 16 MiB AllReduce, 16 ranks, 4 leaves with 2:1 uplinks: busbw {bus(plain[-1]):.2f} GB/s launched "
          f"h1..h8, {bus(ordered[-1]):.2f} GB/s with COLLSCOPE_TOPOLOGY (x{plain[-1] / ordered[-1]:.3f}; predicted "
          f"{bus(want_plain * 1):.2f} -> {bus(want_ordered):.2f}, x{want_plain / want_ordered:.3f})")
    # the second step's (the first instance on a comm also pays for a 5 us kernel ahead of it)
    for got, want, what in ((plain, want_plain, "launched order"), (ordered, want_ordered, "COLLSCOPE_TOPOLOGY")):
        check(abs(got[-1] - want) < 0.01, f"{what}: the AllReduce takes the predicted {want:.3f} us ({got})")


def case_failopen(a, d):
    open(os.path.join(d, "net.map"), "w").write(MAP)
    r0, s0, _, _ = sim_run(a, d, "plain", {})
    bad = os.path.join(d, "bad.map")
    open(bad, "w").write("h1 l1\nh1 l2\n")
    r1, s1, e1, _ = sim_run(a, d, "bad", {"COLLSCOPE_TOPOLOGY": bad}, ("--tag-output",))
    check(r1.returncode == 0 and s1 == s0 and s0, "bad topology file: job results unchanged")
    lines = [l for l in r1.stderr.splitlines() if "COLLSCOPE_TOPOLOGY" in l]
    per_rank = {}
    for l in lines:
        m = re.match(r"\[(\d+)\] ", l)
        per_rank[m.group(1) if m else "?"] = per_rank.get(m.group(1) if m else "?", 0) + 1
    check(len(per_rank) == 16 and set(per_rank.values()) == {1} and f"{bad}:2: host 'h1' is listed twice" in lines[0],
          f"one log line per process naming file:line ({lines[:1]})")
    c0 = summarize(linkstats(os.path.join(d, "ls-plain")))[0]
    check(summarize(e1)[0] == c0, "bad file: traffic unchanged")
    part = os.path.join(d, "part.map")
    open(part, "w").write("h[1-4] l1\n")
    r2, s2, _, _ = sim_run(a, d, "part", {"COLLSCOPE_TOPOLOGY": part})
    warn = [l for l in r2.stderr.splitlines() if "not in the topology" in l]
    check(r2.returncode == 0 and s2 == s0 and len(warn) == 16 and "4 hosts are not in the topology: h5, h6, h7, h8" in warn[0],
          f"hosts missing from the file: reported, order kept ({warn[:1]})")


def case_apps(a, d):
    """Other communicator patterns with COLLSCOPE_TOPOLOGY: split communicators (multicomm),
    one communicator per thread (threads), first calls inside groups (pipeline), every GPU
    in one process (ncclCommInitAll). Results must equal the plain run; nothing hangs."""
    mp = os.path.join(d, "sh.map")
    open(mp, "w").write("simhost1 lA\nsimhost2 lB\nsimhost3 lA\nsimhost4 lB\n")
    apps = os.path.dirname(a.app)
    env = {"COLLSCOPE_SIM_DIR": a.sim_dir, "COLLSCOPE_DIR": os.path.join(d, "dump")}
    for app, extra, routed in (("multicomm", ["--size", "64K", "--tp", "2"], 3), ("threads", ["--size", "64K"], 2),
                               ("pipeline", ["--size", "64K", "--microbatches", "4"], 0)):
        cmd = [a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--grace", "2", "--",
               os.path.join(apps, app), "--steps", "2"] + extra
        r0 = run(cmd, env=env)
        r1 = run(cmd, env=dict(env, COLLSCOPE_TOPOLOGY=mp, COLLSCOPE_LOG="info"))
        res = lambda r: sorted(l for l in r.stdout.splitlines() if l.startswith(("summary", "result")))
        n = sum(1 for l in r1.stderr.splitlines() if "reordered" in l)
        check(r0.returncode == 0 and r1.returncode == 0 and res(r0) == res(r1) and res(r0),
              f"{app}: same results with COLLSCOPE_TOPOLOGY")
        check(n == routed, f"{app}: {n} communicators reordered, want {routed}")
    cmd = [a.cli, "run", "--sim", "--", os.path.join(apps, "initall"), "--steps", "2", "--size", "64K"]
    r0 = run(cmd, env=env)
    r1 = run(cmd, env=dict(env, COLLSCOPE_TOPOLOGY=mp))
    check(r1.returncode == 0 and r0.stdout.splitlines()[-1:] == r1.stdout.splitlines()[-1:],
          "ncclCommInitAll: same result, no hang")


def gen(kind, d, *extra):
    subprocess.run([sys.executable, GEN, kind, d, *extra], check=True, capture_output=True)


def timed(cmd, env=None, timeout=300, out_path=None):
    """(CompletedProcess, or None on timeout; wall s; CPU s; peak RSS MB) of one command, the
    CPU and RSS of that process and its descendants only (wait4), not of the test's other
    children. CPU time is what the bounds check: wall time on a loaded CI machine is not
    the program's. A forked child's peak RSS starts at the test's own, so a large output
    goes to out_path (r.stdout then empty) and is read after the measured runs."""
    e = dict(os.environ)
    if env:
        e.update(env)
    with (open(out_path, "w+b") if out_path else tempfile.TemporaryFile()) as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        # its own process group: a timeout kills the launcher and the ranks it started
        p = subprocess.Popen(cmd, env=e, stdout=out, stderr=err, start_new_session=True)
        def kill_group():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill_group)
        timer.start()
        _, status, ru = os.wait4(p.pid, 0)
        timer.cancel()
        dt = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        r = subprocess.CompletedProcess(cmd, p.returncode, out.read().decode(errors="replace"),
                                        err.read().decode(errors="replace"))
    killed = p.returncode == -9 and dt >= timeout
    return (None if killed else r), dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def case_scale(a, d):
    """Hostile and fleet-size inputs for `collscope topo` (generated by gen_topo.py): parsing
    is linear, hosts are capped per file, and a 131,072-host plan is quick. The bounds have
    a wide margin for a loaded CI machine; the figures printed are the measured ones."""
    gen("chain", d)
    gen("hostbomb", d)
    gen("fleet", d)
    chain, bomb = os.path.join(d, "chain.conf"), os.path.join(d, "hostbomb.conf")
    r, dt, cpu, _ = timed([a.cli, "topo", "show", chain], timeout=60)
    print(f"figures: 200,000-switch chain ({os.path.getsize(chain)} bytes) rejected in {dt:.2f} s ({cpu:.2f} s CPU)")
    check(r is not None and r.returncode == 1 and "the switch tree is 200000 levels deep" in r.stderr,
          "200,000-switch chain: rejected, naming its depth" + (f" ({r.stderr.strip()})" if r else " (timed out)"))
    check(cpu < 5, f"200,000-switch chain rejected in under 5 s of CPU ({cpu:.2f} s)")
    r, dt, cpu, rss = timed([a.cli, "topo", "show", bomb], timeout=60)
    print(f"figures: 40 x 1M-host lines ({os.path.getsize(bomb)} bytes) rejected in {dt:.2f} s ({cpu:.2f} s CPU), "
          f"peak RSS {rss:.0f} MB")
    check(r is not None and r.returncode == 1 and f"{bomb}:2: more than 1000000 hosts in the file" in r.stderr,
          "40 x n[0-999999]: FILE:LINE: error at the line past the 1M-host cap" + (f" ({r.stderr.strip()})" if r else ""))
    check(cpu < 10 and rss < 512, f"40 x n[0-999999]: under 10 s of CPU and 512 MB ({cpu:.2f} s, {rss:.0f} MB)")
    hf = os.path.join(d, "fleet.hosts")
    levels = {"host": 131072, "leaf": 4096, "spine": 128, "core": 4}
    runs = []
    for conf in ("fleet.conf", "fleet-block.conf"):
        out = os.path.join(d, conf + ".json")
        runs.append((conf, out) + timed([a.cli, "topo", "plan", "--topology", os.path.join(d, conf), "--hostfile", hf,
                                         "--json"], timeout=120, out_path=out))
    for conf, out, r, dt, cpu, rss in runs:
        print(f"figures: topo plan --json, 131,072 hosts, {conf}: {dt:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss:.0f} MB")
        ok = r is not None and r.returncode == 0
        check(ok, f"{conf}: plan of 131,072 hosts exits 0" + (f" ({r.stderr.strip()[:300]})" if r else " (timed out)"))
        if not ok:
            continue
        j = json.load(open(out))
        check(len(j["order"]) == 131072 and len(set(j["order"])) == 131072, f"{conf}: every host once in the order")
        check(j["groups"] == levels and j["crossings"]["after"] == levels,
              f"{conf}: ring hops after = groups per level {j['crossings']['after']}")
        check(cpu < 5 and rss < 256, f"{conf}: under 5 s of CPU and 256 MB ({cpu:.2f} s, {rss:.0f} MB)")
        del j
    # a hostfile past the cap: the line that passes it is named
    hb = os.path.join(d, "bomb.hosts")
    open(hb, "w").write("a[0-599999]\nb[0-599999]\n")
    r, dt, _, _ = timed([a.cli, "topo", "plan", "--topology", os.path.join(d, "fleet.conf"), "--hostfile", hb], timeout=60)
    check(r is not None and r.returncode == 1 and f"{hb}:2: more than 1000000 hosts in the hostfile" in r.stderr,
          "hostfile past 1M hosts: FILE:LINE: error" + (f" ({r.stderr.strip()})" if r else ""))


def case_bounded(a, d):
    """COLLSCOPE_TOPOLOGY at hostile files on a 4-rank simulated job: each process logs one
    line and keeps NCCL's order, the results are unchanged, and the job takes about as long
    as without the variable (the parse is linear and, in process, under a work budget)."""
    gen("chain", d, "--switches", "100000")
    gen("hostbomb", d)
    over = os.path.join(d, "over-budget.conf")
    with open(over, "w") as f:   # 544,000 hosts: under the file cap, over the in-process budget (2^19 units)
        for l in range(17000):
            f.write(f"SwitchName=leaf{l} Nodes=n[{l * 32}-{l * 32 + 31}]\n")
    env = {"COLLSCOPE_SIM_DIR": a.sim_dir, "COLLSCOPE_DIR": os.path.join(d, "dump"), "COLLSCOPE_ONLINE": "0"}
    cmd = [a.cli, "run", "-n", "4", "--hosts", "simhost[1-4]", "--sim", "--tag-output", "--", a.app, "--steps", "3",
           "--size", "64K"]
    res = lambda r: sorted(l for l in r.stdout.splitlines() if re.sub(r"^\[\d+\] ", "", l).startswith(("summary", "result")))
    r0, t0, c0, _ = timed(cmd, env)
    check(r0 is not None and r0.returncode == 0 and res(r0), "plain 4-rank job passes")
    if not r0:
        return
    chain, bomb = os.path.join(d, "chain.conf"), os.path.join(d, "hostbomb.conf")
    for f, why in ((chain, f"{chain}: the switch tree is 100000 levels deep"),
                   (bomb, f"{bomb}:1: past the work budget of 524288 units"),
                   (over, f"{over}:"),):
        limit = 2 * t0 + 10
        r, t, c, _ = timed(cmd, dict(env, COLLSCOPE_TOPOLOGY=f), timeout=limit + 60)
        print(f"figures: COLLSCOPE_TOPOLOGY={os.path.basename(f)} ({os.path.getsize(f)} bytes): job {t:.2f} s "
              f"({c:.2f} s CPU) vs {t0:.2f} s ({c0:.2f} s CPU) without")
        name = os.path.basename(f)
        check(r is not None and r.returncode == 0 and res(r) == res(r0), f"{name}: job results unchanged")
        check(t < limit, f"{name}: job within 2 x plain + 10 s ({t:.2f} s vs {t0:.2f} s)")
        if not r:
            continue
        lines = [l for l in r.stderr.splitlines() if "COLLSCOPE_TOPOLOGY" in l]
        ranks = sorted(re.match(r"\[(\d+)\]", l).group(1) for l in lines if re.match(r"\[(\d+)\]", l))
        check(ranks == ["0", "1", "2", "3"] and all(why in l for l in lines),
              f"{name}: one line per process ({lines[:1]})")
    r, _, _, _ = timed([a.cli, "topo", "show", over], timeout=120)
    check(r is not None and r.returncode == 0, "over-budget.conf: valid for `collscope topo` (the budget is the shim's)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case")
    p.add_argument("--cli", required=True)
    p.add_argument("--app")
    p.add_argument("--sim-dir")
    a = p.parse_args()
    a.real_app = a.app
    with tempfile.TemporaryDirectory(prefix="cs-topo-") as d:
        {"cli": case_cli, "scale": case_scale, "sim": case_sim, "failopen": case_failopen, "apps": case_apps,
         "bounded": case_bounded, "busbw": case_busbw}[a.case](a, d)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
