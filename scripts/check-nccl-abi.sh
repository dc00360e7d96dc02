#!/usr/bin/env bash
# scripts/check-nccl-abi.sh: compile tests/abi/check_nccl_headers.c against the plugin
# headers of real NCCL releases, so collscope's own ABI declarations
# (include/collscope/nccl_profiler_abi.h, nccl_net_abi.h) are checked member by member
# against NCCL's, not only against hand-derived numbers.
#
#   scripts/check-nccl-abi.sh NCCL_GIT_DIR [TAG ...]   # a clone of NVIDIA/nccl (bare or not)
#   scripts/check-nccl-abi.sh --tree NCCL_SOURCE_DIR    # one unpacked source tree
#
# Without TAGs: every v2.27.* to v2.30.* tag of the clone. Prints one line per
# release and compiler; exits 1 if any check fails (the compiler names the member). Each
# release is checked against its plugin-example C headers and, as C++, against the headers
# NCCL itself is built with (src/include/plugin; nccl.h from $NCCL_INCLUDE or CUDA_HOME;
# NCCL_OS_LINUX as NCCL 2.30+ builds define it, for src/include/os.h).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=$here/tests/abi/check_nccl_headers.c
ccs=() cxxs=()
for c in gcc clang; do command -v $c >/dev/null && ccs+=($c); done
for c in g++ clang++; do command -v $c >/dev/null && cxxs+=($c); done
# the installed nccl.h, for NCCL's own (internal) headers
nccl_inc=${NCCL_INCLUDE:-${CUDA_HOME:-/usr/local/cuda}/include}
[ ${#ccs[@]} -gt 0 ] || { echo "check-nccl-abi: no gcc or clang" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# check_tree NAME DIR: DIR holds NCCL's example plugin headers (either layout)
check_tree() {
  local name=$1 dir=$2 pdir="" ndir="" pflags=() nflags=() what
  for d in ext-profiler/example/nccl plugins/profiler/example/nccl; do [ -d "$dir/$d" ] && pdir=$dir/$d; done
  for d in ext-net/example/nccl plugins/net/example/nccl; do [ -d "$dir/$d" ] && ndir=$dir/$d; done
  if [ -z "$pdir" ] || [ ! -f "$pdir/profiler_v4.h" ] || [ -z "$ndir" ] || [ ! -f "$ndir/net_v9.h" ]; then
    echo "$name: no profiler_v4.h / net_v9.h example headers (NCCL older than 2.27?)"; fail=1; return
  fi
  what="profiler v4"
  [ -f "$pdir/profiler_v5.h" ] && { pflags+=(-DCS_CHECK_PROFILER_V5); what+=" v5"; }
  [ -f "$pdir/profiler_v6.h" ] && { pflags+=(-DCS_CHECK_PROFILER_V6); what+=" v6"; }
  what+=", net v9 v10"
  [ -f "$ndir/net_v11.h" ] && { nflags+=(-DCS_CHECK_NET_V11); what+=" v11"; }
  [ -f "$ndir/net_v12.h" ] && { nflags+=(-DCS_CHECK_NET_V12); what+=" v12"; }
  for cc in "${ccs[@]}"; do
    if $cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -DCS_CHECK_PROFILER "${pflags[@]}" -I"$pdir" \
         -I"$here/include" "$src" 2>"$tmp/err" &&
       $cc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -DCS_CHECK_NET "${nflags[@]}" -I"$ndir" \
         -I"$here/include" "$src" 2>>"$tmp/err"; then
      echo "$name ($cc): OK ($what)"
    else
      echo "$name ($cc): MISMATCH"; grep -E "error" "$tmp/err" | head -20; fail=1
    fi
  done
  # the headers NCCL itself compiles with (C++), when the tree has them
  [ -f "$dir/src/include/plugin/nccl_profiler.h" ] || return 0
  if [ ! -f "$nccl_inc/nccl.h" ]; then echo "$name (internal): skipped, no nccl.h under $nccl_inc"; return 0; fi
  local iflags=()
  [ -f "$dir/src/include/plugin/profiler/profiler_v5.h" ] && iflags+=(-DCS_CHECK_PROFILER_V5)
  [ -f "$dir/src/include/plugin/profiler/profiler_v6.h" ] && iflags+=(-DCS_CHECK_PROFILER_V6)
  [ -f "$dir/src/include/plugin/net/net_v11.h" ] && iflags+=(-DCS_CHECK_NET_V11)
  [ -f "$dir/src/include/plugin/net/net_v12.h" ] && iflags+=(-DCS_CHECK_NET_V12)
  for cxx in "${cxxs[@]}"; do
    if $cxx -std=c++17 -Wall -Wextra -Werror -fsyntax-only -DCS_CHECK_INTERNAL -DNCCL_OS_LINUX "${iflags[@]}" -x c++ \
         -I"$dir/src/include" -I"$nccl_inc" -I"$here/include" "$src" 2>"$tmp/err"; then
      echo "$name ($cxx, NCCL's own src/include headers): OK"
    else
      echo "$name ($cxx, NCCL's own src/include headers): MISMATCH"; grep -E "error" "$tmp/err" | head -20; fail=1
    fi
  done
}

if [ "${1:-}" = "--tree" ]; then
  [ -d "${2:-}" ] || { echo "usage: $0 --tree NCCL_SOURCE_DIR" >&2; exit 2; }
  check_tree "$2" "$2"
else
  git_dir=${1:?usage: $0 NCCL_GIT_DIR [TAG ...]}
  shift
  tags=("$@")
  if [ ${#tags[@]} -eq 0 ]; then
    mapfile -t tags < <(git -C "$git_dir" tag --list 'v2.27.*' 'v2.28.*' 'v2.29.*' 'v2.30.*' | sort -V)
  fi
  [ ${#tags[@]} -gt 0 ] || { echo "check-nccl-abi: no v2.27-v2.30 tags in $git_dir" >&2; exit 2; }
  for t in "${tags[@]}"; do
    rm -rf "$tmp/t" && mkdir -p "$tmp/t"
    paths=$(git -C "$git_dir" ls-tree -d --name-only "$t" ext-profiler/example/nccl ext-net/example/nccl \
            plugins/profiler/example/nccl plugins/net/example/nccl src/include 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -n "$paths" ] && git -C "$git_dir" archive "$t" $paths | tar -x -C "$tmp/t"
    check_tree "$t" "$tmp/t"
  done
fi
exit $fail
