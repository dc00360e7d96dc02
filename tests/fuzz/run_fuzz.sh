#!/bin/sh
# tests/fuzz/run_fuzz.sh TARGET SECONDS SEED_CORPUS [MAX_LEN]: a short libFuzzer run that
# writes new inputs into a scratch directory (never into the source tree); crash inputs are
# written to the current (build) directory as crash-*. MAX_LEN (default 4096) bounds the
# inputs, seeds included: a target whose smallest valid input is larger (a ring file) passes
# its own, or every seed would be cut short and rejected. Exit status: the fuzzer's.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$1" -max_total_time="$2" -seed=1 -rss_limit_mb=2048 -max_len="${4:-4096}" -print_final_stats=1 "$t" "$3" >"$t.log" 2>&1
rc=$?
tail -n 25 "$t.log"
rm -f "$t.log"
exit $rc
