#!/usr/bin/env python3
"""tests/slurm/test_suspects.py CASE --cli COLLSCOPE --apps DIR --shim LIB --sim-dir DIR

`collscope suspects` on dump directories of simulated jobs with faults (8 ranks of dp_train on
simhost[1-4], rank r on simhost r//2+1), one case per kind of evidence:
  straggler  slow:rank=5          simhost3 watch (straggler), its GPU; hostfile with and without
                                  a topology map
  sdc        flip:rank=2 + slow:5 simhost2 watch, unconfirmed (SDC suspect of one user's job);
                                  drain only when the site's check (--verify-cmd) fails;
                                  simhost3 watch; slurm format
  missing    fail:rank=5 (hang)   simhost3 watch: missing in the hang and NCCL errors
  stuck      hang:rank=5          the ranks stuck in the hang
  slowlink   link simhost2-3 over the NCCL_NET wrapper: both ends watch (slow link end)
  repeat     the straggler job twice and a clean one: 2 of 3 runs of one user -> watch
             (unconfirmed); the second run another user's -> drain; 1 of 2 -> watch
  health     ecc uncorrected + XID 79 on rank 2 (simhost2: drain-level, health; drains when the
             site's check fails), NVLink CRC errors on
             rank 7 (simhost4: watch), IB symbol errors on simhost1 (watch); the GPUs' UUIDs
  verified   a job that names its host ALL, twice, slow:rank=2: no action names ALL; with
             root-owned node records for the dumps' pids (as the SPANK plugin writes) the
             actions name the node Slurm gave (SLURMD_NODENAME), never the label; records of
             another owner, with another's write bit, of another step, of another job (moved),
             hard-linked, or for no dump's pid are not trusted; a record whose node contradicts
             its pid's dump makes a '#' line naming the record's node, no action
  slurmcheck a directory named after its job: its records checked against what scontrol (else
             sacct) says of the job, its nodes and its user (stand-ins on PATH)
  cleared    modeled clock, rank 5 slowed 20 % from collective 30 until 120 of 300: its finding
             (seqs 40-182) cleared 0.760 s before the job's end: set aside with --cleared-after
             0.5 (no host, no --exclude), evidence by default (300 s) with the time said; a
             straggler to the end stays evidence with --cleared-after 0
  uneven     modeled clock, ranks 1 and 5 with 10 % more samples (dp_train --shares,
             --batch-bytes): set aside as uneven data, no host implicated, also with 2 ms
             buckets and 300 us a ring step (a gain under the mark for advice); rank 5 computing 10 %
             longer at the same bytes (slow:compute=10): simhost3 watch (straggler)"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hung_jobs  # noqa: E402  (tests/hung_jobs.py)

HOSTS = "simhost[1-4]"


def run_until_hung(a, cmd, env, shm, hung):
    """Runs a job that hangs until `collscope top` shows `hung` processes flagged HUNG (each
    shim flushes its hang record before its ring says so), then SIGKILLs every rank that still
    has a ring: the verdict follows the shims' reports, whenever the host gets there."""
    log = tempfile.TemporaryFile("w+")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    hung_jobs.kill_when_hung(p, a.cli, shm, lambda pids: len(pids) >= hung)
    p.wait(timeout=240)
    log.seek(0)
    return subprocess.CompletedProcess(cmd, p.returncode, log.read())


def run_job(a, tmp, tag, faults="", env_extra=None, steps=30, kill_after=None, ok=True, hosts=HOSTS, hung=0):
    out = os.path.join(tmp, tag)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_DIR=a.sim_dir,
               COLLSCOPE_SIM_FAULTS=faults, COLLSCOPE_JOB_ID="job-" + tag)
    for k in ("NCCL_NET_PLUGIN", "COLLSCOPE_NET_INNER", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURMD_NODENAME"):
        env.pop(k, None)
    env.update(env_extra or {})
    cmd = [a.cli, "run", "-n", "8", "--hosts", hosts, "--sim", "--no-kill-on-fail", "--"]
    if kill_after:
        cmd += ["timeout", "-s", "KILL", str(kill_after)]
    cmd += [os.path.join(a.apps, "dp_train"), "--steps", str(steps), "--size", "256K"]
    if hung:
        p = run_until_hung(a, cmd, env, tmp, hung)
    else:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    if ok and p.returncode != 0:
        print(p.stdout[-3000:])
        raise SystemExit("%s: job failed (%d)" % (tag, p.returncode))
    return out


def suspects(a, dirs, fmt="json", extra=(), rc=0, env=None, trust=True):
    # these jobs are `collscope run`'s, whose host names the test chose: trusted (the node
    # records of the SPANK plugin are case_verified's and tests/slurm/real_slurm.sh's)
    extra = list(extra) + (["--trust-host-names"] if trust and fmt in ("slurm", "hostfile") else [])
    p = subprocess.run([a.cli, "suspects"] + dirs + ["--format", fmt] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=dict(os.environ, **(env or {})))
    print("$ collscope suspects %s --format %s\n%s%s" % (" ".join(os.path.basename(d) for d in dirs), fmt,
                                                         p.stdout if fmt != "json" else "", p.stderr))
    assert p.returncode == rc, (p.returncode, p.stderr)
    return json.loads(p.stdout) if fmt == "json" else p.stdout


def by_host(doc):
    return {h["host"]: h for h in doc["suspects"]}


def kinds(h):
    return sorted(set(e["kind"] for e in h["evidence"]))


def case_straggler(a, tmp):
    # as a Slurm step would: the shim records SLURM_STEP_ID, the report shows it
    d = run_job(a, tmp, "slow", "slow:rank=5,us=3000", {"SLURM_STEP_ID": "3"})
    rep = subprocess.run([a.cli, "report", d, "--json"], stdout=subprocess.PIPE, text=True).stdout
    assert [r["step"] for r in json.loads(rep)["ranks"]] == [3] * 8, rep[:2000]
    txt = subprocess.run([a.cli, "report", d], stdout=subprocess.PIPE, text=True).stdout
    assert "\n# step  rank" in txt and "\n     3      5  simhost3" in txt, txt
    s = by_host(suspects(a, [d]))
    assert list(s) == ["simhost3"], s
    h = s["simhost3"]
    assert h["level"] == "watch" and kinds(h) == ["straggler"], h
    assert [g["rank"] for g in h["gpus"]] == [5] and h["gpus"][0]["device"] == 1 and h["gpus"][0]["pci_bus_id"], h
    assert h["jobs_implicated"] == 1 and h["jobs_seen"] == 1
    suspects(a, [d], "text")
    # the rerun's hosts: the healthy ones, hostlist order, or the topology plan's
    assert suspects(a, [d], "hostfile").split() == ["simhost1", "simhost2", "simhost4"]
    topo = os.path.join(tmp, "map.txt")
    with open(topo, "w") as f:
        f.write("simhost1 leafA spine\nsimhost2 leafB spine\nsimhost3 leafB spine\nsimhost4 leafA spine\n")
    assert suspects(a, [d], "hostfile", ["--topology", topo]).split() == ["simhost1", "simhost4", "simhost2"]
    out = suspects(a, [d], "slurm")
    assert "scontrol" not in out and "--exclude=simhost3\n" in out, out   # watch: excluded, not drained
    # without --trust-host-names: the reason cites the dump of the rank the evidence is about
    s = by_host(suspects(a, [d]))
    assert s["simhost3"]["unverified_reason"].startswith("no Slurm node name in rank 5's dump"), s["simhost3"]


MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1"}


def model_job(a, tmp, tag, faults, args):
    out = os.path.join(tmp, tag)
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_SIM_DIR=a.sim_dir,
               COLLSCOPE_SIM_FAULTS=faults, COLLSCOPE_JOB_ID="job-" + tag, **MODEL)
    for k in ("NCCL_NET_PLUGIN", "COLLSCOPE_NET_INNER", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURMD_NODENAME"):
        env.pop(k, None)
    p = subprocess.run([a.cli, "run", "-n", "8", "--hosts", HOSTS, "--sim", "--", os.path.join(a.apps, "dp_train")] +
                       args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    assert p.returncode == 0, p.stdout[-3000:]
    return out


def case_cleared(a, tmp):
    link = "link:a=*,b=*,us=300;"
    args = ["--steps", "100", "--compute-us", "2000"]
    d = model_job(a, tmp, "transient", link + "slow:rank=5,pct=20,from=30,until=120", args)
    doc = suspects(a, [d])  # default --cleared-after 300: evidence, with when it cleared
    h = by_host(doc)
    assert list(h) == ["simhost3"] and kinds(h["simhost3"]) == ["straggler"], h
    assert h["simhost3"]["evidence"][0]["detail"].endswith("; cleared 0.760 s before the job's end"), h
    assert doc["set_aside"] == [] and doc["cleared_after_s"] == 300, doc
    doc = suspects(a, [d], extra=["--cleared-after", "0.5"])
    assert doc["suspects"] == [], doc
    x = doc["set_aside"]
    assert [(e["kind"], e["host"], e["rank"], round(e["cleared_s"], 3)) for e in x] == [("cleared", "simhost3", 5, 0.76)], x
    assert "straggler at seqs 40-182 cleared 0.760 s before the job's end (more than --cleared-after 0.5 s): dropped" \
        in x[0]["detail"], x
    txt = suspects(a, [d], "text", ["--cleared-after", "0.5"])
    assert "(no host implicated)" in txt and "# straggler findings charged to no node (--cleared-after 0.5 s):" in txt, txt
    assert "#   cleared      simhost3: rank 5 on comm " in txt, txt
    out = suspects(a, [d], "slurm", ["--cleared-after", "0.5"])
    assert "--exclude" not in out and "# no host to exclude" in out, out
    d = model_job(a, tmp, "persistent", link + "slow:rank=5,pct=20,from=30", args)
    doc = suspects(a, [d], extra=["--cleared-after", "0"])
    h = by_host(doc)
    assert list(h) == ["simhost3"] and doc["set_aside"] == [], doc
    assert "cleared" not in h["simhost3"]["evidence"][0]["detail"], h


def case_uneven(a, tmp):
    args = ["--steps", "40", "--size", "256K", "--compute-us", "20000", "--batch-bytes", "1M"]
    d = model_job(a, tmp, "uneven", "", args + ["--shares", "1,1.1,1,1,1,1.1,1,1"])
    rep = json.loads(subprocess.run([a.cli, "report", d, "--json"], stdout=subprocess.PIPE, text=True).stdout)
    assert sorted(x["rank"] for x in rep["stragglers"]) == [1, 5], rep["stragglers"]  # the detector flags them
    doc = suspects(a, [d])
    assert doc["suspects"] == [], doc
    assert [(e["kind"], e["host"], e["rank"]) for e in doc["set_aside"]] == \
        [("uneven_data", "simhost1", 1), ("uneven_data", "simhost3", 5)], doc["set_aside"]
    assert doc["set_aside"][0]["detail"] == ("rank 1: straggler from uneven data (the balance section: its shard is "
                                             "larger; even the shards), not the node"), doc["set_aside"]
    txt = suspects(a, [d], "text")
    assert "(no host implicated)" in txt and "#   uneven_data  simhost3: rank 5: straggler from uneven data" in txt, txt
    # 2 ms buckets and 300 us a ring step (the accuracy page's `uneven` row): evening the shards
    # gains under the balance section's mark for a change, yet the ranks are the data's all the
    # same: the detector's findings on them are set aside
    small = ["--steps", "40", "--size", "256K", "--compute-us", "2000", "--batch-bytes", "1M"]
    d = model_job(a, tmp, "uneven_small", "link:a=*,b=*,us=300", small + ["--shares", "1,1.1,1,1,1,1.1,1,1"])
    rep = json.loads(subprocess.run([a.cli, "report", d, "--json"], stdout=subprocess.PIPE, text=True).stdout)
    b = rep["balance"]
    print("2 ms buckets: stragglers %s, action %s, advice %r" %
          (sorted(x["rank"] for x in rep["stragglers"]), b["action"], b["advice"]))
    assert sorted(x["rank"] for x in rep["stragglers"]) == [1, 5], rep["stragglers"]
    assert b["action"] == "none" and b["advice"].startswith("uneven data: ranks 1,5 get 10 % more samples") and \
        b["advice"].endswith("of the step: too little to advise a change"), b
    doc = suspects(a, [d])
    assert doc["suspects"] == [], doc
    assert [(e["kind"], e["host"], e["rank"]) for e in doc["set_aside"]] == \
        [("uneven_data", "simhost1", 1), ("uneven_data", "simhost3", 5)], doc["set_aside"]
    d = model_job(a, tmp, "slowgpu", "slow:rank=5,compute=10", args)
    doc = suspects(a, [d])
    h = by_host(doc)
    assert list(h) == ["simhost3"] and kinds(h["simhost3"]) == ["straggler"] and doc["set_aside"] == [], doc


def case_sdc(a, tmp):
    d = run_job(a, tmp, "sdc", "slow:rank=5,us=3000;flip:rank=2,seq=13,elem=7,bit=30,at=out",
                {"COLLSCOPE_SDC": "all", "COLLSCOPE_SDC_MIN_BYTES": "0"}, ok=False)   # the job sees the bad value too
    s = by_host(suspects(a, [d]))
    # one user's job: the SDC finding is the owner's to forge, so it is watched, unconfirmed
    assert s["simhost2"]["level"] == "watch" and s["simhost2"]["unconfirmed"] and "sdc" in kinds(s["simhost2"]), s["simhost2"]
    assert 2 in [g["rank"] for g in s["simhost2"]["gpus"]], s["simhost2"]
    assert s["simhost3"]["level"] == "watch" and kinds(s["simhost3"]) == ["straggler"], s["simhost3"]
    assert not s["simhost3"]["unconfirmed"], s["simhost3"]
    assert "simhost1" not in s and "simhost4" not in s, s
    out = suspects(a, [d], "slurm").splitlines()
    assert not [l for l in out if l.startswith("scontrol")], out
    assert any(l.startswith("# not drained: simhost2: drain-level evidence from jobs of one user (uid %d): watch; "
                            "drain when a check run as root fails" % os.getuid()) for l in out), out
    assert "--exclude=simhost[2-3]" in out, out   # compressed by the hostlist code
    # the site's check passes: still watch; it fails: drain
    ok = suspects(a, [d], "slurm", ["--verify-cmd", "test %n = simhost2"]).splitlines()
    assert not [l for l in ok if l.startswith("scontrol")], ok
    assert any("the site's check passed (test %n = simhost2)" in l for l in ok), ok
    out = suspects(a, [d], "slurm", ["--verify-cmd", "test %n != simhost2"]).splitlines()
    drains = [l for l in out if l.startswith("scontrol")]
    assert len(drains) == 1 and drains[0].startswith(
        'scontrol update NodeName=simhost2 State=DRAIN Reason="collscope: sdc x') and drains[0].endswith(
        ' in 1 of 1 runs; the site\'s check failed"'), out
    assert suspects(a, [d], "hostfile").split() == ["simhost1", "simhost4"]


def case_missing(a, tmp):
    # rank 5's call of seq 10 fails, so it never enters it; the others hang in it
    d = run_job(a, tmp, "missing", "fail:rank=5,seq=10,code=SystemError", {"COLLSCOPE_HANG_TIMEOUT": "2"},
                steps=20, kill_after=120, ok=False, hung=7)
    s = by_host(suspects(a, [d]))
    assert list(s) == ["simhost3"], s
    assert kinds(s["simhost3"]) == ["hang_missing", "nccl_errors"], s["simhost3"]
    assert s["simhost3"]["level"] == "watch"


def case_stuck(a, tmp):
    d = run_job(a, tmp, "stuck", "hang:rank=5,seq=10", {"COLLSCOPE_HANG_TIMEOUT": "2"}, steps=20, kill_after=120,
                ok=False, hung=8)
    rep = json.loads(subprocess.run([a.cli, "report", d, "--json"], stdout=subprocess.PIPE, text=True).stdout)
    h = rep["hangs"][0]
    s = by_host(suspects(a, [d]))
    if h["missing_ranks"]:   # the report names who never entered: only those
        want = sorted(set(h["hosts"]))
        assert all(kinds(x) == ["hang_missing"] for x in s.values()), s
    else:
        want = sorted(set(h["stuck_hosts"]))
        assert all(kinds(x) == ["hang_stuck"] for x in s.values()), s
    assert sorted(s) == want and "simhost3" in s, (sorted(s), want)


def case_gpuhang(a, tmp):
    # rank 5's GPU hangs before seq 10 (in its compute): its start event never completes while
    # the other GPUs are inside seq 10; only its host is put on watch, as hang_gpu
    d = run_job(a, tmp, "gpuhang", "gpuhang:rank=5,seq=10", {"COLLSCOPE_HANG_TIMEOUT": "2"}, steps=20, kill_after=120,
                ok=False, hung=8)
    s = by_host(suspects(a, [d]))
    assert list(s) == ["simhost3"], s
    assert kinds(s["simhost3"]) == ["hang_gpu"] and s["simhost3"]["level"] == "watch", s["simhost3"]


def case_slowlink(a, tmp):
    # on the modeled clock (docs/simulator.md) every healthy pair measures simnet's 100 Gbit/s
    # exactly and the injected link far less, whatever the host's load: the default threshold
    d = run_job(a, tmp, "link", "link:a=simhost2,b=simhost3,us=3000",
                {"NCCL_NET_PLUGIN": a.shim, "COLLSCOPE_NET_INNER": "simnet", "COLLSCOPE_SIM_CLOCK": "model"}, steps=20)
    s = by_host(suspects(a, [d]))
    for host in ("simhost2", "simhost3"):
        assert host in s and "slow_link" in kinds(s[host]) and s[host]["level"] == "watch", s
    assert "simhost1" not in s and "simhost4" not in s, s
    # a slow NIC (every pair of simhost3 at 1/1.2): simhost3 alone, on watch, its pairs named
    d = run_job(a, tmp, "nic", "nic:host=simhost3,pct=20",
                {"NCCL_NET_PLUGIN": a.shim, "COLLSCOPE_NET_INNER": "simnet", "COLLSCOPE_SIM_CLOCK": "model"}, steps=20)
    s = by_host(suspects(a, [d]))
    assert sorted(s) == ["simhost3"] and kinds(s["simhost3"]) == ["slow_nic"] and s["simhost3"]["level"] == "watch", s


def case_repeat(a, tmp):
    d1 = run_job(a, tmp, "slow1", "slow:rank=5,us=3000")
    d2 = run_job(a, tmp, "slow2", "slow:rank=4,us=3000")   # the same host, another GPU
    clean = run_job(a, tmp, "clean", "")
    s = by_host(suspects(a, [d1, clean]))
    assert s["simhost3"]["level"] == "watch" and s["simhost3"]["jobs_implicated"] == 1, s
    assert s["simhost3"]["jobs_seen"] == 2
    s = by_host(suspects(a, [d1, d2, clean]))
    h = s["simhost3"]
    # one user's runs, whatever their number: watch, unconfirmed
    assert h["level"] == "watch" and h["unconfirmed"] and h["jobs_implicated"] == 2 and h["jobs_seen"] == 3, h
    assert sorted(g["rank"] for g in h["gpus"]) == [4, 5], h
    out = suspects(a, [d1, d2, clean], "slurm")
    assert "scontrol" not in out and "# not drained: simhost3: " in out, out
    # the second run another user's (the owner of its directory, with --trust-host-names)
    os.chown(d2, 65534, 65534)
    out = suspects(a, [d1, d2, clean], "slurm")
    assert 'NodeName=simhost3 State=DRAIN Reason="collscope: straggler x2 in 2 of 3 runs; 2+ users"' in out, out
    os.chown(d2, 0, 0)
    # the header counts runs by directory, whatever job id the dumps share
    txt = suspects(a, [d1, d2, clean], "text")
    assert "over 3 runs (dump directories" in txt and "implicated in 2 of 3 runs" in txt, txt
    assert "[run 1: job job-slow1]" in txt and "[run 2: job job-slow2]" in txt, txt
    # an unusable directory: said, left out, exit status 1
    bad = os.path.join(tmp, "empty")
    os.makedirs(bad)
    suspects(a, [d1, bad], "text", rc=1)


def case_health(a, tmp):
    sysfs = os.path.join(tmp, "sysfs")
    d = run_job(a, tmp, "health", "ecc:rank=2,corrected=2,uncorrected=1,seq=10;xid:rank=2,code=79,seq=12;"
                "nvlink:rank=7,link=1,crc=40,replay=0,recovery=0;ib:host=simhost1,dev=mlx5_0,port=1,symbol_error=30",
                {"COLLSCOPE_HEALTH_MS": "100", "COLLSCOPE_SIM_HEALTH_RAMP_MS": "300", "COLLSCOPE_SIM_SYSFS": sysfs,
                 "COLLSCOPE_SYSFS_ROOT": os.path.join(sysfs, "%h")})
    s = by_host(suspects(a, [d]))
    h2 = s["simhost2"]
    assert h2["level"] == "watch" and kinds(h2) == ["health"], h2
    det = " ".join(e["detail"] for e in h2["evidence"])
    assert "uncorrectable ECC" in det and "XID 79" in det, h2
    assert any(g["rank"] == 2 and (g["uuid"] or "").startswith("GPU-") for g in h2["gpus"]), h2["gpus"]
    assert s["simhost4"]["level"] == "watch" and "NVLink" in s["simhost4"]["evidence"][0]["detail"], s["simhost4"]
    assert s["simhost1"]["level"] == "watch" and "IB mlx5_0 port 1" in s["simhost1"]["evidence"][0]["detail"], s["simhost1"]
    assert "simhost3" not in s, s.keys()
    assert h2["unconfirmed"], h2
    out = suspects(a, [d], "slurm")
    assert "NodeName=simhost2 State=DRAIN" not in out and "# not drained: simhost2: " in out, out
    out = suspects(a, [d], "slurm", ["--verify-cmd", "false"])
    assert "NodeName=simhost2 State=DRAIN" in out and "health" in out, out
    assert "NodeName=simhost1 State=DRAIN" not in out and "NodeName=simhost4 State=DRAIN" not in out, out


def write_record(d, name, job, step, node, pid, uid=0, mode=0o444, owner=0):
    p = os.path.join(d, ".collscope-node." + name)
    with open(p, "w") as f:
        f.write("collscope-node-record 2\njob=%s\nstep=%s\nnode=%s\nuid=%d\npid=%d\n" % (job, step, node, uid, pid))
    os.chown(p, owner, 0)
    os.chmod(p, mode)
    return p


def dump_pids(d):
    """{rank: pid} from the dump headers"""
    out = {}
    for f in os.listdir(d):
        if f.endswith(".jsonl"):
            h = json.loads(open(os.path.join(d, f)).readline())
            out[h["rank"]] = h["pid"]
    return out


def case_verified(a, tmp):
    env = {"SLURMD_NODENAME": "simnode7", "SLURM_STEP_ID": "0"}
    d1 = run_job(a, tmp, "all1", "slow:rank=2,us=3000", env, hosts="ALL")
    d2 = run_job(a, tmp, "all2", "slow:rank=2,us=3000", env, hosts="ALL")
    hdr = json.loads(open(os.path.join(d1, sorted(f for f in os.listdir(d1) if f.endswith(".jsonl"))[0])).readline())
    assert hdr["host"] == "ALL" and hdr["slurm_node"] == "simnode7", hdr
    p1, p2 = dump_pids(d1), dump_pids(d2)
    # no node record: nothing to act on, said in '#' lines; not even --trust-host-names acts on ALL
    for trust in (False, True):
        out = suspects(a, [d1, d2], "slurm", trust=trust)
        assert "scontrol" not in out and "--exclude=" not in out, out
        assert "# not drained: ALL: " in out or "# not excluded: ALL: " in out, out
    # records of another owner, writable by others, of another step, of another job, linked,
    # for no dump's pid: not trusted
    write_record(d1, "0.x.1", "job-all1", "0", "simnode7", p1[2], owner=65534)
    write_record(d2, "0.x.1", "job-all2", "0", "simnode7", p2[2], mode=0o666)
    write_record(d2, "1.x.1", "job-all2", "1", "simnode7", p2[2])
    write_record(d2, "0.x.2", "job-all1", "0", "simnode7", p2[2])   # moved from the other job
    write_record(d2, "0.x.3", "job-all2", "0", "simnode7", 999999)  # no dump has this pid
    linked = write_record(d1, "0.x.9", "job-all1", "0", "simnode7", p1[2])
    os.link(linked, os.path.join(tmp, "elsewhere"))
    out = suspects(a, [d1, d2], "slurm", trust=False)
    assert "scontrol" not in out and "--exclude=" not in out, out
    assert "no node record of the SPANK plugin vouches for node simnode7 of rank 2" in out, out
    assert "a node record of job job-all1 (node simnode7) in job job-all2's directory: moved or copied" in out, out
    assert "node record .collscope-node.0.x.9 is hard-linked (from another directory): not trusted" in out, out
    assert "node record .collscope-node.0.x.1 is not root's (a copy, or made by the job): not trusted" in out, out
    assert "node record .collscope-node.0.x.1 is writable by others: not trusted" in out, out
    os.unlink(linked)
    os.unlink(os.path.join(tmp, "elsewhere"))
    # root's records of these jobs' step for every rank's pid: the node Slurm named, never the
    # label; both runs one user's (uid 0): watch, excluded, not drained
    for d, job, pids in ((d1, "job-all1", p1), (d2, "job-all2", p2)):
        for r, pid in pids.items():
            write_record(d, "0.y.%d" % pid, job, "0", "simnode7", pid)
    out = suspects(a, [d1, d2], "slurm", trust=False)
    assert "scontrol" not in out and "# not drained: simnode7: drain-level evidence from jobs of one user (uid 0)" in out, out
    assert "--exclude=simnode7\n" in out and "ALL" not in out, out
    # the second job another user's (its records say uid 1000): drained
    for n in ("0.x.3", "1.x.1"):
        os.unlink(os.path.join(d2, ".collscope-node." + n))
    for r, pid in p2.items():
        os.unlink(os.path.join(d2, ".collscope-node.0.y.%d" % pid))
        write_record(d2, "0.y.%d" % pid, "job-all2", "0", "simnode7", pid, uid=1000)
    out = suspects(a, [d1, d2], "slurm", trust=False)
    assert 'scontrol update NodeName=simnode7 State=DRAIN Reason="collscope: straggler x2 in 2 of 2 runs; 2+ users"' in out, out
    doc = suspects(a, [d1, d2], "json")
    s = by_host(doc)
    assert s["simnode7"]["verified"] and s["simnode7"]["dump_host"] == "ALL", doc
    assert [j["uid"] for j in doc["jobs"]] == [0, 1000], doc["jobs"]
    assert suspects(a, [d1, d2], "hostfile", trust=False).split() == [], "a straggler's node is not healthy"
    # rank 2's record says another node than its dump: the record's node is named, no action
    os.unlink(os.path.join(d1, ".collscope-node.0.y.%d" % p1[2]))
    write_record(d1, "0.y.%d" % p1[2], "job-all1", "0", "simnode3", p1[2])
    out = suspects(a, [d1], "slurm", trust=False)
    assert "rank 2's dump says node simnode7; the node record of its pid %d says simnode3: no action from it" % p1[2] in out, out
    assert "--exclude" not in out and "scontrol" not in out, out
    doc = by_host(suspects(a, [d1], "json"))
    assert "simnode3" in doc and not doc["simnode3"]["verified"] and "simnode7" not in doc, doc
    assert "rank 2's dump says node simnode7" in doc["simnode3"]["unverified_reason"], doc["simnode3"]


def fake_slurm(tmp, scontrol=None, sacct=None):
    """a directory with stand-ins for scontrol and sacct that print what a test gives (or
    fail), for PATH"""
    d = os.path.join(tmp, "fakebin")
    os.makedirs(d, exist_ok=True)
    for name, text in (("scontrol", scontrol), ("sacct", sacct)):
        with open(os.path.join(d, name), "w") as f:
            f.write("#!/bin/sh\n" + ("cat <<'EOF'\n%s\nEOF\n" % text if text is not None else "exit 1\n"))
        os.chmod(os.path.join(d, name), 0o755)
    return {"PATH": d + ":" + os.environ["PATH"]}


def case_slurmcheck(a, tmp):
    # a directory named after its job (dir=.../%j): the records are checked against what Slurm
    # says of that job (here stand-ins for scontrol and sacct)
    env = {"SLURMD_NODENAME": "simnode7", "SLURM_STEP_ID": "0", "COLLSCOPE_JOB_ID": "4242"}
    d = run_job(a, tmp, "4242", "slow:rank=2,us=3000", env, hosts="ALL")
    for r, pid in dump_pids(d).items():
        write_record(d, "0.y.%d" % pid, "4242", "0", "simnode7", pid)
    line = "JobId=4242 JobName=train UserId=%s GroupId=root(0) JobState=COMPLETED ReqNodeList=simnode7 NodeList=%s BatchHost=x"
    # Slurm gives other nodes (ReqNodeList is not NodeList): the records are refused
    out = suspects(a, [d], "slurm", trust=False, env=fake_slurm(tmp, line % ("root(0)", "simnode[1-3,8]")))
    assert "a node record names node simnode7, where job 4242 did not run (scontrol: NodeList=simnode[1-3,8])" in out, out
    assert "--exclude" not in out, out
    # Slurm's user is another: refused
    out = suspects(a, [d], "slurm", trust=False, env=fake_slurm(tmp, line % ("alice(1000)", "simnode[6-8]")))
    assert "a node record names uid 0, job 4242 is uid 1000's (scontrol): not trusted" in out, out
    assert "--exclude" not in out, out
    # Slurm agrees: the node is acted on
    out = suspects(a, [d], "slurm", trust=False, env=fake_slurm(tmp, line % ("root(0)", "simnode[6-8]")))
    assert "--exclude=simnode7\n" in out and "#   run 1: job 4242" in out and "Slurm not asked" not in out, out
    # scontrol no longer knows the job: sacct's word
    out = suspects(a, [d], "slurm", trust=False, env=fake_slurm(tmp, None, "simnode[1-2]|0"))
    assert "where job 4242 did not run (sacct: NodeList=simnode[1-2])" in out, out
    out = suspects(a, [d], "slurm", trust=False, env=fake_slurm(tmp, None, "simnode7|0"))
    assert "--exclude=simnode7\n" in out, out
    # the job still COMPLETING: scontrol lists only the nodes still running their epilogs (here
    # simnode6, while the record's simnode7 finished); never refused on that word: sacct's
    # whole allocation where accounting has it, else scontrol asked again until it completes
    done = line.replace("COMPLETED", "COMPLETING") % ("root(0)", "simnode6")
    out = suspects(a, [d], "slurm", trust=False, env=fake_slurm(tmp, done, "simnode[6-8]|0"))
    assert "--exclude=simnode7\n" in out and "did not run" not in out, out
    env = fake_slurm(tmp, None, None)
    with open(os.path.join(tmp, "fakebin", "scontrol"), "w") as f:  # COMPLETING twice, then COMPLETED
        f.write("#!/bin/sh\nn=$(cat %s/asked 2>/dev/null || echo 0); echo $((n+1)) > %s/asked\n"
                "if [ $n -lt 2 ]; then echo '%s'; else echo '%s'; fi\n" % (tmp, tmp, done, line % ("root(0)", "simnode[6-8]")))
    out = suspects(a, [d], "slurm", trust=False, env=env)
    assert "--exclude=simnode7\n" in out and "did not run" not in out, out
    assert open(os.path.join(tmp, "asked")).read().strip() == "3", "scontrol asked %s times" % open(os.path.join(tmp, "asked")).read()
    out = suspects(a, [d], "slurm", trust=False, env=fake_slurm(tmp, done))
    assert "Slurm not asked or did not answer (job 4242 still completing after 10 s: scontrol lists only its nodes " \
        "still completing, sacct does not know it)" in out, out
    assert "did not run" not in out, out
    # neither answers: said, and the records are checked against the directory's job alone
    out = suspects(a, [d], "slurm", trust=False, env=fake_slurm(tmp))
    assert "Slurm not asked or did not answer (neither scontrol nor sacct knows job 4242)" in out, out
    assert "--exclude=simnode7\n" in out, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--sim-dir", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-suspects-")
    try:
        globals()["case_" + a.case](a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("suspects-%s: ok" % a.case)


if __name__ == "__main__":
    main()
