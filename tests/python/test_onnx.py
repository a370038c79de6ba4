"""ONNX import: light models against their stored outputs, external data, errors."""

import os

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from lumen import conformance  # noqa: E402

pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# --- light models ----------------------------------------------------------------------------

LIGHT = conformance.light_cases()


@pytest.mark.parametrize("case", LIGHT, ids=[c.name for c in LIGHT])
def test_light_model_matches_stored_output(case):
    status, message = conformance.run_case(case, backend="", opt_level=2)
    assert status == "passed", message


def test_all_light_models_found():
    assert len(LIGHT) == 9


@pytest.mark.parametrize("case", LIGHT, ids=[c.name for c in LIGHT])
def test_light_model_never_runs_on_the_reference_backend(case, monkeypatch):
    """Automatic placement puts every step on a production backend: the reference backend is a
    test oracle."""
    monkeypatch.setenv("LUMEN_CALIBRATE", "0")  # placement only; no need to time kernels
    steps = lumen.load_onnx(case.model).compile(num_threads=1).executable.steps
    assert [(s.op, s.node) for s in steps if s.backend == "reference"] == []


# --- a small model end to end ------------------------------------------------------------------

def conv_relu_model():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return make_model(nodes, [f32("x", ["N", 3, 8, 8])], [f32("y", None)], [w, b])


def test_model_api_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    proto = conv_relu_model()
    model = lumen.load_onnx(proto.SerializeToString())
    assert model.inputs == [{"name": "x", "dtype": "float32", "shape": ("N", 3, 8, 8)}]
    assert [o["name"] for o in model.outputs] == ["y"]
    compiled = model.compile(backend="cpu")
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, {"x": x})
    for out in (compiled(x), compiled(x=x), compiled.run({"x": x})[0], model(x)):
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_single_output_layer_norm_keeps_its_output_name():
    # Exporters write LayerNormalization with only Y; Lumen's layer_norm has three outputs.
    rng = np.random.default_rng(0)
    scale = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "scale")
    bias = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "bias")
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], epsilon=1e-5)
    proto = make_model([node], [f32("x", [2, 5, 16])], [f32("y", [2, 5, 16])], [scale, bias])
    model = lumen.load_onnx(proto.SerializeToString())
    assert [o["name"] for o in model.outputs] == ["y"]
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    mean = x.mean(-1, keepdims=True)
    want = (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * numpy_helper.to_array(scale) \
        + numpy_helper.to_array(bias)
    np.testing.assert_allclose(model.compile()(x), want, rtol=1e-5, atol=1e-5)


def test_load_from_path_and_modelproto(tmp_path):
    proto = conv_relu_model()
    path = tmp_path / "m.onnx"
    onnx.save(proto, str(path))
    x = np.ones((1, 3, 8, 8), np.float32)
    a = lumen.load_onnx(str(path))(x)
    b = lumen.load_onnx(path)(x)
    c = lumen.load_onnx(proto)(x)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_run_time_input_errors():
    compiled = lumen.load_onnx(conv_relu_model()).compile()
    with pytest.raises(lumen.Error, match=r"input 'x'.*\[\?, 3, 8, 8\].*\[1, 3, 9, 8\]"):
        compiled(np.zeros((1, 3, 9, 8), np.float32))
    with pytest.raises(lumen.Error, match=r"input 'x'.*float64"):
        compiled(np.zeros((1, 3, 8, 8), np.float64))
    with pytest.raises(lumen.Error, match="missing input 'x'"):
        compiled.run({"nope": np.zeros((1, 3, 8, 8), np.float32)})
    with pytest.raises(lumen.Error, match="expected 1 inputs, got 2"):
        compiled(np.zeros((1, 3, 8, 8), np.float32), np.zeros((1, 3, 8, 8), np.float32))


def test_unsupported_ops_reported_at_once():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("FancyOp", ["a"], ["b"], name="f1", domain="com.example"),
             helper.make_node("NoSuchOnnxOp", ["b"], ["c"], name="n1"),
             helper.make_node("NoSuchOnnxOp", ["c"], ["y"], name="n2")]
    model = make_model(nodes, [f32("x", [1])], [f32("y", [1])])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(lumen.Error) as err:
        lumen.load_onnx(model)
    msg = str(err.value)
    assert "2 unsupported ops" in msg
    assert "NoSuchOnnxOp (domain '', opset 17): nodes 'n1', 'n2'" in msg
    assert "FancyOp (domain 'com.example', opset 1): node 'f1'" in msg


# --- external data -----------------------------------------------------------------------------

def external_model(location, data=None, offset=0):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = numpy_helper.from_array(w, "w")
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(w.nbytes))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return make_model([node], [f32("x", [2, 3])], [f32("y", [2, 3])], [tensor]), w


def test_external_data_loads(tmp_path):
    model, w = external_model("weights/w.bin", offset=16)
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "w.bin").write_bytes(b"\0" * 16 + w.tobytes())
    onnx.save(model, str(tmp_path / "m.onnx"))
    out = lumen.load_onnx(str(tmp_path / "m.onnx"))(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(out, w + 1)


@pytest.mark.parametrize("location", ["../w.bin", "sub/../../w.bin", "/etc/passwd", "link.bin"])
def test_external_data_outside_the_folder_is_rejected(tmp_path, location):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    model, w = external_model(location)
    (tmp_path / "w.bin").write_bytes(w.tobytes())
    os.symlink(tmp_path / "w.bin", model_dir / "link.bin")  # a symlink leading out
    onnx.save(model, str(model_dir / "m.onnx"))
    with pytest.raises(lumen.Error, match="relative path|must not contain '..'|outside the model"):
        lumen.load_onnx(str(model_dir / "m.onnx"))


def test_external_data_from_bytes_needs_a_folder():
    model, _ = external_model("w.bin")
    with pytest.raises(lumen.Error, match="without a base directory"):
        lumen.load_onnx(model.SerializeToString())


# --- malformed models: each is a lumen.Error, never a crash ------------------------------------

def _valid_bytes():
    return conv_relu_model().SerializeToString()


def _raw_initializer(dtype, shape, nbytes):
    t = TensorProto(name="w", data_type=dtype, dims=shape, raw_data=b"\1" * nbytes)
    return make_model([helper.make_node("Identity", ["w"], ["y"])], [], [f32("y", None)], [t])


def _with_init(tensor, node=None):
    node = node or helper.make_node("Identity", ["w"], ["y"])
    return make_model([node], [], [f32("y", None)], [tensor])


def _malformed_cases():
    cases = {}
    valid = _valid_bytes()
    for cut in (1, 2, 5, 10, 20, 40, 80, len(valid) // 2, len(valid) - 7, len(valid) - 1):
        cases[f"truncated_{cut}"] = valid[:cut]
    rng = np.random.default_rng(0)
    for i in range(4):
        cases[f"garbage_{i}"] = rng.integers(0, 256, 64 + 100 * i, dtype=np.uint8).tobytes()
    cases["empty"] = b""
    cases["raw_too_short"] = _raw_initializer(TensorProto.FLOAT, [2, 3], 23)
    cases["raw_too_long"] = _raw_initializer(TensorProto.FLOAT, [2, 3], 25)
    cases["raw_int64_short"] = _raw_initializer(TensorProto.INT64, [4], 31)
    cases["raw_for_empty"] = _raw_initializer(TensorProto.FLOAT, [0, 3], 4)
    cases["float_data_count"] = _with_init(
        TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3], float_data=[1.0, 2.0]))
    cases["int64_data_count"] = _with_init(
        TensorProto(name="w", data_type=TensorProto.INT64, dims=[2], int64_data=[1, 2, 3]))
    cases["negative_init_dim"] = _raw_initializer(TensorProto.FLOAT, [-2, 3], 24)
    cases["overflowing_init_dims"] = _raw_initializer(TensorProto.FLOAT, [2**40, 2**40], 4)
    cases["huge_init_dims"] = _raw_initializer(TensorProto.FLOAT, [2**62, 4], 4)
    cases["init_without_data"] = _with_init(  # 4 TiB declared, nothing stored: no allocation
        TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**20, 2**20]))
    cases["string_initializer_count"] = _with_init(
        TensorProto(name="w", data_type=TensorProto.STRING, dims=[2], string_data=[b"a"]))
    cases["invalid_dtype"] = _with_init(TensorProto(name="w", data_type=999, dims=[1]))
    # (A negative input dim is not malformed: exporters write -1 for "unknown".)
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"])], "body",
                             [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                             [helper.make_tensor_value_info("c_out", TensorProto.BOOL, [])])
    cases["loop_body_missing_inputs"] = make_model(
        [helper.make_node("Loop", ["", "", "x"], ["y"], body=body)], [f32("x", [1])],
        [f32("y", None)])
    cases["map_input"] = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_value_info("x", helper.make_map_type_proto(
            TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [1])))],
        [f32("y", None)])
    cases["cycle"] = make_model(
        [helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
        [f32("x", [1])], [f32("b", [1])])
    cases["missing_input"] = make_model(
        [helper.make_node("Add", ["x", "nowhere"], ["y"])], [f32("x", [1])], [f32("y", [1])])
    cases["undefined_graph_output"] = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [f32("x", [1])], [f32("z", [1])])
    cases["duplicate_output"] = make_model(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])],
        [f32("x", [1])], [f32("y", [1])])
    cases["unknown_op"] = make_model(
        [helper.make_node("NotAnOp", ["x"], ["y"])], [f32("x", [1])], [f32("y", [1])])
    no_opset = make_model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [1])],
                          [f32("y", [1])])
    del no_opset.opset_import[:]
    cases["no_default_opset"] = no_opset
    zero_opset = make_model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [1])],
                            [f32("y", [1])])
    zero_opset.opset_import[0].version = 0
    cases["opset_zero"] = zero_opset
    no_graph = onnx.ModelProto(ir_version=8)
    cases["no_graph"] = no_graph
    cases["unimported_domain"] = make_model(
        [helper.make_node("Relu", ["x"], ["y"], domain="com.unknown")], [f32("x", [1])],
        [f32("y", [1])])
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    cases["conv_channel_mismatch"] = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"])], [f32("x", [1, 5, 8, 8])], [f32("y", None)],
        [w])
    cases["conv_weight_rank"] = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"])], [f32("x", [1, 3, 8, 8])], [f32("y", None)],
        [numpy_helper.from_array(np.ones((4, 3), np.float32), "w")])
    cases["conv_kernel_too_big"] = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"])], [f32("x", [1, 3, 2, 2])], [f32("y", None)],
        [w])
    cases["conv_float_strides"] = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], strides=[1.5, 1.5])],
        [f32("x", [1, 3, 8, 8])], [f32("y", None)], [w])
    cases["matmul_mismatch"] = make_model(
        [helper.make_node("MatMul", ["x", "m"], ["y"])], [f32("x", [2, 3])], [f32("y", None)],
        [numpy_helper.from_array(np.ones((4, 5), np.float32), "m")])
    cases["gemm_mismatch"] = make_model(
        [helper.make_node("Gemm", ["x", "m"], ["y"], transB=1)], [f32("x", [2, 3])],
        [f32("y", None)], [numpy_helper.from_array(np.ones((3, 5), np.float32), "m")])
    cases["add_broadcast_mismatch"] = make_model(
        [helper.make_node("Add", ["x", "m"], ["y"])], [f32("x", [2, 3])], [f32("y", None)],
        [numpy_helper.from_array(np.ones((4,), np.float32), "m")])
    cases["add_dtype_mismatch"] = make_model(
        [helper.make_node("Add", ["x", "m"], ["y"])], [f32("x", [2, 3])], [f32("y", None)],
        [numpy_helper.from_array(np.ones((3,), np.float64), "m")])
    cases["reshape_bad_count"] = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"])], [f32("x", [2, 3])], [f32("y", None)],
        [numpy_helper.from_array(np.array([4, 2], np.int64), "s")])
    cases["reshape_two_minus_one"] = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"])], [f32("x", [2, 3])], [f32("y", None)],
        [numpy_helper.from_array(np.array([-1, -1], np.int64), "s")])
    cases["transpose_bad_perm"] = make_model(
        [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0])], [f32("x", [2, 3])],
        [f32("y", None)])
    cases["concat_axis_out_of_range"] = make_model(
        [helper.make_node("Concat", ["x", "x"], ["y"], axis=5)], [f32("x", [2, 3])],
        [f32("y", None)])
    cases["softmax_axis_out_of_range"] = make_model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=3)], [f32("x", [2, 3])], [f32("y", None)])
    cases["maxpool_kernel_too_big"] = make_model(
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[5, 5])], [f32("x", [1, 1, 3, 3])],
        [f32("y", None)])
    cases["relu_on_bool"] = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.BOOL, [2])], [f32("y", None)])
    cases["batchnorm_param_length"] = make_model(
        [helper.make_node("BatchNormalization", ["x", "s", "s", "s", "s"], ["y"])],
        [f32("x", [1, 3, 2, 2])], [f32("y", None)],
        [numpy_helper.from_array(np.ones((2,), np.float32), "s")])
    return cases


MALFORMED = _malformed_cases()


def test_there_are_fifty_malformed_models():
    assert len(MALFORMED) >= 50


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_model_raises_lumen_error(name):
    model = MALFORMED[name]
    data = model if isinstance(model, bytes) else model.SerializeToString()
    with pytest.raises(lumen.Error) as err:
        loaded = lumen.load_onnx(data)
        compiled = loaded.compile()
        feeds = {}
        for info in compiled.inputs:
            shape = tuple(1 if d is None else d for d in info["shape"])
            feeds[info["name"]] = np.ones(shape, info["dtype"])
        compiled.run(feeds)
    assert str(err.value), "error messages are never empty"


@pytest.mark.parametrize("name", [n for n in sorted(MALFORMED) if isinstance(MALFORMED[n], bytes)])
def test_malformed_model_file_raises_lumen_error(name, tmp_path):
    """The same through a path (parsed as the file is read): empty, truncated and garbage files."""
    path = tmp_path / "model.onnx"
    path.write_bytes(MALFORMED[name])
    with pytest.raises(lumen.Error, match="ONNX model"):
        lumen.load_onnx(str(path))


def test_model_file_loads_and_keeps_no_copy_of_its_weights(tmp_path):
    """A model read from a file matches the same bytes loaded from memory, and a missing file is
    named. Its initializers' protobuf copies are freed as they become tensors (not observable
    here; the closing note of the import change measures the peak memory)."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [f32("x", [2, 3])],
                       [f32("y", None)], [w])
    path = tmp_path / "mm.onnx"
    path.write_bytes(model.SerializeToString())
    x = np.ones((2, 3), np.float32)
    got = lumen.load_onnx(str(path)).compile().run({"x": x})[0]
    want = lumen.load_onnx(model.SerializeToString()).compile().run({"x": x})[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, x @ np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(lumen.Error, match="cannot open ONNX model"):
        lumen.load_onnx(str(tmp_path / "missing.onnx"))


def test_large_constant_of_shape_is_not_made_at_load():
    """A ConstantOfShape asking for 4 GiB from a 100-byte model loads at once: the fill is made
    when the node runs, not at load time (where any model could demand any size)."""
    import time

    shape = numpy_helper.from_array(np.array([2**15, 2**15], np.int64), "s")
    model = make_model([helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [f32("y", None)],
                       [shape])
    start = time.perf_counter()
    graph = lumen.load_onnx(model.SerializeToString()).graph
    assert time.perf_counter() - start < 1.0
    assert [n.op for n in graph.nodes()] == ["constant_of_shape"]
    small = make_model([helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [f32("y", None)],
                       [numpy_helper.from_array(np.array([2, 3], np.int64), "s")])
    np.testing.assert_array_equal(lumen.load_onnx(small.SerializeToString()).run({})[0],
                                  np.zeros((2, 3), np.float32))


def test_conv1d_with_a_computed_weight_runs_as_a_2d_conv():
    """Weight normalization (w = g * v / ||v||), as the dynamo exporter writes wav2vec2's grouped
    positional conv: the weight folds to a constant and the conv takes the 2-D kernels."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(11)
    v = numpy_helper.from_array(rng.standard_normal((8, 2, 5)).astype(np.float32), "v")
    g = numpy_helper.from_array((rng.random((8, 1, 1)) + 0.5).astype(np.float32), "g")
    b = numpy_helper.from_array((rng.standard_normal(8) + 0.3).astype(np.float32), "b")
    nodes = [helper.make_node("ReduceL2", ["v"], ["norm"], axes=[1, 2], keepdims=1),
             helper.make_node("Div", ["v", "norm"], ["unit"]),
             helper.make_node("Mul", ["unit", "g"], ["w"]),
             helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2, pads=[2, 2])]
    proto = make_model(nodes, [f32("x", ["batch", 4, "time"])], [f32("y", None)], [v, g, b],
                       opset=17)
    compiled = lumen.load_onnx(proto.SerializeToString()).compile(backend="cpu")
    assert "conv_nd" not in str(compiled.graph)
    assert "conv2d" in str(compiled.graph) or "fused_conv" in str(compiled.graph)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in [(2, 4, 30), (1, 4, 7), (2, 4, 30)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(compiled.run({"x": x})[0], sess.run(None, {"x": x})[0],
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", [
    # (input shape, weight shape, group, strides, pads, dilations)
    ((2, 6, 5, 12, 11), (8, 6, 3, 3, 3), 1, [1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1]),  # R3D
    ((1, 3, 8, 20, 22), (6, 3, 3, 7, 7), 1, [1, 2, 2], [1, 3, 3, 1, 3, 3], [1, 1, 1]),  # stem
    ((1, 4, 6, 9, 10), (6, 2, 2, 3, 3), 2, [2, 2, 2], [0, 1, 2, 1, 0, 1], [2, 1, 1]),
    ((1, 2, 4, 7, 9), (3, 2, 3, 3, 2), 1, [1, 1, 1], [2, 0, 1, 1, 2, 0], [1, 2, 2]),
    ((1, 3, 3, 4, 5, 6), (4, 3, 2, 2, 3, 3), 1, [1, 1, 1, 1], [1, 0, 1, 1] * 2, [1, 1, 1, 1]),
    ((1, 4, 4, 9, 9), (5, 4, 1, 1, 1), 1, [2, 2, 3], [0] * 6, [1, 1, 1]),  # 1x1x1, off the grid
])
def test_nd_conv_matches_onnxruntime(case):
    """3-D and 4-D convs compiled with constant weights (packed at compile time): a 2-D conv on
    the padded grid per output frame, outer taps in the padding reading a zero plane; convs the
    grid does not take gather im2col columns. Bias non-zero, against onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    xs, ws, group, strides, pads, dilations = case
    rng = np.random.default_rng(12)
    w = numpy_helper.from_array(rng.standard_normal(ws).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(ws[0]) + 0.5).astype(np.float32), "b")
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], group=group, strides=strides,
                            pads=pads, dilations=dilations)
    dims = ["batch"] + list(xs[1:])
    proto = make_model([node], [f32("x", dims)], [f32("y", None)], [w, b], opset=17)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = rng.standard_normal(xs).astype(np.float32)
    want = sess.run(None, {"x": x})[0]
    for threads in (1, 2):
        compiled = lumen.load_onnx(proto.SerializeToString()).compile(num_threads=threads)
        np.testing.assert_allclose(compiled.run({"x": x})[0], want, rtol=1e-4, atol=1e-4)


def test_input_without_a_shape_accepts_any_shape():
    """A graph input whose type has no shape (not even a rank) is known only at run time, not a
    scalar: the model runs at each shape it is given and matches onnxruntime; a wrong rank fails
    in the node that needs another."""
    ort = pytest.importorskip("onnxruntime")
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(
        np.float32), "w")
    b = numpy_helper.from_array(np.array([0.5, -0.25, 0.1, 0.3], np.float32), "b")
    model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"])], [f32("x", None)],
                       [f32("y", None)], [w, b])
    compiled = lumen.load_onnx(model.SerializeToString()).compile()
    assert compiled.inputs[0]["shape"] is None
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in [(1, 3, 8, 8), (2, 3, 5, 7)]:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(compiled.run({"x": x})[0], session.run(None, {"x": x})[0],
                                   rtol=1e-5, atol=1e-5)
    with pytest.raises(lumen.Error, match="conv2d.*must be 4-D"):
        compiled.run({"x": np.zeros((3, 8, 8), np.float32)})
