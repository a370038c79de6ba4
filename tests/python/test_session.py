"""lumen.InferenceSession: the onnxruntime session API, so an application written for
onnxruntime runs on Lumen by changing its import."""

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")


def ocr_like_model():
    """A detector-style head: a conv over a dynamic-size image, a sigmoid probability map, and
    the count of pixels above a threshold (int64), with metadata."""
    rng = np.random.default_rng(11)
    w = numpy_helper.from_array(rng.standard_normal((1, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.array([0.2], np.float32), "b")
    nodes = [helper.make_node("Conv", ["image", "w", "b"], ["logits"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["logits"], ["prob"]),
             helper.make_node("Greater", ["prob", "threshold"], ["mask"]),
             helper.make_node("Cast", ["mask"], ["mask_i"], to=TensorProto.INT64),
             helper.make_node("ReduceSum", ["mask_i"], ["count"], keepdims=0)]
    graph = helper.make_graph(
        nodes, "ocr_det",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, "h", "w"]),
         helper.make_tensor_value_info("threshold", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["batch", 1, "h", "w"]),
         helper.make_tensor_value_info("count", TensorProto.INT64, [])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="paddle2onnx-like", model_version=3)
    helper.set_model_props(model, {"character_dict": "abc"})
    return model


def application(ort_module, model_bytes, image):
    """What an onnxruntime application does: session, metadata, inputs by name, run."""
    options = ort_module.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort_module.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort_module.InferenceSession(model_bytes, sess_options=options,
                                          providers=["CPUExecutionProvider"])
    assert "CPUExecutionProvider" in session.get_providers()
    names = [i.name for i in session.get_inputs()]
    prob, count = session.run(None, {names[0]: image, names[1]: np.array(0.5, np.float32)})
    (only_count,) = session.run(["count"], {names[0]: image, names[1]: np.array(0.5, np.float32)})
    meta = session.get_modelmeta()
    return {
        "inputs": [(i.name, i.type, i.shape) for i in session.get_inputs()],
        "outputs": [(o.name, o.type, o.shape) for o in session.get_outputs()],
        "prob": prob, "count": int(count), "only_count": int(only_count),
        "meta": (meta.producer_name, meta.graph_name, meta.version, meta.custom_metadata_map),
    }


def test_application_runs_unchanged_on_lumen(tmp_path):
    model = ocr_like_model()
    image = np.random.default_rng(0).standard_normal((1, 3, 17, 23)).astype(np.float32)
    want = application(ort, model.SerializeToString(), image)
    got = application(lumen, model.SerializeToString(), image)
    assert got["inputs"] == want["inputs"]
    assert got["outputs"] == want["outputs"]
    assert got["meta"] == want["meta"]
    assert got["count"] == want["count"] == got["only_count"]
    np.testing.assert_allclose(got["prob"], want["prob"], rtol=1e-5, atol=1e-6)
    # From a path too.
    path = tmp_path / "det.onnx"
    onnx.save(model, str(path))
    session = lumen.InferenceSession(str(path))
    assert session.get_inputs()[0].shape == ["batch", 3, "h", "w"]


def test_session_errors_name_what_is_wrong():
    session = lumen.InferenceSession(ocr_like_model().SerializeToString())
    image = np.zeros((1, 3, 4, 4), np.float32)
    with pytest.raises(lumen.Error, match="invalid output name 'nope'"):
        session.run(["nope"], {"image": image, "threshold": np.array(0.5, np.float32)})
    with pytest.raises(lumen.Error, match="missing input 'threshold'"):
        session.run(None, {"image": image})
    with pytest.raises(lumen.Error, match="input 'image'.*float32.*float64"):
        session.run(None, {"image": image.astype(np.float64), "threshold": np.array(0.5, np.float32)})
    with pytest.raises(TypeError):
        lumen.InferenceSession(42)
    assert isinstance(lumen.Error("x"), RuntimeError)
