"""Resource limits of a model and its runs. max_memory on lumen.load_onnx and compile: a model
asking for more memory than its budget gets a lumen.Error naming the size (and the node, at run
time) before anything is allocated, and the compiled model keeps working for runs within the
budget. run(timeout=) stops a run between steps (a Loop's iterations included)."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import lumen


def chain_model(batch="N", weight_rows=64):
    """x [batch, 64] @ w [64, 64] -> relu -> * 2: intermediates of batch x 64 floats."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((weight_rows, 64)).astype(np.float32), "w")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
         helper.make_node("Relu", ["m"], ["r"], name="relu"),
         helper.make_node("Mul", ["r", "two"], ["y"], name="double")],
        "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, weight_rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 64])], [w, two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_load_refuses_initializers_over_the_budget():
    model = chain_model(weight_rows=4096)  # a 1 MiB initializer
    with pytest.raises(lumen.Error, match="over the memory budget of 524288 bytes"):
        lumen.load_onnx(model, max_memory="512K")
    assert lumen.load_onnx(model, max_memory="4M").inputs[0]["name"] == "x"


def test_compile_refuses_an_arena_over_the_budget():
    model = lumen.load_onnx(chain_model(batch=8192))  # 2 MiB intermediates
    with pytest.raises(lumen.Error, match="memory plan's arena"):
        model.compile(max_memory=1 << 20)
    x = np.ones((8192, 64), np.float32)
    assert model.compile(max_memory="16M").run({"x": x})[0].shape == (8192, 64)


def test_a_run_over_the_budget_names_the_node_and_the_model_keeps_working():
    compiled = lumen.load_onnx(chain_model(), max_memory="1M").compile()
    with pytest.raises(lumen.Error, match=r"node '.*over the memory budget of 1048576 bytes"):
        compiled.run({"x": np.ones((8192, 64), np.float32)})
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    want = lumen.load_onnx(chain_model()).compile(backend="reference").run({"x": x})[0]
    for _ in range(2):
        np.testing.assert_allclose(compiled.run({"x": x})[0], want, rtol=1e-5, atol=1e-5)


def test_bad_budgets_are_refused():
    with pytest.raises(lumen.Error, match="is not a memory size"):
        lumen.load_onnx(chain_model(), max_memory="lots")
    with pytest.raises(ValueError):
        lumen.load_onnx(chain_model(), max_memory=-5)
    assert lumen._lumen.default_memory_budget() > 0


def counting_loop_model():
    """Loop with trip count M from the input, no stop condition: the body adds 1 to a carried
    counter, so M = 10^9 runs until the iteration limit (10^7) unless a timeout stops it."""
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["count_in", "one"], ["count_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("count_in", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("count_out", TensorProto.INT64, [])], [one])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "start"], ["count"], body=body, name="counting")],
        "loop", [helper.make_tensor_value_info("m", TensorProto.INT64, []),
                 helper.make_tensor_value_info("start", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("count", TensorProto.INT64, [])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_run_timeout_stops_a_long_loop_and_the_model_keeps_working():
    compiled = lumen.load_onnx(counting_loop_model()).compile()
    feeds = {"m": np.array(10**9, np.int64), "start": np.array(5, np.int64)}
    with pytest.raises(lumen.Error, match=r"run timed out \(timeout 0.2 s.*node '"):
        compiled.run(feeds, timeout=0.2)
    small = {"m": np.array(7, np.int64), "start": np.array(5, np.int64)}
    assert int(compiled.run(small, timeout=10)[0]) == 12
    assert int(compiled.run(small)[0]) == 12
    with pytest.raises(ValueError):
        compiled.run(small, timeout=0)


def nested_ifs(depth):
    """`depth` Ifs, each then-branch holding the next: every level takes the then-branch when c is
    true and returns depth there (else 0)."""
    def constant(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.array(value, np.float32), name + "_value"))

    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [])
    branch = helper.make_graph([constant("y", float(depth))], "innermost", [], [out])
    for level in range(depth):
        node = helper.make_node("If", ["c"], ["y"], then_branch=branch,
                                else_branch=helper.make_graph([constant("y", 0.0)], f"else{level}",
                                                              [], [out]), name=f"if{level}")
        branch = helper.make_graph([node], f"level{level}", [], [out])
    graph = helper.make_graph(list(branch.node), "nested",
                              [helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_subgraphs_nested_too_deep_are_refused():
    with pytest.raises(lumen.Error, match="nests subgraphs more than 16 deep"):
        lumen.load_onnx(nested_ifs(20))
    compiled = lumen.load_onnx(nested_ifs(6)).compile()
    assert float(compiled.run({"c": np.array(True)})[0]) == 6.0
    assert float(compiled.run({"c": np.array(False)})[0]) == 0.0


def test_pool_windows_in_the_padding_only_are_refused():
    """Found by fuzzing (UBSan): a uint8 MaxPool whose end pad reached past its window took -inf
    into uint8. Pads must be smaller than the window (as onnxruntime requires)."""
    for dtype, pads in ((TensorProto.UINT8, [2, 2, 2, 34]), (TensorProto.FLOAT, [0, 0, 3, 0])):
        graph = helper.make_graph(
            [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=pads, name="p")],
            "pool", [helper.make_tensor_value_info("x", dtype, [1, 1, 5, 5])],
            [helper.make_tensor_value_info("y", dtype, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
        with pytest.raises(lumen.Error, match="must be smaller than the window extent 3"):
            lumen.load_onnx(model).compile()


@pytest.mark.parametrize("attrs", [dict(dilations=[1, 0]), dict(strides=[0, 1]),
                                   dict(pads=[1, -1, 1, 1])])
def test_conv_attributes_out_of_range_with_a_symbolic_batch(attrs):
    """A conv whose attributes are invalid, in a graph with a symbolic dim (so inference runs at run
    time), compiles and fails its run with the op's error; the compile-time weight packing used to
    divide by the zero dilation (found by tools/fuzz.sh)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", **attrs)], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 15, 19])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    compiled = lumen.load_onnx(model.SerializeToString()).compile()
    with pytest.raises(lumen.Error, match="conv"):
        compiled.run({"x": np.zeros((2, 3, 15, 19), np.float32)})
