#!/usr/bin/env python3
"""Times an ONNX model with ONNX Runtime's CPU provider, the baseline Loom's whole-model path
is compared with. Prints one JSON object (latencies in milliseconds).

Session: ORT_ENABLE_ALL graph optimisations, intra_op_num_threads=N, inter_op_num_threads=1,
sequential execution. Inputs are standard normal from --seed (int inputs: zeros); with
--save-io DIR the inputs and ORT's outputs are written as DIR/input_<i>.pb, DIR/output_<i>.pb
(onnx.TensorProto, ONNX backend-test layout) so Loom's outputs can be checked against ORT's.

Usage: python bench/models/ort_bench.py --model bench/models/resnet50.onnx --threads 1 \
           --runs 20 --warmup 3 [--save-io DIR] [--seed 0]
Make the models with scripts/models/gen_bench_models.py, the venv with scripts/models/setup.sh.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort
from onnx import numpy_helper

# ORT's tensor type strings for the element types a benchmark input may have.
NP_TYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_,
}


def make_inputs(sess, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        if i.type not in NP_TYPES:
            sys.exit(f"ort_bench: input '{i.name}' has type {i.type}, which this script cannot make")
        if any(not isinstance(d, int) or d < 0 for d in i.shape):
            sys.exit(f"ort_bench: input '{i.name}' has a non-static shape {i.shape}; "
                     "benchmark models must have static input shapes")
        t = NP_TYPES[i.type]
        if np.issubdtype(t, np.floating):
            feeds[i.name] = rng.standard_normal(i.shape).astype(t)
        else:
            feeds[i.name] = np.zeros(i.shape, dtype=t)
    return feeds


def save_io(out_dir, sess, feeds, outs):
    os.makedirs(out_dir, exist_ok=True)
    for k, i in enumerate(sess.get_inputs()):
        with open(os.path.join(out_dir, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[i.name], i.name).SerializeToString())
    for k, (o, y) in enumerate(zip(sess.get_outputs(), outs)):
        with open(os.path.join(out_dir, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(y), o.name).SerializeToString())


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="ONNX model file")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    ap.add_argument("--runs", type=int, default=20, help="timed runs (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    ap.add_argument("--save-io", metavar="DIR", help="write input_<i>.pb/output_<i>.pb here")
    args = ap.parse_args()
    if args.threads < 1 or args.runs < 1 or args.warmup < 0:
        ap.error("--threads and --runs must be at least 1, --warmup at least 0")
    if not os.path.isfile(args.model):
        ap.error(f"model file '{args.model}' does not exist "
                 "(make the benchmark models with scripts/models/gen_bench_models.py)")

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    t0 = time.perf_counter()
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1e3

    feeds = make_inputs(sess, args.seed)
    outs = None
    for _ in range(args.warmup):
        outs = sess.run(None, feeds)
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        outs = sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    if args.save_io:
        save_io(args.save_io, sess, feeds, outs)

    times_sorted = sorted(times)
    # Nearest-rank p90: the smallest time that at least 90% of the runs are at or under.
    p90 = times_sorted[max(0, -(-9 * len(times) // 10) - 1)]
    print(json.dumps({
        "model": os.path.basename(args.model),
        "threads": args.threads,
        "runs": args.runs,
        "warmup": args.warmup,
        "median_ms": round(statistics.median(times), 4),
        "mean_ms": round(statistics.fmean(times), 4),
        "p90_ms": round(p90, 4),
        "min_ms": round(times_sorted[0], 4),
        "session_load_ms": round(load_ms, 1),
        "onnxruntime": ort.__version__,
        "provider": "CPUExecutionProvider",
        "cpu": cpu_name(),
        "cpus": os.cpu_count(),
        # A random-weight network whose activations blow up would time a different workload
        # (denormals, inf) than a trained one: report the output scale to make that visible.
        "outputs_finite": bool(all(np.all(np.isfinite(np.asarray(y))) for y in outs)),
        "output_absmax": float(max(np.max(np.abs(np.asarray(y))) for y in outs)),
    }, indent=None))


if __name__ == "__main__":
    main()
