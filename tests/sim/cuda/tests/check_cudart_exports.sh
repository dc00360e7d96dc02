#!/usr/bin/env bash
# tests/sim/cuda/tests/check_cudart_exports.sh REAL_LIB SIM_LIB README [--write]
# The functions the real libcudart.so.13 exports and the simulated one does not are listed
# in README (between the absent-cudart markers). Fails when that list is stale, when the
# export lists are empty or nm fails. Names only the simulator exports are reported. --write
# regenerates the list in place.
set -euo pipefail
real=$1 sim=$2 readme=$3 write=${4:-}
names() { nm -D --defined-only "$1" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | grep -E '^_?_?cuda' | sort -u; }
real_names=$(names "$real") || { echo "FAIL: nm $real"; exit 1; }
sim_names=$(names "$sim") || { echo "FAIL: nm $sim"; exit 1; }
[ -n "$real_names" ] && [ -n "$sim_names" ] || { echo "FAIL: an export list is empty"; exit 1; }
absent=$(comm -23 <(printf '%s\n' "$real_names") <(printf '%s\n' "$sim_names"))
extra=$(comm -13 <(printf '%s\n' "$real_names") <(printf '%s\n' "$sim_names"))
nreal=$(printf '%s\n' "$real_names" | wc -l); nabs=$(printf '%s\n' "$absent" | grep -c . || true)
begin='<!-- absent-cudart:begin (tests/sim/cuda/tests/check_cudart_exports.sh --write) -->'
end='<!-- absent-cudart:end -->'
body=$(printf '%s of the real library'"'"'s %s exports are absent:\n\n' "$nabs" "$nreal"; printf '%s\n' "$absent" | sed 's/.*/`&`/' | paste -sd' ' | fold -s -w 100 | sed 's/ *$//')
if [ "$write" = --write ]; then
  python3 - "$readme" "$begin" "$end" "$body" <<'PY'
import sys
path, begin, end, body = sys.argv[1:5]
text = open(path).read()
i, j = text.index(begin), text.index(end)
open(path, 'w').write(text[:i + len(begin)] + '\n' + body + '\n' + text[j:])
PY
  echo "wrote $nabs absent names to $readme"; exit 0
fi
status=0
listed=$(awk -v b="$begin" -v e="$end" '$0 == b {on=1; next} $0 == e {on=0} on' "$readme")
if [ "$listed" != "$body" ]; then
  echo "FAIL: $readme lists a stale set of absent functions; regenerate with:"
  echo "  $0 $real $sim $readme --write"
  diff <(printf '%s\n' "$listed") <(printf '%s\n' "$body") | head -20
  status=1
fi
if [ -n "$extra" ]; then echo "note: exported by the simulator only:" $extra; fi
[ $status = 0 ] && echo "ok: $((nreal - nabs)) of $nreal exported, $nabs absent and listed"
exit $status
