#!/bin/bash
# tests/slurm/real_slurm_epilog.sh: the Epilog script (integrations/slurm/collscope-epilog.sh)
# under a real Slurm (tests/slurm/slurm_cluster.sh: munged, slurmctld, one slurmd on
# 127.0.0.1 in a temporary directory, stopped by pid whatever happens) with Epilog= in
# slurm.conf. A 2-task srun of the simulated dp_train with the shim preloaded hangs (rank 1's
# stream at seq 10) and both tasks are SIGKILLed by `timeout` after 4 s, so their rings stay;
# slurmd then runs the Epilog as root with the job's id and uid: both rings are salvaged into
# the per-job directory and removed, and `collscope report` reads the dumps.
# Daemons that cannot start are a failure, never a skip.
#   real_slurm_epilog.sh COLLSCOPE SHIM EPILOG SIM_DIR DP_TRAIN RANK_WRAPPER
set -u
CLI=$1 SHIM=$2 EP=$3 SIM_DIR=$4 APP=$5 WRAP=$6
fail() { echo "FAIL: $*" >&2; exit 1; }
for b in munged slurmctld slurmd srun sinfo scontrol; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || fail "$b not installed (scripts/setup.sh installs slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || fail "the daemons need root (slurmd starts tasks as the job's user)"
export PATH=$PATH:/usr/sbin
T=$(mktemp -d /tmp/collscope-slurm-ep.XXXXXX) || fail "mktemp"
chmod 0755 "$T"
. "$(dirname "$0")/slurm_cluster.sh"
cleanup() {
  cs_cluster_stop
  if [ -n "${CS_KEEP_SLURM_DIR:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -m 1777 "$T/shm" && mkdir -p "$T/out" "$T/salvage" || fail mkdir
: > "$T/plugstack.conf"
# the site's Epilog: its settings, then the script (its lines to a file instead of syslog)
cat > "$T/epilog.sh" <<EPI
#!/bin/bash
export COLLSCOPE_EP_BIN=$CLI COLLSCOPE_EP_OUT=$T/salvage/%j COLLSCOPE_SHM_DIR=$T/shm COLLSCOPE_EP_LOG=stderr
echo "epilog: job=\$SLURM_JOB_ID uid=\$SLURM_JOB_UID euid=\$(id -u)" >>$T/epilog.out
bash $EP >>$T/epilog.out 2>&1
EPI
chmod 0755 "$T/epilog.sh"
CS_EXTRA_CONF="Epilog=$T/epilog.sh" cs_cluster_start "$T" "$T/plugstack.conf" csnode || fail "the cluster did not come up"

export CS_TEST_SIM_DIR=$SIM_DIR COLLSCOPE_SHM_DIR=$T/shm COLLSCOPE_DIR=$T/out COLLSCOPE_SIM_FAULTS=hang:rank=1,seq=10
unset LD_PRELOAD
out=$(timeout 60 srun -n 2 -O "$WRAP" env LD_PRELOAD="$SHIM" timeout -s KILL 4 "$APP" --steps 20 --size 4K 2>"$T/err")
echo "srun: status $? (its tasks were killed)"
job=$(echo "$out" | sed -n 's/^slurm_rank: job=\([0-9]*\) .*/\1/p')
[ -n "$job" ] || { cat "$T/err" >&2; fail "no job id in the output: $out"; }
for i in $(seq 300); do
  grep -q "salvage --clean:" "$T/epilog.out" 2>/dev/null && break
  sleep 0.1
done
cat "$T/epilog.out" 2>/dev/null
want="collscope-epilog: job $job: salvage --clean: job $job, uid 0: 2 rings salvaged (2 removed), 0 unreadable removed, 0 live left untouched, 0 kept"
grep -qxF "$want" "$T/epilog.out" || { cs_cluster_logs; fail "the Epilog did not salvage both rings"; }
grep -qx "epilog: job=$job uid=0 euid=0" "$T/epilog.out" || fail "the Epilog did not run as root with the job's ids"
[ -z "$(ls "$T/shm")" ] || fail "rings left: $(ls "$T/shm")"
n=$(ls "$T/salvage/$job"/*.salvage.jsonl 2>/dev/null | wc -l)
[ "$n" = 2 ] || fail "expected 2 salvaged dumps in $T/salvage/$job, found $n"
"$CLI" report --json "$T/salvage/$job" >"$T/report.json" || fail "collscope report failed"
python3 - "$T/report.json" <<'PY' || fail "report of the salvaged dumps"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s["files"] == 2 and s["files_without_footer"] == 2 and s["ops"] >= 10, s
print("report: %d files, %d ops" % (s["files"], s["ops"]))
PY
echo PASS
