#!/usr/bin/env python3
"""Writes the benchmark models (random weights, fixed seeds, built with onnx.helper, nothing
downloaded) for timing Loom against ONNX Runtime on whole networks:

    resnet50.onnx     ResNet-50 v1.5 as torchvision exports it (Conv without bias +
                      unfolded BatchNormalization + Relu, stride on the 3x3 conv), opset 13,
                      input `input` f32 [1,3,224,224], output `output` [1,1000]   (~100 MB)
    mobilenetv2.onnx  MobileNetV2 1.0 (ReLU6 as Clip, depthwise convs), opset 13,
                      input `input` f32 [1,3,224,224], output `output` [1,1000]   (~14 MB)
    bert_base.onnx    BERT-base encoder stack: 12 post-norm layers, hidden 768, 12 heads,
                      FFN 3072, GELU in Erf form, LayerNormalization (opset 17),
                      input `x` f32 [1,128,768] (embeddings left out), output `y`  (~340 MB)

With --more (or --only NAME), also the models of more_models.py: EfficientNet-B0, MobileNetV3,
ViT-B/16, GPT-2 blocks, a YOLOv8n-like detector, a U-Net decoder step and ConvNeXt-T, and those of
more_models_b.py: ResNeXt-50, Inception-v3, DenseNet-121, ShuffleNetV2, LLaMA-style blocks and a
Stable-Diffusion-like UNet block, each bringing operators and shapes the three above lack.

The output files are git-ignored (bench/models/*.onnx); time them with bench/models/ort_bench.py.

Usage: python scripts/models/gen_bench_models.py [OUT_DIR] [--only NAME ...] [--more]
"""

import argparse
import math
import os
import sys
import time

import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_builder import GraphBuilder, check  # noqa: E402
from more_models import MORE_MODELS  # noqa: E402
from more_models_b import MORE_MODELS_B  # noqa: E402


def resnet50():
    b = GraphBuilder(seed=50)
    x = b.relu(b.bn(b.conv("input", 3, 64, 7, "conv1", stride=2, pad=3), 64, "bn1"), "stem")
    x = b.maxpool(x, "maxpool")
    cin = 64
    for li, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]):
        for bi in range(blocks):
            s = stride if bi == 0 else 1
            p = f"layer{li + 1}.{bi}"
            cout = width * 4
            y = b.relu(b.bn(b.conv(x, cin, width, 1, f"{p}.conv1"), width, f"{p}.bn1"), f"{p}.a")
            # v1.5: the stride sits on the 3x3 conv, not the first 1x1.
            y = b.relu(b.bn(b.conv(y, width, width, 3, f"{p}.conv2", stride=s), width, f"{p}.bn2"), f"{p}.b")
            # A smaller gamma on the last BN of each residual branch keeps the random network's
            # activations from growing block after block (like zero-init-residual, not zero).
            y = b.bn(b.conv(y, width, cout, 1, f"{p}.conv3"), cout, f"{p}.bn3", gamma=(0.1, 0.3))
            if bi == 0:
                x = b.bn(b.conv(x, cin, cout, 1, f"{p}.downsample.0", stride=s), cout, f"{p}.downsample.1")
            x = b.relu(b.add(y, x, p), f"{p}.out")
            cin = cout
    out = b.rename_output(b.classifier(x, 2048, 1000, "fc"), "output")
    return b.model("resnet50", [("input", [1, 3, 224, 224])], [(out, [1, 1000])], 13,
                   "ResNet-50 v1.5, random weights (seed 50), BN not folded")


def mobilenetv2():
    b = GraphBuilder(seed=2)
    x = b.relu6(b.bn(b.conv("input", 3, 32, 3, "features.0.0", stride=2), 32, "features.0.1"), "features.0")
    cin = 32
    idx = 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            p = f"features.{idx}"
            hidden = cin * t
            y = x
            if t != 1:
                y = b.relu6(b.bn(b.conv(y, cin, hidden, 1, f"{p}.expand"), hidden, f"{p}.expand.bn"), f"{p}.expand")
            y = b.relu6(b.bn(b.conv(y, hidden, hidden, 3, f"{p}.dw", stride=stride, group=hidden),
                             hidden, f"{p}.dw.bn"), f"{p}.dw")
            y = b.bn(b.conv(y, hidden, c, 1, f"{p}.project"), c, f"{p}.project.bn",
                     gamma=(0.3, 0.6) if stride == 1 and cin == c else (0.5, 1.5))
            x = b.add(x, y, p) if stride == 1 and cin == c else y
            cin = c
            idx += 1
    x = b.relu6(b.bn(b.conv(x, 320, 1280, 1, f"features.{idx}.0"), 1280, f"features.{idx}.1"), f"features.{idx}")
    out = b.rename_output(b.classifier(x, 1280, 1000, "classifier.1"), "output")
    return b.model("mobilenetv2", [("input", [1, 3, 224, 224])], [(out, [1, 1000])], 13,
                   "MobileNetV2 1.0, random weights (seed 2), BN not folded")


def bert_base(layers=12, seq=128, hidden=768, heads=12, ffn=3072):
    b = GraphBuilder(seed=768)
    x = "x"
    for i in range(layers):
        x = b.encoder_layer(x, 1, seq, hidden, heads, ffn, f"encoder.layer.{i}")
    out = b.rename_output(x, "y")
    return b.model("bert_base", [("x", [1, seq, hidden])], [(out, [1, seq, hidden])], 17,
                   "BERT-base encoder (12 layers, embeddings left out), random weights (seed 768)")


MODELS = {"resnet50": resnet50, "mobilenetv2": mobilenetv2, "bert_base": bert_base}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=os.path.normpath(os.path.join(here, "..", "..", "bench", "models")))
    more = {**MORE_MODELS, **MORE_MODELS_B}
    ap.add_argument("--only", nargs="+", choices=sorted(MODELS) + sorted(more),
                    help="write only these models")
    ap.add_argument("--more", action="store_true", help="also write the models of more_models.py and more_models_b.py")
    args = ap.parse_args()
    every = {**MODELS, **more}
    os.makedirs(args.out, exist_ok=True)
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}")
    for name in args.only or (list(MODELS) + (list(more) if args.more else [])):
        t0 = time.time()
        model = every[name]()
        counts = check(model)
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save(model, path)
        # ORT must accept the file as written (not just the in-memory proto).
        ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        params = sum(math.prod(i.dims) for i in model.graph.initializer)
        print(f"{path}: {len(model.graph.node)} nodes, {params / 1e6:.1f} M parameters, "
              f"{os.path.getsize(path) / 1e6:.1f} MB, {time.time() - t0:.1f} s")
        print("  ops: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
