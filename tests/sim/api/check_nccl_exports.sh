#!/usr/bin/env bash
# tests/sim/api/check_nccl_exports.sh REAL_LIBNCCL SIM_LIBNCCL: every function the real
# libnccl.so.2 exports is exported by the simulated one, so no program built against the
# real library dies of a symbol lookup error on the simulator. ncclResetDebugInitInternal
# is NCCL's own (called by its ncclResetDebugInit, declared in no header).
set -euo pipefail
names() { nm -D --defined-only "$1" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u; }
real=$(names "$1") sim=$(names "$2")
[ -n "$real" ] && [ -n "$sim" ] || { echo "FAIL: an export list is empty"; exit 1; }
missing=$(comm -23 <(printf '%s\n' "$real") <(printf '%s\n' "$sim") | grep -vx 'ncclResetDebugInitInternal' || true)
if [ -n "$missing" ]; then echo "FAIL: the simulated libnccl lacks:" $missing; exit 1; fi
echo "ok: all $(printf '%s\n' "$real" | wc -l) exports of the real libnccl are present"
