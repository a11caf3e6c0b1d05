#!/usr/bin/env python3
"""Writes the small ONNX models Loom's whole-model tests run, in ONNX's backend-test layout:

    tests/data/<model>/model.onnx
    tests/data/<model>/test_data_set_0/input_0.pb, output_0.pb   (onnx TensorProto)

The reference outputs come from ONNX Runtime's CPU provider with graph optimisations off, so
they are the plain graph's result, not a fused one's. Weights and inputs come from fixed seeds:
rerunning with the same onnx/onnxruntime/numpy versions (scripts/models/requirements.txt)
gives the same models; the outputs may differ in the last bits across ORT versions.

Usage: python scripts/models/gen_test_models.py [--out tests/data]
"""

import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_builder import GraphBuilder, check  # noqa: E402


def cnn_small():
    """ResNet basic blocks (one strided with a 1x1 projection shortcut) and a MobileNetV2
    inverted residual block (1x1 expand, depthwise 3x3, 1x1 project), BN left unfolded."""
    b = GraphBuilder(seed=1)
    x = b.conv("input", 3, 16, 3, "stem.conv", bias=True)
    x = b.relu(b.bn(x, 16, "stem.bn"), "stem")

    # Basic block, identity shortcut.
    y = b.relu(b.bn(b.conv(x, 16, 16, 3, "block1.conv1"), 16, "block1.bn1"), "block1.a")
    y = b.bn(b.conv(y, 16, 16, 3, "block1.conv2"), 16, "block1.bn2")
    x = b.relu(b.add(y, x, "block1"), "block1.b")
    x = b.maxpool(x, "pool")                                            # 16x16

    # Basic block, stride 2, projection shortcut (1x1 strided conv + BN).
    y = b.relu(b.bn(b.conv(x, 16, 32, 3, "block2.conv1", stride=2), 32, "block2.bn1"), "block2.a")
    y = b.bn(b.conv(y, 32, 32, 3, "block2.conv2"), 32, "block2.bn2")
    s = b.bn(b.conv(x, 16, 32, 1, "block2.downsample", stride=2), 32, "block2.downsample.bn")
    x = b.relu(b.add(y, s, "block2"), "block2.b")                       # 8x8

    # Inverted residual: expand 1x1 (with bias) -> depthwise 3x3 -> project 1x1, ReLU6.
    y = b.relu6(b.bn(b.conv(x, 32, 64, 1, "block3.expand", bias=True), 64, "block3.bn1"), "block3.a")
    y = b.relu6(b.bn(b.conv(y, 64, 64, 3, "block3.dw", group=64), 64, "block3.bn2"), "block3.b")
    y = b.bn(b.conv(y, 64, 32, 1, "block3.project"), 32, "block3.bn3")
    x = b.add(x, y, "block3")

    out = b.rename_output(b.classifier(x, 32, 10, "fc"), "output")
    return b.model("cnn_small", [("input", [1, 3, 32, 32])], [(out, [1, 10])], 13,
                   "Small residual CNN (Loom test model, random weights, seed 1)")


def encoder_small():
    b = GraphBuilder(seed=2)
    out = b.rename_output(b.encoder_layer("x", 1, 16, 64, 4, 256, "layer0"), "y")
    return b.model("encoder_small", [("x", [1, 16, 64])], [(out, [1, 16, 64])], 17,
                   "Post-norm transformer encoder layer, 4 heads (Loom test model, seed 2)")


def reference(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def optimised(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def write_case(out_dir, name, model, seed):
    counts = check(model)
    d = os.path.join(out_dir, name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))

    rng = np.random.default_rng(seed)
    feeds = {}
    for i, vi in enumerate(model.graph.input):
        shape = [dim.dim_value for dim in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[vi.name], vi.name).SerializeToString())
    outs = reference(model, feeds)
    for i, (vi, y) in enumerate(zip(model.graph.output, outs)):
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{name}: output '{vi.name}' is not finite")
        with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, vi.name).SerializeToString())

    # A fused/optimised run must agree with the plain one, else the reference itself is suspect.
    diff = max(float(np.max(np.abs(a - o))) for a, o in zip(outs, optimised(model, feeds)))
    size = os.path.getsize(os.path.join(d, "model.onnx"))
    if size >= 1 << 20:
        raise ValueError(f"{name}: model.onnx is {size} bytes, over 1 MB")
    print(f"{name}: {len(model.graph.node)} nodes, {size} bytes, opset "
          f"{model.opset_import[0].version}, output range [{outs[0].min():.4g}, "
          f"{outs[0].max():.4g}], |plain - optimised| <= {diff:.3g}")
    print("  ops: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "tests", "data"))
    args = ap.parse_args()
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}")
    write_case(args.out, "cnn_small", cnn_small(), seed=101)
    write_case(args.out, "encoder_small", encoder_small(), seed=102)


if __name__ == "__main__":
    main()
