"""Routing between devices seen from Python and the CLI, on the simulated device
(src/backends/simulated: the CPU's kernels in a memory space of their own, 8x the CPU's measured
speed, an 8 GB/s link), enabled per process by LUMEN_SIMULATED_DEVICE, so each test runs a child
process. Placement is limited to "cpu,sim" (a Vulkan device here is no part of it). An MLP of
256x512 matmuls goes to the fast device with one copy in and one out; routing() gives every
candidate's estimate and the copies; `lumen inspect --routing` lists the copy steps; the results
equal a CPU-only compile bit for bit (the same kernels run either way); `lumen bench --profile`
puts the copies in a lane of their own in the Chrome trace."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import lumen

onnx = pytest.importorskip("onnx")
pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")


def mlp(path, layers=3, rows=256, width=512):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        b = rng.standard_normal(width).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"mm{i}"),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"bias{i}"),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu{i}")]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [rows, width])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def run_child(code, tmp_path, *args, device="speed=8,bandwidth=8,latency=20"):
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(lumen.__file__))
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    env["LUMEN_SIMULATED_DEVICE"] = device
    env["LUMEN_CACHE_DIR"] = str(tmp_path / "cache")
    cmd = [sys.executable, "-c", textwrap.dedent(code)] if code else [sys.executable, "-m",
                                                                      "lumen", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_routing_places_the_mlp_on_the_fast_device_and_matches_the_cpu(tmp_path):
    path = str(tmp_path / "mlp.onnx")
    mlp(path)
    out = run_child(f"""
        import json, numpy as np, lumen
        model = lumen.load_onnx({path!r})
        routed = model.compile(backend="cpu,sim", num_threads=2)
        cpu = model.compile(backend="cpu", num_threads=2)
        x = np.random.default_rng(1).standard_normal((256, 512)).astype(np.float32)
        same = bool(np.array_equal(routed.run({{"x": x}})[0], cpu.run({{"x": x}})[0]))
        print(json.dumps({{"routes": routed.routing(), "same": same,
                          "auto": [r["backend"] for r in model.compile().routing()]}}))
    """, tmp_path)
    result = json.loads(out.strip().splitlines()[-1])
    routes = result["routes"]
    assert result["same"], "the split run must equal the CPU's bit for bit"
    ops = [r["op"] for r in routes]
    assert ops[0] == "copy" and ops[-1] == "copy" and ops.count("copy") == 2, ops
    compute = [r for r in routes if r["op"] != "copy"]
    assert compute and all(r["backend"] == "sim" for r in compute), routes
    for r in compute:
        assert set(r["estimates_us"]) == {"cpu", "sim"}, r
        assert r["estimates_us"]["sim"] < r["estimates_us"]["cpu"], r
        assert r["reason"].startswith("sim: ") and " vs cpu " in r["reason"], r
    assert "copy: cpu -> sim:0" in routes[0]["reason"], routes[0]
    assert "sim" in result["auto"], "auto includes the simulated device"


def test_inspect_routing_and_the_trace_show_the_copies(tmp_path):
    path = str(tmp_path / "mlp.onnx")
    mlp(path, layers=2)
    out = run_child(None, tmp_path, "inspect", path, "--routing", "--backend", "cpu,sim")
    assert "copy: cpu -> sim:0" in out and "copy: sim:0 -> cpu" in out, out
    assert " vs cpu " in out, out
    trace = tmp_path / "trace.json"
    run_child(None, tmp_path, "bench", path, "--backend", "cpu,sim", "--runs", "2",
              "--no-memory", "--no-progress", "--profile", "--profile-runs", "2", "--trace",
              str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    lanes = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert any(name.endswith(": copies") for name in lanes), lanes
    copies = [e for e in events if e.get("cat") == "copy"]
    runs = [e for e in events if e.get("ph") == "X" and e.get("cat") not in ("copy", "run")]
    assert copies and runs and {e["tid"] for e in copies}.isdisjoint({e["tid"] for e in runs})


def test_an_adaptive_compile_moves_what_runs_slower_than_estimated(tmp_path):
    # The simulated device declares 8x the CPU's speed but runs 20x slower than it
    # (slowdown=20): the timed runs disagree with the estimates, the graph is placed again
    # between runs and its steps move to the CPU (src/runtime/adaptive_plan.h). Results stay the
    # CPU's; a plain compile keeps its plan.
    path = str(tmp_path / "mlp.onnx")
    mlp(path, layers=1)
    out = run_child(f"""
        import json, numpy as np, lumen
        model = lumen.load_onnx({path!r})
        x = np.random.default_rng(1).standard_normal((256, 512)).astype(np.float32)
        want = model.compile(backend="cpu", num_threads=2).run({{"x": x}})[0]
        fixed = model.compile(backend="cpu,sim", num_threads=2)
        for _ in range(3):
            fixed.run({{"x": x}})
        adaptive = model.compile(backend="cpu,sim", num_threads=2, adaptive=True)
        before = [r["backend"] for r in adaptive.routing() if r["op"] != "copy"]
        same = all(np.array_equal(adaptive.run({{"x": x}})[0], want) for _ in range(6))
        print(json.dumps({{"same": same, "replans": adaptive.replans(), "before": before,
                          "after": [r["backend"] for r in adaptive.routing()],
                          "fixed": fixed.replans()}}))
    """, tmp_path, device="speed=8,bandwidth=8,latency=20,slowdown=20")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["same"]
    assert result["fixed"] == []
    assert "sim" in result["before"], result
    assert 1 <= len(result["replans"]) <= 3, result["replans"]
    first = result["replans"][0]
    assert first.startswith("replan 1: ") and " on sim: " in first and "moved" in first, first
    assert set(result["after"]) == {"cpu"}, result


def test_inputs_and_outputs_stay_in_device_memory(tmp_path):
    """compile(input_device=, output_device=) on the simulated device: the caller's inputs are
    read where it keeps them (lumen.to_device) and the outputs come back there as lumen.Tensor,
    with no copy step in a plan pinned to it; t.to("cpu") reads them, equal to a CPU compile. A
    NumPy input is moved there first; NumPy refuses device memory with a clear message."""
    path = str(tmp_path / "mlp.onnx")
    mlp(path, layers=2, rows=16, width=32)
    out = run_child(f"""
        import numpy as np, lumen
        m = lumen.load_onnx({path!r})
        x = np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32)
        want = m.compile(backend="cpu")(x)
        c = m.compile(backend="sim", input_device="sim", output_device="sim", opt_level=0)
        assert [s["op"] for s in c.routing()].count("copy") == 0, c.routing()
        on_device = lumen.to_device(x, "sim")
        assert on_device.device == "sim:0"
        for given in (on_device, x):
            got = c.run({{"x": given}})[0]
            assert isinstance(got, lumen.Tensor) and got.device == "sim:0", got
            assert np.array_equal(got.to("cpu").numpy(), want)
        try:
            np.asarray(got)
            raise SystemExit("numpy read device memory")
        except BufferError as e:
            assert "to('cpu')" in str(e), e
        mixed = m.compile(backend="cpu", output_device="sim")
        assert [s["op"] for s in mixed.routing()][-1] == "copy"
        assert np.array_equal(mixed.run({{"x": x}})[0].to("cpu").numpy(), want)
        print("ok")
        """, tmp_path)
    assert out.strip().endswith("ok")
