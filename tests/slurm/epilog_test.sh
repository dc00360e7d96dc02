#!/bin/bash
# tests/slurm/epilog_test.sh EPILOG COLLSCOPE DP_TRAIN: the Epilog script as slurmd runs it
# (root, SLURM_JOB_ID and SLURM_JOB_UID, a bare environment) after a simulated 2-rank job
# whose ranks were SIGKILLed (rank 1 hangs at seq 10, both are killed after 3 s): both rings are salvaged into dumps of the job's user that
# `collscope report` reads, and removed; a bad job id does nothing and still exits 0. As
# root the job runs as uid 65534, so root cleans up another user's rings.
set -u
EP=$(realpath "$1") CLI=$(realpath "$2") APP=$(realpath "$3")
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$(mktemp -d /tmp/collscope-ep.XXXXXX) || fail mktemp
trap 'rm -rf "$T"' EXIT
chmod 0755 "$T"
mkdir -m 1777 "$T/shm" && mkdir -m 0777 "$T/run" || fail mkdir
job=$((RANDOM + 100000))
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  user=65534 as=(setpriv --reuid 65534 --regid 65534 --clear-groups)
else
  user=$(id -u) as=()
fi
(cd "$T/run" && env COLLSCOPE_SHM_DIR="$T/shm" COLLSCOPE_DIR="$T/run/dumps" SLURM_JOB_ID=$job COLLSCOPE_SIM_FAULTS=hang:rank=1,seq=10 \
  "${as[@]}" "$CLI" run -n 2 --sim --no-kill-on-fail -- timeout -s KILL 3 "$APP" --steps 20 --size 4K) \
  >"$T/job.log" 2>&1
rings=$(ls "$T/shm")
[ "$(echo "$rings" | grep -c "^collscope-$user-$job-r[01]\.ring$")" = 2 ] || fail "rings: $rings $(tail -5 "$T/job.log")"

# the ranks are the grandchildren of the launcher (under timeout): wait until top sees them dead,
# as slurmd has when it runs the Epilog
for i in $(seq 300); do
  "$CLI" top --once --shm-dir "$T/shm" | grep -c " DEAD *$" | grep -qx 2 && break
  sleep 0.1
done

run() { env -i PATH="$PATH" SLURM_JOB_UID=$user COLLSCOPE_EP_BIN="$CLI" COLLSCOPE_EP_OUT="$T/salvage/%u/%j" \
          COLLSCOPE_SHM_DIR="$T/shm" COLLSCOPE_EP_LOG=stderr "$@" bash "$EP"; }
out=$(run SLURM_JOB_ID=$job 2>&1) || fail "rc $?: $out"
echo "$out"
want="salvage --clean: job $job, uid $user: 2 rings salvaged (2 removed), 0 unreadable removed, 0 live left untouched, 0 kept"
echo "$out" | grep -qxF "collscope-epilog: job $job: $want" || fail "summary: $out"
[ -z "$(ls "$T/shm")" ] || fail "rings left: $(ls "$T/shm")"
d="$T/salvage/$user/$job"
[ "$(stat -c %u:%a "$d")" = "$user:700" ] || fail "job directory $(stat -c %u:%a "$d")"
for f in "$d"/collscope-*-r0-p*.salvage.jsonl "$d"/collscope-*-r1-p*.salvage.jsonl; do
  [ "$(stat -c %u:%a "$f")" = "$user:600" ] || fail "$f: $(stat -c %u:%a "$f")"
done
"$CLI" report "$d" --json >"$T/report.json" || fail "report"
grep -q '"files_without_footer": *2' "$T/report.json" || fail "report: $(head -c 600 "$T/report.json")"

out=$(run SLURM_JOB_ID="1;touch $T/x" 2>&1) || fail "rc $? for a bad job id"
echo "$out" | grep -q "is not a job id; nothing done" || fail "bad job id: $out"
[ ! -e "$T/x" ] || fail "a bad job id ran something"
echo PASS
