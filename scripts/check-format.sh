#!/usr/bin/env bash
# scripts/check-format.sh: fails when clang-format (the repository's .clang-format) would
# change a C source or header outside the simulator (tests/sim keeps its own layout).
# Usage: scripts/check-format.sh [FILE...]   (default: every tracked *.c and *.h)
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.c' '*.h' | grep -v '^tests/sim/')
fi
"$CLANG_FORMAT" --dry-run -Werror --style=file "${files[@]}"
echo "check-format: ${#files[@]} files as .clang-format has them"
