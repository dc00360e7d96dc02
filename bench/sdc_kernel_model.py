#!/usr/bin/env python3
"""bench/sdc_kernel_model.py: a static estimate of the SDC check kernel's main loop per
datatype, for a machine without a GPU (docs/benchmarks.md). An estimate to check with
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
the GPU reads at 85% of --gbs: --sms x 4 SMSPs at --ghz.

With --nvdisasm PATH it counts the compiler's own machine code instead: nvcc -cubin,
nvdisasm, the loop with four LDG.E.128, each SASS instruction on its pipe (16 lanes,
2 cycles per warp instruction: ALU = LOP3/IADD3/SHF/ISETP/SEL/LEA, FMA = IMAD*/IDP/HADD2,
FP64 = DADD; conversions to fp64 8 cycles, counted with FP64 as if they shared it). A
disassembler older than nvcc (Debian bookworm's non-free nvidia-cuda-toolkit 11.8 has
one; `apt-get download nvidia-cuda-toolkit && dpkg -x` it) reads CUDA 13's cubin once
--elf-compat writes its ELF header in the older layout (ABI 7, flags sm | sm << 16 |
0x500); the code itself is not touched.

--check (the sdc test suite, PTX only): exit 1 unless every datatype's loop with four
16-byte loads is there, i.e. the kernel still reads in vector chunks."""
import argparse
import os
import re
import struct
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


SASS_PIPES = [("conv", ("F2F.F64", "I2F.F64", "F2I.F64", "F2F.F32.F64", "I2F.U64", "I2F.S64")),
              ("fp64", ("DADD", "DMUL", "DFMA")),
              ("fma", ("IMAD", "IDP", "HADD2", "HFMA2", "FADD", "FMUL", "FFMA", "MOV")),
              ("alu", ("LOP3", "IADD3", "SHF", "ISETP", "SEL", "LEA", "IABS", "PRMT", "FSEL", "IMNMX"))]


def sass_pipe(op):
    for pipe, prefixes in SASS_PIPES:
        if op.startswith(prefixes):
            return pipe
    return "other"   # LDG, BRA, uniform datapath


def sass_loops(sass):
    """{kernel: the instructions (predicates dropped) of its loop with four 16-byte loads}"""
    loops = {}
    for part in re.split(r"\n\s+\.global\s+", sass)[1:]:
        name, labels, ins = part.split()[0], {}, []
        for line in part.split("\n"):
            m = re.match(r"\s*(\.L_x_\d+):", line)
            if m:
                labels[m.group(1)] = len(ins)
            m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;", line)
            if m:
                ins.append(re.sub(r"^@!?U?P\w+\s+", "", m.group(1)))
        for i, x in enumerate(ins):
            m = re.search(r"BRA\s+`\((\.L_x_\d+)\)", x)
            if m and labels.get(m.group(1), i + 1) <= i:
                body = ins[labels[m.group(1)]:i + 1]
                if sum("LDG.E.128" in y for y in body) == 4:
                    loops[name] = body
    return loops


def elf_compat(path, arch):
    """the cubin's ELF header in the layout of CUDA <= 12 (see the module comment)"""
    sm = int(arch.split("_")[1])
    b = bytearray(open(path, "rb").read())
    b[8] = 7
    struct.pack_into("<I", b, 0x30, sm | sm << 16 | 0x500)
    open(path, "wb").write(b)


def sass_model(a, root, d, cu, budget):
    cubin = os.path.join(d, "model.cubin")
    run([a.nvcc, "-cubin", "-fmad=false", "-O3", "-I" + root, "-arch=" + a.arch, "-o", cubin, cu], "nvcc")
    if a.elf_compat:
        elf_compat(cubin, a.arch)
    loops = sass_loops(run([a.nvdisasm, "-c", cubin], "nvdisasm"))
    print("SDC kernel main loop, %s SASS (nvcc -cubin, %s), per 512-byte warp chunk, SMSP cycles" % (a.arch, a.nvdisasm))
    print("budget at 85%% of %.0f GB/s, %d SMs x 4 SMSPs, %.2f GHz: %.0f" % (a.gbs, a.sms, a.ghz, budget))
    print("%-12s %6s %6s %6s %9s %7s %9s" % ("kernel", "issue", "ALU", "FMA", "FP64+cvt", "bound", "of budget"))
    for name, _ in KERNELS:
        body = loops.get("k_" + name)
        if not body:
            print("%-12s main loop not found" % name)
            continue
        n = {p: 0 for p, _ in SASS_PIPES}
        for x in body:
            p = sass_pipe(x.split()[0])
            if p in n:
                n[p] += 1
        issue, alu, fma, f64 = len(body) / 4, 2 * n["alu"] / 4, 2 * n["fma"] / 4, (2 * n["fp64"] + 8 * n["conv"]) / 4
        bound = max(issue, alu, fma, f64)
        print("%-12s %6.1f %6.1f %6.1f %9.1f %7.1f %8.0f%%" % (name, issue, alu, fma, f64, bound, 100 * bound / budget))


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("sdc_kernel_model: %s failed" % what)
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nvcc", default=os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--gbs", type=float, default=4300.0, help="HBM read bandwidth, GB/s (H200 measured ~4.3 TB/s)")
    ap.add_argument("--ghz", type=float, default=1.83, help="SM clock under load")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--nvdisasm", help="count the SASS this nvdisasm shows instead of the PTX")
    ap.add_argument("--elf-compat", action="store_true", help="for an nvdisasm older than nvcc")
    ap.add_argument("--check", action="store_true", help="exit 1 if a datatype's 4 x 16-byte load loop is missing")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    budget = 512.0 / (0.85 * a.gbs * 1e9 / (a.sms * 4) / (a.ghz * 1e9))
    with tempfile.TemporaryDirectory() as d:
        cu, ptx = os.path.join(d, "model.cu"), os.path.join(d, "model.ptx")
        with open(cu, "w") as f:
            f.write(harness())
        if a.nvdisasm:
            sass_model(a, root, d, cu, budget)
            return
        run([a.nvcc, "-ptx", "-fmad=false", "-O3", "-I" + root, "-arch=" + a.arch, "-o", ptx, cu], "nvcc")
        text = open(ptx).read()
    print("SDC kernel main loop, %s, per 16-byte chunk per thread = one 512-byte warp chunk (estimate)" % a.arch)
    print("budget at 85%% of %.0f GB/s, %d SMs x 4 SMSPs, %.2f GHz: %.0f SMSP cycles per warp chunk"
          % (a.gbs, a.sms, a.ghz, budget))
    print("%-12s %7s %8s %6s %6s %7s %8s" % ("kernel", "issue", "integer", "dadd", "cvt64", "bound", "of budget"))
    missing = []
    for name, _ in KERNELS:
        m = re.search(r"\.entry k_%s\(.*?\n}\n" % name, text, re.S)
        loop = main_loop(m.group(0)) if m else None
        if not loop:
            print("%-12s main loop not found" % name)
            missing.append(name)
            continue
        issue, integer, f64, conv = cost(loop)
        bound = max(issue, integer, 2 * f64 + 8 * conv)
        print("%-12s %7.1f %8.1f %6.1f %6.1f %7.1f %7.0f%%" % (name, issue, integer, f64, conv, bound,
                                                             100 * bound / budget))
    if a.check and missing:
        raise SystemExit("sdc_kernel_model: no 4 x 16-byte load loop for %s" % ", ".join(missing))


if __name__ == "__main__":
    main()
