#!/usr/bin/env bash
# scripts/demo.sh: set up, build and run `collscope demo` on the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec ./build/tools/collscope demo "$@"
