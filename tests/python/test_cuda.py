"""The CUDA backend from Python: a model compiled for CUDA against the CPU, outputs left in device
memory, and zero-copy DLPack both ways with PyTorch. Skips with the reason where Lumen was built
without CUDA or no GPU is here (CI); tools/gpu_check.sh runs it on a GPU machine."""

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def cuda_or_skip():
    for d in lumen.devices():
        if d["backend"] == "cuda":
            if not d["available"]:
                pytest.skip(f"no CUDA device: {d['why_not']}")
            return
    pytest.skip("Lumen was built without the CUDA backend")


def mlp(batch="batch"):
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((32, 64)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((64, 10)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Gelu", ["hb"], ["g"], domain=""),
             helper.make_node("MatMul", ["g", "w2"], ["z"]),
             helper.make_node("Softmax", ["z"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])],
                              [w1, b1, w2])
    return lumen.load_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]))


def test_a_model_on_cuda_matches_the_cpu_for_every_batch_size():
    cuda_or_skip()
    model = mlp()
    gpu, cpu = model.compile(backend="cuda"), model.compile(backend="cpu")
    for batch in (1, 7, 64):
        x = np.random.default_rng(batch).standard_normal((batch, 32)).astype(np.float32)
        np.testing.assert_allclose(gpu.run({"x": x})[0], cpu.run({"x": x})[0], rtol=1e-4,
                                   atol=1e-5)


def test_outputs_stay_on_the_device_and_cross_dlpack_with_torch():
    cuda_or_skip()
    torch = pytest.importorskip("torch")
    model = mlp()
    compiled = model.compile(backend="cuda", input_device="cuda", output_device="cuda")
    x = torch.randn(5, 32, device="cuda")
    out = compiled.run({"x": x})[0]  # the torch tensor read in place
    assert out.device == "cuda:0"
    back = torch.from_dlpack(out)  # and the output read by torch in place
    assert back.is_cuda
    want = model.compile(backend="cpu").run({"x": x.cpu().numpy()})[0]
    np.testing.assert_allclose(back.cpu().numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.to("cpu"), want, rtol=1e-4, atol=1e-5)
    # A non-contiguous CUDA view is refused (it would have to be made contiguous on the host).
    with pytest.raises(ValueError, match="non-contiguous CUDA tensor"):
        compiled.run({"x": torch.randn(32, 5, device="cuda").t()})


def built_with_cuda():
    return "cuda" in lumen.list_backends()


def devices_in_subprocess(env):
    import json
    import os
    import subprocess
    import sys

    code = ("import json, lumen; print(json.dumps([d for d in lumen.devices() "
            "if d['backend'] == 'cuda']))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_a_plugin_that_cannot_load_is_listed_with_the_reason(tmp_path):
    if not built_with_cuda():
        pytest.skip("Lumen was built without the CUDA backend")
    (cuda,) = devices_in_subprocess({"LUMEN_PLUGIN_DIR": str(tmp_path)})
    assert not cuda["available"]
    assert "its plugin did not load" in cuda["why_not"] and "liblumen_cuda.so" in cuda["why_not"]


def test_lumen_cuda_0_hides_the_gpu():
    if not built_with_cuda():
        pytest.skip("Lumen was built without the CUDA backend")
    (cuda,) = devices_in_subprocess({"LUMEN_CUDA": "0"})
    assert not cuda["available"] and cuda["why_not"] == "LUMEN_CUDA=0"


class AnnouncedAsCuda:
    """A host array that says it is in CUDA memory: exercises the DLPack import path without a
    GPU (the tensor made is never read)."""

    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__()


def test_cuda_dlpack_tensors_are_wrapped_in_place_and_views_refused():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = lumen.tensor(AnnouncedAsCuda(a))
    assert t.device == "cuda:0" and t.shape == (4, 6) and t.dtype == "float32"
    assert lumen.tensor(AnnouncedAsCuda(np.zeros((3, 1, 2), np.int64))).dtype == "int64"
    with pytest.raises(ValueError, match="non-contiguous CUDA tensor"):
        lumen.tensor(AnnouncedAsCuda(a.T))
    with pytest.raises(BufferError, match="t.to\\('cpu'\\)"):
        np.asarray(t)  # device memory is never read as host memory
