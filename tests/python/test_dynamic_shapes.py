"""Dynamic shapes: symbolic and unknown dims load, compile once, and run at every shape through a
plan per input-shape signature; ops that ONNX defines without static shapes never demand them."""

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")

RNG = np.random.default_rng(3)


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def ort_run(proto, feeds):
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def encoder_model(opset=11):
    """A small attention-free encoder over [batch, seq, 8]: MatMul + bias, Softmax at opset 11
    over axis 2 (flattening semantics), a Reshape with 0/-1 and a Flatten."""
    w = numpy_helper.from_array(RNG.standard_normal((8, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(RNG.standard_normal(8).astype(np.float32) + 0.3, "b")
    shape = numpy_helper.from_array(np.array([0, -1], np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["h"]),
             helper.make_node("Softmax", ["h"], ["p"], axis=1),
             helper.make_node("Reshape", ["p", "shape"], ["flat"]),
             helper.make_node("Flatten", ["h"], ["f2"], axis=2),
             helper.make_node("LogSoftmax", ["f2"], ["ls"], axis=1)]
    return make_model(nodes, [vi("x", ["batch", "seq", 8])],
                      [vi("flat", None), vi("ls", None)], [w, b, shape], opset=opset)


@pytest.mark.parametrize("backend", ["", "cpu"])
def test_old_softmax_reshape_flatten_with_symbolic_dims(backend):
    proto = encoder_model()
    compiled = lumen.load_onnx(proto.SerializeToString()).compile(backend=backend)
    for batch, seq in [(1, 5), (3, 2), (1, 5), (2, 17)]:
        x = RNG.standard_normal((batch, seq, 8)).astype(np.float32)
        for got, want in zip(compiled.run({"x": x}), ort_run(proto, {"x": x})):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_plans_per_shape_are_bounded_and_reused():
    proto = encoder_model()
    compiled = lumen.load_onnx(proto.SerializeToString()).compile(shape_cache_capacity=3)
    exe = compiled.executable
    assert not exe.memory.planned  # the generic plan: shapes known at run time
    # 40 random sequence lengths, correct every time; the profile shows the real shapes of the
    # plan that ran (memory planned for that shape).
    for seq in RNG.integers(1, 64, size=40):
        x = RNG.standard_normal((2, int(seq), 8)).astype(np.float32)
        want = ort_run(proto, {"x": x})
        # A shape met for the first time runs the generic plan, the second time its own plan.
        for _ in range(2):
            outputs, profile = exe.execute_profiled(x)
            for got, ref in zip(outputs, want):
                np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)
        matmul = [s for s in profile.plan_steps if s.op in ("matmul", "fused_matmul", "gemm",
                                                            "fused_gemm")]
        assert matmul and matmul[0].input_shapes[0] == (2, int(seq), 8)


def test_unknown_dims_written_as_minus_one_or_missing():
    proto = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [-1, 3, None])],
                       [vi("y", None)])
    model = lumen.load_onnx(proto.SerializeToString())
    assert model.inputs[0]["shape"] == (None, 3, None)
    x = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    np.testing.assert_array_equal(model.compile()(x), np.maximum(x, 0))


def test_wrong_input_shape_names_the_input_and_both_shapes():
    compiled = lumen.load_onnx(encoder_model().SerializeToString()).compile()
    with pytest.raises(lumen.Error, match=r"input 'x'.*\[\?, \?, 8\].*\[2, 3, 5\]"):
        compiled.run({"x": np.zeros((2, 3, 5), np.float32)})


def resize_model():
    """Resize whose output size is computed from the input's shape (Shape -> Slice -> Mul ->
    Concat), as YOLO- and U-Net-style exports write a 2x upsample."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "two_start", "four"], ["hw"]),
             helper.make_node("Mul", ["hw", "two"], ["hw2"]),
             helper.make_node("Slice", ["s", "zero", "two_start"], ["nc"]),
             helper.make_node("Concat", ["nc", "hw2"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["up"], mode="nearest"),
             helper.make_node("Conv", ["up", "w"], ["y"], pads=[1, 1, 1, 1])]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in [("two_start", [2]), ("four", [4]), ("two", [2]), ("zero", [0])]]
    inits.append(numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32),
                                         "w"))
    return make_model(nodes, [vi("x", ["batch", 3, "height", "width"])], [vi("y", None)], inits)


def test_resize_with_sizes_from_shape_arithmetic_at_several_sizes():
    proto = resize_model()
    compiled = lumen.load_onnx(proto.SerializeToString()).compile(backend="cpu")
    for shape in [(1, 3, 8, 8), (2, 3, 5, 7), (1, 3, 8, 8)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(compiled.run({"x": x})[0], ort_run(proto, {"x": x})[0],
                                   rtol=1e-4, atol=1e-4)


def test_bench_dims_reach_symbolic_dims_used_by_shape_arithmetic(tmp_path):
    from lumen import _bench

    path = tmp_path / "resize.onnx"
    onnx.save(resize_model(), str(path))
    result = _bench.benchmark(str(path), threads=1, runs=3, warmup=1, memory=False,
                              compare="onnxruntime", dims={"height": 12, "width": 20},
                              progress=False)
    assert result.inputs[0]["shape"] == [1, 3, 12, 20]
    assert result.outputs_agree
    with pytest.raises(ValueError, match="no symbolic dim.*heigth"):
        _bench.benchmark(str(path), threads=1, runs=1, memory=False, dims={"heigth": 12},
                         progress=False)


def symbolic_model():
    """Values whose shapes follow the inputs' symbolic dims through concat, shape arithmetic,
    padding, a 2x upsample from computed sizes and a stride-2 conv."""
    w = numpy_helper.from_array(RNG.standard_normal((8, 8)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Concat", ["past", "h"], ["kv"], axis=1),
             helper.make_node("Shape", ["h"], ["s"], end=2),
             helper.make_node("ReduceProd", ["s"], ["rows"], keepdims=1),
             helper.make_node("Concat", ["rows", "eight"], ["target"], axis=0),
             helper.make_node("Reshape", ["h", "target"], ["flat"]),
             helper.make_node("Pad", ["h", "pads"], ["padded"]),
             helper.make_node("Conv", ["img", "k"], ["half"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["u"], ["from_unnamed"])]
    inits = [w, numpy_helper.from_array(np.array([8], np.int64), "eight"),
             numpy_helper.from_array(np.array([0, 1, 0, 0, 2, 0], np.int64), "pads"),
             numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "k")]
    outputs = ["kv", "flat", "padded", "half", "from_unnamed"]
    return make_model(nodes, [vi("x", ["batch", "seq", 8]), vi("past", ["batch", "past", 8]),
                              vi("img", ["batch", 3, "height", "width"]), vi("u", [None, 2])],
                      [vi(n, None) for n in outputs], inits)


def test_symbolic_dims_are_propagated_by_name():
    proto = symbolic_model()
    model = lumen.load_onnx(proto.SerializeToString())
    shapes = {o["name"]: o["shape"] for o in model.outputs}
    assert shapes == {"kv": ("batch", "past+seq", 8), "flat": ("batch*seq", 8),
                      "padded": ("batch", "seq+3", 8),
                      "half": ("batch", 4, None, None),  # floor division: not named
                      "from_unnamed": (None, 2)}
    assert lumen.load_onnx(resize_model().SerializeToString()).outputs[0]["shape"] == (
        "batch", 4, "2*height", "2*width")
    # Every name is right at run time, here and after optimization.
    sizes = {"batch": 2, "seq": 5, "past": 3, "height": 7, "width": 9}
    feeds = {"x": RNG.standard_normal((2, 5, 8)).astype(np.float32),
             "past": RNG.standard_normal((2, 3, 8)).astype(np.float32),
             "img": RNG.standard_normal((2, 3, 7, 9)).astype(np.float32),
             "u": RNG.standard_normal((4, 2)).astype(np.float32)}
    compiled = model.compile()
    want = ort_run(proto, feeds)
    for info, got, ref in zip(model.outputs, compiled.run(feeds), want):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
        for dim, size in zip(info["shape"], ref.shape):
            if dim is not None:
                assert (dim if isinstance(dim, int) else eval(dim, {}, dict(sizes))) == size
    optimized = {v.name: v.symbolic_shape for v in compiled.graph.outputs}
    assert optimized["kv"] == ("batch", "past+seq", 8)
    assert "[batch, past+seq, 8]" in str(compiled.graph)
