#!/bin/bash
# tests/slurm/taskprolog_test.sh TASKPROLOG: the TaskProlog script as slurmd runs it (the
# task's environment in, `export` lines out): a job that asks, one that does not, a bad
# option, a key given twice, empty items, a planted link on the directory's path.
set -u
TP=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$(mktemp -d /tmp/collscope-tp.XXXXXX) || fail mktemp
trap 'rm -rf "$T"' EXIT
chmod 0755 "$T"
touch "$T/libcollscope.so"
run() { env -i PATH="$PATH" SLURM_JOB_ID=77 SLURM_STEP_ID=1 SLURM_LOCALID=0 COLLSCOPE_TP_SHIM="$T/libcollscope.so" \
          COLLSCOPE_TP_DIR="$T/out/%u/%j" "$@" bash "$TP"; }

out=$(run LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 COLLSCOPE_SLURM=sdc=all,timing=events 2>&1) || fail "rc $?: $out"
user=$(id -un)
echo "$out" | grep -qx "export COLLSCOPE_DIR=$T/out/$user/77" || fail "no COLLSCOPE_DIR: $out"
echo "$out" | grep -qx "export COLLSCOPE_SDC=all" || fail "no COLLSCOPE_SDC: $out"
echo "$out" | grep -qx "export COLLSCOPE_TIMING=events" || fail "no COLLSCOPE_TIMING: $out"
echo "$out" | grep -qx "export LD_PRELOAD=$T/libcollscope.so:/lib/x86_64-linux-gnu/libm.so.6" || fail "LD_PRELOAD: $out"
[ "$(stat -c %a "$T/out/$user/77")" = 700 ] || fail "mode of the job directory"

out=$(run LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 2>&1) || fail "rc $?"
[ -z "$out" ] || fail "a job that did not ask got: $out"
out=$(run COLLSCOPE_TP_DEFAULT=on COLLSCOPE_SLURM=off 2>&1)
[ -z "$out" ] || fail "COLLSCOPE_SLURM=off got: $out"
out=$(run COLLSCOPE_TP_DEFAULT=on 2>&1)
echo "$out" | grep -q "^export LD_PRELOAD=" || fail "default=on did not preload: $out"
echo "$out" | grep -qx "export COLLSCOPE_RECORD=summary" || fail "default=on is not the always-on recording: $out"
out=$(run COLLSCOPE_SLURM=record=full 2>&1)
echo "$out" | grep -qx "export COLLSCOPE_RECORD=full" || fail "record=full: $out"
! echo "$out" | grep -q "COLLSCOPE_RECORD=summary" || fail "a job that asked got the always-on default: $out"

out=$(run COLLSCOPE_SLURM=bogus=1 2>&1)
[ "$out" = "collscope: COLLSCOPE_SLURM: unknown key or bad value 'bogus=1'; the job runs without collscope" ] ||
  fail "bad option: $out"

out=$(run COLLSCOPE_SLURM=sdc=all,sdc=off 2>&1)
[ "$out" = "collscope: COLLSCOPE_SLURM: sdc is given twice (each key at most once); the job runs without collscope" ] ||
  fail "duplicate key: $out"
for empty in , sdc=all, ,sdc=all sdc=all,,timing=off; do
  out=$(run COLLSCOPE_SLURM=$empty 2>&1)
  [ "$out" = "collscope: COLLSCOPE_SLURM: an empty item in the option list; the job runs without collscope" ] ||
    fail "empty item in '$empty': $out"
done

mkdir -m 0755 "$T/victim" "$T/plant"
ln -s "$T/victim" "$T/plant/$user"
out=$(env -i PATH="$PATH" SLURM_JOB_ID=78 SLURM_STEP_ID=0 COLLSCOPE_SLURM=on COLLSCOPE_TP_SHIM="$T/libcollscope.so" \
      COLLSCOPE_TP_DIR="$T/plant/%u/%j" bash "$TP" 2>&1)
echo "$out" | grep -q "symbolic link" || fail "planted link: $out"
echo "$out" | grep -q "^export" && fail "exports despite a planted link: $out"
[ -z "$(ls -A "$T/victim")" ] || fail "made something through the link"
echo "taskprolog: ok"
