#!/usr/bin/env bash
# scripts/test.sh: the README's test command. Sets up and builds with gcc, runs the
# whole meson test suite, then checks that clang also builds the tree warning-free
# (-Werror), and runs the sanitizer suites (ASan+UBSan, TSan) on the unit and shim
# tests. Prints one summary line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || exit 1

passed=0; failed=0
run() { # name, command...
  local name=$1; shift
  echo "== $name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}

run "meson test (gcc)" meson test -C build --print-errorlogs --num-processes 2
run "clang build (-Werror)" bash -c '[ -f build-clang/build.ninja ] || CC=clang meson setup build-clang >/dev/null; meson compile -C build-clang >/dev/null'
run "fuzz (clang: libFuzzer+ASan+UBSan, ~10 s a parser)" meson test -C build-clang --print-errorlogs --num-processes 2 --suite fuzz
if [ "${COLLSCOPE_SKIP_SANITIZERS:-0}" != 1 ]; then
  run "asan+ubsan build and tests" bash -c '[ -f build-asan/build.ninja ] || meson setup build-asan -Dsim=false -Db_sanitize=address,undefined -Db_lundef=false >/dev/null; meson compile -C build-asan >/dev/null && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite tools --suite stats --suite profiler --suite net --suite sdc'
  run "tsan build and tests" bash -c '[ -f build-tsan/build.ninja ] || meson setup build-tsan -Dsim=false -Db_sanitize=thread -Db_lundef=false >/dev/null; meson compile -C build-tsan >/dev/null && TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --num-processes 2 --suite unit --suite stats --suite profiler --suite net'
fi
echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
