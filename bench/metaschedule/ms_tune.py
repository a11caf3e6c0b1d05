#!/usr/bin/env python3
"""Tune one workload of the issue-35 comparison with TVM's MetaSchedule and time its best.

The workloads are the ones bench/metaschedule/compare.sh gives Loom (same shapes, float32,
NCHW/OIHW, row-major matmul). MetaSchedule runs with its defaults (tune_tir: evolutionary
search, XGBoost model, 64 trials per iteration); only the trial budget, the seed and the
target are set. After tuning, the best schedule in its database is built and timed again
with time_evaluator (warm-up, then REPEAT samples of at least MIN_MS each), checked against
numpy first.

Prints one JSON line: workload, seed, trials, tuning wall seconds, MetaSchedule's own best
latency (ms, as its runner measured it) and the re-timed median (ms).

Needs TVM from PyPI (bench/metaschedule/requirements.txt); run under `taskset -c CPU` to
give it the same single core as Loom's run.
"""
import argparse
import json
import sys
import time

import numpy as np
import tvm
from tvm import te, topi
from tvm.s_tir import meta_schedule as ms

WORKLOADS = {
    "mm1024": ("matmul", dict(M=1024, N=1024, K=1024)),
    "r50_c3": ("conv2d", dict(N=1, C=128, H=28, W=28, K=128, R=3, S=3, stride=1, pad=1)),
    "r50_c4": ("conv2d", dict(N=1, C=256, H=14, W=14, K=256, R=3, S=3, stride=1, pad=1)),
    "r50_c3s2": ("conv2d", dict(N=1, C=128, H=56, W=56, K=128, R=3, S=3, stride=2, pad=1)),
    "mb_dw56": ("depthwise", dict(N=1, C=128, H=56, W=56, R=3, S=3, stride=1, pad=1)),
}


def build_func(op, p):
    if op == "matmul":
        a = te.placeholder((p["M"], p["K"]), name="A")
        b = te.placeholder((p["K"], p["N"]), name="B")
        k = te.reduce_axis((0, p["K"]), name="k")
        c = te.compute((p["M"], p["N"]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
        return [a, b, c], 2.0 * p["M"] * p["N"] * p["K"]
    x = te.placeholder((p["N"], p["C"], p["H"], p["W"]), name="X")
    if op == "conv2d":
        w = te.placeholder((p["K"], p["C"], p["R"], p["S"]), name="W")
        y = topi.nn.conv2d_nchw(x, w, p["stride"], p["pad"], 1)
        cin = p["C"]
    else:
        w = te.placeholder((p["C"], 1, p["R"], p["S"]), name="W")
        y = topi.nn.depthwise_conv2d_nchw(x, w, p["stride"], p["pad"], 1)
        cin = 1
    n, k, oh, ow = (int(v) for v in y.shape)
    return [x, w, y], 2.0 * n * k * oh * ow * cin * p["R"] * p["S"]



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--target", default=None,
                    help="TVM target as JSON (TVM 0.27 takes no CLI strings); default: llvm for "
                         "this host's CPU as LLVM names it (as Loom's target), 1 core")
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--retime-only", action="store_true",
                    help="do not tune: build and time the best of the database in --work-dir")
    ap.add_argument("--trace-out", help="write the best schedule's trace (its program) here")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--min-ms", type=float, default=20.0)
    # LocalBuilder starts a fresh worker process for every batch of candidates, and the worker's
    # first build imports TVM's tensor intrinsics (TVMScript parsed in Python): 45 s on the Zen 3
    # host of session 52. Under the default 30 s timeout every build there was killed before it
    # began, and tuning never advanced. A longer limit changes which builds are killed, nothing
    # else.
    ap.add_argument("--builder-timeout", type=float, default=300.0)
    a = ap.parse_args()

    op, p = WORKLOADS[a.workload]
    tensors, flop = build_func(op, p)
    func = te.create_prim_func(tensors).with_attr("global_symbol", "main")
    mod = tvm.IRModule({"main": func})
    if a.target is None:
        # Same CPU name LLVM gives Loom's JIT, so both tools compile for the same features.
        cpu = tvm.get_global_func("target.llvm_get_system_cpu")()
        a.target = json.dumps({"kind": "llvm", "mcpu": cpu, "num-cores": 1})
    target = tvm.target.Target(json.loads(a.target))

    t0 = time.time()
    if a.retime_only:
        db = ms.database.JSONDatabase(work_dir=a.work_dir, allow_missing=False)
    else:
        builder = ms.builder.LocalBuilder(max_workers=1, timeout_sec=a.builder_timeout)
        db = ms.tune_tir(mod, target, a.work_dir, max_trials_global=a.trials, seed=a.seed,
                         num_tuning_cores=1, builder=builder)
    wall = time.time() - t0

    recs = db.get_all_tuning_records()
    runs = [float(np.mean([float(x) for x in r.run_secs])) for r in recs
            if r.run_secs and all(float(x) < 1e9 for x in r.run_secs)]
    ms_best = min(runs) * 1e3 if runs else float("nan")

    sch = ms.tir_integration.compile_tir(db, mod, target)
    if a.trace_out:
        with open(a.trace_out, "w") as f:
            f.write(str(sch.trace) + "\n\n" + sch.mod.script() + "\n")
    lib = tvm.compile(sch.mod, target=target).jit()
    dev = tvm.cpu(0)
    rng = np.random.default_rng(a.seed)
    ins = [rng.uniform(-1, 1, [int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]
    out = np.full([int(d) for d in tensors[-1].shape], np.nan, dtype="float32")
    targs = [tvm.runtime.tensor(x, dev) for x in ins] + [tvm.runtime.tensor(out, dev)]
    lib["main"](*targs)
    got = targs[-1].numpy().astype(np.float64)
    if op == "matmul":
        ref = ins[0].astype(np.float64) @ ins[1].astype(np.float64)
    else:
        ref = conv_ref(op, p, ins)
    err = float(np.max(np.abs(got - ref)))
    if not np.isfinite(err) or err > 1e-3 * max(1.0, float(np.max(np.abs(ref)))):
        print(f"ms_tune: {a.workload}: best schedule gives a wrong answer (max error {err})",
              file=sys.stderr)
        return 1

    f = lib.time_evaluator("main", dev, number=1, repeat=1)
    one = f(*targs).mean
    number = max(1, int(a.min_ms / 1e3 / max(one, 1e-9)))
    f = lib.time_evaluator("main", dev, number=number, repeat=a.repeat, min_repeat_ms=0)
    for _ in range(3):
        lib["main"](*targs)
    res = f(*targs)
    med = float(np.median(res.results)) * 1e3
    print(json.dumps({"workload": a.workload, "seed": a.seed, "trials": len(recs),
                      "wall_s": round(wall, 1), "ms_best_ms": round(ms_best, 4),
                      "retimed_ms": round(med, 4),
                      "retimed_gflops": round(flop / (med * 1e-3) / 1e9, 2),
                      "tvm": tvm.__version__, "target": a.target}))
    return 0


def conv_ref(op, p, ins):
    """Direct double-precision convolution (NCHW/OIHW), the same reference for both ops."""
    x, w = ins[0].astype(np.float64), ins[1].astype(np.float64)
    s, pad = p["stride"], p["pad"]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = xp.shape
    r, ss = p["R"], p["S"]
    oh, ow = (h - r) // s + 1, (wd - ss) // s + 1
    if op == "conv2d":
        y = np.zeros((n, w.shape[0], oh, ow))
        for i in range(r):
            for j in range(ss):
                patch = xp[:, :, i:i + s * oh:s, j:j + s * ow:s]
                y += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
        return y
    y = np.zeros((n, c, oh, ow))
    for i in range(r):
        for j in range(ss):
            y += xp[:, :, i:i + s * oh:s, j:j + s * ow:s] * w[None, :, 0, i, j, None, None]
    return y


if __name__ == "__main__":
    sys.exit(main())
