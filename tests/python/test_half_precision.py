"""Half-precision models: every node placed on the CPU backend, the float16/bfloat16 nodes it has
no kernel for run in float32 between one cast in and one cast out. The oracle is the same model
in float32 (weights holding the same values), its output rounded once: equal bit for bit."""
import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def cnn(dtype, weights, batch="N"):
    """conv 3x3 + relu, depthwise 5x5 stride 2, global pool, flatten, matmul + bias, softmax:
    a symbolic batch, weights of non-trivial size and non-zero biases."""
    elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    inits = [numpy_helper.from_array(w.astype(dtype), name) for name, w in weights.items()]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[2, 2, 2, 2], group=32,
                         strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "w3"], ["m"]),
        helper.make_node("Add", ["m", "b3"], ["a"]),
        helper.make_node("Softmax", ["a"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(nodes, "half", [helper.make_tensor_value_info(
        "x", elem, [batch, 16, 20, 20])], [helper.make_tensor_value_info("y", elem, [batch, 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def weights():
    rng = np.random.default_rng(0)
    shapes = {"w1": (32, 16, 3, 3), "b1": (32,), "w2": (32, 1, 5, 5), "b2": (32,),
              "w3": (32, 10), "b3": (10,)}
    # Values float16 holds exactly, so both models compute with the same weights.
    return {k: (rng.standard_normal(s) * 0.2 + 0.1).astype(np.float16).astype(np.float32)
            for k, s in shapes.items()}


@pytest.mark.parametrize("batch", [1, 3])
def test_float16_model_runs_on_cpu_kernels_in_float32(batch):
    w = weights()
    half = lumen.load_onnx(cnn(np.float16, w)).compile(num_threads=2)
    full = lumen.load_onnx(cnn(np.float32, w)).compile(num_threads=2)
    x = np.random.default_rng(1).standard_normal((batch, 16, 20, 20)).astype(np.float16)
    for _ in range(2):  # the second run takes the plan made for this shape
        got = half.run({"x": x})
        got = got["y"] if isinstance(got, dict) else got[0]
    want = full.run({"x": x.astype(np.float32)})
    want = want["y"] if isinstance(want, dict) else want[0]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want.astype(np.float16))
    steps = half.executable.steps
    assert {s.backend for s in steps} == {"cpu"}, [(s.op, s.backend) for s in steps]
    ops = [s.op for s in steps]
    assert ops.count("cast") == 2, ops


def test_float16_convs_take_the_blocked_kernels():
    """At a fixed shape the plan is the float32 model's: convs in the blocked layout with their
    activations fused, the matmul and bias one gemm."""
    steps = lumen.load_onnx(cnn(np.float16, weights(), batch=2)).compile(
        num_threads=2).executable.steps
    ops = [s.op for s in steps]
    assert ops.count("nchwc_conv") == 2 and "conv_nd" not in ops and "relu" not in ops, ops
    assert ops.count("cast") == 2 and "gemm" in ops, ops


def test_reference_backend_is_not_widened():
    """A named backend gets the graph as it is: the reference has no float16 global pool."""
    with pytest.raises(lumen.Error, match="float16"):
        lumen.load_onnx(cnn(np.float16, weights())).compile(backend="reference")
