#!/bin/bash
# tests/slurm/real_slurm_forgery.sh: what a job's owner can make `collscope suspects` say,
# against a real Slurm with two nodes (n1, n2: two slurmd on 127.0.0.1, tests/slurm/
# slurm_cluster.sh) and the SPANK plugin. Two unprivileged users run simulated jobs through
# `srun --collscope` and forge what a job controls: the job id and host names in the task's
# wrapper, a root-owned node record moved from another of their jobs, a fingerprint edited in
# their own dump. Shown: no action ever names a node the job did not run on, a rank's
# evidence is never moved to another node, one user's jobs never drain a node (two users'
# jobs, or a failed site check, do). The users are made with useradd when missing (and
# removed after); a machine where that fails skips the test, loudly.
#   real_slurm_forgery.sh COLLSCOPE SHIM PLUGIN SIM_DIR DP_TRAIN RANK_WRAPPER
set -u
CLI=$(realpath "$1") SHIM=$(realpath "$2") PLUGIN=$(realpath "$3") SIM_DIR=$(realpath "$4") APP=$(realpath "$5")
WRAP=$(realpath "$6")
fail() { echo "FAIL: $*" >&2; exit 1; }
for b in munged slurmctld slurmd srun scontrol useradd userdel runuser; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || fail "$b not installed (scripts/setup.sh installs slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || fail "the daemons need root (slurmd starts tasks as the job's user)"
export PATH=$PATH:/usr/sbin
. "$(dirname "$0")/slurm_cluster.sh"

T=$(mktemp -d /tmp/collscope-forgery.XXXXXX) || fail "mktemp"
chmod 0755 "$T"
made=()
cleanup() {
  cs_cluster_stop
  for u in "${made[@]}"; do userdel "$u" 2>/dev/null; done
  if [ -n "${CS_KEEP_SLURM_DIR:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

U1=csforge1 U2=csforge2
for u in $U1 $U2; do
  id -u "$u" >/dev/null 2>&1 && continue
  if ! useradd -M -N -d /nonexistent -s /bin/bash "$u" 2>"$T/useradd.err"; then
    echo "SKIP: cannot create the test user $u ($(cat "$T/useradd.err")): the forgeries need two unprivileged users" >&2
    exit 77
  fi
  made+=("$u")
done
UID1=$(id -u $U1) UID2=$(id -u $U2)
for p in "$CLI" "$SHIM" "$APP" "$WRAP" "$SIM_DIR/libnccl.so.2"; do
  runuser -u $U1 -- test -r "$p" || { echo "SKIP: $p is not readable by $U1 (a build tree others cannot read)" >&2; exit 77; }
done

mkdir -m 1777 "$T/out"
echo "optional $PLUGIN shim=$SHIM dir=$T/out/%u/%j" > "$T/plugstack.conf"
cs_cluster_start "$T" "$T/plugstack.conf" n1 n2 || fail "the cluster did not come up"
echo "slurm up: $(sinfo -h -o '%N %T')"

# the forging wrapper: what any job can do before exec'ing its program
# (the two nodes are one machine: each rank takes its own simulated GPU)
cat > "$T/forge.sh" <<'F'
#!/bin/bash
export SLURM_LOCALID=$SLURM_PROCID
if [ -z "${FORGE_RANK:-}" ] || [ "$SLURM_PROCID" = "$FORGE_RANK" ]; then
  [ -n "${FORGE_JOB:-}" ] && export SLURM_JOB_ID=$FORGE_JOB COLLSCOPE_JOB_ID=$FORGE_JOB
  [ -n "${FORGE_NODE:-}" ] && export COLLSCOPE_HOSTNAME=$FORGE_NODE SLURMD_NODENAME=$FORGE_NODE
fi
exec "$FORGE_WRAP" "$@"
F
chmod 0755 "$T/forge.sh"

# run USER NAME [VAR=VALUE...] -- SRUN_ARGS...: one job as USER, named NAME; prints its id
run() {
  local user=$1 name=$2 envs=()
  shift 2
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  (cd "$T" && runuser -u "$user" -- env PATH="$PATH" SLURM_CONF="$SLURM_CONF" CS_TEST_SIM_DIR="$SIM_DIR" FORGE_WRAP="$WRAP" "${envs[@]}" \
    timeout 90 srun -J "$name" -O "$@" --collscope=sdc=all "$T/forge.sh" "$APP" --steps 20 >"$T/$name.out" 2>&1) ||
    { cat "$T/$name.out" >&2; fail "job $name failed"; }
  scontrol show jobs -o | sed -n "s/^JobId=\([0-9]*\) JobName=$name .*/\1/p" | tail -n 1
}
# edit USER DIR: the owner changes one fingerprint in rank 1's dump (rank 1 becomes the SDC suspect)
edit_fp() {
  runuser -u "$1" -- python3 - "$2" <<'PY' || fail "cannot edit a fingerprint in $2"
import glob, re, sys
f = glob.glob(sys.argv[1] + "/*-r1-p*.jsonl")[0]
s = open(f).read()
m = list(re.finditer(r'"fp":"([0-9a-f]{16})"', s))[2]
v = m.group(1)
open(f, "w").write(s[:m.start(1)] + v[:-1] + ("0" if v[-1] != "0" else "1") + s[m.end(1):])
PY
}
sus() { "$CLI" suspects "$@"; }
no_action_on() { # NODE OUTPUT: no line that is not a comment names NODE
  echo "$2" | grep -v '^#' | grep -q "$1" && fail "an action names $1: $2"
  return 0
}

echo "---- job A: $U1 on n1 and n2, a genuine run"
JA=$(run $U1 ja -- -N 2 -n 3)
DA=$T/out/$U1/$JA
recs=$(ls -A "$DA" | grep -c '^\.collscope-node\.')
[ "$recs" = 3 ] || { ls -la "$DA" >&2; fail "expected 3 node records (one per task) in $DA, found $recs"; }
for r in "$DA"/.collscope-node.*; do
  [ "$(stat -c '%u %a %h' "$r")" = "0 444 1" ] || fail "node record $r: $(stat -c '%u %a %h' "$r")"
  grep -qx "job=$JA" "$r" && grep -qx "uid=$UID1" "$r" || fail "node record $r: $(cat "$r")"
  pid=$(sed -n 's/^pid=//p' "$r")
  ls "$DA"/*-p"$pid".jsonl >/dev/null 2>&1 || fail "no dump of the record's pid $pid in $DA"
done
out=$(sus "$DA" --format slurm)
echo "$out"
echo "$out" | grep -q "^#   run 1: job $JA  $DA  (uid $UID1)$" || fail "header of a genuine job: $out"
echo "$out" | grep -q '^#     !' && fail "a genuine job has notes: $out"

echo "---- job B: $U1 on n1 only; its wrapper claims job A's id and node n2; a record of job A moved in; a fingerprint edited"
JB=$(FORGE=1 run $U1 jb FORGE_JOB="$JA" FORGE_NODE=n2 COLLSCOPE_SIM_CLOCK=model COLLSCOPE_SIM_SEED=1 COLLSCOPE_SIM_FAULTS=slow:rank=1,us=3000 -- -w n1 -N 1 -n 3)
DB=$T/out/$U1/$JB
grep -q '"slurm_node":"n2"' "$DB"/*-r0-*.jsonl && grep -q "\"job\":\"$JA\"" "$DB"/*-r0-*.jsonl ||
  fail "the forged header is not what the test meant: $(head -c 600 "$DB"/*-r0-*.jsonl)"
moved=$(grep -l '^node=n2$' "$DA"/.collscope-node.* | head -n 1)
runuser -u $U1 -- mv "$moved" "$DB/" || fail "$U1 cannot move a record between their directories"
[ "$(stat -c %u "$DB/$(basename "$moved")")" = 0 ] || fail "the moved record is not root's"
edit_fp $U1 "$DB"
for fmt in slurm hostfile; do
  out=$(sus "$DB" --format $fmt 2>&1)
  echo "$out"
  no_action_on n2 "$out"
  echo "$out" | grep -q "^scontrol" && fail "one user's job drains: $out"
done
out=$(sus "$DB" --format slurm)
echo "$out" | grep -q "^#   run 1: job $JB  $DB" || fail "the header does not show the directory's job $JB: $out"
echo "$out" | grep -q "dumps claim job $JA (rank 0's first); this directory is job $JB's" || fail "the claim of job $JA is not flagged: $out"
echo "$out" | grep -q "a node record of job $JA (node n2) in job $JB's directory: moved or copied from another job" ||
  fail "the moved record is not flagged: $out"
sus "$DB" --format json > "$T/b.json"
python3 - "$T/b.json" <<'PY' || fail "job B: the forged evidence is not there, or acted on"
import json, sys
d = json.load(open(sys.argv[1]))
kinds = {e["kind"] for h in d["suspects"] for e in h["evidence"]}
assert "sdc" in kinds and "straggler" in kinds, kinds
assert not any(h["verified"] for h in d["suspects"]), d["suspects"]
PY

echo "---- job C: $U1 on n1 and n2; rank 0 (on n1) claims n2"
JC=$(run $U1 jc FORGE_RANK=0 FORGE_NODE=n2 COLLSCOPE_SIM_CLOCK=model COLLSCOPE_SIM_SEED=1 COLLSCOPE_SIM_FAULTS=slow:rank=0,us=3000 -- -N 2 -n 3)
DC=$T/out/$U1/$JC
grep -q '"slurm_node":"n2"' "$DC"/*-r0-*.jsonl || fail "rank 0's header does not claim n2"
out=$(sus "$DC" --format slurm)
echo "$out"
no_action_on n2 "$out"
echo "$out" | grep -q "rank 0's dump says node n2; the node record of its pid [0-9]* says n1: no action from it" ||
  fail "the contradiction is not flagged: $out"
sus "$DC" --format json > "$T/c.json"
python3 - "$T/c.json" <<'PY' || fail "job C: rank 0's evidence is not on n1"
import json, sys
s = {h["host"]: h for h in json.load(open(sys.argv[1]))["suspects"]}
assert "n1" in s and not s["n1"]["verified"] and any(e["rank"] == 0 and e["kind"] == "straggler" for e in s["n1"]["evidence"]), s
assert "n2" not in s, s
PY

echo "---- jobs D (by $U1) and E (by $U2): each on n1, each with a fingerprint edited by its owner"
JD=$(run $U1 jd -- -w n1 -N 1 -n 3)
JE=$(run $U2 je -- -w n1 -N 1 -n 3)
DD=$T/out/$U1/$JD DE=$T/out/$U2/$JE
# a root-owned record of job D for rank 2's pid naming n2, where job D never ran (as a job id
# Slurm gave again would leave): Slurm's NodeList refuses it; without Slurm's word the two
# records of one pid disagree and neither is believed
pid2=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$DD"/*-r2-*.jsonl | head -n 1)
printf 'collscope-node-record 2\njob=%s\nstep=0\nnode=n2\nuid=%s\npid=%s\n' "$JD" "$UID1" "$pid2" > "$DD/.collscope-node.0.stale.$pid2"
chmod 0444 "$DD/.collscope-node.0.stale.$pid2"
out=$(sus "$DD" --format slurm)
echo "$out"
echo "$out" | grep -q "a node record names node n2, where job $JD did not run (scontrol: NodeList=n1): not trusted" ||
  fail "Slurm's NodeList did not refuse the record: $out"
echo "$out" | grep -q "Slurm not asked" && fail "Slurm was not asked: $out"
no_action_on n2 "$out"
out=$(sus "$DD" --format slurm --no-slurm)
echo "$out"
echo "$out" | grep -q "Slurm not asked or did not answer (--no-slurm)" || fail "--no-slurm is not said: $out"
echo "$out" | grep -q "two node records of rank 2's pid $pid2 name nodes" || fail "two records of one pid: $out"
no_action_on n2 "$out"
rm -f "$DD/.collscope-node.0.stale.$pid2"
edit_fp $U1 "$DD"
edit_fp $U2 "$DE"
out=$(sus "$DD" "$DB" "$DC" "$DA" --format slurm)
echo "$out"
echo "$out" | grep -q "^scontrol" && fail "one user's jobs drain: $out"
echo "$out" | grep -q "^# not drained: n1: drain-level evidence from jobs of one user (uid $UID1): watch" || fail "n1 not watched: $out"
no_action_on n2 "$out"
out=$(sus "$DD" --format slurm --verify-cmd "test %n != n1")
echo "$out"
echo "$out" | grep -q "^scontrol update NodeName=n1 State=DRAIN Reason=\"collscope: sdc x1 in 1 of 1 runs; the site's check failed\"$" ||
  fail "a failed site check does not drain: $out"
out=$(sus "$DD" "$DE" --format slurm)
echo "$out"
echo "$out" | grep -q "^scontrol update NodeName=n1 State=DRAIN Reason=\"collscope: sdc x2 in 2 of 2 runs; 2+ users\"$" ||
  fail "two users' jobs do not drain n1: $out"
no_action_on n2 "$out"
echo "real-slurm-forgery: ok"
