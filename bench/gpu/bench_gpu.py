#!/usr/bin/env python3
"""GPU side of the side-by-side benchmark (run on the GPU machine).

In one run: times cuBLAS (torch.matmul / torch.bmm) and cuDNN
(torch.nn.functional.conv2d) with TF32 off on every workload of the file,
runs Loom's CUDA kernels through bench_cuda on the same workloads, checks
Loom's outputs against PyTorch's on the same inputs (bench_cuda --dump),
and prints a table: workload, peer ms, Loom ms, ratio peer/Loom, Loom
TFLOP/s. Medians of CUDA-event timings after warm-up.

  python3 bench/gpu/bench_gpu.py --bench-cuda build-dev/bench/bench_cuda \
      [--workloads bench/workloads.tsv] [--db tuning.db] [--out results.csv]
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F


def parse_params(text):
    """name=value pairs: integers, and dtype as its name."""
    return {k: (v if k == "dtype" else int(v)) for k, v in (item.split("=") for item in text.split(","))}


TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def shapes(op, p):
    """Inputs (in Loom's layouts), the PyTorch call, FLOP (multiply-add = 2,
    real conv taps only), and the two layout maps of an NHWC workload:
    prep (Loom's inputs to the call's, done once before timing) and out
    (the call's output to Loom's layout); None where there are none."""
    if op == "conv2d_nhwc":
        (x, w), call, flops, _, _ = shapes("conv2d", p)
        n, c, h, wd = x
        k, cg, r, s = w
        # X NHWC is NCHW in channels_last memory; HWIO weights made
        # channels_last OIHW once: cuDNN's NHWC kernels, its fastest
        prep = lambda xx, ww: (xx.permute(0, 3, 1, 2),
                               ww.permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last))
        return [(n, h, wd, c), (r, s, cg, k)], call, flops, prep, lambda y: y.permute(0, 2, 3, 1)
    if op == "matmul":
        # transposed operands stored as Loom's workload stores them: the
        # peer multiplies views (cuBLAS's T/N operand modes, no copy)
        ta, tb = p.get("transpose_a", 0) == 1, p.get("transpose_b", 0) == 1
        a = (p["K"], p["M"]) if ta else (p["M"], p["K"])
        b = (p["N"], p["K"]) if tb else (p["K"], p["N"])
        call = lambda x, y: torch.matmul(x.t() if ta else x, y.t() if tb else y)
        return [a, b], call, 2.0 * p["M"] * p["N"] * p["K"], None, None
    if op == "batch_matmul":
        a, b = (p["B"], p["M"], p["K"]), (p["B"], p["K"], p["N"])
        return [a, b], lambda x, y: torch.bmm(x, y), 2.0 * p["B"] * p["M"] * p["N"] * p["K"], None, None
    if op in ("conv2d", "conv2d_nchw", "depthwise_conv2d", "depthwise_conv2d_nchw"):
        dw = op.startswith("depthwise")
        n, c, h, w = p["N"], p["C"], p["H"], p["W"]
        k = c if dw else p["K"]
        r, s = p["R"], p["S"]
        st, pad, dil = p.get("stride", 1), p.get("pad", 0), p.get("dilation", 1)
        g = c if dw else p.get("groups", 1)
        oh = (h + 2 * pad - dil * (r - 1) - 1) // st + 1
        ow = (w + 2 * pad - dil * (s - 1) - 1) // st + 1
        taps = 0  # real taps: those that read the input, not the padding
        for y in range(oh):
            for rr in range(r):
                iy = y * st + rr * dil - pad
                if 0 <= iy < h:
                    for x in range(ow):
                        for ss in range(s):
                            ix = x * st + ss * dil - pad
                            taps += 0 <= ix < w
        flops = 2.0 * n * k * (c // g) * taps
        call = lambda x, wt: F.conv2d(x, wt, stride=st, padding=pad, dilation=dil, groups=g)
        return [(n, c, h, w), (k, c // g, r, s)], call, flops, None, None
    raise ValueError("no PyTorch peer for op " + op)


def time_cuda(fn, repeat=20, min_ms=20.0):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls = 1
    while True:  # calls per sample so that a sample lasts min_ms
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        if start.elapsed_time(end) >= min_ms or calls >= 1 << 16:
            break
        calls *= 2
    for _ in range(repeat):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / calls)
    samples.sort()
    return samples[len(samples) // 2], samples[-1] - samples[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench-cuda", required=True)
    ap.add_argument("--workloads", default="bench/workloads.tsv")
    ap.add_argument("--db")
    ap.add_argument("--only")
    ap.add_argument("--out")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True

    dump = tempfile.mkdtemp(prefix="loom-gpu-")
    cmd = [args.bench_cuda, "--workloads", args.workloads, "--dump", dump]
    if args.db:
        cmd += ["--db", args.db]
    if args.only:
        cmd += ["--only", args.only]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        sys.exit("bench_cuda failed: " + res.stderr)
    loom = {row["name"]: row for row in csv.DictReader(io.StringIO(res.stdout))}

    rows = []
    for line in open(args.workloads):
        if not line.strip() or line.startswith("#") or line.startswith("name\t"):
            continue
        name, op, params = line.rstrip("\n").split("\t")
        if args.only and name not in args.only.split(","):
            continue
        p = parse_params(params)
        ins, call, flops, prep, out = shapes(op, p)
        dtype = p.get("dtype", "float32")
        # The same inputs Loom ran on, when bench_cuda dumped them.
        tensors = []
        for i, shape in enumerate(ins):
            path = os.path.join(dump, f"{name}.in{i}")
            if os.path.exists(path):
                t = torch.from_file(path, size=int(torch.tensor(shape).prod()), dtype=torch.float32)
                tensors.append(t.reshape(shape).cuda().to(TORCH_DTYPE[dtype]))
            else:
                tensors.append((torch.rand(shape, device="cuda") * 2 - 1).to(TORCH_DTYPE[dtype]))
        if prep:  # an NHWC workload: the peer's layouts, made once
            tensors = list(prep(*tensors))
        # tf32=1 workloads: the peer runs TF32 too (cuBLAS on tensor cores);
        # the check allows tf32's cut of both operands to 10 mantissa bits,
        # rounded or (wgmma) truncated: 2 x 2^-10 of sum |a b|.
        tf32 = p.get("tf32", 0) == 1
        torch.backends.cuda.matmul.allow_tf32 = tf32
        peer_ms, peer_spread = time_cuda(lambda: call(*tensors))
        l = loom.get(name, {})
        agree = ""
        out_path = os.path.join(dump, f"{name}.out")
        if os.path.exists(out_path):
            ref = call(*[t.double() for t in tensors])
            ref = (out(ref) if out else ref).float().cpu().flatten()
            got = torch.from_file(out_path, size=ref.numel(), dtype=torch.float32)
            red = flops / 2 / ref.numel()
            tol = 1e-5 * red ** 0.5 + 1e-4
            if dtype != "float32":
                # a 16-bit output: its float32 sum rounded once (ops_tolerance)
                rt = 2.0 ** -10 if dtype == "float16" else 2.0 ** -7
                bad = int(((got - ref).abs() > tol + rt * ref.abs()).sum())
            elif tf32:
                mag = call(*[t.double().abs() for t in tensors])
                mag = (out(mag) if out else mag).float().cpu().flatten()
                bad = int(((got - ref).abs() > 2 * 2.0 ** -10 * mag + 1e-4).sum())
            else:
                bad = int(((got - ref).abs() > tol + tol * ref.abs()).sum())
            agree = "ok" if bad == 0 else f"{bad} differ"
        loom_ms = float(l.get("loom_ms", "nan") or "nan")
        torch.backends.cuda.matmul.allow_tf32 = False
        rows.append(dict(workload=name, peer=("cublas" if "matmul" in op else "cudnn") +
                         ("-tf32" if tf32 else "" if dtype == "float32" else "-" + dtype.replace("float", "f").replace("bf", "bf")),
                         peer_ms=peer_ms, peer_spread_ms=peer_spread, loom_ms=loom_ms,
                         loom_source=l.get("source", ""), ratio=peer_ms / loom_ms,
                         loom_tflops=flops / (loom_ms * 1e-3) * 1e-12,
                         peer_tflops=flops / (peer_ms * 1e-3) * 1e-12,
                         check=agree or l.get("error", ""), error=l.get("error", "")))

    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, TF32 off")
    print(f"{'workload':12} {'peer':7} {'peer ms':>9} {'loom ms':>9} {'ratio':>6} "
          f"{'loom TF/s':>9} {'peer TF/s':>9}  source / check")
    for r in rows:
        print(f"{r['workload']:12} {r['peer']:7} {r['peer_ms']:9.4f} {r['loom_ms']:9.4f} "
              f"{r['ratio']:6.2f} {r['loom_tflops']:9.2f} {r['peer_tflops']:9.2f}  "
              f"{r['loom_source']} {r['check']}")
    print("ratio = peer ms / Loom ms (above 1: Loom is faster)")
    if args.out:
        with open(args.out, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["workload"])
            wr.writeheader()
            wr.writerows(rows)


if __name__ == "__main__":
    main()
