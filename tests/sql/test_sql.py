#!/usr/bin/env python3
"""tests/sql/test_sql.py --cli COLLSCOPE --apps APPS_DIR --doc docs/dump-format.md

docs/dump-format.md's SQL ("Querying dumps with SQL"), run verbatim by a real DuckDB
(tests/sql/run_sql.mjs) on the dumps of a seeded 8-rank dp_train job on the simulator's
modeled clock, rank 5 slowed by 20%: each question's answer must be the report's.
  busbw    every ungrouped row of `collscope report --json`'s ops: timed count, p50 and busbw
  slowest  first row: the report's straggler (rank, host, comm), its share_last and offset_us
  window   the straggler's finding window: every rank in every instance, the straggler alone
           last in all of them, its median offset the report's
The same job written as zstd frames (COLLSCOPE_COMPRESS=zstd, *.jsonl.zst) gives the same
answers. Needs node and DuckDB's node API in COLLSCOPE_NPM_DIR (scripts/setup.sh): fails without them."""
import argparse, json, os, subprocess, sys, tempfile

MODEL = {"COLLSCOPE_SIM_CLOCK": "model", "COLLSCOPE_SIM_SEED": "1", "COLLSCOPE_TIMING": "events",
         "COLLSCOPE_EVENT_SAMPLE": "1", "COLLSCOPE_SIM_FAULTS": "link:a=*,b=*,us=300;slow:rank=5,pct=20"}


def sql(a, dumps, name, *subs):
    p = subprocess.run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_sql.mjs"), a.doc,
                        dumps, name] + list(subs), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    assert p.returncode == 0, "run_sql %s failed (%d): %s" % (name, p.returncode, p.stderr)
    rows = json.loads(p.stdout)
    print("%s: %s" % (name, json.dumps(rows)[:600]))
    return rows


def near(a, b, tol):
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(b)))


def check(a, tmp, extra):
    dumps, shm = os.path.join(tmp, "dumps"), os.path.join(tmp, "shm")
    os.makedirs(shm)
    env = dict(os.environ, COLLSCOPE_DIR=dumps, COLLSCOPE_SHM_DIR=shm, **MODEL, **extra)
    p = subprocess.run([a.cli, "run", "-n", "8", "--hosts", "simhost[1-4]", "--sim", "--",
                        os.path.join(a.apps, "dp_train"), "--steps", "20", "--compute-us", "2000"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:]
    names = os.listdir(dumps)
    ext = ".jsonl.zst" if extra.get("COLLSCOPE_COMPRESS") == "zstd" else ".jsonl"
    assert len(names) == 8 and all(n.endswith(ext) for n in names), names
    r = json.loads(subprocess.run([a.cli, "report", "--json", dumps], stdout=subprocess.PIPE, check=True,
                                  text=True).stdout)

    rows = {(x["op"], x["comm_size"], int(x["bytes"])): x for x in sql(a, dumps, "busbw")}
    want = [o for o in r["ops"] if not o.get("group") and o["bytes_min"] == o["bytes_max"]]
    assert want and len(want) == len(rows), (len(want), sorted(rows))
    for o in want:
        x = rows[(o["op"], o["comm_size"], o["bytes"])]
        assert int(x["timed"]) == o["timed"], (x, o)
        assert near(x["p50_us"], o["time_us"]["p50"], 1e-9), (x, o)
        assert near(x["busbw_gbs"], o["busbw_gbs"], 1e-6), (x, o)

    s = [x for x in r["stragglers"] if x["rank"] >= 0]
    assert len(s) == 1 and s[0]["rank"] == 5, r["stragglers"]
    s = s[0]
    slow = sql(a, dumps, "slowest")
    top = slow[0]
    assert (top["rank"], top["host"], top["comm"]) == (s["rank"], s["host"], s["comm"]), (top, s)
    assert int(top["instances"]) == s["window_instances"], (top, s)   # the window holds the whole job
    assert near(top["share_last"], s["share_last"], 1e-9), (top, s)
    assert near(top["offset_us"], s["offset_us"], 1e-6), (top, s)
    assert all(float(x["offset_us"]) < float(top["offset_us"]) for x in slow[1:]), slow

    win = sql(a, dumps, "window", "COMM=" + s["comm"], "FIRST=%d" % s["first_flag_seq"],
              "LAST=%d" % s["last_flag_seq"])
    n = s["last_flag_seq"] - s["first_flag_seq"] + 1
    assert [x["rank"] for x in win] == list(range(8)), win
    assert all(int(x["instances"]) == n for x in win), (n, win)
    assert [int(x["last"]) for x in win] == [n if x["rank"] == 5 else 0 for x in win], win
    assert near(win[5]["offset_us"], s["offset_us"], 1e-6), (win[5], s)
    print("DuckDB answers the report's: %d ops rows, straggler rank %d (share_last %.4f, offset %.3f us), "
          "window seqs %d-%d" % (len(want), s["rank"], s["share_last"], s["offset_us"], s["first_flag_seq"],
                                 s["last_flag_seq"]))
    return {"busbw": sql(a, dumps, "busbw"), "slowest": [dict(x, comm=None) for x in slow],
            "window": win}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--apps", required=True)
    ap.add_argument("--doc", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="collscope-sql-")
    plain = check(a, os.path.join(tmp, "plain"), {"COLLSCOPE_COMPRESS": "off"})
    # the same job's dumps as zstd frames (*.jsonl.zst): the same statements, the same answers
    zst = check(a, os.path.join(tmp, "zstd"), {"COLLSCOPE_COMPRESS": "zstd"})
    assert plain == zst, (plain, zst)
    print("the compressed dumps give the same answers")


if __name__ == "__main__":
    main()
