#!/usr/bin/env python3
"""Tensor-core peers on the GPU machine (issue 34): cuBLAS matmul in FP16, BF16 (FP32 accumulate),
TF32 and FP32; cuDNN 3x3 convolutions of ResNet-50 in FP16 at batch 1 and 16; Triton's autotuned
FP16 matmul (the kernel below, Triton's tutorial tiling with a small config list). Medians of
CUDA-event timings after warm-up; TFLOP/s with a multiply-add counted as 2.

  python3 bench/gpu/peers_tc.py [--out peers.csv] [--quick]
"""
import argparse
import csv
import sys

import torch
import torch.nn.functional as F


def time_cuda(fn, repeat=30, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def triton_matmul():
    """An autotuned FP16 matmul with FP32 accumulation (C = A @ B, row-major), or None."""
    try:
        import triton
        import triton.language as tl
    except Exception as e:  # the peer is optional; say why it is missing
        print("triton: not available:", e, file=sys.stderr)
        return None

    configs = [
        triton.Config({"BM": bm, "BN": bn, "BK": bk, "G": 8}, num_stages=s, num_warps=w)
        for bm, bn, bk, s, w in [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4),
                                 (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
                                 (128, 256, 32, 3, 8), (64, 64, 32, 5, 2)]
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr):
        pid = tl.program_id(0)
        npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = pid // (G * npn)
        first = group * G
        gm = min(npm - first, G)
        pm = first + (pid % (G * npn)) % gm
        pn = (pid % (G * npn)) // gm
        rm = (pm * BM + tl.arange(0, BM)) % M
        rn = (pn * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * sam + rk[None, :] * sak
        pb = b + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            x = tl.load(pa, mask=rk[None, :] < K - k * BK, other=0.0)
            y = tl.load(pb, mask=rk[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(x, y, acc)
            pa += BK * sak
            pb += BK * sbk
        cm = pm * BM + tl.arange(0, BM)
        cn = pn * BN + tl.arange(0, BN)
        pc = c + cm[:, None] * scm + cn[None, :] * scn
        tl.store(pc, acc.to(tl.float16), mask=(cm[:, None] < M) & (cn[None, :] < N))

    def mm(x, y):
        M, K = x.shape
        N = y.shape[1]
        out = torch.empty((M, N), device=x.device, dtype=torch.float16)
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
        kernel[grid](x, y, out, M, N, K, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                     out.stride(0), out.stride(1))
        return out

    return mm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--sizes", default="4096")
    args = ap.parse_args()
    dev = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__,
          "cuDNN", torch.backends.cudnn.version())
    torch.backends.cudnn.benchmark = True
    rows = []

    def record(name, peer, dtype, ms, flops):
        tf = flops / ms / 1e9
        rows.append({"workload": name, "peer": peer, "dtype": dtype, "ms": f"{ms:.4f}",
                     "tflops": f"{tf:.1f}"})
        print(f"{name:14s} {peer:8s} {dtype:9s} {ms:9.4f} ms {tf:8.1f} TFLOP/s", flush=True)

    tmm = triton_matmul()
    for n in [int(s) for s in args.sizes.split(",")]:
        flops = 2.0 * n * n * n
        for dtype, tdt, tf32 in [("float32", torch.float32, False), ("tf32", torch.float32, True),
                                 ("float16", torch.float16, False), ("bfloat16", torch.bfloat16, False)]:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device=dev, dtype=tdt)
            b = torch.randn(n, n, device=dev, dtype=tdt)
            record(f"mm{n}", "cuBLAS", dtype, time_cuda(lambda: torch.matmul(a, b)), flops)
            if dtype == "float16" and tmm is not None:
                ref = torch.matmul(a.float(), b.float())
                err = (tmm(a, b).float() - ref).abs().max().item() / ref.abs().max().item()
                record(f"mm{n}", "Triton", dtype, time_cuda(lambda: tmm(a, b)), flops)
                print(f"  triton max rel err {err:.2e}")
        torch.backends.cuda.matmul.allow_tf32 = False

    # ResNet-50's 3x3 convolutions (stride 1, pad 1): C=K, HxW
    for name, c, hw in [("r50_c2", 64, 56), ("r50_c3", 128, 28), ("r50_c4", 256, 14), ("r50_c5", 512, 7)]:
        for batch in (1, 16):
            x = torch.randn(batch, c, hw, hw, device=dev, dtype=torch.float16)
            w = torch.randn(c, c, 3, 3, device=dev, dtype=torch.float16)
            flops = 2.0 * batch * c * c * 9 * hw * hw
            record(f"{name}_b{batch}", "cuDNN", "float16",
                   time_cuda(lambda: F.conv2d(x, w, padding=1)), flops)
            # channels_last: cuDNN's NHWC kernels, the layout Loom's implicit GEMM takes
            xl = x.to(memory_format=torch.channels_last)
            wl = w.to(memory_format=torch.channels_last)
            record(f"{name}_b{batch}", "cuDNN-NHWC", "float16",
                   time_cuda(lambda: F.conv2d(xl, wl, padding=1)), flops)
    if args.out:
        with open(args.out, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            wr.writeheader()
            wr.writerows(rows)


if __name__ == "__main__":
    main()
