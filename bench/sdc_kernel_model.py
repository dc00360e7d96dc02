#!/usr/bin/env python3
"""bench/sdc_kernel_model.py: a static estimate of the SDC check kernel's main loop per
datatype, for a machine without a GPU (README "Benchmarks"). An estimate to check with
bench/sdc_kernel_lab.cu on a GPU, not a measurement.

  python3 bench/sdc_kernel_model.py [--nvcc PATH] [--arch sm_90] [--gbs 4300] [--ghz 1.83] [--sms 132]

It compiles one kernel per datatype around hooks/sdc_kernels.cu's thread_share() with
nvcc -ptx, finds the 4-chunk main loop (four ld.global.nc.v2.u64), and counts its
instructions per 16-byte chunk with this model of one SM sub-partition (SMSP):
  - issue: one warp instruction per cycle;
  - integer and fp64 pipes: 16 lanes, 2 cycles per warp instruction; PTX 64-bit integer
    ops are 2 SASS instructions (mul.lo.64: 3); register moves and 32/64-bit splits are free;
  - 64-bit conversions (cvt.f64.*): 16 per cycle per SM, 8 cycles per warp instruction;
  - abs.f64 folds into the add.
The bound is the largest of issue, integer work (two pipes share it) and fp64 work, in
cycles per 512-byte warp chunk. The budget is the cycles one SMSP has per warp chunk when
the GPU reads at 85% of --gbs: --sms x 4 SMSPs at --ghz."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

KERNELS = [("fingerprint", "-1"), ("float64", "CS_SDC_FLOAT64"), ("float32", "CS_SDC_FLOAT32"),
           ("int32", "CS_SDC_INT32"), ("bfloat16", "CS_SDC_BFLOAT16"), ("float16", "CS_SDC_FLOAT16"),
           ("int8", "CS_SDC_INT8"), ("uint8", "CS_SDC_UINT8"), ("int64", "CS_SDC_INT64")]


def harness():
    src = ['#include "hooks/sdc_kernels.cu"']
    for name, dt in KERNELS:
        src.append('extern "C" __global__ void __launch_bounds__(CS_SDC_THREADS, CS_SDC_BLOCKS_PER_SM) '
                   'k_%s(const unsigned char *b, uint64_t n, struct cs_sdc_part *o) {\n'
                   '  o[blockIdx.x * blockDim.x + threadIdx.x] = thread_share(b, n, %s, blockIdx.x * blockDim.x + '
                   'threadIdx.x, (uint64_t)gridDim.x * blockDim.x);\n}' % (name, dt))
    return "\n".join(src) + "\n"


def main_loop(body):
    """the basic block holding the four 16-byte loads, as instruction lines"""
    blocks, cur = [], []
    for line in body.split("\n"):
        line = line.strip()
        if re.match(r"^\$L__BB\d+_\d+:", line):
            blocks.append(cur)
            cur = []
        elif line and not line.startswith(("//", ".")) and line not in ("{", "}"):
            cur.append(line)
    blocks.append(cur)
    for b in blocks:
        if sum("ld.global.nc.v2.u64" in line for line in b) == 4:
            return b
    return None


def cost(loop):
    issue = integer = f64 = conv = 0
    for line in loop:
        op = line.split()[0].rstrip(";")
        if op.startswith(("mov", "cvt.u32.u64", "cvt.u64.u32")):
            continue
        if op.startswith("abs.f64"):
            continue
        issue_n = 1
        if op.startswith(("cvt.f64", "cvt.rn.f64")):
            conv += 1
        elif op.startswith(("add.rn.f64", "add.f64")):
            f64 += 1
        elif op.startswith(("ld.", "@", "bra")):
            pass
        else:
            n = 2 if re.search(r"\.(s64|u64|b64)$", op) else 1
            if n == 2 and op.startswith("mul.lo"):
                n = 3
            issue_n = n
            integer += n
        issue += issue_n
    chunks = 4.0
    return issue / chunks, integer / chunks, f64 / chunks, conv / chunks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nvcc", default=os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--gbs", type=float, default=4300.0, help="HBM read bandwidth, GB/s (H200 measured ~4.3 TB/s)")
    ap.add_argument("--ghz", type=float, default=1.83, help="SM clock under load")
    ap.add_argument("--sms", type=int, default=132)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as d:
        cu, ptx = os.path.join(d, "model.cu"), os.path.join(d, "model.ptx")
        with open(cu, "w") as f:
            f.write(harness())
        p = subprocess.run([a.nvcc, "-ptx", "-fmad=false", "-O3", "-I" + root, "-arch=" + a.arch, "-o", ptx, cu],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stdout)
            raise SystemExit("sdc_kernel_model: nvcc failed")
        text = open(ptx).read()
    budget = 512.0 / (0.85 * a.gbs * 1e9 / (a.sms * 4) / (a.ghz * 1e9))
    print("SDC kernel main loop, %s, per 16-byte chunk per thread = one 512-byte warp chunk (estimate)" % a.arch)
    print("budget at 85%% of %.0f GB/s, %d SMs x 4 SMSPs, %.2f GHz: %.0f SMSP cycles per warp chunk"
          % (a.gbs, a.sms, a.ghz, budget))
    print("%-12s %7s %8s %6s %6s %7s %8s" % ("kernel", "issue", "integer", "dadd", "cvt64", "bound", "of budget"))
    for name, _ in KERNELS:
        m = re.search(r"\.entry k_%s\(.*?\n}\n" % name, text, re.S)
        loop = main_loop(m.group(0)) if m else None
        if not loop:
            print("%-12s main loop not found" % name)
            continue
        issue, integer, f64, conv = cost(loop)
        bound = max(issue, integer, 2 * f64 + 8 * conv)
        print("%-12s %7.1f %8.1f %6.1f %6.1f %7.1f %7.0f%%" % (name, issue, integer, f64, conv, bound,
                                                             100 * bound / budget))


if __name__ == "__main__":
    main()
