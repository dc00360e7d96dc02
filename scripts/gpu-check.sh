#!/usr/bin/env bash
# scripts/gpu-check.sh: one command for a machine with a real GPU, driver and NCCL.
# Builds collscope, runs the tests/apps jobs on the real stack (1 rank per GPU, up to
# the GPUs present) with and without the shim, checks that results are identical and
# that every rank wrote a dump whose op count matches the job's own count, then, if
# NCCL_TESTS_DIR points at built nccl-tests, runs all_reduce_perf 8 B..256 MiB with and
# without the shim and prints one table of latency ratios, then the SDC kernel's checks
# (bit-identity with its host twin, bandwidth against the read ceiling). Never touches GPU
# settings. Then GPU health: dp_train with the health sampler every 50 ms on the real NVML,
# and a table of which health fields every rank's samples held and whether their values are
# plausible (docs/health.md).
#   scripts/gpu-check.sh [sdc|health]   sdc: only the SDC kernel part (the shortest device
#                                       run); health: only the health sampling
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
export BUILD_DIR
# COLLSCOPE_PREBUILT=1: use the binaries already in BUILD_DIR (a machine without
# network or build tools, e.g. one that received a build made elsewhere)
if [ "${COLLSCOPE_PREBUILT:-0}" != 1 ]; then
  ./scripts/setup.sh >/dev/null || { echo "gpu-check: build failed"; exit 1; }
fi
CLI=$BUILD_DIR/tools/collscope
SHIM=$(realpath "$BUILD_DIR/shim/libcollscope.so")
export COLLSCOPE_SHIM=$SHIM   # what `collscope run` preloads
APPS=$BUILD_DIR/tests/apps
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$NGPU" -ge 1 ] || { echo "gpu-check: no GPU visible (nvidia-smi -L)"; exit 1; }
echo "gpu-check: $NGPU GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
WORK=$(mktemp -d /tmp/collscope-gpu-XXXXXX)
status=0
ONLY=${1:-all}
case $ONLY in all|sdc|health) ;; *) echo "usage: $0 [sdc|health]"; exit 2 ;; esac
APP_LIST="dp_train fsdp pipeline multicomm threads initall"
[ "$ONLY" != all ] && APP_LIST=""
[ -n "$APP_LIST" ] && printf '\n%-34s %6s %10s %10s %8s %s\n' "job" "ranks" "bare s" "shim s" "ratio" "check"
for app in $APP_LIST; do
  exe=$APPS/$app
  [ -x "$exe" ] || continue
  n=$NGPU
  case $app in
    pipeline|multicomm) [ "$n" -ge 2 ] || { printf '%-34s skipped: needs 2 GPUs\n' "$app"; continue; } ;;
    initall) n=1 ;;
  esac
  args=(--steps 20)
  t0=$(date +%s.%N)
  if [ "$app" = initall ]; then "$exe" "${args[@]}" > "$WORK/$app.bare" 2>&1; else
    "$CLI" run -n "$n" --no-shim -- "$exe" "${args[@]}" > "$WORK/$app.bare" 2>&1; fi
  rc1=$?; t1=$(date +%s.%N)
  if [ "$app" = initall ]; then COLLSCOPE_DIR=$WORK/$app.dump LD_PRELOAD=$SHIM "$exe" "${args[@]}" > "$WORK/$app.shim" 2>&1; else
    COLLSCOPE_DIR=$WORK/$app.dump "$CLI" run -n "$n" -- "$exe" "${args[@]}" > "$WORK/$app.shim" 2>&1; fi
  rc2=$?; t2=$(date +%s.%N)
  check=ok
  [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || check="FAIL rc $rc1/$rc2"
  diff <(grep -E '^(result|checksum|summary|PASS)' "$WORK/$app.bare" | sort) \
       <(grep -E '^(result|checksum|summary|PASS)' "$WORK/$app.shim" | sort) >/dev/null || check="FAIL output differs"
  nops=$(cat "$WORK/$app.dump"/*.jsonl 2>/dev/null | grep -c '"type":"op"')
  # timed, or left out of the CUDA-event sample on purpose (COLLSCOPE_EVENT_SAMPLE, docs/timing.md)
  ntimed=$(cat "$WORK/$app.dump"/*.jsonl 2>/dev/null | grep '"type":"op"' |
    grep -cE '"timing":"(gpu_event|profiler|sampled_out)"')
  [ "$nops" -gt 0 ] && [ "$nops" -eq "$ntimed" ] || check="$check; ops $nops timed $ntimed"
  [ "$check" = ok ] || status=1
  awk -v app="$app" -v n="$n" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v c="$check" -v ops="$nops" \
    'BEGIN { printf "%-34s %6s %10.2f %10.2f %8.3f %s (%s ops)\n", app, n, t1 - t0, t2 - t1, (t2 - t1) / (t1 - t0), c, ops }'
done
if [ "$status" -eq 0 ] && [ -n "$APP_LIST" ]; then "$CLI" report "$WORK/dp_train.dump" 2>&1 | head -30; fi
# the SDC kernel's self-test ran on this GPU in every job that checked a collective
[ -n "$APP_LIST" ] && echo "SDC standing in the jobs' dump footers (hooks/sdc_check.h): $(cat "$WORK"/*.dump/*.jsonl 2>/dev/null |
  grep -o '"sdc":"[a-z_]*"' | sort | uniq -c | tr -s ' \n' ' ')"

if [ "$ONLY" = all ] && [ -n "${NCCL_TESTS_DIR:-}" ] && [ -x "$NCCL_TESTS_DIR/all_reduce_perf" ]; then
  ART="$NCCL_TESTS_DIR/all_reduce_perf -b 8 -e 256M -f 4 -g $NGPU -w 5 -n 200 -c 1"
  $ART > "$WORK/art.bare" 2>&1
  # events on every op, then on 1 in 64 of those under 1 MiB (the default sample, docs/timing.md)
  COLLSCOPE_TIMING=events COLLSCOPE_EVENT_SAMPLE=1 COLLSCOPE_DIR=$WORK/art.dump LD_PRELOAD=$SHIM $ART > "$WORK/art.shim" 2>&1
  COLLSCOPE_TIMING=events COLLSCOPE_DIR=$WORK/art.sampled LD_PRELOAD=$SHIM $ART > "$WORK/art.sampledout" 2>&1
  # COLLSCOPE_TIMING=auto (the default): NCCL loads libcollscope as its profiler plugin;
  # after the probation the records must say "profiler" and the durations must
  # agree with the event timing; COLLSCOPE_LOG=info shows the probation's verdict
  COLLSCOPE_TIMING=auto COLLSCOPE_LOG=info COLLSCOPE_DIR=$WORK/art.auto LD_PRELOAD=$SHIM $ART > "$WORK/art.autoout" 2>&1
  printf '\nall_reduce_perf on %d GPU(s), out-of-place time (us)\n%12s %12s %12s %8s %12s %8s %12s %8s %8s\n' "$NGPU" \
    size bare events ratio sampled ratio auto ratio wrong
  join <(awk '$1 ~ /^[0-9]+$/ && NF >= 12 {print $1, $6, $9}' "$WORK/art.bare") \
       <(awk '$1 ~ /^[0-9]+$/ && NF >= 12 {print $1, $6, $9}' "$WORK/art.shim") |
    join - <(awk '$1 ~ /^[0-9]+$/ && NF >= 12 {print $1, $6}' "$WORK/art.sampledout") |
    join - <(awk '$1 ~ /^[0-9]+$/ && NF >= 12 {print $1, $6}' "$WORK/art.autoout") |
    awk '{printf "%12s %12s %12s %8.3f %12s %8.3f %12s %8.3f %8s\n", $1, $2, $4, $4 / $2, $6, $6 / $2, $7, $7 / $2, $5}'
  for f in art.shim art.sampledout art.autoout; do
    grep -q "Out of bounds values : 0 OK" "$WORK/$f" || { echo "all_reduce_perf reported wrong values ($f)"; status=1; }
  done
  echo "records written by the shim: $(cat "$WORK/art.dump"/*.jsonl | grep -c '"type":"op"')"
  # per size: median dur_us by timing source, events runs vs auto run
  for d in art.dump art.sampled art.auto; do
    cat "$WORK/$d"/*.jsonl | grep '"type":"op"' |
      sed -n 's/.*"bytes":\([0-9]*\).*"dur_us":\([0-9.]*\),"timing":"\([a-z_]*\)".*/\1 \3 \2/p' |
      sort -k1,1n -k2,2 -k3,3g | awk -v run="$d" '
        { k = $1 " " $2; v[k, ++n[k]] = $3 }
        END { for (k in n) printf "%s %s median_dur_us %.2f n %d\n", run, k, v[k, int((n[k] + 1) / 2)], n[k] }' |
      sort -k2,2n
  done
  grep -q '"timing":"profiler"' "$WORK/art.auto"/*.jsonl && echo "auto: NCCL loaded the profiler plugin" ||
    echo "auto: no profiler-timed records (plugin not loaded by this NCCL, or rejected; events path kept)"
  grep -h "NCCL profiler" "$WORK/art.autoout" | sed "s/^collscope\[[0-9]*\]: //" | sort | uniq -c
  # chained (docs/plugins.md): NCCL_PROFILER_PLUGIN names the test's own example plugin, which
  # writes every event it gets to a file; `auto` takes the slot and chains to it. Its file must
  # be the same as when NCCL loads it alone, and collscope's records profiler-timed.
  EX=$(realpath "$BUILD_DIR/tests/profiler/libnccl-profiler-example.so" 2>/dev/null)
  if [ -n "$EX" ]; then
    mkdir -p "$WORK/ex.alone" "$WORK/ex.chain"
    EXAMPLE_INNER_OUT=$WORK/ex.alone NCCL_PROFILER_PLUGIN=$EX $ART > "$WORK/art.exalone" 2>&1
    EXAMPLE_INNER_OUT=$WORK/ex.chain NCCL_PROFILER_PLUGIN=$EX COLLSCOPE_LOG=info COLLSCOPE_DIR=$WORK/art.chain \
      LD_PRELOAD=$SHIM $ART > "$WORK/art.chainout" 2>&1
    printf '\nchained behind the example plugin, out-of-place time (us)\n%12s %12s %12s %8s %12s %8s\n' size bare \
      example ratio chained ratio
    join <(awk '$1 ~ /^[0-9]+$/ && NF >= 12 {print $1, $6}' "$WORK/art.bare") \
         <(awk '$1 ~ /^[0-9]+$/ && NF >= 12 {print $1, $6}' "$WORK/art.exalone") |
      join - <(awk '$1 ~ /^[0-9]+$/ && NF >= 12 {print $1, $6}' "$WORK/art.chainout") |
      awk '{printf "%12s %12s %12s %8.3f %12s %8.3f\n", $1, $2, $3, $3 / $2, $4, $4 / $2}'
    if cmp -s <(cat "$WORK"/ex.alone/*.txt 2>/dev/null | sort) <(cat "$WORK"/ex.chain/*.txt 2>/dev/null | sort); then
      echo "chained: the example plugin's $(cat "$WORK"/ex.alone/*.txt | wc -l) event lines identical to its run alone"
    else
      echo "chained: the example plugin's events DIFFER from its run alone"; status=1
    fi
    echo "chained: $(cat "$WORK/art.chain"/*.jsonl 2>/dev/null | grep -c '"timing":"profiler"') profiler-timed records"
    grep -h "profiler chaining\|NCCL_PROFILER_PLUGIN=" "$WORK/art.chainout" | sed "s/^collscope\[[0-9]*\]: //" | sort | uniq -c
  fi
fi
# GPU health through the real NVML (hooks/health.c): sampled every 50 ms during a short
# dp_train, then per field: in how many ranks' samples it was present, and whether every
# value was plausible. A field NVML refuses is absent, with its INFO line shown below.
if [ "$ONLY" = all ] || [ "$ONLY" = health ]; then
  COLLSCOPE_HEALTH_MS=50 COLLSCOPE_LOG=info COLLSCOPE_DIR=$WORK/health.dump \
    "$CLI" run -n "$NGPU" -- "$APPS/dp_train" --steps 200 --size 16M --compute-us 5000 > "$WORK/health.out" 2>&1 ||
    { echo "gpu-check: the health job failed"; status=1; }
  printf '\nGPU health through NVML (COLLSCOPE_HEALTH_MS=50), per field over %d rank(s)\n' "$NGPU"
  grep -h "health:" "$WORK/health.out" | sed "s/^collscope\[[0-9]*\]: //" | sort | uniq -c
  python3 - "$WORK/health.dump" "$NGPU" <<'PYEOF' || status=1
import glob, json, os, sys
d, ngpu = sys.argv[1], int(sys.argv[2])
ranks = {}   # file -> (header, [gpu samples])
for f in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
    hdr, samples = None, []
    for line in open(f):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if hdr is None:
            hdr = r
        elif r.get("type") == "health" and isinstance(r.get("gpu"), dict):
            samples.append(r["gpu"])
    ranks[f] = (hdr or {}, samples)
limit = lambda h: h.get("gpu_power_limit_mw") or 2000000
# field: (where, plausible(value, header))
checks = [
    ("gpu_name", "header", lambda v, h: isinstance(v, str) and v.startswith("NVIDIA")),
    ("gpu_uuid", "header", lambda v, h: isinstance(v, str) and v.startswith("GPU-")),
    ("gpu_arch", "header", lambda v, h: isinstance(v, int) and 2 <= v <= 20),
    ("gpu_power_limit_mw", "header", lambda v, h: isinstance(v, int) and 10000 <= v <= 2000000),
    ("gpu_pci_bus_id", "header", lambda v, h: v == h.get("pci_bus_id")),
    ("reasons", "sample", lambda v, h: isinstance(v, int) and 0 <= v < 1 << 16),
    ("sm_mhz", "sample", lambda v, h: isinstance(v, int) and 0 < v < 5000),
    ("mem_mhz", "sample", lambda v, h: isinstance(v, int) and 0 < v < 20000),
    ("power_mw", "sample", lambda v, h: isinstance(v, int) and 0 < v <= 1.5 * limit(h)),
    ("temp_c", "sample", lambda v, h: isinstance(v, int) and 10 <= v <= 110),
    ("ecc_corrected", "sample", lambda v, h: isinstance(v, int) and v >= 0),
    ("ecc_uncorrected", "sample", lambda v, h: isinstance(v, int) and v >= 0),
    ("remap_pending", "sample", lambda v, h: v in (0, 1)),
    ("pcie_replay", "sample", lambda v, h: isinstance(v, int) and v >= 0),
    ("nvlinks", "sample", lambda v, h: isinstance(v, int) and 0 <= v <= 36),
    ("xid", "sample", lambda v, h: isinstance(v, list)),
]
nsamp = [len(s) for _, s in ranks.values()]
print("%-20s %10s %10s  %s" % ("field", "ranks with", "plausible", "values (min..max)"))
bad = 0
for name, where, ok in checks:
    have, plaus, vals = 0, True, []
    for h, samples in ranks.values():
        got = [h[name]] if where == "header" and name in h else [s[name] for s in samples if name in s]
        # the first sample is the baseline: its counters are absent by design
        if got:
            have += 1
        for v in got:
            plaus &= bool(ok(v, h))
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                vals.append(v)
    rng = "%s..%s" % (min(vals), max(vals)) if vals else ""
    verdict = "yes" if have and plaus else "NO" if have else "-"
    bad += have > 0 and not plaus
    print("%-20s %10s %10s  %s" % (name, "%d/%d" % (have, len(ranks)), verdict, rng))
print("samples per rank: %s (%d dump files, %d GPUs)" % (nsamp, len(ranks), ngpu))
if len(ranks) != ngpu or min(nsamp or [0]) < 2:
    print("gpu-check: health: expected %d ranks with >= 2 samples each" % ngpu)
    bad += 1
sys.exit(1 if bad else 0)
PYEOF
  "$CLI" report "$WORK/health.dump" 2>&1 | sed -n '/^# Health/,/^# errors with no finding/p'
fi
# SDC check kernel on the GPU: bit-identical to its host twin, bandwidth vs DtoD copy
if [ "$ONLY" != health ] && [ -x "$BUILD_DIR/tests/sdc/sdc_gpu_check" ]; then
  echo; "$BUILD_DIR/tests/sdc/sdc_gpu_check" 2>&1 | tail -25 || status=1
fi
# the check kernel against the read ceiling of its access pattern, where its time goes
# (fingerprint, sums), and every datatype against the >= 85% of HBM read bar
if [ "$ONLY" != health ] && [ -x "$BUILD_DIR/bench/sdc_kernel_lab" ]; then
  echo; "$BUILD_DIR/bench/sdc_kernel_lab" 2>&1 | tail -45 || status=1
fi
rm -rf "$WORK"
exit $status
