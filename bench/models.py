"""The benchmark suite's models: the ONNX package's light models plus networks built here with
onnx.helper and random weights (fixed seed, opset 17).

Generated files are cached in bench/.models/ (not in git) under a name that carries the builder's
parameters and BUILDER_VERSION, so changing either builds a fresh file. Every builder takes its
sizes as parameters, so tests can build tiny versions.

    from models import SUITE, model_path
    path = model_path(SUITE["minilm"])         # builds bench/.models/minilm-....onnx once
"""

import glob
import math
import os
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BUILDER_VERSION = 1  # bump when a builder's output changes, to invalidate cached files
OPSET = 17
CACHE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".models")
LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


class GraphBuilder:
    """Collects nodes and initializers with unique names; ``op`` returns the output's name."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.initializers, self.inputs = [], [], []
        self._count = 0

    def _name(self, prefix):
        self._count += 1
        return f"{prefix}_{self._count}"

    def input(self, name, elem_type, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def const(self, prefix, array):
        name = self._name(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, prefix, shape, std):
        return self.const(prefix, (self.rng.standard_normal(shape) * std).astype(np.float32))

    def op(self, op_type, inputs, prefix=None, **attrs):
        out = self._name(prefix or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def model(self, name, outputs):
        """The model with ``outputs`` (name, elem_type, shape) triples as graph outputs."""
        graph = helper.make_graph(
            self.nodes, name, self.inputs,
            [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="lumen-bench")
        model.ir_version = 8  # what opset 17 needs; readable by older onnxruntime too
        return model


# --- Convolutional ---------------------------------------------------------------------------

def _conv_bn(b, x, cin, cout, kernel, stride, group=1, relu6=True):
    """Conv (no bias) + BatchNormalization (+ Clip(0, 6)), He-initialized so activations keep
    their scale through the network."""
    fan_in = cin // group * kernel * kernel
    w = b.weight("conv_w", (cout, cin // group, kernel, kernel), math.sqrt(2.0 / fan_in))
    pad = kernel // 2
    y = b.op("Conv", [x, w], "conv", kernel_shape=[kernel, kernel], strides=[stride, stride],
             pads=[pad] * 4, group=group)
    bn = [b.const("bn_scale", (1 + 0.1 * b.rng.standard_normal(cout)).astype(np.float32)),
          b.const("bn_bias", (0.1 * b.rng.standard_normal(cout)).astype(np.float32)),
          b.const("bn_mean", (0.1 * b.rng.standard_normal(cout)).astype(np.float32)),
          b.const("bn_var", b.rng.uniform(0.5, 1.5, cout).astype(np.float32))]
    y = b.op("BatchNormalization", [y, *bn], "bn", epsilon=1e-5)
    if relu6:
        y = b.op("Clip", [y, b.const("zero", np.float32(0)), b.const("six", np.float32(6))],
                 "relu6")
    return y


# The standard MobileNetV2 table: expansion t, output channels c, repeats n, first stride s.
MOBILENET_V2_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2(path, resolution=224, width=1.0, classes=1000, blocks=MOBILENET_V2_BLOCKS,
                 seed=0):
    """MobileNetV2: stem 3x3/2 conv, inverted residual blocks (1x1 expand, 3x3 depthwise, 1x1
    linear projection, residual Add at stride 1 with equal channels), 1x1 conv to 1280,
    GlobalAveragePool, Flatten, Gemm."""
    b = GraphBuilder(seed)
    x = b.input("input", TensorProto.FLOAT, [1, 3, resolution, resolution])

    def ch(c):
        return max(8, int(c * width + 4) // 8 * 8)

    cin = ch(32)
    x = _conv_bn(b, x, 3, cin, 3, 2)
    for t, c, n, s in blocks:
        cout = ch(c)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = _conv_bn(b, x, cin, hidden, 1, 1) if t != 1 else x
            y = _conv_bn(b, y, hidden, hidden, 3, stride, group=hidden)
            y = _conv_bn(b, y, hidden, cout, 1, 1, relu6=False)
            x = b.op("Add", [x, y], "residual") if stride == 1 and cin == cout else y
            cin = cout
    last = max(1280, ch(1280))
    x = _conv_bn(b, x, cin, last, 1, 1)
    x = b.op("GlobalAveragePool", [x], "pool")
    x = b.op("Flatten", [x], "flatten", axis=1)
    w = b.weight("fc_w", (classes, last), math.sqrt(1.0 / last))
    x = b.op("Gemm", [x, w, b.const("fc_b", np.zeros(classes, np.float32))], "fc", transB=1)
    _save(b.model("mobilenet_v2", [(x, TensorProto.FLOAT, [1, classes])]), path)


# --- Transformer encoders --------------------------------------------------------------------

def bert_encoder(path, layers=12, hidden=768, heads=12, ffn=3072, seq=128, vocab=8192, seed=0):
    """A BERT-style encoder as exporters write it (no fused ops): word + position embeddings,
    LayerNormalization, then per layer Q/K/V MatMul+Add, Reshape/Transpose to heads, QK^T,
    scale, Softmax, x V, merge heads, output projection, residual + LayerNorm, FFN with
    GELU = x * 0.5 * (1 + Erf(x / sqrt(2))), residual + LayerNorm. Weights N(0, 0.02), as BERT
    initializes them. Input: int64 token ids [1, seq]; output: the last hidden state."""
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    head_dim = hidden // heads
    b = GraphBuilder(seed)
    ids = b.input("input_ids", TensorProto.INT64, [1, seq])

    def linear(x, fan_in, fan_out):
        y = b.op("MatMul", [x, b.weight("w", (fan_in, fan_out), 0.02)], "matmul")
        return b.op("Add", [y, b.weight("b", (fan_out,), 0.02)], "bias")

    def layer_norm(x):
        return b.op("LayerNormalization",
                    [x, b.const("ln_scale", np.ones(hidden, np.float32)),
                     b.const("ln_bias", np.zeros(hidden, np.float32))],
                    "layernorm", axis=-1, epsilon=1e-12)

    split = b.const("split_heads", np.array([1, seq, heads, head_dim], np.int64))
    merge = b.const("merge_heads", np.array([1, seq, hidden], np.int64))
    x = b.op("Gather", [b.weight("word_embedding", (vocab, hidden), 0.02), ids], "embed", axis=0)
    x = b.op("Add", [x, b.weight("position_embedding", (1, seq, hidden), 0.02)], "embed_pos")
    def heads_of(t, perm):
        return b.op("Transpose", [b.op("Reshape", [t, split], "reshape")], "transpose", perm=perm)

    x = layer_norm(x)
    for _ in range(layers):
        q = heads_of(linear(x, hidden, hidden), [0, 2, 1, 3])  # [1, heads, seq, head_dim]
        k = heads_of(linear(x, hidden, hidden), [0, 2, 3, 1])  # [1, heads, head_dim, seq]
        v = heads_of(linear(x, hidden, hidden), [0, 2, 1, 3])
        scores = b.op("MatMul", [q, k], "qk")
        scores = b.op("Mul", [scores, b.const("scale", np.float32(1 / math.sqrt(head_dim)))],
                      "scale")
        probs = b.op("Softmax", [scores], "softmax", axis=-1)
        context = b.op("MatMul", [probs, v], "context")
        context = b.op("Transpose", [context], "transpose", perm=[0, 2, 1, 3])
        context = b.op("Reshape", [context, merge], "reshape")
        x = layer_norm(b.op("Add", [x, linear(context, hidden, hidden)], "residual"))
        h = linear(x, hidden, ffn)
        erf = b.op("Erf", [b.op("Div", [h, b.const("sqrt2", np.float32(math.sqrt(2)))], "div")])
        gelu = b.op("Mul", [h, b.op("Add", [erf, b.const("one", np.float32(1))], "add")], "mul")
        gelu = b.op("Mul", [gelu, b.const("half", np.float32(0.5))], "gelu")
        x = layer_norm(b.op("Add", [x, linear(gelu, ffn, hidden)], "residual"))
    _save(b.model("bert_encoder", [(x, TensorProto.FLOAT, [1, seq, hidden])]), path)


# --- Dense and element-wise ------------------------------------------------------------------

def mlp(path, layers=20, width=1024, batch=64, seed=0):
    """``layers`` x (MatMul + Add + Relu) at ``width``, He-initialized."""
    b = GraphBuilder(seed)
    x = b.input("input", TensorProto.FLOAT, [batch, width])
    for _ in range(layers):
        y = b.op("MatMul", [x, b.weight("w", (width, width), math.sqrt(2.0 / width))], "matmul")
        y = b.op("Add", [y, b.weight("b", (width,), 0.02)], "bias")
        x = b.op("Relu", [y], "relu")
    _save(b.model("mlp", [(x, TensorProto.FLOAT, [batch, width])]), path)


def gemm(path, n, seed=0):
    """One square float32 MatMul: input A [n, n] times an initializer B [n, n]."""
    b = GraphBuilder(seed)
    a = b.input("a", TensorProto.FLOAT, [n, n])
    y = b.op("MatMul", [a, b.weight("b", (n, n), 1 / math.sqrt(n))], "matmul")
    _save(b.model(f"gemm_{n}", [(y, TensorProto.FLOAT, [n, n])]), path)


CHAIN_OPS = ("Add", "Mul", "Relu", "Sigmoid", "Sub", "Tanh")


def elementwise_chain(path, nodes=200, width=256, seed=0):
    """``nodes`` small element-wise ops in a row (CHAIN_OPS in turn; the binary ones take a
    [width] constant) on a [1, width] input: the time per node is dispatch overhead."""
    b = GraphBuilder(seed)
    x = b.input("input", TensorProto.FLOAT, [1, width])
    for i in range(nodes):
        op = CHAIN_OPS[i % len(CHAIN_OPS)]
        if op in ("Add", "Sub"):
            x = b.op(op, [x, b.weight("c", (width,), 0.1)])
        elif op == "Mul":
            x = b.op(op, [x, b.const("c", b.rng.uniform(0.5, 1.5, width).astype(np.float32))])
        else:
            x = b.op(op, [x])
    _save(b.model("elementwise_chain", [(x, TensorProto.FLOAT, [1, width])]), path)


def _save(model, path):
    """Checks and writes ``model`` atomically, so an interrupted build leaves no half file."""
    onnx.checker.check_model(model)
    tmp = f"{path}.tmp{os.getpid()}"
    onnx.save(model, tmp)
    os.replace(tmp, path)


# --- The suite -------------------------------------------------------------------------------

@dataclass
class SuiteModel:
    """One suite entry: a light model of the onnx package (``light``) or a builder call."""
    name: str
    build: object = None  # builder function, called as build(path, **params)
    params: dict = field(default_factory=dict)
    light: str = ""  # file name in LIGHT_DIR
    heavy: bool = False  # left out by --quick
    nodes: int = 0  # ONNX nodes, for the per-node dispatch figure (element-wise chain)


def _light(name, file, heavy=False):
    return SuiteModel(name, light=file, heavy=heavy)


SUITE = {m.name: m for m in (
    _light("resnet50", "light_resnet50.onnx"),
    _light("densenet121", "light_densenet121.onnx"),
    _light("inception_v1", "light_inception_v1.onnx"),
    _light("inception_v2", "light_inception_v2.onnx"),
    _light("squeezenet", "light_squeezenet.onnx"),
    _light("shufflenet", "light_shufflenet.onnx"),
    _light("vgg19", "light_vgg19.onnx", heavy=True),
    _light("alexnet", "light_bvlc_alexnet.onnx"),
    _light("zfnet512", "light_zfnet512.onnx"),
    SuiteModel("mobilenet_v2", mobilenet_v2),
    SuiteModel("bert_base", bert_encoder, heavy=True,
               params=dict(layers=12, hidden=768, heads=12, ffn=3072, seq=128, vocab=8192)),
    SuiteModel("minilm", bert_encoder,
               params=dict(layers=6, hidden=384, heads=12, ffn=1536, seq=128, vocab=8192)),
    SuiteModel("mlp20", mlp, params=dict(layers=20, width=1024, batch=64)),
    SuiteModel("gemm256", gemm, params=dict(n=256)),
    SuiteModel("gemm1024", gemm, params=dict(n=1024)),
    SuiteModel("gemm4096", gemm, params=dict(n=4096), heavy=True),
    SuiteModel("ew_chain200", elementwise_chain, params=dict(nodes=200, width=256), nodes=200),
)}


def model_path(entry, cache_dir=CACHE_DIR):
    """The .onnx file of a suite entry, building (and caching) a generated model first."""
    if entry.light:
        path = os.path.join(LIGHT_DIR, entry.light)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: not in this onnx package")
        return path
    tag = "".join(f"-{k}{v}" for k, v in sorted(entry.params.items()))
    path = os.path.join(cache_dir, f"{entry.name}{tag}-v{BUILDER_VERSION}.onnx")
    if not os.path.exists(path):
        os.makedirs(cache_dir, exist_ok=True)
        for stale in glob.glob(os.path.join(cache_dir, f"{entry.name}-*.onnx")):
            os.remove(stale)
        entry.build(path, **entry.params)
    return path
