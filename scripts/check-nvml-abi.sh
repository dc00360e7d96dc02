#!/usr/bin/env bash
# scripts/check-nvml-abi.sh: compile tests/abi/check_nvml_header.c against real nvml.h
# headers, so collscope's hand-written NVML declarations (hooks/health_nvml.h: constants,
# types, nvmlEventData_t, the type of every function it calls) are checked against NVIDIA's,
# not only against hand-copied numbers. A developer tool: CI has no nvml.h (no network, and
# Debian ships it only in non-free), so the `nvml-abi` test runs this with --if-found and
# is skipped there.
#
#   scripts/check-nvml-abi.sh [NVML_H_OR_DIR ...]     # default: $NVML_INCLUDE, $CUDA_HOME/include,
#                                                     #  /usr/local/cuda/include, /usr/include
#   scripts/check-nvml-abi.sh --go-nvml CLONE [REV ...]  # gen/nvml/nvml.h of a clone of
#                                                     #  NVIDIA/go-nvml: every version of it since NVML 12.0
#   scripts/check-nvml-abi.sh --if-found              # the defaults; exit 77 (skip) when none exists
#
# Prints one line per header and compiler; exits 1 if any check fails (the compiler names
# the constant, type or function), 2 on usage errors or when no header is found.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/tests/abi/check_nvml_header.c
ccs=()
for c in gcc clang; do command -v $c >/dev/null && ccs+=($c); done
[ ${#ccs[@]} -gt 0 ] || { echo "check-nvml-abi: no gcc or clang" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 checked=0

# check NAME FILE: FILE is an nvml.h
check() {
  local name=$1 file=$2 dir=$tmp/inc$checked
  mkdir -p "$dir"
  cp "$file" "$dir/nvml.h"
  local ver
  ver=$(sed -n 's/^#define NVML_API_VERSION_STR *"\([0-9.]*\)".*/\1/p' "$file" | head -1)
  for cc in "${ccs[@]}"; do
    if $cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -I"$dir" -I"$here" "$src" 2>"$tmp/err"; then
      echo "$name ($cc, NVML API ${ver:-?}): OK"
    else
      echo "$name ($cc, NVML API ${ver:-?}): MISMATCH"; grep -E "error" "$tmp/err" | head -20; fail=1
    fi
  done
  checked=$((checked + 1))
}

defaults() {
  local d
  for d in ${NVML_INCLUDE:-} ${CUDA_HOME:+$CUDA_HOME/include} /usr/local/cuda/include /usr/include; do
    [ -f "$d/nvml.h" ] && { echo "$d/nvml.h"; return 0; }
  done
  return 0
}

if [ "${1:-}" = "--go-nvml" ]; then
  git_dir=${2:?usage: $0 --go-nvml GO_NVML_CLONE [REV ...]}
  shift 2
  revs=("$@")
  if [ ${#revs[@]} -eq 0 ]; then # every version of the header, NVML 12.0 on
    mapfile -t revs < <(git -C "$git_dir" log --reverse --format=%h -- gen/nvml/nvml.h)
  fi
  for r in "${revs[@]}"; do
    git -C "$git_dir" show "$r:gen/nvml/nvml.h" >"$tmp/nvml.h" 2>/dev/null || { echo "$r: no gen/nvml/nvml.h"; continue; }
    v=$(sed -n 's/^#define NVML_API_VERSION *\([0-9]*\).*/\1/p' "$tmp/nvml.h" | head -1)
    grep -q "nvmlDeviceGetRemappedRows" "$tmp/nvml.h" || { echo "go-nvml $r: older than NVML 11 (skipped)"; continue; }
    [ "${v:-0}" -ge 12 ] 2>/dev/null || [ $# -gt 0 ] || continue
    check "go-nvml $r" "$tmp/nvml.h"
  done
else
  if_found=0
  [ "${1:-}" = "--if-found" ] && { if_found=1; shift; }
  files=()
  for a in "$@"; do
    if [ -d "$a" ]; then files+=("$a/nvml.h"); else files+=("$a"); fi
  done
  if [ ${#files[@]} -eq 0 ]; then
    f=$(defaults)
    if [ -z "$f" ]; then
      [ $if_found = 1 ] && { echo "check-nvml-abi: no nvml.h found (skipped)"; exit 77; }
      echo "check-nvml-abi: no nvml.h under \$NVML_INCLUDE, \$CUDA_HOME/include, /usr/local/cuda/include or /usr/include; pass its path" >&2
      exit 2
    fi
    files=("$f")
  fi
  for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "check-nvml-abi: $f: no such file" >&2; exit 2; }
    check "$f" "$f"
  done
fi
[ $checked -gt 0 ] || { echo "check-nvml-abi: no header checked" >&2; exit 2; }
exit $fail
