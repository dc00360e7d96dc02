#!/usr/bin/env bash
# scripts/test.sh: the README's test command. Sets up and builds with gcc, runs the
# whole meson test suite, then checks that clang also builds the tree warning-free
# (-Werror), and runs the sanitizer suites (ASan+UBSan, TSan) on the unit and shim
# tests. The Debian packages' test (suite package: build, lintian, install into a
# temporary root, demo from there) is a stage of its own; COLLSCOPE_SKIP_PACKAGE=1 skips it. Ends with one line counting the individual tests of every stage, from meson's
# summary of each ("N passed, N failed"); a stage that fails outside its tests (a build
# error) counts as one failed, and with each stage's wall time. Exit status: 0 only when
# every stage passed.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || exit 1

passed=0; failed=0; skipped=0; stages_failed=0; stage_times=(); t_all=$SECONDS
stage_log=$(mktemp)
trap 'rm -f "$stage_log"' EXIT
# meson's summary line "Name:   N" of a stage's output, its last one (0 when absent)
summary_count() { awk -v k="$1:" '$0 ~ "^" k { n = $NF } END { print n + 0 }' "$stage_log"; }
run() { # name, command...
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name"
  "$@" 2>&1 | tee "$stage_log"
  local rc=${PIPESTATUS[0]}
  stage_times+=("$(printf '%6d s  %s' $((SECONDS - t0)) "$name")")
  local ok bad
  ok=$(( $(summary_count "Ok") + $(summary_count "Expected Fail") ))
  bad=$(( $(summary_count "Fail") + $(summary_count "Unexpected Pass") + $(summary_count "Timeout") ))
  skipped=$((skipped + $(summary_count "Skipped")))
  if [ "$rc" -ne 0 ]; then
    stages_failed=$((stages_failed + 1))
    [ "$bad" -eq 0 ] && bad=1  # failed outside its tests: counted, never hidden
    echo "FAILED: $name"
  fi
  passed=$((passed + ok)); failed=$((failed + bad))
}

run "meson test (gcc)" meson test -C build --print-errorlogs --num-processes 2 --no-suite package
if [ "${COLLSCOPE_SKIP_PACKAGE:-0}" != 1 ]; then
  run "debian packages (dpkg-buildpackage, lintian, dpkg -x, demo from the install)" meson test -C build --print-errorlogs --suite package
fi
run "clang build (-Werror)" bash -c '[ -f build-clang/build.ninja ] || CC=clang meson setup build-clang >/dev/null; meson compile -C build-clang >/dev/null'
run "fuzz (clang: libFuzzer+ASan+UBSan, ~10 s a parser)" meson test -C build-clang --print-errorlogs --num-processes 2 --suite fuzz
if [ "${COLLSCOPE_SKIP_SANITIZERS:-0}" != 1 ]; then
  run "asan+ubsan build and tests" bash -c '[ -f build-asan/build.ninja ] || meson setup build-asan -Dsim=false -Db_sanitize=address,undefined -Db_lundef=false >/dev/null; meson compile -C build-asan >/dev/null && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite tools --suite stats --suite profiler --suite net --suite sdc'
  run "tsan build and tests" bash -c '[ -f build-tsan/build.ninja ] || meson setup build-tsan -Dsim=false -Db_sanitize=thread -Db_lundef=false >/dev/null; meson compile -C build-tsan >/dev/null && TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --num-processes 2 --suite unit --suite stats --suite profiler --suite net'
fi
echo
printf '%s\n' "${stage_times[@]}"
printf '%6d s  total\n' $((SECONDS - t_all))
echo "$passed passed, $failed failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
[ "$stages_failed" -eq 0 ]
