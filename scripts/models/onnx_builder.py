"""Small helper for writing ONNX graphs node by node with onnx.helper.

Shared by gen_test_models.py and gen_bench_models.py so that the committed test models
and the benchmark models are built from the same layer code (a CNN block in the test
model is the same node pattern as in ResNet-50/MobileNetV2, the encoder layer the same
as in BERT). Every op emitted here is in the set Loom's graph/ shape inference knows.
"""

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class GraphBuilder:
    """Collects nodes and initializers; weights come from one seeded generator so a model
    is the same byte for byte on every run."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self._used = set()
        self._count = {}

    # ---- names -------------------------------------------------------------------
    def _unique(self, name):
        if name not in self._used:
            self._used.add(name)
            return name
        i = self._count.get(name, 1)
        while f"{name}_{i}" in self._used:
            i += 1
        self._count[name] = i + 1
        self._used.add(f"{name}_{i}")
        return f"{name}_{i}"

    # ---- initializers ------------------------------------------------------------
    def init(self, name, array):
        name = self._unique(name)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def normal(self, name, shape, std):
        return self.init(name, (self.rng.standard_normal(shape) * std).astype(np.float32))

    def uniform(self, name, shape, lo, hi):
        return self.init(name, self.rng.uniform(lo, hi, shape).astype(np.float32))

    def scalar(self, name, value):
        return self.init(name, np.array(value, dtype=np.float32))

    def int64s(self, name, values):
        return self.init(name, np.array(values, dtype=np.int64))

    # ---- nodes -------------------------------------------------------------------
    def node(self, op, inputs, name, n_out=1, **attrs):
        name = self._unique(name)
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    # ---- CNN layers --------------------------------------------------------------
    def conv(self, x, cin, cout, k, name, stride=1, pad=None, group=1, bias=False):
        pad = k // 2 if pad is None else pad
        # He initialisation keeps activation scale roughly constant through ReLU stacks.
        fan_in = (cin // group) * k * k
        w = self.normal(f"{name}.weight", (cout, cin // group, k, k), math.sqrt(2.0 / fan_in))
        ins = [x, w]
        if bias:
            ins.append(self.normal(f"{name}.bias", (cout,), 0.1))
        return self.node("Conv", ins, f"{name}/Conv", dilations=[1, 1], group=group,
                         kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride])

    def bn(self, x, c, name, gamma=(0.5, 1.5)):
        # Non-trivial running statistics so an executor that skips or mis-folds BN is caught.
        s = self.uniform(f"{name}.weight", (c,), *gamma)
        b = self.uniform(f"{name}.bias", (c,), -0.2, 0.2)
        m = self.uniform(f"{name}.running_mean", (c,), -0.2, 0.2)
        v = self.uniform(f"{name}.running_var", (c,), 0.5, 1.5)
        return self.node("BatchNormalization", [x, s, b, m, v],
                         f"{name}/BatchNormalization", epsilon=1e-5, momentum=0.9)

    def relu(self, x, name):
        return self.node("Relu", [x], f"{name}/Relu")

    def relu6(self, x, name):
        # Opset >= 11 Clip takes min/max as inputs, which is how torch exports ReLU6.
        lo = self.scalar(f"{name}.clip_min", 0.0)
        hi = self.scalar(f"{name}.clip_max", 6.0)
        return self.node("Clip", [x, lo, hi], f"{name}/Clip")

    def add(self, a, b, name):
        return self.node("Add", [a, b], f"{name}/Add")

    def maxpool(self, x, name, k=3, stride=2, pad=1):
        return self.node("MaxPool", [x], f"{name}/MaxPool", ceil_mode=0, kernel_shape=[k, k],
                         pads=[pad] * 4, strides=[stride, stride])

    def classifier(self, x, cin, classes, name):
        x = self.node("GlobalAveragePool", [x], f"{name}/GlobalAveragePool")
        x = self.node("Flatten", [x], f"{name}/Flatten", axis=1)
        w = self.normal(f"{name}.weight", (classes, cin), 1.0 / math.sqrt(cin))
        b = self.normal(f"{name}.bias", (classes,), 0.01)
        return self.node("Gemm", [x, w, b], f"{name}/Gemm", alpha=1.0, beta=1.0, transB=1)

    # ---- transformer layers ------------------------------------------------------
    def linear(self, x, din, dout, name, std=0.02):
        # torch exports nn.Linear on a 3-D input as MatMul with the transposed weight + Add.
        w = self.normal(f"{name}.weight_t", (din, dout), std)
        b = self.normal(f"{name}.bias", (dout,), std)
        y = self.node("MatMul", [x, w], f"{name}/MatMul")
        return self.node("Add", [b, y], f"{name}/Add")

    def layernorm(self, x, dim, name):
        s = self.uniform(f"{name}.weight", (dim,), 0.8, 1.2)
        b = self.uniform(f"{name}.bias", (dim,), -0.1, 0.1)
        return self.node("LayerNormalization", [x, s, b], f"{name}/LayerNormalization",
                         axis=-1, epsilon=1e-5)

    def gelu_erf(self, x, name):
        # gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))), node for node as torch.onnx writes it.
        r2 = self.scalar(f"{name}.sqrt2", math.sqrt(2.0))
        one = self.scalar(f"{name}.one", 1.0)
        half = self.scalar(f"{name}.half", 0.5)
        t = self.node("Div", [x, r2], f"{name}/Div")
        t = self.node("Erf", [t], f"{name}/Erf")
        t = self.node("Add", [t, one], f"{name}/Add")
        t = self.node("Mul", [x, t], f"{name}/Mul")
        return self.node("Mul", [t, half], f"{name}/Mul_1")

    def encoder_layer(self, x, batch, seq, hidden, heads, ffn, name):
        """Post-norm encoder layer (nn.TransformerEncoderLayer / BERT layer order)."""
        d = hidden // heads
        to_heads = self.int64s(f"{name}.heads_shape", [batch, seq, heads, d])
        to_hidden = self.int64s(f"{name}.hidden_shape", [batch, seq, hidden])
        q = self.linear(x, hidden, hidden, f"{name}/q_proj")
        k = self.linear(x, hidden, hidden, f"{name}/k_proj")
        v = self.linear(x, hidden, hidden, f"{name}/v_proj")
        q = self.node("Reshape", [q, to_heads], f"{name}/q/Reshape")
        q = self.node("Transpose", [q], f"{name}/q/Transpose", perm=[0, 2, 1, 3])
        k = self.node("Reshape", [k, to_heads], f"{name}/k/Reshape")
        k = self.node("Transpose", [k], f"{name}/k/Transpose", perm=[0, 2, 3, 1])
        v = self.node("Reshape", [v, to_heads], f"{name}/v/Reshape")
        v = self.node("Transpose", [v], f"{name}/v/Transpose", perm=[0, 2, 1, 3])
        s = self.node("MatMul", [q, k], f"{name}/scores/MatMul")
        s = self.node("Div", [s, self.scalar(f"{name}.scale", math.sqrt(d))], f"{name}/scores/Div")
        p = self.node("Softmax", [s], f"{name}/Softmax", axis=-1)
        c = self.node("MatMul", [p, v], f"{name}/context/MatMul")
        c = self.node("Transpose", [c], f"{name}/context/Transpose", perm=[0, 2, 1, 3])
        c = self.node("Reshape", [c, to_hidden], f"{name}/context/Reshape")
        o = self.linear(c, hidden, hidden, f"{name}/out_proj")
        x = self.layernorm(self.add(x, o, f"{name}/attn_residual"), hidden, f"{name}/norm1")
        f = self.linear(x, hidden, ffn, f"{name}/linear1")
        f = self.gelu_erf(f, f"{name}/gelu")
        f = self.linear(f, ffn, hidden, f"{name}/linear2")
        return self.layernorm(self.add(x, f, f"{name}/ffn_residual"), hidden, f"{name}/norm2")

    # ---- model -------------------------------------------------------------------
    def model(self, graph_name, inputs, outputs, opset, doc):
        """inputs/outputs: lists of (name, shape) float32 tensors (see rename_output)."""
        g = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            initializer=self.inits)
        g.doc_string = doc
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="loom-gen-models", producer_version="1")
        # IR version 8 is what opsets 13-17 shipped with; every reader of those opsets takes it.
        m.ir_version = 8
        return m

    def rename_output(self, old, new):
        """Makes the last node writing `old` write the graph output name `new` instead."""
        for n in reversed(self.nodes):
            for i, o in enumerate(n.output):
                if o == old:
                    n.output[i] = new
                    return new
        raise KeyError(old)


ALLOWED_OPS = {
    "Conv", "Gemm", "MatMul", "BatchNormalization", "Relu", "Clip", "Sigmoid", "Tanh", "Erf",
    "HardSwish", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "MaxPool",
    "AveragePool", "GlobalAveragePool", "Flatten", "Reshape", "Transpose", "Concat", "Split",
    "Slice", "Gather", "Squeeze", "Unsqueeze", "Softmax", "LayerNormalization", "ReduceMean",
    "ReduceSum", "Cast", "Where", "Shape", "Constant", "ConstantOfShape", "Identity",
}


def check(model):
    """checker + strict shape inference + op whitelist; returns {op: count}."""
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                 data_prop=True)
    counts = {}
    for n in model.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    bad = sorted(set(counts) - ALLOWED_OPS)
    if bad:
        raise ValueError(f"ops outside Loom's supported set: {bad}")
    # Every intermediate must come out of inference fully static: Loom needs static shapes.
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if not vi.type.tensor_type.HasField("shape") or any(not d.HasField("dim_value") for d in dims):
            raise ValueError(f"tensor '{vi.name}' has no static shape after inference")
    known = {vi.name for vi in inferred.graph.value_info} | {o.name for o in model.graph.output}
    missing = [o for n in model.graph.node for o in n.output if o not in known]
    if missing:
        raise ValueError(f"shape inference left tensors without a shape: {missing[:5]}")
    return counts
