#!/usr/bin/env python3
"""bench/health_cost.py COLLSCOPE APPS_DIR [SECONDS]

Cost of the health sampler at 1 Hz (COLLSCOPE_HEALTH_MS=1000) on the simulator's NVML: an
8-rank dp_train job on 4 simulated hosts runs for about SECONDS (default 8); each `health`
record carries `cost_us`, the harvest thread's CPU time for that sample (NVML calls, sysfs
reads, formatting, the dump write). Prints per rank the samples, the mean and max cost per
sample and the share of one core over the job (sum of costs / the job's wall time); fails when
a rank's share is above 1%. The simulated hosts' sysfs trees are static (written once here)."""
import glob, json, os, shutil, subprocess, sys, tempfile, time

cli, apps = sys.argv[1], sys.argv[2]
secs = float(sys.argv[3]) if len(sys.argv) > 3 else 8.0
tmp = tempfile.mkdtemp(prefix="collscope-health-cost-")
try:
    for h in ("simhost1", "simhost2", "simhost3", "simhost4"):
        for dev in ("mlx5_0", "mlx5_1"):
            d = os.path.join(tmp, "sysfs", h, "class", "infiniband", dev, "ports", "1")
            os.makedirs(os.path.join(d, "counters"))
            os.makedirs(os.path.join(d, "hw_counters"))
            for c in ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "port_xmit_discards",
                      "port_xmit_wait", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
                      "port_xmit_data", "port_rcv_data"):
                open(os.path.join(d, "counters", c), "w").write("12345\n")
            for c in ("out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled"):
                open(os.path.join(d, "hw_counters", c), "w").write("0\n")
            open(os.path.join(d, "state"), "w").write("4: ACTIVE\n")
            open(os.path.join(d, "rate"), "w").write("400 Gb/sec (4X NDR)\n")
    out = os.path.join(tmp, "dumps")
    env = dict(os.environ, COLLSCOPE_DIR=out, COLLSCOPE_SHM_DIR=tmp, COLLSCOPE_HEALTH_MS="1000",
               COLLSCOPE_SYSFS_ROOT=os.path.join(tmp, "sysfs", "%h"),
               COLLSCOPE_SIM_FAULTS="link:a=*,b=*,us=300;nvlink:rank=1,link=3,crc=10,replay=1,recovery=0")
    # dp_train steps of ~3 x 6 ms collectives + 3 x 2 ms compute: ~25 ms each
    steps = int(secs / 0.025)
    t0 = time.time()
    p = subprocess.run([cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--",
                        os.path.join(apps, "dp_train"), "--steps", str(steps), "--size", "256K", "--compute-us", "2000"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    wall = time.time() - t0
    assert p.returncode == 0, p.stdout[-2000:]
    worst = 0.0
    print("job wall %.1f s, COLLSCOPE_HEALTH_MS=1000" % wall)
    print("%5s %8s %12s %12s %14s" % ("rank", "samples", "mean_us", "max_us", "core_share_%"))
    for f in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
        recs = [json.loads(l) for l in open(f) if '"type":"health"' in l]
        hdr = json.loads(open(f).readline())
        costs = [r["cost_us"] for r in recs]
        t = [r["t_ns"] for r in recs]
        span = max((t[-1] - t[0]) / 1e9, 1.0) if len(t) > 1 else wall
        share = sum(costs) / 1e6 / span * 100
        worst = max(worst, share)
        print("%5d %8d %12.1f %12.1f %14.4f" % (hdr["rank"], len(costs), sum(costs) / max(len(costs), 1),
                                                max(costs or [0]), share))
    print("worst rank: %.4f%% of one core (bar: 1%%)" % worst)
    assert worst <= 1.0, worst
finally:
    shutil.rmtree(tmp, ignore_errors=True)
