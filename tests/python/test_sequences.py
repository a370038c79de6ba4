"""Sequences, optionals and strings from ONNX: the sequence and optional ops, sequences carried
through Loop and returned from If, graph inputs and outputs as lists and None, string tensors and
the string ops, and NonMaxSuppression sized by its kernel; checked against onnxruntime, plus
the errors they must give."""

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")

RNG = np.random.default_rng(11)
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def make_model(nodes, inputs, outputs, initializers=(), opset=18, ml=False):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("ai.onnx.ml", 4)] if ml else [])
    return helper.make_model(graph, opset_imports=opsets)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def seq_vi(name, elem, shape=None):
    return helper.make_tensor_sequence_value_info(name, elem, shape)


def opt_vi(name, type_proto):
    return helper.make_value_info(name, helper.make_optional_type_proto(type_proto))


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def assert_same(got, expected, where="output"):
    """Lists item by item, None as None, floats within 1e-4 * max|ref| + 1e-5, the rest exact."""
    if expected is None:
        assert got is None, f"{where}: expected None, got {got!r}"
        return
    if isinstance(expected, list):
        assert isinstance(got, list), f"{where}: expected a list, got {type(got)}"
        assert len(got) == len(expected), f"{where}: {len(got)} items, expected {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{i}]")
        return
    expected = np.asarray(expected)
    got = np.asarray(got)
    assert got.shape == expected.shape, f"{where}: shape {got.shape} != {expected.shape}"
    if expected.dtype.kind in "OUS":
        assert got.tolist() == expected.astype(object).tolist(), where
    elif expected.dtype.kind == "f":
        assert got.dtype == expected.dtype
        tol = 1e-4 * (np.abs(expected).max() if expected.size else 0) + 1e-5
        np.testing.assert_allclose(got, expected, rtol=0, atol=tol, err_msg=where)
    else:
        assert got.dtype == expected.dtype, f"{where}: {got.dtype} != {expected.dtype}"
        np.testing.assert_array_equal(got, expected, err_msg=where)


def check(proto, feeds, compare_to_ort=True, expected=None):
    data = proto.SerializeToString()
    if compare_to_ort:
        expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    compiled = lumen.load_onnx(data).compile()
    for _ in range(2):  # the second run at one shape signature uses its planned plan
        got = compiled.run(feeds)
        assert len(got) == len(expected)
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"output {k}")
    return compiled


def test_sequence_ops_against_onnxruntime():
    """Construct, insert (front, back, negative), at, erase, length, concat with and without a new
    axis: every op of the family in one graph."""
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s0"]),
        helper.make_node("SequenceInsert", ["s0", "c"], ["s1"]),                 # at the back
        helper.make_node("SequenceInsert", ["s1", "a", "zero"], ["s2"]),         # at the front
        helper.make_node("SequenceInsert", ["s2", "b", "minus_one"], ["s3"]),   # before the last
        helper.make_node("SequenceErase", ["s3", "one"], ["s4"]),
        helper.make_node("SequenceErase", ["s4"], ["s5"]),                       # the last
        helper.make_node("SequenceLength", ["s5"], ["n"]),
        helper.make_node("SequenceAt", ["s5", "minus_one"], ["last"]),
        helper.make_node("ConcatFromSequence", ["s5"], ["cat"], axis=1),
        helper.make_node("ConcatFromSequence", ["s5"], ["stacked"], axis=-1, new_axis=1),
    ]
    inits = [const("zero", np.int64(0)), const("one", np.int64(1)),
             const("minus_one", np.int64(-1))]
    proto = make_model(nodes, [vi("a", F, [2, 3]), vi("b", F, [2, 3]), vi("c", F, [2, 3])],
                       [vi("n", I64, []), vi("last", F, None), vi("cat", F, None),
                        vi("stacked", F, None), seq_vi("s5", F)], inits)
    feeds = {k: RNG.standard_normal((2, 3)).astype(np.float32) for k in "abc"}
    compiled = check(proto, feeds)
    assert compiled.executable.outputs[4].type == "seq(float32)"
    assert compiled.outputs[4]["dtype"] == "seq(float32)"  # what `lumen inspect` prints


@pytest.mark.parametrize("split,attrs", [(None, {"keepdims": 0}), (None, {}),
                                          (np.int64(2), {}), (np.array([1, 3, 1]), {})])
def test_split_to_sequence(split, attrs):
    inputs = ["x"] + (["split"] if split is not None else [])
    nodes = [helper.make_node("SplitToSequence", inputs, ["s"], axis=1, **attrs),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=1, new_axis=1 if attrs else 0)]
    inits = [const("split", split)] if split is not None else []
    proto = make_model(nodes, [vi("x", F, [2, 5])], [seq_vi("s", F), vi("y", F, None)], inits)
    check(proto, {"x": RNG.standard_normal((2, 5)).astype(np.float32)})


def test_sequence_inputs_and_outputs_are_lists():
    """A sequence input takes a list of arrays of different shapes; SequenceMap runs its body per
    item (with a tensor input taken whole); an optional output is None or a value."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["item", "scale"], ["scaled"]),
         helper.make_node("Shape", ["item"], ["shape"])],
        "body", [vi("item", F, None), vi("scale", F, [])],
        [vi("scaled", F, None), vi("shape", I64, [None])])
    nodes = [helper.make_node("SequenceMap", ["xs", "scale"], ["ys", "shapes"], body=body),
             helper.make_node("SequenceLength", ["ys"], ["n"])]
    proto = make_model(nodes, [seq_vi("xs", F), vi("scale", F, [])],
                       [seq_vi("ys", F), seq_vi("shapes", I64), vi("n", I64, [])])
    xs = [RNG.standard_normal(s).astype(np.float32) for s in [(2, 3), (4,), (1, 2, 2)]]
    check(proto, {"xs": xs, "scale": np.array(1.5, np.float32)})
    check(proto, {"xs": [], "scale": np.array(2.0, np.float32)})


def test_loop_accumulates_a_sequence_with_a_dynamic_trip_count():
    """A Loop whose trip count is a graph input carries a sequence, inserting one tensor per
    iteration whose shape grows with the iteration; the result is concatenated after the loop."""
    body = helper.make_graph(
        [helper.make_node("Add", ["i", "one"], ["i1"]),
         helper.make_node("Unsqueeze", ["i1", "zero"], ["len"]),
         helper.make_node("Expand", ["x", "len"], ["piece"]),
         helper.make_node("SequenceInsert", ["seq_in", "piece"], ["seq_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), seq_vi("seq_in", F)],
        [vi("cond_out", TensorProto.BOOL, []), seq_vi("seq_out", F)],
        [const("one", np.int64(1)), const("zero", np.array([0], np.int64))])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["trips", "", "empty"], ["seq"], body=body),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0),
             helper.make_node("SequenceLength", ["seq"], ["n"])]
    proto = make_model(nodes, [vi("trips", I64, []), vi("x", F, [1])],
                       [vi("y", F, None), vi("n", I64, [])])
    for trips in (1, 4, 7):
        check(proto, {"trips": np.array(trips, np.int64), "x": np.array([0.25], np.float32)})


def test_if_returns_a_sequence_and_optionals():
    then_g = helper.make_graph([helper.make_node("SequenceConstruct", ["x", "x"], ["s"])], "then",
                               [], [seq_vi("s", F)])
    else_g = helper.make_graph([helper.make_node("SequenceConstruct", ["x"], ["s"])], "else",
                               [], [seq_vi("s", F)])
    tensor_type = helper.make_tensor_type_proto(F, None)
    nodes = [helper.make_node("If", ["c"], ["s"], then_branch=then_g, else_branch=else_g),
             helper.make_node("SequenceLength", ["s"], ["n"]),
             helper.make_node("Optional", ["x"], ["full"]),
             helper.make_node("Optional", [], ["none"], type=tensor_type),
             helper.make_node("OptionalHasElement", ["full"], ["has_full"]),
             helper.make_node("OptionalHasElement", ["none"], ["has_none"]),
             helper.make_node("OptionalGetElement", ["full"], ["got"])]
    proto = make_model(nodes, [vi("c", TensorProto.BOOL, []), vi("x", F, [3])],
                       [seq_vi("s", F), vi("n", I64, []), vi("has_full", TensorProto.BOOL, []),
                        vi("has_none", TensorProto.BOOL, []), vi("got", F, [3])])
    x = RNG.standard_normal(3).astype(np.float32)
    for c in (True, False):
        check(proto, {"c": np.array(c), "x": x})


def test_optional_graph_input_takes_none():
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"])]
    proto = make_model(nodes, [opt_vi("o", helper.make_tensor_type_proto(F, [2]))],
                       [vi("has", TensorProto.BOOL, [])])
    compiled = lumen.load_onnx(proto.SerializeToString()).compile()
    assert compiled.run({"o": None})[0] == np.array(False)
    assert compiled.run({"o": np.ones(2, np.float32)})[0] == np.array(True)
    session = lumen.InferenceSession(proto.SerializeToString())
    assert session.get_inputs()[0].type == "optional(tensor(float))"
    assert session.run(None, {"o": None})[0] == np.array(False)


def test_sequence_errors_name_the_node():
    nodes = [helper.make_node("SequenceAt", ["xs", "i"], ["y"], name="pick")]
    proto = make_model(nodes, [seq_vi("xs", F), vi("i", I64, [])], [vi("y", F, None)])
    compiled = lumen.load_onnx(proto.SerializeToString()).compile()
    xs = [np.ones(2, np.float32)]
    with pytest.raises(lumen.Error, match=r"node 'y'.*position 3 is out of range for a sequence of 1"):
        compiled.run({"xs": xs, "i": np.int64(3)})
    with pytest.raises(lumen.Error, match=r"input 'xs': item 0 is int64, expected float32"):
        compiled.run({"xs": [np.ones(2, np.int64)], "i": np.int64(0)})
    with pytest.raises(TypeError, match="a sequence input takes a list"):
        compiled.run({"xs": np.ones(2, np.float32), "i": np.int64(0)})
    # A tensor op given a sequence is refused at load, naming the node.
    bad = make_model([helper.make_node("Relu", ["xs"], ["y"], name="relu_of_seq")],
                     [seq_vi("xs", F)], [vi("y", F, None)])
    with pytest.raises(lumen.Error, match=r"relu_of_seq.*seq\(float32\); this op takes tensors"):
        lumen.load_onnx(bad.SerializeToString())


# --- strings -----------------------------------------------------------------------------------

S = TensorProto.STRING


def test_string_ops_against_onnxruntime():
    nodes = [helper.make_node("StringNormalizer", ["words"], ["normal"], case_change_action="LOWER",
                              is_case_sensitive=0, stopwords=["the", "A"], locale="C"),
             helper.make_node("Equal", ["normal", "key"], ["is_key"]),
             helper.make_node("LabelEncoder", ["normal"], ["ids"], domain="ai.onnx.ml",
                              keys_strings=["cat", "dog"], values_int64s=[1, 2], default_int64=-7)]
    proto = make_model(nodes, [vi("words", S, [None]), vi("key", S, [])],
                       [vi("normal", S, None), vi("is_key", TensorProto.BOOL, None),
                        vi("ids", I64, None)], opset=20, ml=True)
    words = np.array(["The", "Cat", "sat", "on", "a", "DOG"], dtype=object)
    check(proto, {"words": words, "key": np.array("cat", dtype=object)})


def test_string_split_concat_regex():
    """Against the ONNX reference evaluator (onnxruntime lacks some of these ops)."""
    from onnx.reference import ReferenceEvaluator

    nodes = [helper.make_node("StringSplit", ["x"], ["pieces", "counts"], delimiter="-",
                              maxsplit=2),
             helper.make_node("StringSplit", ["x"], ["words", "n_words"]),
             helper.make_node("StringConcat", ["x", "suffix"], ["joined"]),
             helper.make_node("RegexFullMatch", ["x"], ["match"], pattern=r"[a-z]+(-[a-z]+)*")]
    proto = make_model(nodes, [vi("x", S, [None]), vi("suffix", S, [])],
                       [vi("pieces", S, None), vi("counts", I64, None), vi("words", S, None),
                        vi("n_words", I64, None), vi("joined", S, None),
                        vi("match", TensorProto.BOOL, None)], opset=20)
    feeds = {"x": np.array(["a-b-c-d", "  two  words ", "", "x--y"], dtype=object),
             "suffix": np.array("!", dtype=object)}
    expected = ReferenceEvaluator(proto).run(None, feeds)
    check(proto, feeds, compare_to_ort=False, expected=expected)


def test_save_optimized_refuses_sequences(tmp_path):
    nodes = [helper.make_node("SequenceConstruct", ["x"], ["s"]),
             helper.make_node("SequenceLength", ["s"], ["n"])]
    proto = make_model(nodes, [vi("x", F, [2])], [vi("n", I64, [])])
    model = lumen.load_onnx(proto.SerializeToString())
    with pytest.raises(lumen.Error, match="sequences, optionals and strings cannot be written"):
        model.save_optimized(str(tmp_path / "out.onnx"))


def test_nms_sized_by_its_kernel_still_checks_inputs():
    """NonMaxSuppression's rows are counted once, by the kernel (inference would do the whole
    selection again); inference still checks the inputs at run time, without the values."""
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou"], ["sel"],
                              name="nms")]
    proto = make_model(nodes, [vi("boxes", F, [1, "n", 4]), vi("scores", F, [1, 2, "m"])],
                       [vi("sel", I64, None)],
                       [const("max", np.array([3], np.int64)), const("iou", np.float32(0.5))])
    xy = RNG.uniform(0, 10, (1, 40, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + RNG.uniform(1, 4, (1, 40, 2)).astype(np.float32)], axis=2)
    scores = RNG.uniform(0, 1, (1, 2, 40)).astype(np.float32)
    compiled = check(proto, {"boxes": boxes, "scores": scores})
    with pytest.raises(lumen.Error, match=r"boxes \[1, 40, 4\] and scores \[1, 2, 39\] do not match"):
        compiled.run({"boxes": boxes, "scores": scores[:, :, :39]})
