#!/usr/bin/env bash
# scripts/setup.sh: everything a fresh Debian machine (with the CUDA image) needs to
# build collscope: installs missing Debian packages, then configures and builds
# BUILD_DIR (default ./build). Idempotent; used by demo.sh, test.sh and CI.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

pkgs=(meson ninja-build gcc g++ clang libclang-rt-dev pkg-config python3 uthash-dev libunwind-dev libcmocka-dev libjansson-dev valgrind)
pkgs+=(libprotobuf-c-dev protobuf-c-compiler)  # trace --format perfetto
pkgs+=(protobuf-compiler)  # protoc --decode: the perfetto trace's test reads it back
pkgs+=(libzstd-dev)  # compressed dumps (COLLSCOPE_COMPRESS=zstd): the writer and every reader
pkgs+=(slurm-wlm munge libslurm-dev)  # the SPANK plugin (spank.h) and the real-Slurm test
pkgs+=(libmicrohttpd-dev)  # the exporter's HTTP server
pkgs+=(prometheus)  # the exporter's end-to-end test (prometheus, promtool)
pkgs+=(chromium)  # headless browser for the HTML report's test (tests/html)
pkgs+=(clang-format)  # the layout check (scripts/check-format.sh, test check-format)
pkgs+=(gdb)  # tools-walk-rooms: the walk of one record through the report, function by function
pkgs+=(debhelper dpkg-dev lintian man-db)  # the Debian packages' test (scripts/test-package.sh)
# tests/sql and tests/exporter check collscope's output with real engines from npm (DuckDB,
# OpenTelemetry's OTLP definitions): Debian's node and npm unless the machine has them (an
# image's own nodejs package brings npm with it)
command -v node >/dev/null && command -v npm >/dev/null || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$CUDA_HOME/include/cuda.h" ] || [ ! -f "${NCCL_HOME:-$CUDA_HOME}/include/nccl.h" ]; then
  echo "setup: CUDA/NCCL headers not found under $CUDA_HOME (set CUDA_HOME / NCCL_HOME)" >&2
  exit 1
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  meson setup "$BUILD_DIR" ${MESON_ARGS:-} >/dev/null
fi
meson compile -C "$BUILD_DIR" >/dev/null || meson compile -C "$BUILD_DIR"

# those engines, pinned by tests/npm/package-lock.json, into BUILD_DIR/npm
npm_dir="$BUILD_DIR/npm"
if ! cmp -s tests/npm/package-lock.json "$npm_dir/package-lock.json" || [ ! -d "$npm_dir/node_modules/@duckdb/node-api" ] || [ ! -d "$npm_dir/node_modules/@opentelemetry/otlp-transformer" ]; then
  mkdir -p "$npm_dir"
  cp tests/npm/package.json tests/npm/package-lock.json "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "setup: installed the tests' npm engines in $npm_dir"
fi
echo "setup: built $BUILD_DIR"
