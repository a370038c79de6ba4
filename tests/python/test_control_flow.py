"""If, Loop and Scan from ONNX: subgraphs with outer-scope values, nesting, loop-carried values,
scan outputs, constant conditions inlined; checked against onnxruntime."""

import os
import subprocess
import sys

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")

RNG = np.random.default_rng(7)


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def check_against_onnxruntime(proto, feeds, backend=""):
    """Lumen's outputs equal onnxruntime's: float32 within 1e-4 * max|ref| + 1e-5, others exact."""
    data = proto.SerializeToString()
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    compiled = lumen.load_onnx(data).compile(backend=backend)
    got = compiled.run(feeds)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        if e.dtype.kind == "f":
            tol = 1e-4 * (np.abs(e).max() if e.size else 0) + 1e-5
            np.testing.assert_allclose(g, e, rtol=0, atol=tol)
        else:
            np.testing.assert_array_equal(g, e)
    return compiled


# --- If ----------------------------------------------------------------------------------------

def if_model():
    """y = x @ w + b when sum(x) > 0, else relu(x) * scale; the then-branch holds a nested If on
    an outer value and has its own initializer; both branches read outer-scope values."""
    w = const("w", RNG.standard_normal((4, 4)).astype(np.float32))
    b = const("b", RNG.standard_normal(4).astype(np.float32) + 0.5)
    inner_then = helper.make_graph(
        [helper.make_node("Add", ["mm", "b"], ["inner_out"])], "inner_then", [],
        [vi("inner_out", TensorProto.FLOAT, None)])
    inner_else = helper.make_graph(
        [helper.make_node("Sub", ["mm", "b"], ["inner_out2"])], "inner_else", [],
        [vi("inner_out2", TensorProto.FLOAT, None)])
    then_branch = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["mm"]),
         helper.make_node("If", ["flag"], ["nested"], then_branch=inner_then,
                          else_branch=inner_else),
         helper.make_node("Mul", ["nested", "two"], ["then_out"])],
        "then", [], [vi("then_out", TensorProto.FLOAT, None)],
        [const("two", np.float32(2.0))])
    else_branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Mul", ["r", "scale"], ["else_out"])],
        "else", [], [vi("else_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=then_branch,
                              else_branch=else_branch, name="the_if")]
    inputs = [vi("x", TensorProto.FLOAT, ["N", 4]), vi("flag", TensorProto.BOOL, []),
              vi("scale", TensorProto.FLOAT, [4])]
    return make_model(nodes, inputs, [vi("y", TensorProto.FLOAT, None)],
                      [w, b, const("zero", np.float32(0.0))])


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("backend", ["", "cpu"])
def test_if_with_outer_scope_and_nesting(sign, flag, backend):
    x = (np.abs(RNG.standard_normal((3, 4))) * sign).astype(np.float32)
    feeds = {"x": x, "flag": np.array(flag), "scale": np.array([1, -2, 3, 0.5], np.float32)}
    check_against_onnxruntime(if_model(), feeds, backend)


def test_if_runs_at_several_shapes_of_a_dynamic_batch():
    proto = if_model()
    compiled = lumen.load_onnx(proto.SerializeToString()).compile()
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (1, 5, 2, 5):
        feeds = {"x": RNG.standard_normal((n, 4)).astype(np.float32), "flag": np.array(n % 2 == 0),
                 "scale": np.ones(4, np.float32)}
        np.testing.assert_allclose(compiled.run(feeds)[0], session.run(None, feeds)[0],
                                   rtol=1e-5, atol=1e-5)


def test_if_with_constant_condition_is_inlined():
    then_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [],
                                    [vi("t", TensorProto.FLOAT, None)])
    else_branch = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [],
                                    [vi("e", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["shp"]),
             helper.make_node("Size", ["shp"], ["rank"]),
             helper.make_node("Equal", ["rank", "two"], ["cond"]),  # constant: x is rank 2
             helper.make_node("If", ["cond"], ["if_out"], then_branch=then_branch,
                              else_branch=else_branch),
             helper.make_node("Relu", ["if_out"], ["y"])]
    proto = make_model(nodes, [vi("x", TensorProto.FLOAT, [2, 3])],
                       [vi("y", TensorProto.FLOAT, None)], [const("two", np.int64(2))])
    compiled = check_against_onnxruntime(
        proto, {"x": RNG.standard_normal((2, 3)).astype(np.float32)})
    assert "if" not in [s.op for s in compiled.executable.steps]
    assert compiled.executable.memory.planned


# --- Loop --------------------------------------------------------------------------------------

def loop_model():
    """A Loop with a trip count from the input, a condition the body updates (stops early when
    the running sum passes `limit`), two carried values, one scan output and an outer capture."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "fi"], ["step"]),
         helper.make_node("Add", ["acc_in", "step"], ["acc_out"]),
         helper.make_node("Add", ["count_in", "one"], ["count_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan_out"])],
        "body",
        [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("acc_in", TensorProto.FLOAT, None), vi("count_in", TensorProto.INT64, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, None),
         vi("count_out", TensorProto.INT64, None), vi("scan_out", TensorProto.FLOAT, None)],
        [const("one", np.int64(1))])
    nodes = [helper.make_node("Loop", ["trips", "", "acc0", "count0"],
                              ["acc", "count", "history"], body=body, name="the_loop")]
    inputs = [vi("trips", TensorProto.INT64, []), vi("x", TensorProto.FLOAT, ["N"]),
              vi("acc0", TensorProto.FLOAT, ["N"]), vi("limit", TensorProto.FLOAT, [])]
    outputs = [vi("acc", TensorProto.FLOAT, None), vi("count", TensorProto.INT64, None),
               vi("history", TensorProto.FLOAT, None)]
    return make_model(nodes, inputs, outputs, [const("count0", np.int64(0))])


@pytest.mark.parametrize("trips,limit", [(0, 100.0), (1, 100.0), (7, 1e9), (50, 40.0)])
@pytest.mark.parametrize("backend", ["", "cpu"])
def test_loop_with_dynamic_trip_count_and_early_exit(trips, limit, backend):
    feeds = {"trips": np.array(trips, np.int64),
             "x": np.abs(RNG.standard_normal(5)).astype(np.float32),
             "acc0": RNG.standard_normal(5).astype(np.float32),
             "limit": np.array(limit, np.float32)}
    if trips == 0:  # onnxruntime's empty scan output has the element shape; Lumen's is [0]
        got = lumen.load_onnx(loop_model().SerializeToString()).compile(backend=backend).run(feeds)
        np.testing.assert_array_equal(got[0], feeds["acc0"])
        assert got[1] == 0 and got[2].size == 0
        return
    check_against_onnxruntime(loop_model(), feeds, backend)


def test_loop_whose_carried_value_grows():
    """A carried value that changes shape every iteration (Concat): the body runs a plan per
    shape."""
    body = helper.make_graph(
        [helper.make_node("Concat", ["seq_in", "item"], ["seq_out"], axis=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("seq_in", TensorProto.FLOAT, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("seq_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Loop", ["n", "", "start"], ["seq"], body=body)]
    proto = make_model(nodes, [vi("n", TensorProto.INT64, []), vi("start", TensorProto.FLOAT, [1, 3]),
                               vi("item", TensorProto.FLOAT, [2, 3])],
                       [vi("seq", TensorProto.FLOAT, None)])
    feeds = {"n": np.array(6, np.int64), "start": RNG.standard_normal((1, 3)).astype(np.float32),
             "item": RNG.standard_normal((2, 3)).astype(np.float32)}
    check_against_onnxruntime(proto, feeds)


def test_loop_without_an_end_stops_at_the_iteration_limit(tmp_path):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "x"], ["v_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("v_in", TensorProto.FLOAT, None)],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, None)])
    proto = make_model([helper.make_node("Loop", ["", "go", "x"], ["v"], body=body,
                                         name="endless")],
                       [vi("go", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2])],
                       [vi("v", TensorProto.FLOAT, None)])
    path = tmp_path / "endless.onnx"
    onnx.save(proto, str(path))
    script = (
        "import lumen, numpy as np\n"
        f"m = lumen.load_onnx({str(path)!r}).compile()\n"
        "try:\n"
        "    m.run({'go': np.array(True), 'x': np.ones(2, np.float32)})\n"
        "except lumen.Error as e:\n"
        "    print('ERROR', e)\n"
        "print(m.run({'go': np.array(False), 'x': np.ones(2, np.float32)})[0].tolist())\n")
    env = dict(os.environ, LUMEN_MAX_LOOP_ITERATIONS="1000")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ERROR" in out.stdout and "endless" in out.stdout and "1000" in out.stdout
    assert "[1.0, 1.0]" in out.stdout


# --- Scan --------------------------------------------------------------------------------------

def scan_model(reverse):
    """Running sum over axis 1 of x (a state) and, per step, state * w (a scan output on axis 1),
    with an outer-scope weight."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "xi"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "w"], ["y_i"])],
        "body", [vi("s_in", TensorProto.FLOAT, [2]), vi("xi", TensorProto.FLOAT, [2])],
        [vi("s_out", TensorProto.FLOAT, [2]), vi("y_i", TensorProto.FLOAT, [2])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_input_directions=[int(reverse)],
                              scan_output_axes=[1], scan_output_directions=[int(reverse)])]
    inputs = [vi("s0", TensorProto.FLOAT, [2]), vi("x", TensorProto.FLOAT, [2, "T"]),
              vi("w", TensorProto.FLOAT, [2])]
    return make_model(nodes, inputs, [vi("s", TensorProto.FLOAT, None),
                                      vi("ys", TensorProto.FLOAT, None)])


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [1, 6])
def test_scan_states_and_outputs_on_axes(reverse, length):
    feeds = {"s0": RNG.standard_normal(2).astype(np.float32),
             "x": RNG.standard_normal((2, length)).astype(np.float32),
             "w": np.array([1.5, -0.5], np.float32)}
    check_against_onnxruntime(scan_model(reverse), feeds, backend="cpu")


# --- errors ------------------------------------------------------------------------------------

def test_unsupported_op_inside_a_branch_is_reported_at_load():
    then_branch = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["t"])], "then", [],
                                    [vi("t", TensorProto.FLOAT, None)])
    else_branch = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [],
                                    [vi("e", TensorProto.FLOAT, None)])
    proto = make_model([helper.make_node("If", ["c"], ["y"], then_branch=then_branch,
                                         else_branch=else_branch, name="branchy")],
                       [vi("c", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2])],
                       [vi("y", TensorProto.FLOAT, None)])
    with pytest.raises(lumen.Error, match="NoSuchOp.*branchy/"):
        lumen.load_onnx(proto.SerializeToString())


def test_subgraph_reading_an_undefined_name_is_an_error():
    then_branch = helper.make_graph([helper.make_node("Abs", ["ghost"], ["t"])], "then", [],
                                    [vi("t", TensorProto.FLOAT, None)])
    proto = make_model([helper.make_node("If", ["c"], ["y"], then_branch=then_branch,
                                         else_branch=then_branch, name="haunted")],
                       [vi("c", TensorProto.BOOL, [])], [vi("y", TensorProto.FLOAT, None)])
    with pytest.raises(lumen.Error, match="ghost"):
        lumen.load_onnx(proto.SerializeToString())


def test_branch_passing_an_arena_value_through_returns_a_copy():
    """then_branch returns the parent's intermediate as is; in a planned run that value lives in
    the arena, so the output must survive the next run."""
    then_branch = helper.make_graph([], "then", [], [vi("a", TensorProto.FLOAT, [2, 3])])
    else_branch = helper.make_graph([helper.make_node("Neg", ["a"], ["e"])], "else", [],
                                    [vi("e", TensorProto.FLOAT, [2, 3])])
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Add", ["r", "x"], ["a"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_branch,
                              else_branch=else_branch)]
    proto = make_model(nodes, [vi("c", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2, 3])],
                       [vi("y", TensorProto.FLOAT, [2, 3])])
    compiled = lumen.load_onnx(proto.SerializeToString()).compile()
    assert compiled.executable.memory.planned
    x1 = RNG.standard_normal((2, 3)).astype(np.float32)
    first = compiled.run({"c": np.array(True), "x": x1})[0]
    kept = first.copy()
    compiled.run({"c": np.array(True), "x": x1 + 10})
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_allclose(kept, np.maximum(x1, 0) + x1, rtol=1e-6)
