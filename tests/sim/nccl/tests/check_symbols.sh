#!/bin/sh
# tests/sim/nccl/tests/check_symbols.sh LIB NCCL_H: every function declared in nccl.h is
# exported by the sim libnccl as a WEAK ncclX and a STRONG pncclX at the same address.
lib=$1; hdr=$2; bad=0
syms=$(nm -D --defined-only "$lib") || exit 1
for f in $(grep -oE '\bp?nccl[A-Za-z]+\(' "$hdr" | tr -d '(' | grep -v '^p' | sort -u); do
  w=$(printf '%s\n' "$syms" | awk -v n="$f" '$3 == n && $2 == "W" {print $1}')
  t=$(printf '%s\n' "$syms" | awk -v n="p$f" '$3 == n && $2 == "T" {print $1}')
  if [ -z "$w" ] || [ -z "$t" ] || [ "$w" != "$t" ]; then echo "bad export: $f (weak '$w' strong '$t')"; bad=1; fi
done
[ $bad = 0 ] && echo "all nccl.h functions exported (weak ncclX == strong pncclX)"
exit $bad
