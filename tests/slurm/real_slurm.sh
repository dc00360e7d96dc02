#!/bin/bash
# tests/slurm/real_slurm.sh: `srun --collscope` against a real Slurm. Starts, in a fresh
# temporary directory and on 127.0.0.1 only (tests/slurm/slurm_cluster.sh), a munged with a
# key made here and its own socket, a slurmctld (-i) and a slurmd from a generated
# slurm.conf (one node, 2 CPUs, own ports, the plugin in a generated plugstack.conf), and
# stops them by pid whatever happens.
# Daemons that cannot start are a failure, never a skip.
#   real_slurm.sh COLLSCOPE SHIM PLUGIN SIM_DIR DP_TRAIN RANK_WRAPPER
set -u
CLI=$1 SHIM=$2 PLUGIN=$3 SIM_DIR=$4 APP=$5 WRAP=$6
started=$(date +%s%N)
elapsed() { local ns=$(( $(date +%s%N) - started )); printf "%d.%02d" $((ns / 1000000000)) $((ns / 10000000 % 100)); }
fail() { echo "FAIL: $*" >&2; exit 1; }
# wait_job ID: polls until the batch job ends (at most 90 s), prints its final state;
# polled here because sbatch --wait backs off to 10 s between its own polls
wait_job() {
  local state= i
  for i in $(seq 900); do
    state=$(scontrol show job "$1" -o 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
    sleep 0.1
  done
  echo "$state"
}

for b in munged slurmctld slurmd srun sbatch sinfo scontrol; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || fail "$b not installed (scripts/setup.sh installs slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || fail "the daemons need root (slurmd starts tasks as the job's user)"
export PATH=$PATH:/usr/sbin

T=$(mktemp -d /tmp/collscope-slurm.XXXXXX) || fail "mktemp"
chmod 0755 "$T"
. "$(dirname "$0")/slurm_cluster.sh"
cleanup() {
  cs_cluster_stop
  if [ -n "${CS_KEEP_SLURM_DIR:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$T/out"
cat > "$T/plugstack.conf" <<PS
optional $PLUGIN shim=$SHIM dir=$T/out/%j
PS
cs_cluster_start "$T" "$T/plugstack.conf" csnode || fail "the cluster did not come up"
echo "slurm up after $(elapsed) s"

export CS_TEST_SIM_DIR=$SIM_DIR
unset LD_PRELOAD  # the tasks inherit this environment (srun --export=ALL)
njobs() { scontrol show jobs -o 2>/dev/null | grep -c JobId=; }

# ---- 1. srun -n 4 --collscope=sdc=all: 4 dumps in the job's directory, a complete report
out=$(timeout 60 srun -n 4 -O --collscope=sdc=all "$WRAP" "$APP" --steps 3 2>"$T/err1") ||
  { cat "$T/err1" >&2; fail "srun --collscope=sdc=all failed"; }
echo "$out" | grep slurm_rank:
job=$(echo "$out" | sed -n 's/^slurm_rank: job=\([0-9]*\) .*/\1/p')
[ -n "$job" ] || fail "no job id in the output"
echo "$out" | grep -q "preload=\[$SHIM\]" || fail "LD_PRELOAD in the task is not the shim alone: $out"
echo "$out" | grep -q "dir=\[$T/out/$job\]" || fail "COLLSCOPE_DIR is not $T/out/$job"
n=$(ls "$T/out/$job"/*.jsonl 2>/dev/null | wc -l)
[ "$n" = 4 ] || { ls -la "$T/out" "$T/out/$job" >&2; fail "expected 4 dump files in $T/out/$job, found $n"; }
mode=$(stat -c %a "$T/out/$job")
[ "$mode" = 700 ] || fail "job directory mode $mode, expected 700"
"$CLI" report --json "$T/out/$job" > "$T/report1.json" || fail "collscope report failed"
python3 - "$T/report1.json" "$job" <<'PY' || fail "report incomplete"
import json, sys
d = json.load(open(sys.argv[1])); s = d["summary"]
assert s["job"] == sys.argv[2], s["job"]
assert s["files"] == 4 and s["ranks"] == 4, (s["files"], s["ranks"])
assert s["files_without_footer"] == 0 and s["lost"] == 0 and s["ops"] > 0, s
assert d["sdc_checks"]["compared"] > 0, d["sdc_checks"]
assert sorted(r["rank"] for r in d["ranks"]) == [0, 1, 2, 3]
assert all(r["step"] == 0 for r in d["ranks"]), [r["step"] for r in d["ranks"]]
print("report: %d ranks, %d ops, %d SDC comparisons" % (s["ranks"], s["ops"], d["sdc_checks"]["compared"]))
PY

echo "[$(elapsed) s] 2. without the flag"
# ---- 2. without the flag: no dump, the job's LD_PRELOAD untouched
before=$(ls "$T/out" | wc -l)
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 timeout 30 srun -n 2 -O bash -c \
  'echo "task preload=[$LD_PRELOAD] dir=[${COLLSCOPE_DIR:-}]"' 2>&1) || fail "srun without the flag failed: $out"
[ "$(echo "$out" | grep -c 'task preload=\[/lib/x86_64-linux-gnu/libm.so.6\] dir=\[\]')" = 2 ] ||
  fail "without --collscope the task environment changed: $out"
[ "$(ls "$T/out" | wc -l)" = "$before" ] || fail "a job without --collscope made a directory"
# with it, the job's preload is kept after the shim
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 timeout 30 srun -n 1 --collscope bash -c 'echo "task preload=[$LD_PRELOAD]"' 2>&1)
echo "$out" | grep -q "task preload=\[$SHIM:/lib/x86_64-linux-gnu/libm.so.6\]" || fail "the job's LD_PRELOAD was not kept: $out"

echo "[$(elapsed) s] 3. a bad option"
# ---- 3. a bad option: srun fails with the plugin's message, no job runs
jobs_before=$(njobs)
out=$(timeout 30 srun -n 1 --collscope=bogus=1 touch "$T/ran" 2>&1) && fail "srun --collscope=bogus=1 succeeded: $out"
echo "$out" | grep -q "collscope: --collscope=bogus=1: unknown key 'bogus'" || fail "not the plugin's message: $out"
echo "bad option: $(echo "$out" | head -n 1)"
[ ! -e "$T/ran" ] || fail "the job ran despite the bad option"
[ "$(njobs)" = "$jobs_before" ] || fail "a job was created for the bad option"

echo "[$(elapsed) s] 3b. a planted link"
# ---- 3b. a symbolic link planted where the job directory goes: one line, the job runs without
# collscope, nothing made through the link
mkdir -m 0755 "$T/plant" "$T/victim"
ln -s "$T/victim" "$T/plant/$(id -un)"
out=$(timeout 30 srun -n 2 -O --collscope=dir=$T/plant/%u/%j bash -c 'echo "task preload=[${LD_PRELOAD:-}]"' 2>&1) ||
  fail "the job with a planted link failed: $out"
[ "$(echo "$out" | grep -c 'task preload=\[\]')" = 2 ] || fail "collscope was preloaded through a planted link: $out"
[ "$(echo "$out" | grep -c '^collscope: .*symbolic link.*the job runs without collscope')" = 1 ] ||
  fail "expected one 'runs without collscope' line: $out"
[ -z "$(ls -A "$T/victim")" ] || fail "something was made through the planted link"
echo "planted link: $(echo "$out" | grep '^collscope:')"

echo "[$(elapsed) s] 4. sbatch"
# ---- 4. sbatch --collscope with two sruns: both steps recorded, told apart by step id
cat > "$T/batch.sh" <<B
#!/bin/bash
srun -n 4 -O "$WRAP" "$APP" --steps 2 || exit 1
srun -n 4 -O "$WRAP" "$APP" --steps 2 || exit 1
B
chmod +x "$T/batch.sh"
bjob=$(sbatch --parsable -n 4 -O --collscope=sdc=all -o "$T/batch.out" "$T/batch.sh") || fail "sbatch failed"
bjob=${bjob%%;*}
state=$(wait_job "$bjob")
[ "$state" = COMPLETED ] || { cat "$T/batch.out" >&2; fail "the batch job ended $state"; }
n=$(ls "$T/out/$bjob"/*.jsonl 2>/dev/null | wc -l)
[ "$n" = 8 ] || { cat "$T/batch.out" >&2; fail "expected 8 dump files (2 steps x 4) in $T/out/$bjob, found $n"; }
"$CLI" report "$T/out/$bjob" > "$T/report4.txt" || fail "collscope report of the batch job failed"
sed -n '/^# Ranks/,/^$/p' "$T/report4.txt"
"$CLI" report --json "$T/out/$bjob" > "$T/report4.json" || fail "report --json failed"
python3 - "$T/report4.json" <<'PY' || fail "the steps are not told apart"
import json, sys
d = json.load(open(sys.argv[1]))
steps = sorted((r["step"], r["rank"]) for r in d["ranks"])
assert steps == [(s, r) for s in (0, 1) for r in range(4)], steps
assert d["summary"]["files_without_footer"] == 0
PY
grep -q "^# step  rank" "$T/report4.txt" || fail "the report's rank table has no step column"

echo "[$(elapsed) s] 4b. #SBATCH --collscope, bare"
# ---- 4b. the bare flag in the script (#SBATCH --collscope): Slurm hands it to the steps' sruns
# as "(null)"; collscope is on with its defaults and the job completes
cat > "$T/batch-bare.sh" <<B
#!/bin/bash
#SBATCH --collscope
srun -n 4 -O "$WRAP" "$APP" --steps 2 || exit 1
B
bjob=$(sbatch --parsable -n 4 -O -o "$T/batch-bare.out" "$T/batch-bare.sh") || fail "sbatch (#SBATCH --collscope) failed"
bjob=${bjob%%;*}
state=$(wait_job "$bjob")
[ "$state" = COMPLETED ] || { cat "$T/batch-bare.out" >&2; fail "#SBATCH --collscope: the batch job ended $state"; }
grep -q "collscope:" "$T/batch-bare.out" && { cat "$T/batch-bare.out" >&2; fail "#SBATCH --collscope: collscope complained"; }
n=$(ls "$T/out/$bjob"/*.jsonl 2>/dev/null | wc -l)
[ "$n" = 4 ] || { cat "$T/batch-bare.out" >&2; fail "#SBATCH --collscope: expected 4 dump files in $T/out/$bjob, found $n"; }
echo "#SBATCH --collscope: job $bjob COMPLETED, $n dump files"

echo "[$(elapsed) s] 4c. options: a key twice, a 10 KB value"
out=$(timeout 30 srun -n 1 --collscope=sdc=all,sdc=off true 2>&1) && fail "srun --collscope=sdc=all,sdc=off succeeded: $out"
echo "$out" | grep -q "collscope: --collscope=sdc=all,sdc=off: sdc is given twice" || fail "duplicate key: $out"
big=sdc=$(head -c 10236 /dev/zero | tr '\0' x)
out=$(timeout 30 srun -n 1 --collscope="$big" true 2>&1) && fail "srun with a 10 KB option succeeded"
echo "$out" | grep -q "x\.\.\. (10240 bytes): the option list is longer than 4095 bytes" || fail "10 KB option: $out"
[ "${#out}" -lt 256 ] || fail "a 10 KB option gave ${#out} bytes of messages: $out"
echo "10 KB option: ${#out} bytes of messages"

echo "[$(elapsed) s] 4d. COLLSCOPE_HOSTNAME=ALL"
# ---- 4d. a job names its host ALL (and passes its own SLURMD_NODENAME): the dumps keep ALL as
# a label, the header has Slurm's node name, the plugin's root-owned node record vouches for
# it, and suspects acts on csnode only, never on ALL
dirs=()
for run in 1 2; do
  out=$(COLLSCOPE_HOSTNAME=ALL SLURMD_NODENAME=forged COLLSCOPE_SIM_FAULTS='slow:rank=2,us=3000' \
        timeout 90 srun -n 4 -O --collscope "$WRAP" "$APP" --steps 30 2>"$T/err-all") ||
    { cat "$T/err-all" >&2; fail "the COLLSCOPE_HOSTNAME=ALL job failed"; }
  j=$(echo "$out" | sed -n 's/^slurm_rank: job=\([0-9]*\) .*/\1/p')
  dirs+=("$T/out/$j")
  recs=("$T/out/$j"/.collscope-node.0.*)
  [ "${#recs[@]}" = 4 ] && [ -f "${recs[0]}" ] || { ls -la "$T/out/$j" >&2; fail "expected 4 node records (one per task) in $T/out/$j"; }
  [ "$(stat -c '%u %a' "${recs[0]}")" = "0 444" ] || fail "node record not root's 0444: $(stat -c '%u %a' "${recs[0]}")"
  grep -qx "node=csnode" "${recs[0]}" && grep -qx "job=$j" "${recs[0]}" || fail "node record: $(cat "${recs[0]}")"
  hdr=$(head -n 1 "$(ls "$T/out/$j"/*.jsonl | head -n 1)")
  echo "$hdr" | grep -q '"host":"ALL"' && echo "$hdr" | grep -q '"slurm_node":"csnode"' || fail "header: $hdr"
done
out=$("$CLI" suspects "${dirs[@]}" --format slurm) || fail "suspects failed: $out"
echo "$out"
# both jobs are one user's: watched and excluded, never drained (tests/slurm/real_slurm_forgery.sh)
echo "$out" | grep -q '^# not drained: csnode: drain-level evidence from jobs of one user (uid 0): watch' ||
  fail "suspects did not watch csnode: $out"
echo "$out" | grep -q '^scontrol' && fail "one user's jobs drain: $out"
echo "$out" | grep -qx -- "--exclude=csnode" || fail "suspects did not exclude csnode: $out"
echo "$out" | grep -v '^#' | grep -q ALL && fail "an action names ALL: $out"

# ---- 5. a site that turns it on for every job (default=on): on without the flag, off with =off
echo "[$(elapsed) s] 5. default=on"
echo "optional $PLUGIN shim=$SHIM dir=$T/out/%j default=on" > "$T/plugstack.conf"
out=$(timeout 30 srun -n 1 bash -c 'echo "task preload=[${LD_PRELOAD:-}]"' 2>&1)
echo "$out" | grep -qx "task preload=\[$SHIM\]" || fail "default=on: not preloaded: $out"
out=$(timeout 30 srun -n 1 --collscope=off bash -c 'echo "task preload=[${LD_PRELOAD:-}]"' 2>&1)
echo "$out" | grep -qx "task preload=\[\]" || fail "default=on, --collscope=off: preloaded anyway: $out"
echo "real-slurm: ok in $(elapsed) s"
