#!/usr/bin/env bash
# tests/apps/launcher_test.sh COLLSCOPE ENVDUMP: the `collscope run` contract without
# CUDA: per-rank environment, host blocks, --tag-output, worst exit status, signals,
# kill-on-fail, wrap mode, --sim/--env/--job-id, usage errors, help texts.
set -u
CLI=$1
ENVDUMP=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/collscope-launcher-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset COLLSCOPE_JOB_ID COLLSCOPE_SIM_DIR LD_PRELOAD
export COLLSCOPE_SHIM=$WORK/no-such-shim.so   # keep the shim out of these tests
fails=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
check() { # name, condition...
  local name=$1; shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}
field() { # line, key -> value
  sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"
}

# 1. env contract: 8 ranks on simhost[1-2], tagged output
"$CLI" run -n 8 --hosts 'simhost[1-2]' --tag-output -- "$ENVDUMP" >"$WORK/out" 2>"$WORK/err"
check "8 ranks exit 0" test $? -eq 0
check "8 envdump lines" test "$(grep -c '^\[[0-7]\] envdump ' "$WORK/out")" -eq 8
port=""; job=""; ok=1
for r in 0 1 2 3 4 5 6 7; do
  line=$(grep "^\[$r\] envdump " "$WORK/out")
  [ "$(field "$line" rank)" = "$r" ] || ok=0
  [ "$(field "$line" local_rank)" = "$((r % 4))" ] || ok=0
  [ "$(field "$line" world)" = 8 ] || ok=0
  [ "$(field "$line" local_world)" = 4 ] || ok=0
  [ "$(field "$line" group_rank)" = "$((r / 4))" ] || ok=0
  [ "$(field "$line" group_world)" = 2 ] || ok=0
  [ "$(field "$line" host)" = "simhost$((r / 4 + 1))" ] || ok=0
  m=$(field "$line" master)
  case $m in 127.0.0.1:[1-9]*) ;; *) ok=0 ;; esac
  [ -z "$port" ] && port=$m
  [ "$m" = "$port" ] || ok=0
  j=$(field "$line" job)
  [ -z "$job" ] && job=$j
  [ "$j" = "$job" ] || ok=0
  [ "$(field "$line" preload)" = "-" ] || ok=0
done
check "per-rank env (RANK, LOCAL_RANK, GROUP_RANK, host blocks, one port, one job)" test $ok -eq 1
case $job in run-*) pass "generated job id ($job)" ;; *) fail "generated job id ($job)" ;; esac
# the port comes from below the kernel's ephemeral range, where no connection's source port or
# bind to port 0 can take it before rank 0 listens
eph_lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
p=${port#127.0.0.1:}
check "MASTER_PORT $p in [10000, $eph_lo)" test "$p" -ge 10000 -a "$p" -lt "$eph_lo"

# 2. default host is the real hostname; job id kept; --env applied; --job-id
line=$(COLLSCOPE_JOB_ID=keepme "$CLI" run -n 1 --env ENVDUMP_EXTRA=x=1 -- "$ENVDUMP")
check "default host = hostname" test "$(field "$line" host)" = "$(hostname)"
check "existing COLLSCOPE_JOB_ID kept" test "$(field "$line" job)" = keepme
check "--env K=V" test "$(field "$line" extra)" = "x=1"
line=$("$CLI" run -n 1 --job-id myjob -- "$ENVDUMP")
check "--job-id" test "$(field "$line" job)" = myjob

# 3. worst exit status, signals as 128+sig
"$CLI" run -n 4 --no-kill-on-fail -- "$ENVDUMP" --exit 1:3 --exit 2:7 --exit 3:5 >/dev/null 2>"$WORK/err"
rc=$?
check "worst exit status 7 (got $rc)" test $rc -eq 7
check "failed ranks reported" grep -q 'rank 2 .*exited with status 7' "$WORK/err"
"$CLI" run -n 3 --no-kill-on-fail -- "$ENVDUMP" --exit 0:3 --signal 2:6 >/dev/null 2>&1
rc=$?
check "signal -> 128+sig (SIGABRT: 134, got $rc)" test $rc -eq 134

# 4. kill-on-fail (default): rank 1 fails, the sleepers are terminated quickly
start=$(date +%s)
"$CLI" run -n 4 --grace 1 -- "$ENVDUMP" --sleep 60 --sleep-rank 1:0 --exit 1:9 >/dev/null 2>"$WORK/err"
rc=$?
el=$(( $(date +%s) - start ))
check "kill-on-fail: status of the failed rank (9, got $rc)" test $rc -eq 9
check "kill-on-fail: others terminated (${el}s)" test $el -lt 20
check "kill-on-fail: message" grep -q 'terminating the other 3 ranks' "$WORK/err"

# 5. --no-kill-on-fail: the others finish
"$CLI" run -n 3 --no-kill-on-fail -- "$ENVDUMP" --sleep 1 --sleep-rank 0:0 --exit 0:4 >"$WORK/out" 2>/dev/null
rc=$?
check "no-kill-on-fail: status 4 (got $rc)" test $rc -eq 4
check "no-kill-on-fail: others completed" test "$(grep -c '^done rank=' "$WORK/out")" -eq 2

# 6. SIGTERM to the launcher is forwarded
"$CLI" run -n 2 -- "$ENVDUMP" --sleep 60 >/dev/null 2>"$WORK/err" &
lp=$!
sleep 1
kill -TERM $lp
wait $lp
rc=$?
check "SIGTERM forwarded: status 143 (got $rc)" test $rc -eq 143
check "SIGTERM forwarded: message" grep -q 'forwarding' "$WORK/err"

# 7. tagged output: stderr to stderr, partial last line completed, many lines intact
"$CLI" run -n 2 --tag-output -- "$ENVDUMP" --stderr --lines 2000 --partial >"$WORK/out" 2>"$WORK/err"
check "tag-output: stderr lines on stderr" test "$(grep -c '^\[[01]\] line [0-9]* of rank [01]$' "$WORK/err")" -eq 4000
check "tag-output: nothing on stdout" test ! -s "$WORK/out"
check "tag-output: partial line" test "$(grep -c '^\[[01]\] no newline at the end$' "$WORK/err")" -eq 2
check "tag-output: every line tagged" test "$(grep -vc '^\[[01]\] ' "$WORK/err")" -eq 0

# 8. --sim prepends the simulator dir; wrap mode (no -n) execs the command
mkdir -p "$WORK/sim"
line=$(COLLSCOPE_SIM_DIR=$WORK/sim LD_LIBRARY_PATH=/x/y "$CLI" run --sim -- "$ENVDUMP")
check "wrap mode runs the command" test -n "$line"
check "wrap mode: --sim prepends LD_LIBRARY_PATH" test "$(field "$line" ldpath0)" = "$WORK/sim"
check "wrap mode: sets COLLSCOPE_JOB_ID" test "$(field "$line" job)" != "-"
check "wrap mode: no RANK" test "$(field "$line" rank)" = "-"
COLLSCOPE_SIM_DIR=$WORK/nope "$CLI" run --sim -n 1 -- "$ENVDUMP" >/dev/null 2>"$WORK/err"
check "--sim without simulator fails" test $? -ne 0
: >"$WORK/shim.so"
line=$(COLLSCOPE_SHIM=$WORK/shim.so LD_PRELOAD=/pre.so "$CLI" run -- "$ENVDUMP" 2>/dev/null)
check "wrap mode: shim appended to LD_PRELOAD" test "$(field "$line" preload)" = "/pre.so:$WORK/shim.so"
line=$(COLLSCOPE_SHIM=$WORK/shim.so "$CLI" run --no-shim -- "$ENVDUMP" 2>/dev/null)
check "--no-shim" test "$(field "$line" preload)" = "-"
"$CLI" run -- /nonexistent/cmd 2>/dev/null
check "wrap mode: missing command -> 127" test $? -eq 127
"$CLI" run -n 2 -- /nonexistent/cmd 2>/dev/null
check "launch: missing command -> 127" test $? -eq 127

# 9. usage errors
"$CLI" run -n 3 --hosts 'a[1-2]' -- "$ENVDUMP" >/dev/null 2>"$WORK/err"
check "uneven hosts -> 2" test $? -eq 2
check "uneven hosts message" grep -q 'do not divide evenly over 2 hosts' "$WORK/err"
"$CLI" run -n 2 --hosts 'a[2-1]' -- "$ENVDUMP" >/dev/null 2>"$WORK/err"
check "bad hostlist -> 2" test $? -eq 2
check "bad hostlist message has position" grep -q 'position 2: reversed range' "$WORK/err"
"$CLI" run -n 0 -- "$ENVDUMP" >/dev/null 2>&1
check "-n 0 -> 2" test $? -eq 2
"$CLI" run -n 2 >/dev/null 2>&1
check "no command -> 2" test $? -eq 2
"$CLI" run --bogus -- "$ENVDUMP" >/dev/null 2>&1
check "unknown option -> 2" test $? -eq 2
"$CLI" run --tag-output -- "$ENVDUMP" >/dev/null 2>&1
check "--tag-output without -n -> 2" test $? -eq 2
"$CLI" run -n 1 --env NOEQUALS -- "$ENVDUMP" >/dev/null 2>&1
check "--env without = -> 2" test $? -eq 2
"$CLI" bogus >/dev/null 2>&1
check "unknown command -> 2" test $? -eq 2

# 10. help: every command, every env variable
"$CLI" help >"$WORK/h" && "$CLI" help run >"$WORK/hr" && "$CLI" run --help >"$WORK/hr2" \
  && "$CLI" demo --help >"$WORK/hd" && "$CLI" help demo >"$WORK/hd2"
check "help commands exit 0" test $? -eq 0
check "run --help = help run" cmp -s "$WORK/hr" "$WORK/hr2"
check "demo --help = help demo" cmp -s "$WORK/hd" "$WORK/hd2"
ok=1
for v in COLLSCOPE_DIR COLLSCOPE_DISABLE COLLSCOPE_LOG COLLSCOPE_HOSTNAME COLLSCOPE_JOB_ID COLLSCOPE_SIM_GPUS \
         COLLSCOPE_SIM_FAULTS COLLSCOPE_SIM_TOPOLOGY COLLSCOPE_SIM_LINKSTATS NCCL_DEBUG COLLSCOPE_SIM_DIR \
         COLLSCOPE_SHIM COLLSCOPE_APPS_DIR; do
  for f in h hr hd; do grep -q "$v" "$WORK/$f" || { echo "  $v missing in $f"; ok=0; }; done
done
for o in -n --hosts --sim --no-shim --tag-output --env --kill-on-fail --no-kill-on-fail --grace --job-id --verbose; do
  grep -q -- "$o" "$WORK/hr" || { echo "  $o missing in run help"; ok=0; }
done
check "help documents options and env variables" test $ok -eq 1
for c in run demo report trace help; do grep -q "^  $c " "$WORK/h" || { fail "overview lists $c"; }; done

echo
if [ $fails -eq 0 ]; then echo "launcher: all checks passed"; else echo "launcher: $fails checks failed"; fi
[ $fails -eq 0 ]
