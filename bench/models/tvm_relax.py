#!/usr/bin/env python3
"""Tunes and times an ONNX model with TVM (Relax's ONNX frontend + MetaSchedule), the second
peer of issue 32's whole-model benchmark. Prints one JSON object (latencies in milliseconds).

The flow is the one TVM documents for a static-shape model on the CPU
(relax.pipeline.static_shape_tuning_pipeline): BatchNormalization folded into the preceding
Conv first (as torch.onnx.export does in eval mode; --keep-batchnorm leaves it), from_onnx,
DecomposeOpsForInference, the zero pipeline (legalize, fuse), MetaSchedule over every fused
task with TRIALS trials in all (its gradient task scheduler shares the budget, as Loom's
autotune --model does), the best records of WORK_DIR applied, and with --prepack the
weights rewritten once into the layouts the tuned kernels read (TVM's layout rewrite, done
before timing; off by default in TVM because it changes the deployed interface). TRIALS 0
tunes nothing and applies WORK_DIR's records (a re-timing of an earlier run; with an empty
WORK_DIR, TVM's unscheduled loops: no speed peer, only a check that the model runs).

Timing: the VM's `main` called --warmup times, then --runs times, one sample each
(wall clock around the call), with TVM_NUM_THREADS set to --threads before TVM loads.
Inputs: standard normal from --seed, as bench/models/ort_bench.py makes them; with
--check DIR (ort_bench.py --save-io DIR) the inputs come from DIR and the outputs are
compared with ORT's (max abs/rel difference; exit status 1 beyond rtol 1e-3, atol 1e-5).

Usage (the TVM venv: bench/metaschedule/requirements.txt):
  TVM_PYTHON bench/models/tvm_relax.py --model bench/models/mobilenetv2.onnx --trials 3000 \
      --threads 1 --work-dir /tmp/tvm_mb [--prepack] [--check DIR] [--runs 20 --warmup 3]
Run it under `taskset -c CPU` on a quiet host, as Loom's tuning runs are.
"""

import argparse
import json
import os
import statistics
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="ONNX model with static input shapes")
    ap.add_argument("--trials", type=int, default=0,
                    help="MetaSchedule trials over all tasks (0: untuned)")
    ap.add_argument("--trials-per-task", type=int, default=None,
                    help="cap per task (TVM's max_trials_per_task; default: none)")
    ap.add_argument("--threads", type=int, default=1, help="TVM_NUM_THREADS (default 1)")
    ap.add_argument("--work-dir", default="tvm_tuning", help="MetaSchedule's logs and database")
    ap.add_argument("--target", default=None,
                    help='TVM target as JSON (default: {"kind": "llvm", "mcpu": <host>, '
                         '"num-cores": THREADS})')
    ap.add_argument("--prepack", action="store_true",
                    help="rewrite the weights into the tuned kernels' layouts (RewriteLayout)")
    ap.add_argument("--keep-batchnorm", action="store_true",
                    help="do not fold BatchNormalization into the preceding Conv first")
    ap.add_argument("--runs", type=int, default=20, help="timed runs (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    ap.add_argument("--check", metavar="DIR", help="inputs and ORT's outputs from DIR")
    return ap.parse_args()


def load_io(onnx_model, args, np, numpy_helper):
    """The model's inputs (from --check DIR or standard normal) and ORT's outputs or None."""
    graph_inputs = [i for i in onnx_model.graph.input
                    if i.name not in {t.name for t in onnx_model.graph.initializer}]
    feeds, want = {}, None
    if args.check:
        for k, i in enumerate(graph_inputs):
            path = os.path.join(args.check, f"input_{k}.pb")
            feeds[i.name] = numpy_helper.to_array(load_tensor(path))
        want = []
        k = 0
        while os.path.exists(os.path.join(args.check, f"output_{k}.pb")):
            want.append(numpy_helper.to_array(load_tensor(os.path.join(args.check, f"output_{k}.pb"))))
            k += 1
        return feeds, want
    rng = np.random.default_rng(args.seed)
    for i in graph_inputs:
        dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if any(d <= 0 for d in dims):
            sys.exit(f"tvm_relax: input '{i.name}' has a non-static shape {dims}")
        feeds[i.name] = rng.standard_normal(dims).astype(np.float32)
    return feeds, want


def load_tensor(path):
    import onnx
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def fold_batchnorm(model, np, numpy_helper):
    """Folds each BatchNormalization that follows a Conv (its only reader, every parameter an
    initializer) into the Conv's weights and bias, as torch.onnx.export does for a model in
    eval mode: the bench models keep BatchNormalization (it tests Loom's own folding), and
    MetaSchedule 0.27 fails to generate a schedule space for a convolution whose epilogue
    computes BatchNormalization from parameters. Returns the number of nodes folded."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    readers = {}
    for n in g.node:
        for i in n.input:
            readers[i] = readers.get(i, 0) + 1
    producer = {o: n for n in g.node for o in n.output}
    folded, keep = 0, []
    for n in g.node:
        conv = producer.get(n.input[0]) if n.op_type == "BatchNormalization" else None
        if (conv is None or conv.op_type != "Conv" or readers.get(conv.output[0]) != 1
                or len(n.output) != 1 or any(i not in inits for i in n.input[1:5])
                or conv.input[1] not in inits
                or (len(conv.input) > 2 and conv.input[2] not in inits)):
            keep.append(n)
            continue
        eps = next((a.f for a in n.attribute if a.name == "epsilon"), 1e-5)
        gamma, beta, mean, var = (numpy_helper.to_array(inits[i]).astype(np.float64)
                                  for i in n.input[1:5])
        scale = gamma / np.sqrt(var + eps)
        w = numpy_helper.to_array(inits[conv.input[1]]).astype(np.float64)
        b = (numpy_helper.to_array(inits[conv.input[2]]).astype(np.float64)
             if len(conv.input) > 2 else np.zeros(w.shape[0]))
        w_name, b_name = conv.output[0] + "_folded_W", conv.output[0] + "_folded_B"
        g.initializer.append(numpy_helper.from_array(
            (w * scale.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32), w_name))
        g.initializer.append(numpy_helper.from_array(
            ((b - mean) * scale + beta).astype(np.float32), b_name))
        data = conv.input[0]
        del conv.input[:]
        conv.input.extend([data, w_name, b_name])
        conv.output[0] = n.output[0]
        folded += 1
    del g.node[:]
    g.node.extend(keep)
    return folded


def import_intrinsics():
    """Builder workers' initializer: TVM's default build imports every tensor intrinsic
    (tvm.s_tir.tensor_intrin, ~20 s on this host's cores) in each fresh worker; done here
    it is not charged to the first candidate's build timeout."""
    import tvm.s_tir.tensor_intrin  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel


def tune(mod, target, args, relax):
    """relax.pipeline.static_shape_tuning_pipeline, with MetaSchedule called directly so that
    its builder and runner get one worker each (the tuning core) and the initializer above."""
    from tvm.s_tir import meta_schedule as ms
    from tvm import transform as tx
    t = relax.transform
    with target:
        mod = tx.Sequential([t.DecomposeOpsForInference(), t.CanonicalizeBindings(),
                             relax.pipeline.zero_pipeline()])(mod)
        if args.prepack:
            mod = t.AttachAttrLayoutFreeBuffers()(mod)
        if args.trials > 0:
            ms.relax_integration.tune_relax(
                mod=mod, params={}, target=target, work_dir=args.work_dir,
                max_trials_global=args.trials, max_trials_per_task=args.trials_per_task,
                builder=ms.builder.LocalBuilder(max_workers=1, timeout_sec=60,
                                                initializer=import_intrinsics),
                runner=ms.runner.LocalRunner(timeout_sec=30), seed=args.seed)
        mod = t.MetaScheduleApplyDatabase(args.work_dir)(mod)
        if args.prepack:
            mod = tx.Sequential([t.SplitLayoutRewritePreproc(), t.LiftTransformParams(),
                                 t.FoldConstant()])(mod)
    return mod


def host_mcpu(tvm):
    """LLVM's name for this CPU, as Loom's target key uses it."""
    get = tvm.get_global_func("tvm.codegen.llvm.GetHostCPUName", allow_missing=True)
    return get() if get else None


def main():
    args = parse_args()
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import onnx
    import tvm
    from onnx import numpy_helper
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    model = onnx.load(args.model)
    folded = fold_batchnorm(model, np, numpy_helper) if not args.keep_batchnorm else 0
    feeds, want = load_io(model, args, np, numpy_helper)
    if args.target:
        target = tvm.target.Target(json.loads(args.target))
    else:
        spec = {"kind": "llvm", "num-cores": args.threads}
        mcpu = host_mcpu(tvm)
        if mcpu:
            spec["mcpu"] = mcpu
        target = tvm.target.Target(spec)

    t0 = time.time()
    shape_dict = {k: v.shape for k, v in feeds.items()}
    # weights as parameters for --prepack (the layout rewrite transforms parameters), else
    # as constants, which FoldConstant folds (BatchNormalization's statistics into scales)
    mod = from_onnx(model, shape_dict=shape_dict, keep_params_in_input=args.prepack)
    if args.prepack:
        mod, params = relax.frontend.detach_params(mod)
        # Only the weights stay parameters (the layout rewrite's subject); scalars and
        # vectors (Clip's bounds, biases) become constants: MetaSchedule 0.27 cannot
        # schedule a fused epilogue that computes from parameter scalars.
        main = mod["main"]
        nin = int(main.attrs["num_input"])
        small = {v: p for v, p in zip(main.params[nin:], params["main"])
                 if len(p.shape) < 2}
        mod = relax.transform.BindParams("main", small)(mod)
        params = {"main": [p for p in params["main"] if len(p.shape) >= 2]}
        mod = relax.transform.FoldConstant()(mod)
    else:
        mod = relax.transform.FoldConstant()(relax.transform.DecomposeOpsForInference()(mod))
        params = {"main": []}
    mod = tune(mod, target, args, relax)
    tune_s = time.time() - t0
    t1 = time.time()
    ex = tvm.compile(mod, target=target)
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    compile_s = time.time() - t1

    weights = [tvm.runtime.tensor(p, dev) for p in params["main"]]
    if args.prepack:
        weights = vm["main_transform_params"](weights)
    inputs = [tvm.runtime.tensor(feeds[i.name], dev) for i in model.graph.input
              if i.name in feeds]
    call = lambda: vm["main"](*inputs, *weights)

    result = {"model": os.path.basename(args.model), "tvm": tvm.__version__,
              "target": str(target), "threads": args.threads, "trials": args.trials,
              "prepack": args.prepack, "batchnorm_folded": folded, "tune_s": round(tune_s, 1),
              "compile_s": round(compile_s, 1)}
    out = call()
    # one output: a tensor; several: a tuple of them
    outs = [out] if hasattr(out, "numpy") else list(out)
    bad = 0
    if want is not None:
        worst_abs = worst_rel = 0.0
        for got, ref in zip(outs, want):
            g = got.numpy().astype(np.float64)
            r = ref.astype(np.float64)
            if g.shape != r.shape:
                sys.exit(f"tvm_relax: output shape {g.shape} differs from ORT's {r.shape}")
            diff = np.abs(g - r)
            worst_abs = max(worst_abs, float(diff.max()))
            worst_rel = max(worst_rel, float((diff / np.maximum(np.abs(r), 1e-30)).max()))
            bad += int(np.sum(diff > 1e-5 + 1e-3 * np.abs(r)))
        result.update(max_abs_diff=worst_abs, max_rel_diff=worst_rel, beyond_tolerance=bad)

    for _ in range(args.warmup):
        call()
    samples = []
    for _ in range(args.runs):
        s = time.perf_counter()
        call()
        samples.append((time.perf_counter() - s) * 1e3)
    samples.sort()
    result.update(median_ms=round(statistics.median(samples), 4),
                  mean_ms=round(statistics.fmean(samples), 4),
                  p90_ms=round(samples[min(len(samples) - 1, int(0.9 * len(samples)))], 4))
    print(json.dumps(result))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
