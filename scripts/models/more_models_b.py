"""A second set of models users bring (session 47's sweep), for the operators and shapes the
benchmark models and more_models.py lack:

    resnext50     ResNeXt-50 32x4d: grouped 3x3 convolutions of 4 to 32 channels a group
                  (opset 13)
    inception_v3  Inception-v3 at 299x299: 1x7/7x1 and 1x3/3x1 kernels, AveragePool 3x3 that
                  counts its padding, branch Concats of 288..2048 channels (opset 13)
    densenet121   DenseNet-121: BatchNorm and Relu before each convolution (not foldable into
                  the one before), Concat growth by 32 channels, AveragePool 2x2 transitions
    shufflenet_v2 ShuffleNetV2 1.0: channel shuffle as Reshape-Transpose-Reshape, Split, 116/232/
                  464 channels (opset 13)
    llama         four LLaMA-style decoder blocks (hidden 1024, 16 heads, sequence 128): RMSNorm
                  from Pow/ReduceMean/Sqrt/Div, rotary embeddings from Slice/Neg/Concat, SwiGLU
                  (opset 17)
    sd_block      a Stable-Diffusion-like UNet block at 32x32 latents: GroupNorm as torch exports
                  it (Reshape, InstanceNormalization, Reshape, Mul, Add), SiLU, a residual block
                  and a 1024-token self-attention with its projections (opset 17)

Random weights from fixed seeds, built with onnx_builder.GraphBuilder like the others.
"""

import math

import numpy as np
from onnx_builder import ALLOWED_OPS, GraphBuilder
from more_models import causal_attention, silu

ALLOWED_OPS.update({"InstanceNormalization", "Neg"})


def conv_hw(b, x, cin, cout, kh, kw, name, bias=False):
    """A stride-1 convolution with a kh x kw kernel padded to keep the size (Inception's 1x7)."""
    fan_in = cin * kh * kw
    w = b.normal(f"{name}.weight", (cout, cin, kh, kw), math.sqrt(2.0 / fan_in))
    ins = [x, w] + ([b.normal(f"{name}.bias", (cout,), 0.1)] if bias else [])
    return b.node("Conv", ins, f"{name}/Conv", dilations=[1, 1], group=1, kernel_shape=[kh, kw],
                  pads=[kh // 2, kw // 2, kh // 2, kw // 2], strides=[1, 1])


def resnext50():
    b = GraphBuilder(seed=21)
    x = b.maxpool(b.relu(b.bn(b.conv("input", 3, 64, 7, "conv1", stride=2), 64, "bn1"), "relu"), "maxpool")
    cin = 64
    for li, (blocks, width, cout, stride) in enumerate([(3, 128, 256, 1), (4, 256, 512, 2),
                                                        (6, 512, 1024, 2), (3, 1024, 2048, 2)]):
        for bi in range(blocks):
            p, s = f"layer{li + 1}.{bi}", (stride if bi == 0 else 1)
            y = b.relu(b.bn(b.conv(x, cin, width, 1, f"{p}.conv1"), width, f"{p}.bn1"), f"{p}.relu1")
            y = b.relu(b.bn(b.conv(y, width, width, 3, f"{p}.conv2", stride=s, group=32), width, f"{p}.bn2"),
                       f"{p}.relu2")
            y = b.bn(b.conv(y, width, cout, 1, f"{p}.conv3"), cout, f"{p}.bn3", gamma=(0.2, 0.5))
            short = x if bi > 0 else b.bn(b.conv(x, cin, cout, 1, f"{p}.downsample", stride=s, pad=0), cout,
                                           f"{p}.downsample.bn")
            x, cin = b.relu(b.add(y, short, p), p), cout
    out = b.rename_output(b.classifier(x, 2048, 1000, "fc"), "output")
    return b.model("resnext50", [("input", [1, 3, 224, 224])], [(out, [1, 1000])], 13,
                   "ResNeXt-50 32x4d, random weights (seed 21), BN not folded")


def inception_v3():
    b = GraphBuilder(seed=23)

    def cbr(x, cin, cout, k, name, stride=1, pad=0):
        if isinstance(k, tuple):
            y = conv_hw(b, x, cin, cout, k[0], k[1], name)
        else:
            y = b.conv(x, cin, cout, k, name, stride=stride, pad=pad)
        return b.relu(b.bn(y, cout, f"{name}.bn", gamma=(0.6, 1.0)), name)

    def avgpool3(x, name):
        return b.node("AveragePool", [x], f"{name}/AveragePool", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                      strides=[1, 1], count_include_pad=1, ceil_mode=0)

    def cat(xs, name):
        return b.node("Concat", xs, f"{name}/Concat", axis=1)

    def block_a(x, cin, pool, name):
        b1 = cbr(x, cin, 64, 1, f"{name}.b1x1")
        b5 = cbr(cbr(x, cin, 48, 1, f"{name}.b5x5_1"), 48, 64, 5, f"{name}.b5x5_2", pad=2)
        b3 = cbr(x, cin, 64, 1, f"{name}.b3x3dbl_1")
        b3 = cbr(cbr(b3, 64, 96, 3, f"{name}.b3x3dbl_2", pad=1), 96, 96, 3, f"{name}.b3x3dbl_3", pad=1)
        bp = cbr(avgpool3(x, f"{name}.pool"), cin, pool, 1, f"{name}.bpool")
        return cat([b1, b5, b3, bp], name), 224 + pool

    def block_b(x, cin, name):
        b3 = cbr(x, cin, 384, 3, f"{name}.b3x3", stride=2)
        bd = cbr(cbr(x, cin, 64, 1, f"{name}.dbl_1"), 64, 96, 3, f"{name}.dbl_2", pad=1)
        bd = cbr(bd, 96, 96, 3, f"{name}.dbl_3", stride=2)
        bp = b.maxpool(x, f"{name}.pool", k=3, stride=2, pad=0)
        return cat([b3, bd, bp], name), 480 + cin

    def block_c(x, c7, name):
        b1 = cbr(x, 768, 192, 1, f"{name}.b1x1")
        b7 = cbr(cbr(x, 768, c7, 1, f"{name}.b7_1"), c7, c7, (1, 7), f"{name}.b7_2")
        b7 = cbr(b7, c7, 192, (7, 1), f"{name}.b7_3")
        bd = cbr(cbr(x, 768, c7, 1, f"{name}.d7_1"), c7, c7, (7, 1), f"{name}.d7_2")
        bd = cbr(cbr(bd, c7, c7, (1, 7), f"{name}.d7_3"), c7, c7, (7, 1), f"{name}.d7_4")
        bd = cbr(bd, c7, 192, (1, 7), f"{name}.d7_5")
        bp = cbr(avgpool3(x, f"{name}.pool"), 768, 192, 1, f"{name}.bpool")
        return cat([b1, b7, bd, bp], name)

    def block_d(x, name):
        b3 = cbr(cbr(x, 768, 192, 1, f"{name}.b3_1"), 192, 320, 3, f"{name}.b3_2", stride=2)
        b7 = cbr(cbr(x, 768, 192, 1, f"{name}.b7_1"), 192, 192, (1, 7), f"{name}.b7_2")
        b7 = cbr(cbr(b7, 192, 192, (7, 1), f"{name}.b7_3"), 192, 192, 3, f"{name}.b7_4", stride=2)
        return cat([b3, b7, b.maxpool(x, f"{name}.pool", k=3, stride=2, pad=0)], name)

    def block_e(x, cin, name):
        b1 = cbr(x, cin, 320, 1, f"{name}.b1x1")
        b3 = cbr(x, cin, 384, 1, f"{name}.b3_1")
        b3 = cat([cbr(b3, 384, 384, (1, 3), f"{name}.b3_2a"), cbr(b3, 384, 384, (3, 1), f"{name}.b3_2b")],
                 f"{name}.b3")
        bd = cbr(cbr(x, cin, 448, 1, f"{name}.d_1"), 448, 384, 3, f"{name}.d_2", pad=1)
        bd = cat([cbr(bd, 384, 384, (1, 3), f"{name}.d_3a"), cbr(bd, 384, 384, (3, 1), f"{name}.d_3b")],
                 f"{name}.d")
        bp = cbr(avgpool3(x, f"{name}.pool"), cin, 192, 1, f"{name}.bpool")
        return cat([b1, b3, bd, bp], name)

    x = cbr("input", 3, 32, 3, "Conv2d_1a", stride=2)
    x = cbr(cbr(x, 32, 32, 3, "Conv2d_2a"), 32, 64, 3, "Conv2d_2b", pad=1)
    x = b.maxpool(x, "maxpool1", k=3, stride=2, pad=0)
    x = cbr(cbr(x, 64, 80, 1, "Conv2d_3b"), 80, 192, 3, "Conv2d_4a")
    x = b.maxpool(x, "maxpool2", k=3, stride=2, pad=0)
    x, c = block_a(x, 192, 32, "Mixed_5b")
    x, c = block_a(x, c, 64, "Mixed_5c")
    x, c = block_a(x, c, 64, "Mixed_5d")
    x, c = block_b(x, c, "Mixed_6a")
    for name, c7 in [("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)]:
        x = block_c(x, c7, name)
    x = block_e(block_e(block_d(x, "Mixed_7a"), 1280, "Mixed_7b"), 2048, "Mixed_7c")
    out = b.rename_output(b.classifier(x, 2048, 1000, "fc"), "output")
    return b.model("inception_v3", [("input", [1, 3, 299, 299])], [(out, [1, 1000])], 13,
                   "Inception-v3, random weights (seed 23), BN not folded")


def densenet121(growth=32, blocks=(6, 12, 24, 16)):
    b = GraphBuilder(seed=25)

    def bn_relu(x, c, name):
        return b.relu(b.bn(x, c, f"{name}.norm", gamma=(0.5, 1.0)), name)

    x = b.maxpool(bn_relu(b.conv("input", 3, 64, 7, "conv0", stride=2), 64, "norm0"), "pool0")
    c = 64
    for bi, n in enumerate(blocks):
        feats = [x]
        for li in range(n):
            p = f"denseblock{bi + 1}.layer{li + 1}"
            y = b.node("Concat", feats, f"{p}/Concat", axis=1) if len(feats) > 1 else feats[0]
            cin = c + li * growth
            y = b.conv(bn_relu(y, cin, f"{p}.1"), cin, 4 * growth, 1, f"{p}.conv1")
            feats.append(b.conv(bn_relu(y, 4 * growth, f"{p}.2"), 4 * growth, growth, 3, f"{p}.conv2"))
        x, c = b.node("Concat", feats, f"denseblock{bi + 1}/Concat", axis=1), c + n * growth
        if bi + 1 < len(blocks):
            p = f"transition{bi + 1}"
            x = b.conv(bn_relu(x, c, p), c, c // 2, 1, f"{p}.conv")
            x = b.node("AveragePool", [x], f"{p}/AveragePool", kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    x = bn_relu(x, c, "norm5")
    out = b.rename_output(b.classifier(x, c, 1000, "classifier"), "output")
    return b.model("densenet121", [("input", [1, 3, 224, 224])], [(out, [1, 1000])], 13,
                   "DenseNet-121, random weights (seed 25), BN not folded")


def shufflenet_v2():
    b = GraphBuilder(seed=27)

    def cbr(x, cin, cout, k, name, stride=1, group=1, relu=True):
        y = b.bn(b.conv(x, cin, cout, k, name, stride=stride, group=group), cout, f"{name}.bn")
        return b.relu(y, name) if relu else y

    def shuffle(x, c, hw, name):
        y = b.node("Reshape", [x, b.int64s(f"{name}.split_shape", [1, 2, c // 2, hw, hw])], f"{name}/Reshape")
        y = b.node("Transpose", [y], f"{name}/Transpose", perm=[0, 2, 1, 3, 4])
        return b.node("Reshape", [y, b.int64s(f"{name}.flat_shape", [1, c, hw, hw])], f"{name}/Reshape_1")

    x = b.maxpool(cbr("input", 3, 24, 3, "conv1", stride=2), "maxpool")
    cin, hw = 24, 56
    for si, (n, c) in enumerate([(4, 116), (8, 232), (4, 464)]):
        for i in range(n):
            p, half = f"stage{si + 2}.{i}", c // 2
            if i == 0:
                hw //= 2
                left = cbr(cbr(x, cin, cin, 3, f"{p}.branch1.0", stride=2, group=cin, relu=False), cin, half, 1,
                           f"{p}.branch1.2")
                right = cbr(x, cin, half, 1, f"{p}.branch2.0")
                right = cbr(right, half, half, 3, f"{p}.branch2.3", stride=2, group=half, relu=False)
            else:
                left, right = b.node("Split", [x, b.int64s(f"{p}.split", [half, half])], f"{p}/Split", n_out=2,
                                     axis=1)
                right = cbr(cbr(right, half, half, 1, f"{p}.branch2.0"), half, half, 3, f"{p}.branch2.3",
                            group=half, relu=False)
            right = cbr(right, half, half, 1, f"{p}.branch2.5")
            x = shuffle(b.node("Concat", [left, right], f"{p}/Concat", axis=1), c, hw, p)
            cin = c
    x = cbr(x, 464, 1024, 1, "conv5")
    out = b.rename_output(b.classifier(x, 1024, 1000, "fc"), "output")
    return b.model("shufflenet_v2", [("input", [1, 3, 224, 224])], [(out, [1, 1000])], 13,
                   "ShuffleNetV2 1.0, random weights (seed 27), BN not folded")


def rms_norm(b, x, dim, name, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) * w, node for node as LLaMA's torch export writes it."""
    ms = b.node("ReduceMean", [b.node("Pow", [x, b.scalar(f"{name}.two", 2.0)], f"{name}/Pow")], f"{name}/ReduceMean",
                axes=[-1], keepdims=1)
    r = b.node("Sqrt", [b.node("Add", [ms, b.scalar(f"{name}.eps", eps)], f"{name}/Add")], f"{name}/Sqrt")
    y = b.node("Mul", [x, b.node("Reciprocal", [r], f"{name}/Reciprocal")], f"{name}/Mul")
    return b.node("Mul", [b.uniform(f"{name}.weight", (dim,), 0.8, 1.2), y], f"{name}/Mul_1")


def rotary(b, x, cos, sin, d, name):
    """x * cos + rotate_half(x) * sin on [1, heads, seq, d]; rotate_half from two Slices, Neg, Concat."""
    ax, half = b.int64s(f"{name}.axis", [3]), d // 2
    x1 = b.node("Slice", [x, b.int64s(f"{name}.s0", [0]), b.int64s(f"{name}.e0", [half]), ax], f"{name}/Slice")
    x2 = b.node("Slice", [x, b.int64s(f"{name}.s1", [half]), b.int64s(f"{name}.e1", [d]), ax], f"{name}/Slice_1")
    rot = b.node("Concat", [b.node("Neg", [x2], f"{name}/Neg"), x1], f"{name}/Concat", axis=-1)
    return b.node("Add", [b.node("Mul", [x, cos], f"{name}/Mul"), b.node("Mul", [rot, sin], f"{name}/Mul_1")],
                  f"{name}/Add")


def llama(layers=4, seq=128, hidden=1024, heads=16, ffn=2816):
    b = GraphBuilder(seed=29)
    d = hidden // heads
    inv = 1.0 / (10000 ** (np.arange(0, d, 2) / d))
    ang = np.outer(np.arange(seq), inv)
    ang = np.concatenate([ang, ang], axis=-1)[None, None]
    cos, sin = b.init("rope.cos", np.cos(ang).astype(np.float32)), b.init("rope.sin", np.sin(ang).astype(np.float32))
    mask = b.init("causal_mask", np.triu(np.full((seq, seq), -1e9, dtype=np.float32), 1)[None, None])

    def proj(x, din, dout, name):
        return b.node("MatMul", [x, b.normal(f"{name}.weight_t", (din, dout), 0.02)], f"{name}/MatMul")

    x = "x"
    for i in range(layers):
        p = f"layers.{i}"
        to_heads = b.int64s(f"{p}.heads_shape", [1, seq, heads, d])
        h = rms_norm(b, x, hidden, f"{p}.input_layernorm")
        q, k, v = (b.node("Transpose", [b.node("Reshape", [proj(h, hidden, hidden, f"{p}.{t}_proj"), to_heads],
                                               f"{p}/{t}/Reshape")], f"{p}/{t}/Transpose", perm=[0, 2, 1, 3])
                   for t in "qkv")
        q, k = rotary(b, q, cos, sin, d, f"{p}/q_rope"), rotary(b, k, cos, sin, d, f"{p}/k_rope")
        k = b.node("Transpose", [k], f"{p}/k/Transpose_1", perm=[0, 1, 3, 2])
        a = causal_attention(b, q, k, v, mask, d, [1, seq, hidden], p)
        x = b.add(x, proj(a, hidden, hidden, f"{p}.o_proj"), f"{p}/attn_residual")
        h = rms_norm(b, x, hidden, f"{p}.post_attention_layernorm")
        g = silu(b, proj(h, hidden, ffn, f"{p}.gate_proj"), f"{p}/act")
        h = proj(b.node("Mul", [g, proj(h, hidden, ffn, f"{p}.up_proj")], f"{p}/glu"), ffn, hidden, f"{p}.down_proj")
        x = b.add(x, h, f"{p}/mlp_residual")
    out = b.rename_output(rms_norm(b, x, hidden, "norm"), "y")
    return b.model("llama", [("x", [1, seq, hidden])], [(out, [1, seq, hidden])], 17,
                   "four LLaMA-style decoder blocks (RMSNorm, RoPE, SwiGLU, causal), random weights (seed 29)")


def group_norm(b, x, c, hw, name, groups=32, eps=1e-5):
    """GroupNorm as torch.onnx exports it below opset 18: InstanceNormalization over
    [1, groups, c/groups*h*w] with unit scale, then the per-channel affine."""
    y = b.node("Reshape", [x, b.int64s(f"{name}.grouped", [1, groups, -1])], f"{name}/Reshape")
    one = b.init(f"{name}.ones", np.ones(groups, dtype=np.float32))
    zero = b.init(f"{name}.zeros", np.zeros(groups, dtype=np.float32))
    y = b.node("InstanceNormalization", [y, one, zero], f"{name}/InstanceNormalization", epsilon=eps)
    y = b.node("Reshape", [y, b.int64s(f"{name}.shape", [1, c, hw, hw])], f"{name}/Reshape_1")
    y = b.node("Mul", [y, b.uniform(f"{name}.weight", (c, 1, 1), 0.8, 1.2)], f"{name}/Mul")
    return b.node("Add", [y, b.uniform(f"{name}.bias", (c, 1, 1), -0.1, 0.1)], f"{name}/Add")


def sd_block(c=320, hw=32, heads=8):
    b = GraphBuilder(seed=31)
    n, d = hw * hw, c // heads

    def resblock(x, name):
        y = b.conv(silu(b, group_norm(b, x, c, hw, f"{name}.norm1"), f"{name}.act1"), c, c, 3, f"{name}.conv1",
                   bias=True)
        y = b.conv(silu(b, group_norm(b, y, c, hw, f"{name}.norm2"), f"{name}.act2"), c, c, 3, f"{name}.conv2",
                   bias=True)
        return b.add(x, y, name)

    x = resblock("input", "resnets.0")
    h = group_norm(b, x, c, hw, "attn.norm")
    h = b.conv(h, c, c, 1, "attn.proj_in", bias=True)
    h = b.node("Reshape", [b.node("Transpose", [h], "attn/to_tokens", perm=[0, 2, 3, 1]),
                           b.int64s("attn.tokens", [1, n, c])], "attn/Reshape")
    t = b.layernorm(h, c, "attn.norm1")
    to_heads = b.int64s("attn.heads_shape", [1, n, heads, d])
    q, k, v = (b.node("Transpose", [b.node("Reshape", [b.node("MatMul", [t, b.normal(f"attn.to_{s}", (c, c), 0.05)],
                                                               f"attn/{s}/MatMul"), to_heads], f"attn/{s}/Reshape")],
                      f"attn/{s}/Transpose", perm=perm) for s, perm in
               [("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])])
    s = b.node("Mul", [b.node("MatMul", [q, k], "attn/scores/MatMul"), b.scalar("attn.scale", 1 / math.sqrt(d))],
               "attn/scores/Mul")
    a = b.node("MatMul", [b.node("Softmax", [s], "attn/Softmax", axis=-1), v], "attn/context/MatMul")
    a = b.node("Reshape", [b.node("Transpose", [a], "attn/context/Transpose", perm=[0, 2, 1, 3]),
                           b.int64s("attn.hidden", [1, n, c])], "attn/context/Reshape")
    h = b.add(h, b.linear(a, c, c, "attn/to_out"), "attn/attn_residual")
    t = b.layernorm(h, c, "attn.norm3")
    t = b.linear(b.gelu_erf(b.linear(t, c, 4 * c, "attn/ff1"), "attn/gelu"), 4 * c, c, "attn/ff2")
    h = b.add(h, t, "attn/ff_residual")
    h = b.node("Transpose", [b.node("Reshape", [h, b.int64s("attn.grid", [1, hw, hw, c])], "attn/Reshape_1")],
               "attn/to_nchw", perm=[0, 3, 1, 2])
    x = b.add(x, b.conv(h, c, c, 1, "attn.proj_out", bias=True), "attn")
    out = b.rename_output(resblock(x, "resnets.1"), "output")
    return b.model("sd_block", [("input", [1, c, hw, hw])], [(out, [1, c, hw, hw])], 17,
                   "a Stable-Diffusion-like UNet block (GroupNorm, SiLU, 1024-token attention), random weights (seed 31)")


MORE_MODELS_B = {"resnext50": resnext50, "inception_v3": inception_v3, "densenet121": densenet121,
                 "shufflenet_v2": shufflenet_v2, "llama": llama, "sd_block": sd_block}
