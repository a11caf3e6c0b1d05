"""Models a user brings beside the three benchmark ones, for finding where Loom's defaults fall
behind ONNX Runtime on shapes and operators the benchmark models lack (session 46's sweep):

    efficientnet_b0  SiLU as Sigmoid*Mul, squeeze-and-excitation ([1,C,1,1] scales), 5x5
                     depthwise, channels 40/112/... (opset 13)
    mobilenetv3      MobileNetV3-Large: HardSwish, HardSigmoid squeeze-and-excitation, 72/120/200/
                     184 channels (opset 14)
    vit_b16          ViT-B/16: 16x16 patch Conv, class token Concat, 197 tokens, pre-norm encoder,
                     Gather of the class token (opset 17)
    gpt2             GPT-2 small blocks (12, sequence 128): fused QKV MatMul split three ways, a
                     causal mask added to the scores, GELU in its tanh form with Pow (opset 17)
    yolov8n          YOLOv8n-like at 640x640: C2f blocks (Split, Concat), SPPF (MaxPool 5x5),
                     nearest Resize, three detection heads (opset 13)
    unet_up          a U-Net decoder step: ConvTranspose k2 s2, Concat with the skip, 3x3 convs
    convnext_t       ConvNeXt-T: 7x7 depthwise, LayerNorm and MatMul on NHWC between Transposes

Random weights from fixed seeds, built with onnx_builder.GraphBuilder like the others.
"""

import math

import numpy as np
from onnx import numpy_helper

from onnx_builder import ALLOWED_OPS, GraphBuilder

ALLOWED_OPS.update({"HardSigmoid", "Resize", "ConvTranspose"})


def silu(b, x, name):
    return b.node("Mul", [x, b.node("Sigmoid", [x], f"{name}/Sigmoid")], f"{name}/Mul")


def efficientnet_b0():
    b = GraphBuilder(seed=7)
    x = silu(b, b.bn(b.conv("input", 3, 32, 3, "stem", stride=2), 32, "stem.bn"), "stem")
    cin, idx = 32, 0
    for t, k, s, c, n in [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]:
        for i in range(n):
            stride, p, hidden = (s if i == 0 else 1), f"blocks.{idx}", cin * t
            y = x
            if t != 1:
                y = silu(b, b.bn(b.conv(y, cin, hidden, 1, f"{p}.expand"), hidden, f"{p}.expand.bn"),
                         f"{p}.expand")
            y = silu(b, b.bn(b.conv(y, hidden, hidden, k, f"{p}.dw", stride=stride, group=hidden),
                             hidden, f"{p}.dw.bn"), f"{p}.dw")
            sq = max(1, cin // 4)
            z = b.node("GlobalAveragePool", [y], f"{p}.se/GlobalAveragePool")
            z = silu(b, b.conv(z, hidden, sq, 1, f"{p}.se.reduce", bias=True), f"{p}.se.reduce")
            z = b.node("Sigmoid", [b.conv(z, sq, hidden, 1, f"{p}.se.expand", bias=True)],
                       f"{p}.se/Sigmoid")
            y = b.node("Mul", [y, z], f"{p}.se/Mul")
            residual = stride == 1 and cin == c
            y = b.bn(b.conv(y, hidden, c, 1, f"{p}.project"), c, f"{p}.project.bn",
                     gamma=(0.3, 0.6) if residual else (0.5, 1.5))
            x = b.add(x, y, p) if residual else y
            cin, idx = c, idx + 1
    x = silu(b, b.bn(b.conv(x, 320, 1280, 1, "head"), 1280, "head.bn"), "head")
    out = b.rename_output(b.classifier(x, 1280, 1000, "classifier"), "output")
    return b.model("efficientnet_b0", [("input", [1, 3, 224, 224])], [(out, [1, 1000])], 13,
                   "EfficientNet-B0, random weights (seed 7), BN not folded")


def mobilenetv3():
    b = GraphBuilder(seed=3)

    def act(x, a, name):
        return b.relu(x, name) if a == "RE" else b.node("HardSwish", [x], f"{name}/HardSwish")

    x = act(b.bn(b.conv("input", 3, 16, 3, "stem", stride=2), 16, "stem.bn"), "HS", "stem")
    cin = 16
    cfg = [(3, 16, 16, False, "RE", 1), (3, 64, 24, False, "RE", 2), (3, 72, 24, False, "RE", 1),
           (5, 72, 40, True, "RE", 2), (5, 120, 40, True, "RE", 1), (5, 120, 40, True, "RE", 1),
           (3, 240, 80, False, "HS", 2), (3, 200, 80, False, "HS", 1), (3, 184, 80, False, "HS", 1),
           (3, 184, 80, False, "HS", 1), (3, 480, 112, True, "HS", 1), (3, 672, 112, True, "HS", 1),
           (5, 672, 160, True, "HS", 2), (5, 960, 160, True, "HS", 1), (5, 960, 160, True, "HS", 1)]
    for i, (k, exp, c, se, a, s) in enumerate(cfg):
        p, y = f"blocks.{i}", x
        if exp != cin:
            y = act(b.bn(b.conv(y, cin, exp, 1, f"{p}.expand"), exp, f"{p}.expand.bn"), a, f"{p}.expand")
        y = act(b.bn(b.conv(y, exp, exp, k, f"{p}.dw", stride=s, group=exp), exp, f"{p}.dw.bn"), a,
                f"{p}.dw")
        if se:
            sq = ((exp // 4 + 7) // 8) * 8
            z = b.node("GlobalAveragePool", [y], f"{p}.se/GlobalAveragePool")
            z = b.relu(b.conv(z, exp, sq, 1, f"{p}.se.fc1", bias=True), f"{p}.se")
            z = b.node("HardSigmoid", [b.conv(z, sq, exp, 1, f"{p}.se.fc2", bias=True)],
                       f"{p}.se/HardSigmoid", alpha=1 / 6, beta=0.5)
            y = b.node("Mul", [y, z], f"{p}.se/Mul")
        residual = s == 1 and cin == c
        y = b.bn(b.conv(y, exp, c, 1, f"{p}.project"), c, f"{p}.project.bn",
                 gamma=(0.3, 0.6) if residual else (0.5, 1.5))
        x = b.add(x, y, p) if residual else y
        cin = c
    x = act(b.bn(b.conv(x, 160, 960, 1, "last"), 960, "last.bn"), "HS", "last")
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x], "pool")], "flatten", axis=1)
    w, bias = b.normal("fc1.weight", (1280, 960), 1 / math.sqrt(960)), b.normal("fc1.bias", (1280,), 0.01)
    x = b.node("HardSwish", [b.node("Gemm", [x, w, bias], "fc1", transB=1)], "fc1/HardSwish")
    w, bias = b.normal("fc2.weight", (1000, 1280), 0.03), b.normal("fc2.bias", (1000,), 0.01)
    out = b.rename_output(b.node("Gemm", [x, w, bias], "fc2", transB=1), "output")
    return b.model("mobilenetv3", [("input", [1, 3, 224, 224])], [(out, [1, 1000])], 14,
                   "MobileNetV3-Large, random weights (seed 3), BN not folded")


def split_heads(b, q, k, v, to_heads, p):
    """[1, seq, hidden] -> q, v [1, heads, seq, d] and k [1, heads, d, seq], as torch exports them."""
    perms = {"q": [0, 2, 1, 3], "k": [0, 2, 3, 1], "v": [0, 2, 1, 3]}
    return tuple(b.node("Transpose", [b.node("Reshape", [x, to_heads], f"{p}/{t}/Reshape")], f"{p}/{t}/Transpose",
                        perm=perms[t]) for t, x in zip("qkv", (q, k, v)))


def vit_b16(layers=12, hidden=768, heads=12, ffn=3072, patch=16, img=224):
    b = GraphBuilder(seed=16)
    n = (img // patch) ** 2
    seq, d = n + 1, hidden // heads
    x = b.conv("input", 3, hidden, patch, "patch", stride=patch, pad=0, bias=True)
    x = b.node("Reshape", [x, b.int64s("patch.flat", [1, hidden, n])], "patch/Reshape")
    x = b.node("Transpose", [x], "patch/Transpose", perm=[0, 2, 1])
    x = b.node("Concat", [b.normal("cls_token", (1, 1, hidden), 0.02), x], "cls/Concat", axis=1)
    x = b.add(x, b.normal("pos_embed", (1, seq, hidden), 0.02), "pos")
    for i in range(layers):
        p = f"layer.{i}"
        to_heads = b.int64s(f"{p}.heads_shape", [1, seq, heads, d])
        to_hidden = b.int64s(f"{p}.hidden_shape", [1, seq, hidden])
        h = b.layernorm(x, hidden, f"{p}.norm1")
        q, k, v = (b.linear(h, hidden, hidden, f"{p}/{t}") for t in "qkv")
        q, k, v = split_heads(b, q, k, v, to_heads, p)
        s = b.node("Mul", [b.node("MatMul", [q, k], f"{p}/scores/MatMul"),
                           b.scalar(f"{p}.scale", 1 / math.sqrt(d))], f"{p}/scores/Mul")
        c = b.node("MatMul", [b.node("Softmax", [s], f"{p}/Softmax", axis=-1), v], f"{p}/context/MatMul")
        c = b.node("Reshape", [b.node("Transpose", [c], f"{p}/context/Transpose", perm=[0, 2, 1, 3]),
                               to_hidden], f"{p}/context/Reshape")
        x = b.add(x, b.linear(c, hidden, hidden, f"{p}/proj"), f"{p}/attn_residual")
        h = b.layernorm(x, hidden, f"{p}.norm2")
        h = b.linear(b.gelu_erf(b.linear(h, hidden, ffn, f"{p}/fc1"), f"{p}/gelu"), ffn, hidden, f"{p}/fc2")
        x = b.add(x, h, f"{p}/mlp_residual")
    x = b.layernorm(x, hidden, "norm")
    b.inits.append(numpy_helper.from_array(np.array(0, dtype=np.int64), "cls_index"))
    x = b.node("Gather", [x, "cls_index"], "cls/Gather", axis=1)
    w, bias = b.normal("head.weight", (1000, hidden), 0.02), b.normal("head.bias", (1000,), 0.01)
    out = b.rename_output(b.node("Gemm", [x, w, bias], "head/Gemm", transB=1), "output")
    return b.model("vit_b16", [("input", [1, 3, img, img])], [(out, [1, 1000])], 17,
                   "ViT-B/16, random weights (seed 16)")


def gelu_tanh(b, y, name):
    """0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))), node for node as GPT-2's export writes it."""
    cube = b.node("Pow", [y, b.scalar(f"{name}.three", 3.0)], f"{name}/Pow")
    inner = b.node("Add", [y, b.node("Mul", [cube, b.scalar(f"{name}.k", 0.044715)], f"{name}/Mul")],
                   f"{name}/Add")
    inner = b.node("Mul", [inner, b.scalar(f"{name}.c", math.sqrt(2 / math.pi))], f"{name}/Mul_1")
    t = b.node("Add", [b.node("Tanh", [inner], f"{name}/Tanh"), b.scalar(f"{name}.one", 1.0)], f"{name}/Add_1")
    return b.node("Mul", [b.node("Mul", [y, b.scalar(f"{name}.half", 0.5)], f"{name}/Mul_2"), t],
                  f"{name}/Mul_3")


def causal_attention(b, q, k, v, mask, d, hidden_shape, p):
    """softmax(q k / sqrt(d) + mask) v on [1, heads, seq, d] (k given as [1, heads, d, seq]), back to
    hidden_shape [1, seq, hidden], node for node as GPT-2's and LLaMA's exports write it."""
    s = b.node("Div", [b.node("MatMul", [q, k], f"{p}/scores/MatMul"), b.scalar(f"{p}.scale", math.sqrt(d))],
               f"{p}/scores/Div")
    s = b.node("Add", [s, mask], f"{p}/scores/mask")
    a = b.node("MatMul", [b.node("Softmax", [s], f"{p}/Softmax", axis=-1), v], f"{p}/context/MatMul")
    return b.node("Reshape", [b.node("Transpose", [a], f"{p}/context/Transpose", perm=[0, 2, 1, 3]),
                              b.int64s(f"{p}.hidden_shape", hidden_shape)], f"{p}/context/Reshape")


def gpt2(layers=12, seq=128, hidden=768, heads=12):
    b = GraphBuilder(seed=2)
    d = hidden // heads
    mask = b.init("causal_mask", np.triu(np.full((seq, seq), -1e4, dtype=np.float32), 1)[None, None])
    x = "x"
    for i in range(layers):
        p = f"h.{i}"
        to_heads = b.int64s(f"{p}.heads_shape", [1, seq, heads, d])
        h = b.layernorm(x, hidden, f"{p}.ln_1")
        qkv = b.linear(h, hidden, 3 * hidden, f"{p}/c_attn")
        q, k, v = b.node("Split", [qkv, b.int64s(f"{p}.split", [hidden] * 3)], f"{p}/Split", n_out=3, axis=2)
        q, k, v = split_heads(b, q, k, v, to_heads, p)
        a = causal_attention(b, q, k, v, mask, d, [1, seq, hidden], p)
        x = b.add(x, b.linear(a, hidden, hidden, f"{p}/c_proj"), f"{p}/attn_residual")
        h = b.layernorm(x, hidden, f"{p}.ln_2")
        h = b.linear(gelu_tanh(b, b.linear(h, hidden, 4 * hidden, f"{p}/c_fc"), f"{p}/gelu"), 4 * hidden,
                     hidden, f"{p}/mlp_proj")
        x = b.add(x, h, f"{p}/mlp_residual")
    out = b.rename_output(b.layernorm(x, hidden, "ln_f"), "y")
    return b.model("gpt2", [("x", [1, seq, hidden])], [(out, [1, seq, hidden])], 17,
                   "GPT-2 small blocks (12, causal, embeddings left out), random weights (seed 2)")


def yolov8n(img=640):
    b = GraphBuilder(seed=8)

    def cbs(x, cin, cout, k, name, stride=1):
        return silu(b, b.bn(b.conv(x, cin, cout, k, name, stride=stride), cout, f"{name}.bn"), name)

    def c2f(x, cin, cout, n, name, shortcut=True):
        c = cout // 2
        y = cbs(x, cin, 2 * c, 1, f"{name}.cv1")
        parts = list(b.node("Split", [y, b.int64s(f"{name}.split", [c, c])], f"{name}/Split", n_out=2, axis=1))
        for i in range(n):
            z = cbs(cbs(parts[-1], c, c, 3, f"{name}.m{i}.cv1"), c, c, 3, f"{name}.m{i}.cv2")
            parts.append(b.add(parts[-1], z, f"{name}.m{i}") if shortcut else z)
        return cbs(b.node("Concat", parts, f"{name}/Concat", axis=1), (2 + n) * c, cout, 1, f"{name}.cv2")

    def sppf(x, cin, cout, name):
        x = cbs(x, cin, cin // 2, 1, f"{name}.cv1")
        pools = [x]
        for i in range(3):
            pools.append(b.maxpool(pools[-1], f"{name}.pool{i}", k=5, stride=1, pad=2))
        return cbs(b.node("Concat", pools, f"{name}/Concat", axis=1), 2 * cin, cout, 1, f"{name}.cv2")

    def up(x, name):
        scales = b.init(f"{name}.scales", np.array([1, 1, 2, 2], dtype=np.float32))
        return b.node("Resize", [x, "", scales], f"{name}/Resize", mode="nearest")

    def cat(xs, name):
        return b.node("Concat", xs, f"{name}/Concat", axis=1)

    x = cbs(cbs("input", 3, 16, 3, "b0", 2), 16, 32, 3, "b1", 2)
    x = cbs(c2f(x, 32, 32, 1, "b2"), 32, 64, 3, "b3", 2)
    p3 = c2f(x, 64, 64, 2, "b4")
    p4 = c2f(cbs(p3, 64, 128, 3, "b5", 2), 128, 128, 2, "b6")
    p5 = sppf(c2f(cbs(p4, 128, 256, 3, "b7", 2), 256, 256, 1, "b8"), 256, 256, "b9")
    n12 = c2f(cat([up(p5, "u10"), p4], "n11"), 384, 128, 1, "n12", False)
    n15 = c2f(cat([up(n12, "u13"), p3], "n14"), 192, 64, 1, "n15", False)
    n18 = c2f(cat([cbs(n15, 64, 64, 3, "n16", 2), n12], "n17"), 192, 128, 1, "n18", False)
    n21 = c2f(cat([cbs(n18, 128, 128, 3, "n19", 2), p5], "n20"), 384, 256, 1, "n21", False)
    outs = []
    for i, (f, c) in enumerate([(n15, 64), (n18, 128), (n21, 256)]):
        h = cbs(cbs(f, c, 64, 3, f"head{i}.a"), 64, 64, 3, f"head{i}.b")
        outs.append(b.rename_output(b.conv(h, 64, 144, 1, f"head{i}.out", bias=True), f"out{i}"))
    sizes = [img // 8, img // 16, img // 32]
    return b.model("yolov8n", [("input", [1, 3, img, img])],
                   [(o, [1, 144, q, q]) for o, q in zip(outs, sizes)], 13,
                   "YOLOv8n-like backbone, neck and heads, random weights (seed 8), BN not folded")


def unet_up():
    b = GraphBuilder(seed=9)
    skip = b.relu(b.conv("input", 32, 64, 3, "enc1", bias=True), "enc1")
    low = b.relu(b.conv(skip, 64, 128, 3, "enc2", stride=2, bias=True), "enc2")
    w, bias = b.normal("up.weight", (128, 64, 2, 2), 0.1), b.normal("up.bias", (64,), 0.1)
    x = b.node("ConvTranspose", [low, w, bias], "up", kernel_shape=[2, 2], strides=[2, 2])
    x = b.relu(b.conv(b.node("Concat", [x, skip], "cat", axis=1), 128, 64, 3, "dec1", bias=True), "dec1")
    out = b.rename_output(b.conv(x, 64, 64, 3, "dec2", bias=True), "output")
    return b.model("unet_up", [("input", [1, 32, 56, 56])], [(out, [1, 64, 56, 56])], 13,
                   "a U-Net decoder step (ConvTranspose k2 s2, skip Concat), random weights (seed 9)")


def convnext_t(depths=(3, 3, 9, 3), dims=(96, 192, 384, 768)):
    """ConvNeXt-T: 7x7 depthwise convs, LayerNorm and the two pointwise layers on NHWC between
    Transposes (MatMul on [1, H, W, C]: 3136 rows by 96 columns in the first stage)."""
    b = GraphBuilder(seed=11)

    def ln_channels(x, c, name):
        t = b.node("Transpose", [x], f"{name}/to_nhwc", perm=[0, 2, 3, 1])
        return b.node("Transpose", [b.layernorm(t, c, name)], f"{name}/to_nchw", perm=[0, 3, 1, 2])

    x = ln_channels(b.conv("input", 3, dims[0], 4, "stem", stride=4, pad=0, bias=True), dims[0], "stem.ln")
    for si, (depth, c) in enumerate(zip(depths, dims)):
        if si > 0:
            x = ln_channels(x, dims[si - 1], f"down{si}.ln")
            x = b.conv(x, dims[si - 1], c, 2, f"down{si}", stride=2, pad=0, bias=True)
        for bi in range(depth):
            p = f"stages.{si}.{bi}"
            y = b.conv(x, c, c, 7, f"{p}.dwconv", group=c, bias=True)
            y = b.layernorm(b.node("Transpose", [y], f"{p}/to_nhwc", perm=[0, 2, 3, 1]), c, f"{p}.norm")
            y = b.linear(b.gelu_erf(b.linear(y, c, 4 * c, f"{p}/pwconv1"), f"{p}/gelu"), 4 * c, c, f"{p}/pwconv2")
            y = b.node("Mul", [y, b.uniform(f"{p}.gamma", (c,), 0.1, 0.3)], f"{p}/gamma")
            x = b.add(x, b.node("Transpose", [y], f"{p}/to_nchw", perm=[0, 3, 1, 2]), p)
    x = b.layernorm(b.node("ReduceMean", [x], "pool", axes=[2, 3], keepdims=0), dims[-1], "head.norm")
    w, bias = b.normal("head.weight", (1000, dims[-1]), 0.02), b.normal("head.bias", (1000,), 0.01)
    out = b.rename_output(b.node("Gemm", [x, w, bias], "head", transB=1), "output")
    return b.model("convnext_t", [("input", [1, 3, 224, 224])], [(out, [1, 1000])], 17,
                   "ConvNeXt-T, random weights (seed 11)")


MORE_MODELS = {"efficientnet_b0": efficientnet_b0, "mobilenetv3": mobilenetv3, "vit_b16": vit_b16,
               "gpt2": gpt2, "yolov8n": yolov8n, "unet_up": unet_up, "convnext_t": convnext_t}
