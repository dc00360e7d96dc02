#!/usr/bin/env bash
# scripts/test-package.sh: the Debian packages as a site installs them. Builds collscope and
# collscope-slurm (debian/) from a copy of the source tree with dpkg-buildpackage (nocheck,
# parallel=2), runs lintian on them (no error, no warning that debian/*.lintian-overrides does
# not explain), unpacks them into a temporary root with dpkg -x and, from that root only:
# `collscope help`, `collscope demo` (simulator, shim and demo job found from the install),
# the man page rendered by `man -l`, the exporter's unit through `systemd-analyze verify`
# (where systemd-analyze exists), the SPANK plugin's commented plugstack.conf.d file, and no
# simulated libcuda/libnccl on the default library path.
# meson test `package` (suite package) runs it; scripts/test.sh runs that suite as its own
# stage. The tools it needs come from scripts/setup.sh (debhelper, lintian, man-db).
# Exit 0 when every check passed; the failing check's output otherwise.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/collscope-pkg.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # the unit's check runs a job as another user from the unpacked root
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }

for tool in dpkg-buildpackage dh lintian dpkg man; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/setup.sh installs it)"
done

# 1. the source tree as git sees it (tracked and not ignored), without build directories
mkdir "$work/collscope"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z -co --exclude-standard) |
    while IFS= read -r -d '' f; do [ -e "$src/$f" ] && printf '%s\0' "$f"; done |
    tar -C "$src" --null -T - -cf - | tar -C "$work/collscope" -xf -
else
  tar -C "$src" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -C "$work/collscope" -xf -
fi

# 2. the packages (dpkg-buildpackage writes them next to the tree, into $work)
t0=$(date +%s)
if ! (cd "$work/collscope" && DEB_BUILD_OPTIONS="nocheck parallel=2" nice dpkg-buildpackage -us -uc -b) \
  >"$work/build.log" 2>&1; then
  tail -n 60 "$work/build.log"
  fail "dpkg-buildpackage -us -uc -b"
fi
ok "dpkg-buildpackage -us -uc -b ($(($(date +%s) - t0)) s)"
debs=("$work"/collscope_*.deb "$work"/collscope-slurm_*.deb)
for d in "${debs[@]}"; do [ -f "$d" ] || fail "no package ${d##*/}"; done
ok "packages: $(cd "$work" && echo *.deb)"

# 3. lintian: no error, no unexplained warning
changes=("$work"/collscope_*.changes)
if ! lintian --fail-on error,warning --display-level '>=warning' "${changes[0]}" >"$work/lintian.log" 2>&1; then
  cat "$work/lintian.log"
  fail "lintian reports errors or warnings"
fi
ok "lintian: no error, no warning debian/*.lintian-overrides does not explain"

# 4. the packages unpacked into a root of their own
root="$work/root"
for d in "${debs[@]}"; do dpkg -x "$d" "$root"; done
cli="$root/usr/bin/collscope"
[ -x "$cli" ] || fail "no usr/bin/collscope in the package"

# the simulator: under usr/lib/collscope/sim, never where the dynamic linker looks by default
for lib in libcuda.so.1 libcudart.so.13 libnccl.so.2 libnvidia-ml.so.1; do
  [ -f "$root/usr/lib/collscope/sim/$lib" ] || fail "usr/lib/collscope/sim/$lib missing"
done
shadow=$(find "$root" \( -path "$root/usr/lib/collscope" -prune \) -o \
  \( -name 'libcuda.so*' -o -name 'libcudart.so*' -o -name 'libnccl.so*' -o -name 'libnvidia-ml.so*' \) -print)
[ -z "$shadow" ] || fail "simulated CUDA/NCCL libraries outside usr/lib/collscope: $shadow"
[ ! -e "$root/etc/ld.so.conf.d" ] || fail "the packages ship etc/ld.so.conf.d"
ok "simulator in usr/lib/collscope/sim only"

# 5. the CLI from the root: a clean environment, nothing of the build tree
run_env=(env -i "PATH=/usr/bin:/bin" "HOME=$work" "TMPDIR=$work" "LANG=C.UTF-8")
"${run_env[@]}" "$cli" help >"$work/help.txt" || fail "collscope help exited $?"
grep -q '^commands:' "$work/help.txt" && grep -q 'COLLSCOPE_DIR' "$work/help.txt" ||
  fail "collscope help: no command list or variable table"
ok "collscope help"
if ! "${run_env[@]}" "$cli" demo --steps 2 --keep "$work/demo" >"$work/demo.txt" 2>&1; then
  tail -n 40 "$work/demo.txt"
  fail "collscope demo from the install"
fi
grep -q "shim:   $root/usr/lib/" "$work/demo.txt" || { head -n 8 "$work/demo.txt"; fail "demo did not preload the installed shim"; }
grep -q "collscope demo: PASS" "$work/demo.txt" || fail "demo: no PASS line"
n=$(find "$work/demo" -maxdepth 1 -name 'collscope-*.jsonl' | wc -l)
[ "$n" -eq 8 ] || fail "demo: $n dump files, expected 8"
ok "collscope demo from the install: PASS, $n dump files"

# 6. the man page renders, and holds every command and the variable table
man_page="$root/usr/share/man/man1/collscope.1.gz"
[ -f "$man_page" ] || fail "no usr/share/man/man1/collscope.1.gz"
MANWIDTH=100 LANG=C.UTF-8 man -l "$man_page" >"$work/man.txt" 2>"$work/man.err" || fail "man -l exited $?"
[ ! -s "$work/man.err" ] || { cat "$work/man.err"; fail "man -l printed warnings"; }
for want in NAME SYNOPSIS COMMANDS ENVIRONMENT "collscope demo" "collscope exporter" COLLSCOPE_SIM_DIR; do
  grep -q -- "$want" "$work/man.txt" || fail "man page lacks '$want'"
done
ok "man -l collscope.1.gz ($(wc -l <"$work/man.txt") lines)"

# 7. the exporter's unit: hardened, loopback, and accepted by systemd
unit=$(find "$root" -name collscope-exporter.service -path '*/systemd/system/*' | head -n 1)
[ -n "$unit" ] || fail "no collscope-exporter.service"
for want in '^ExecStart=/usr/bin/collscope exporter ' '^NoNewPrivileges=yes' '^ProtectSystem=strict' \
  '^CapabilityBoundingSet=CAP_DAC_READ_SEARCH$' '--listen 127.0.0.1:9464'; do
  grep -q -- "$want" "$unit" || fail "collscope-exporter.service lacks '$want'"
done
if command -v systemd-analyze >/dev/null; then
  # the unit as installed, but with ExecStart in the unpacked root (the system's own units
  # give it its targets); a warning about a line of the unit fails the check like an error
  mkdir "$work/unit"
  sed "s|^ExecStart=/usr/bin/|ExecStart=$root/usr/bin/|" "$unit" >"$work/unit/collscope-exporter.service"
  if ! systemd-analyze verify --man=no "$work/unit/collscope-exporter.service" >"$work/verify.log" 2>&1 ||
    grep -q 'collscope-exporter' "$work/verify.log"; then
    cat "$work/verify.log"
    fail "systemd-analyze verify collscope-exporter.service"
  fi
  ok "systemd-analyze verify collscope-exporter.service"
else
  ok "systemd-analyze not present: unit not verified"
fi
# the unit's privileges read another user's rings: a job of uid 65534 keeps its 0600 rings,
# and the exporter, as root with only the unit's CapabilityBoundingSet, reports both ranks
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z' 'a-z' | sed 's/cap_//g; s/ /,+/g')
  shm="$work/shm"
  mkdir -m 1777 "$shm"
  setpriv --reuid=65534 --regid=65534 --clear-groups "${run_env[@]}" COLLSCOPE_KEEP_SHM=1 \
    "COLLSCOPE_SHM_DIR=$shm" "COLLSCOPE_DIR=$shm/dumps" "$cli" run -n 2 --hosts simhost1 --sim -- \
    "$root/usr/lib/collscope/apps/dp_train" --steps 2 --size 64K >"$work/ringjob.txt" 2>&1 ||
    { cat "$work/ringjob.txt"; fail "a job as uid 65534 from the install"; }
  setpriv --no-new-privs --bounding-set "-all,+$caps" --inh-caps -all "${run_env[@]}" \
    "$cli" exporter --once --shm-dir "$shm" >"$work/exporter.txt" 2>&1 || true
  n=$(grep -c '^collscope_up{' "$work/exporter.txt" || true)
  [ "$n" -eq 2 ] || { grep -v '^#' "$work/exporter.txt" | head -n 5; fail "exporter with CapabilityBoundingSet=$caps read $n of 2 rings of another user"; }
  ok "exporter with the unit's capabilities ($caps) reads another user's rings"
fi

# 8. collscope-slurm: the plugin, the TaskProlog, and a plugstack.conf.d file that loads nothing
conf="$root/etc/slurm/plugstack.conf.d/collscope.conf"
[ -f "$conf" ] || fail "no etc/slurm/plugstack.conf.d/collscope.conf"
! grep -v '^[[:space:]]*\(#\|$\)' "$conf" || fail "plugstack.conf.d/collscope.conf loads something by default"
plugin=$(sed -n 's/^#optional \([^ ]*\).*/\1/p' "$conf")
[ -n "$plugin" ] && [ -f "$root$plugin" ] || fail "the commented plugstack line names '$plugin', not in the package"
[ -x "$root/usr/libexec/collscope/collscope-taskprolog.sh" ] || fail "no TaskProlog"
ok "collscope-slurm: $plugin, TaskProlog, commented plugstack.conf.d/collscope.conf"
echo "package: every check passed"
