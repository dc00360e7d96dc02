#!/usr/bin/env bash
# scripts/test.sh: the README's test command (what CI runs). Sets up and builds with gcc,
# runs the whole meson test suite, then checks that clang also builds the tree warning-free
# (-Werror; the benchmarks are left to gcc: -Dbenchmarks=false), and runs the sanitizer suites
# (ASan+UBSan, TSan) on the unit and shim tests, building only what those suites run
# (scripts/suite-targets.py).
# scripts/test.sh --fast: the unit and in-process suites of the gcc build only (about a minute
# after a build): the check to run while working. The Debian packages' test (suite package: build, lintian, install into a
# temporary root, demo from there) is a stage of its own; COLLSCOPE_SKIP_PACKAGE=1 skips it. Ends with one line counting the individual tests of every stage, from meson's
# summary of each ("N passed, N failed"); a stage that fails outside its tests (a build
# error) counts as one failed, and with each stage's wall time. Exit status: 0 only when
# every stage passed.
set -uo pipefail
cd "$(dirname "$0")/.."
fast=0
case "${1:-}" in
  --fast) fast=1 ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--fast]" >&2; exit 2 ;;
esac
t_all=$SECONDS
./scripts/setup.sh || exit 1
t_setup=$((SECONDS - t_all))

passed=0; failed=0; skipped=0; stages_failed=0
stage_times=("$(printf '%6d s  %s' "$t_setup" "set-up (scripts/setup.sh: packages, meson setup, the gcc build)")")
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

# the sanitizer stages' suites; their builds hold only what these run
asan_suites=(unit tools stats profiler net sdc)
tsan_suites=(unit stats profiler net)
suite_args() { local s; args=(); for s in "$@"; do args+=(--suite "$s"); done; }
build_for() { # build dir, suites...: compile what the tests of those suites run, nothing else
  local dir=$1; shift
  local targets
  targets=$(python3 scripts/suite-targets.py "$dir" "$@") || return 1
  local out
  # shellcheck disable=SC2086  # one target a line, none with a space
  out=$(ninja -C "$dir" $targets) || { printf '%s\n' "$out" | tail -n 60; return 1; }
}

if [ "$fast" = 1 ]; then
  run "meson test (gcc, --fast: unit and in-process suites)" meson test -C build --print-errorlogs --num-processes 2 \
    --suite unit --suite inprocess --suite tools --suite fuzz --suite lint
  echo
  printf '%s\n' "${stage_times[@]}"
  echo "$passed passed, $failed failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
  [ "$stages_failed" -eq 0 ]
  exit
fi

run "meson test (gcc)" meson test -C build --print-errorlogs --num-processes 2 --no-suite package
if [ "${COLLSCOPE_SKIP_PACKAGE:-0}" != 1 ]; then
  run "debian packages (dpkg-buildpackage, lintian, dpkg -x, demo from the install)" meson test -C build --print-errorlogs --suite package
fi
run "clang build (-Werror)" bash -c '[ -f build-clang/build.ninja ] || CC=clang meson setup build-clang -Dbenchmarks=false >/dev/null; meson compile -C build-clang >/dev/null'
run "fuzz (clang: libFuzzer+ASan+UBSan, ~10 s a parser)" meson test -C build-clang --print-errorlogs --num-processes 2 --suite fuzz
if [ "${COLLSCOPE_SKIP_SANITIZERS:-0}" != 1 ]; then
  asan() {
    [ -f build-asan/build.ninja ] || meson setup build-asan -Dsim=false -Dbenchmarks=false -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
    suite_args "${asan_suites[@]}"
    build_for build-asan "${asan_suites[@]}" &&
      UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-asan --print-errorlogs --num-processes 2 "${args[@]}"
  }
  tsan() {
    [ -f build-tsan/build.ninja ] || meson setup build-tsan -Dsim=false -Dbenchmarks=false -Db_sanitize=thread -Db_lundef=false >/dev/null
    suite_args "${tsan_suites[@]}"
    build_for build-tsan "${tsan_suites[@]}" &&
      TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --num-processes 2 "${args[@]}"
  }
  run "asan+ubsan build and tests" asan
  run "tsan build and tests" tsan
fi
echo
printf '%s\n' "${stage_times[@]}"
printf '%6d s  total (set-up included)\n' $((SECONDS - t_all))
echo "$passed passed, $failed failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
[ "$stages_failed" -eq 0 ]
