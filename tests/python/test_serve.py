"""lumen serve: the Open Inference Protocol codec and the batching rules alone, then end to end: a
`lumen serve` process on loopback (a local Ray instance) serving two small models (one given by
--model, one by a --config file), queried with a
real HTTP client (httpx): metadata, JSON and binary infers against a direct compile().run(), the
4xx and 5xx answers, concurrent clients batched (seen in /metrics), and a graceful stop."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def dense_model(path, features=16, outputs=4):
    """x [batch, features] -> relu(x @ w + b), with a non-trivial bias."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((features, outputs)).astype(np.float32)
    b = rng.uniform(0.5, 1.5, outputs).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])], "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", outputs])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def failing_model(path):
    """x [batch, 16] reshaped to [-1, 5]: valid requests whose size is not a multiple of 5 fail
    at run time."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])], "failing",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([-1, 5], np.int64), "shape")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def json_infer(x, name="x"):
    return {"inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32",
                        "data": x.ravel().tolist()}]}


# --- The protocol and batching alone ---------------------------------------------------------

def test_protocol_decodes_json_and_binary_tensors_and_names_what_is_wrong():
    from lumen.serve import protocol

    inputs = [{"name": "x", "dtype": "float32", "shape": ("batch", 3)},
              {"name": "k", "dtype": "int64", "shape": (1,)}]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    body = json.dumps({"id": "r1", "inputs": [
        {"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [[0, 1, 2], [3, 4, 5]]},
        {"name": "k", "shape": [1], "datatype": "INT64", "data": [7]}]}).encode()
    rid, feeds, outputs, binary = protocol.decode_infer_request(body, None, inputs)
    assert (rid, outputs, binary) == ("r1", None, False)
    assert np.array_equal(feeds["x"], x) and feeds["k"].dtype == np.int64
    header = json.dumps({"inputs": [
        {"name": "x", "shape": [2, 3], "datatype": "FP32",
         "parameters": {"binary_data_size": 24}},
        {"name": "k", "shape": [1], "datatype": "INT64", "data": [7]}],
        "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
    _, feeds, outputs, binary = protocol.decode_infer_request(
        header + x.tobytes(), str(len(header)), inputs)
    assert np.array_equal(feeds["x"], x) and outputs == ["y"] and binary
    good_k = {"name": "k", "shape": [1], "datatype": "INT64", "data": [7]}
    cases = {
        "unknown input 'z'": [{"name": "z", "shape": [1], "datatype": "FP32", "data": [1]}, good_k],
        "missing input 'x'": [good_k],
        "input 'x': datatype FP64, the model takes FP32":
            [{"name": "x", "shape": [1, 3], "datatype": "FP64", "data": [1, 2, 3]}, good_k],
        "input 'x': shape [1, 4] does not fit the model's [batch, 3]":
            [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}, good_k],
        "input 'x': 2 values for shape [1, 3]":
            [{"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1, 2]}, good_k],
        "input 'x': binary_data_size 8, but shape [1, 3] of FP32 takes 12":
            [{"name": "x", "shape": [1, 3], "datatype": "FP32",
              "parameters": {"binary_data_size": 8}}, good_k],
        "input 'x': data is not FP32":
            [{"name": "x", "shape": [1, 3], "datatype": "FP32", "data": ["a", "b", "c"]}, good_k],
    }
    for expected, items in cases.items():
        with pytest.raises(protocol.RequestError, match=expected.replace("[", r"\[")):
            protocol.decode_infer_request(json.dumps({"inputs": items}).encode(), None, inputs)
    with pytest.raises(protocol.RequestError, match="not valid JSON"):
        protocol.decode_infer_request(b"{nope", None, inputs)
    with pytest.raises(protocol.RequestError, match="outside the body"):
        protocol.decode_infer_request(b"{}", "99", inputs)
    with pytest.raises(protocol.RequestError) as big:
        protocol.decode_infer_request(json.dumps({"inputs": [
            {"name": "x", "shape": [1 << 27, 3], "datatype": "FP32", "data": []},
            good_k]}).encode(), None, inputs)
    assert big.value.status == 413
    body, headers = protocol.encode_infer_response("m", "r1", [("y", x)], binary=True)
    n = int(headers[protocol.HEADER_LENGTH])
    assert json.loads(body[:n])["outputs"][0]["parameters"]["binary_data_size"] == 24
    assert np.array_equal(np.frombuffer(body[n:], np.float32).reshape(2, 3), x)


def test_batching_groups_requests_that_agree_and_splits_results_back():
    from lumen.serve import batching

    assert batching.batchable([{"shape": ("batch", 3)}, {"shape": (None, 2)}])
    assert not batching.batchable([{"shape": (1, 3)}])
    assert not batching.batchable([{"shape": None}])
    a = {"x": np.ones((1, 3), np.float32)}
    b = {"x": np.ones((2, 3), np.float32)}
    other = {"x": np.ones((1, 4), np.float32)}
    mixed = {"x": np.ones((1, 3), np.float32), "y": np.ones((2, 3), np.float32)}
    assert batching.groups([a, b, other, a, mixed, a], max_batch=4) == [[0, 1, 3], [2], [4], [5]]
    joined = batching.concatenate([a, b])
    assert joined["x"].shape == (3, 3)
    parts = batching.split([np.arange(6).reshape(3, 2)], [1, 2])
    assert [p[0].tolist() for p in parts] == [[[0, 1]], [[2, 3], [4, 5]]]
    assert batching.split([np.zeros(2)], [1, 2]) is None  # an output without the batch


def fixed_batch_model(path, hidden_batch=False):
    """x [1, 16] -> [1, 4, 4] -> sums of rows [1, 4]. The Reshape's shape fixes the batch at 1 (a
    variant copies it instead); with `hidden_batch`, the graph drops the batch dim and adds it back
    (Reshape to [4, 4], Unsqueeze), which no rewrite of input dims can make batch."""
    shape = [4, 4] if hidden_batch else [1, 4, 4]
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("ReduceSum", ["r", "axes"], ["s"], keepdims=0)]
    inits = [numpy_helper.from_array(np.array(shape, np.int64), "shape"),
             numpy_helper.from_array(np.array([len(shape) - 1], np.int64), "axes")]
    if hidden_batch:
        nodes.append(helper.make_node("Unsqueeze", ["s", "zero"], ["y"]))
        inits.append(numpy_helper.from_array(np.array([0], np.int64), "zero"))
    else:
        nodes.append(helper.make_node("Identity", ["s"], ["y"]))
    graph = helper.make_graph(nodes, "fixed",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_a_model_exported_with_a_batch_of_one_batches_through_a_checked_variant(tmp_path):
    from lumen.serve import batching

    for hidden, batches in ((False, True), (True, False)):
        path = str(tmp_path / f"fixed{hidden}.onnx")
        fixed_batch_model(path, hidden_batch=hidden)
        model = lumen.load_onnx(path)
        compiled = model.compile()
        variant = batching.symbolic_batch_variant(path, model.inputs, compiled,
                                                  lambda m: m.compile())
        assert (variant is not None) == batches, hidden
        if variant:
            batched_model, batched = variant
            assert batching.batchable(batched_model.inputs)
            x = np.random.default_rng(3).standard_normal((5, 16)).astype(np.float32)
            np.testing.assert_allclose(batched.run({"x": x})[0],
                                       x.reshape(5, 4, 4).sum(axis=2), rtol=1e-5, atol=1e-5)


def test_model_specs_fill_defaults_and_name_unknown_keys():
    from lumen.serve import model_specs

    specs = model_specs({"a": "a.onnx", "b": {"path": "b.onnx", "max_batch": 2}}, max_batch=8,
                        num_threads=1)
    assert specs == {"a": {"path": "a.onnx", "max_batch": 8, "num_threads": 1},
                     "b": {"path": "b.onnx", "max_batch": 2, "num_threads": 1}}
    with pytest.raises(ValueError, match="model 'b': unknown keys batch; allowed: path, max_batch"):
        model_specs({"b": {"path": "b.onnx", "batch": 2}})
    with pytest.raises(ValueError, match="model 'c': no path"):
        model_specs({"c": {"max_batch": 2}})


def test_deployment_is_a_ray_serve_application_to_compose(tmp_path):
    pytest.importorskip("ray.serve")
    from ray.serve import Application

    import lumen.serve

    path = str(tmp_path / "dense.onnx")
    dense_model(path)
    assert isinstance(lumen.serve.deployment(path, max_batch=4, num_threads=1), Application)
    assert isinstance(lumen.serve.application({"dense": path}), Application)


def test_a_model_travels_with_its_external_data_to_nodes_without_its_path(tmp_path):
    from lumen.serve import shipping

    folder = tmp_path / "model"
    folder.mkdir()
    path = str(folder / "dense.onnx")
    dense_model(path)
    import onnx

    onnx.save_model(onnx.load(path), path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location="dense.weights", size_threshold=0)
    assert shipping.external_files(path) == ["dense.weights"]
    package = shipping.model_package(path)
    assert sorted(package["files"]) == ["dense.onnx", "dense.weights"]
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    want = lumen.load_onnx(path).compile().run({"x": x})[0]
    # A node with the same files loads them in place.
    assert shipping.local_model(path, package) == (path, None)
    # A node without them (or with other contents) loads a temporary copy of the package.
    os.remove(folder / "dense.weights")
    local, copy = shipping.local_model(path, package)
    assert copy is not None and local != path
    got = lumen.load_onnx(local).compile().run({"x": x})[0]
    copy.cleanup()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # A package naming a file outside the model's folder is refused.
    package["files"]["../evil"] = b""
    package["digest"] = "other"
    with pytest.raises(ValueError, match="outside the model's folder"):
        shipping.local_model(path, package)


# --- End to end ------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("ray.serve")
    httpx = pytest.importorskip("httpx")
    tmp = tmp_path_factory.mktemp("serve")
    dense, failing = str(tmp / "dense.onnx"), str(tmp / "failing.onnx")
    dense_model(dense)
    failing_model(failing)
    config = tmp / "models.json"  # per-model settings, a path relative to the file
    config.write_text(json.dumps({"models": {"failing": {"path": "failing.onnx",
                                                         "max_batch": 1, "num_threads": 1}}}))
    port = free_port()
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(lumen.__file__))
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    env["LUMEN_CACHE_DIR"] = str(tmp / "cache")
    env.pop("RAY_ADDRESS", None)
    log = open(tmp / "serve.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lumen", "serve", "--model", f"dense={dense}", "--config",
         str(config), "--port", str(port), "--max-batch", "16", "--batch-timeout-ms",
         "20", "--threads", "1", "--max-body-mb", "1"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while True:
        if proc.poll() is not None:
            log.seek(0)
            pytest.fail(f"lumen serve exited with {proc.returncode}:\n{log.read()[-4000:]}")
        try:
            if httpx.get(url + "/v2/health/ready", timeout=30).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.time() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            log.seek(0)
            pytest.fail(f"lumen serve not ready in 300 s:\n{log.read()[-4000:]}")
        time.sleep(1)
    yield {"url": url, "dense": dense, "proc": proc, "log": log}
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_metadata_and_inference_match_a_direct_run(server):
    import httpx

    url = server["url"]
    meta = httpx.get(url + "/v2/models/dense").json()
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 16]}]
    assert meta["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [-1, 4]}]
    assert httpx.get(url + "/v2/models/dense/ready").json()["ready"]
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    want = lumen.load_onnx(server["dense"]).compile().run({"x": x})[0]
    r = httpx.post(url + "/v2/models/dense/infer", json={"id": "a", **json_infer(x)})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["id"] == "a" and out["model_name"] == "dense"
    assert out["outputs"][0]["shape"] == [3, 4] and out["outputs"][0]["datatype"] == "FP32"
    np.testing.assert_allclose(np.array(out["outputs"][0]["data"]).reshape(3, 4), want,
                               rtol=1e-5, atol=1e-5)
    header = json.dumps({"inputs": [{"name": "x", "shape": [3, 16], "datatype": "FP32",
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    r = httpx.post(url + "/v2/models/dense/infer", content=header + x.tobytes(),
                   headers={"Inference-Header-Content-Length": str(len(header))})
    assert r.status_code == 200, r.text
    n = int(r.headers["inference-header-content-length"])
    assert r.headers["content-type"] == "application/octet-stream"
    np.testing.assert_allclose(np.frombuffer(r.content[n:], np.float32).reshape(3, 4), want,
                               rtol=1e-5, atol=1e-5)


def test_bad_requests_get_a_4xx_naming_the_input_and_failures_a_5xx(server):
    import httpx

    url = server["url"] + "/v2/models/"
    x = np.ones((1, 16), np.float32)
    cases = [
        ("dense", json_infer(x, name="z"), 400, "unknown input 'z'"),
        ("dense", json_infer(np.ones((1, 15), np.float32)), 400,
         "input 'x': shape [1, 15] does not fit the model's [batch, 16]"),
        ("dense", {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "INT32",
                               "data": [1] * 16}]}, 400, "input 'x': datatype INT32"),
        ("nope", json_infer(x), 404, "unknown model 'nope'; served: dense, failing"),
        ("failing", json_infer(np.ones((1, 16), np.float32)), 500, "model 'failing' failed"),
    ]
    for model, body, status, message in cases:
        r = httpx.post(url + model + "/infer", json=body)
        assert r.status_code == status and message in r.json()["error"], (r.status_code, r.text)
    r = httpx.post(url + "dense/infer", content=b'{"inputs": [')
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
    r = httpx.post(url + "dense/infer", content=b"0" * (2 << 20))
    assert r.status_code == 413 and "over the limit" in r.json()["error"]
    # The server goes on serving, the failing model too where its run succeeds.
    assert httpx.post(url + "dense/infer", json=json_infer(x)).status_code == 200
    assert httpx.post(url + "failing/infer",
                      json=json_infer(np.ones((5, 16), np.float32))).status_code == 200


def test_concurrent_clients_are_batched(server):
    import httpx

    x = np.random.default_rng(2).standard_normal((48, 16)).astype(np.float32)
    want = lumen.load_onnx(server["dense"]).compile().run({"x": x})[0]
    url = server["url"] + "/v2/models/dense/infer"

    def metric(text, name):
        return sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith(name + "{") and 'model="dense"' in line)

    before = httpx.get(server["url"] + "/metrics").text

    async def clients():
        async with httpx.AsyncClient(timeout=120) as client:
            return await asyncio.gather(*[client.post(url, json=json_infer(x[i:i + 1]))
                                          for i in range(len(x))])

    for i, r in enumerate(asyncio.run(clients())):
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(r.json()["outputs"][0]["data"], want[i], rtol=1e-5, atol=1e-5)
    after = httpx.get(server["url"] + "/metrics").text
    runs = metric(after, "lumen_batch_size_count") - metric(before, "lumen_batch_size_count")
    batched = metric(after, "lumen_batch_size_sum") - metric(before, "lumen_batch_size_sum")
    assert batched == len(x) and runs < len(x), (runs, batched)  # some batch held > 1 request
    assert metric(after, "lumen_requests_total") >= len(x)


def test_sigint_stops_the_server_gracefully(server):
    proc = server["proc"]
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 0
