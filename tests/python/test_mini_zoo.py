"""The CI mini-zoo: small models in the shapes exporters write, against onnxruntime. With
test_control_flow.py (If/Loop/Scan), test_sequences.py (sequences, optionals, strings) and
test_dynamic_shapes.py (symbolic dims, Resize from computed sizes) it covers the families real models bring: recurrent layers and 1-D conv audio
front ends here."""

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")

RNG = np.random.default_rng(5)


def init(name, shape, scale=0.3):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def check(proto, feeds, backend="", tol=1e-4):
    data = proto.SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = lumen.load_onnx(data).compile(backend=backend).run(feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=tol * max(1.0, float(np.abs(w).max())))


def vad_like(cell):
    """A voice-activity-detector shape: 1-D conv front end over [batch, 1, samples], then a
    recurrent layer over the frames (state in and out), a linear head and a sigmoid."""
    hidden, gates = 16, {"LSTM": 4, "GRU": 3}[cell]
    nodes = [
        helper.make_node("Conv", ["audio", "cw", "cb"], ["feat"], strides=[4], pads=[3, 3]),
        helper.make_node("Relu", ["feat"], ["feat_r"]),
        helper.make_node("Transpose", ["feat_r"], ["seq"], perm=[2, 0, 1]),  # [frames, batch, 8]
    ]
    rnn_inputs = ["seq", "W", "R", "B", "", "h0"] + (["c0"] if cell == "LSTM" else [])
    rnn_outputs = ["ys", "hn"] + (["cn"] if cell == "LSTM" else [])
    nodes.append(helper.make_node(cell, rnn_inputs, rnn_outputs, hidden_size=hidden))
    nodes += [helper.make_node("Squeeze", ["ys", "one"], ["ys2"]),  # [frames, batch, hidden]
              helper.make_node("MatMul", ["ys2", "head"], ["logit"]),
              helper.make_node("Sigmoid", ["logit"], ["prob"])]
    inits = [init("cw", (8, 1, 8)), init("cb", (8,), 0.1), init("W", (1, gates * hidden, 8)),
             init("R", (1, gates * hidden, hidden)), init("B", (1, 2 * gates * hidden), 0.1),
             init("head", (hidden, 1)), numpy_helper.from_array(np.array([1], np.int64), "one")]
    inputs = [helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["batch", 1, "samples"]),
              helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, "batch", hidden])]
    if cell == "LSTM":
        inputs.append(helper.make_tensor_value_info("c0", TensorProto.FLOAT, [1, "batch", hidden]))
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["prob", "hn"]]
    graph = helper.make_graph(nodes, "vad", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), hidden


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_conv1d_front_end_and_recurrent_layer(cell):
    proto, hidden = vad_like(cell)
    for batch, samples in [(1, 512), (3, 200)]:
        feeds = {"audio": RNG.standard_normal((batch, 1, samples)).astype(np.float32),
                 "h0": RNG.standard_normal((1, batch, hidden)).astype(np.float32) * 0.5}
        if cell == "LSTM":
            feeds["c0"] = RNG.standard_normal((1, batch, hidden)).astype(np.float32) * 0.5
        check(proto, feeds, backend="cpu")


@pytest.mark.parametrize("kernel,stride,dilation,group", [(5, 1, 1, 1), (10, 5, 1, 1),
                                                          (3, 2, 2, 4), (7, 1, 1, 8)])
def test_conv1d_on_cpu(kernel, stride, dilation, group):
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[stride],
                              dilations=[dilation], group=group, pads=[2, 1])]
    graph = helper.make_graph(nodes, "conv1d", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["N", 8, "T"])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], [init("w", (16, 8 // group, kernel)),
                                               init("b", (16,), 0.2)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    check(proto, {"x": RNG.standard_normal((2, 8, 64)).astype(np.float32)}, backend="cpu")


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("MaxPool", dict(kernel_shape=[4], strides=[3], dilations=[2], ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[5], strides=[2], pads=[2, 1])),
    ("AveragePool", dict(kernel_shape=[3], strides=[1], pads=[1, 1], count_include_pad=1)),
])
def test_pool1d_runs_as_pool2d(op, attrs):
    """1-D pools (audio front ends) run on the 2-D pooling kernels over [N, C, 1, L], with symbolic
    dims, and match onnxruntime."""
    nodes = [helper.make_node(op, ["x"], ["y"], **attrs)]
    graph = helper.make_graph(nodes, "pool1d", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["N", 8, "T"])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    check(proto, {"x": RNG.standard_normal((2, 8, 61)).astype(np.float32)})
    steps = lumen.load_onnx(proto.SerializeToString()).compile().executable.steps
    assert {s.op for s in steps} & {"max_pool2d", "avg_pool2d"}, [s.op for s in steps]


def test_dynamically_quantized_mlp(tmp_path):
    """onnxruntime's quantize_dynamic output (DynamicQuantizeLinear, MatMulInteger, Cast, Mul) runs
    on CPU kernels only and matches onnxruntime."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["N", 300])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], [init("w1", (300, 280)), init("b1", (280,), 0.2),
                                               init("w2", (280, 40))])
    src, dst = tmp_path / "mlp.onnx", tmp_path / "mlp_int8.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    quantization.quantize_dynamic(str(src), str(dst), weight_type=quantization.QuantType.QInt8)
    proto = onnx.load(str(dst))
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= {n.op_type for n in proto.graph.node}
    check(proto, {"x": RNG.standard_normal((5, 300)).astype(np.float32)}, tol=1e-5)
    steps = lumen.load_onnx(proto.SerializeToString()).compile().executable.steps
    assert [(s.op, s.node) for s in steps if s.backend == "reference"] == []
