"""`lumen bench`, lumen._bench and the suite's model builders (bench/models.py), on tiny models:
JSON and Chrome-trace outputs, the output-agreement check, GFLOP counting and input generation."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from lumen import _bench, cli  # noqa: E402

pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import models  # noqa: E402
import suite  # noqa: E402


@pytest.fixture(scope="module")
def tiny_mlp(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bench") / "mlp.onnx")
    models.mlp(path, layers=2, width=16, batch=4)
    return path


def bench(argv, capsys):
    status = cli.main(["bench", *argv])
    out, err = capsys.readouterr()
    return status, out, err


# --- The command ------------------------------------------------------------------------------

def test_bench_compare_json(tiny_mlp, tmp_path, capsys):
    report = tmp_path / "bench.json"
    status, out, _ = bench([tiny_mlp, "--compare", "onnxruntime", "--runs", "3", "--threads",
                            "1", "--json", str(report)], capsys)
    assert status == 0
    for figure in ("compile (ms)", "first run (ms)", "median (ms)", "p99 (ms)",
                   "throughput (inf/s)", "peak memory (MiB)", "outputs agree"):
        assert figure in out
    data = json.loads(report.read_text())
    assert data["runs"] == 3 and data["threads"] == 1 and data["outputs_agree"] is True
    assert data["gflop"] == pytest.approx(2 * 2 * 4 * 16 * 16 / 1e9)
    for engine in ("lumen", "onnxruntime"):
        e = data[engine]
        assert e["compile_ms"] > 0 and e["first_run_ms"] > 0 and e["peak_memory_mib"] > 0
        lat = e["latency"]
        assert lat["runs"] == 3
        assert lat["min_ms"] <= lat["median_ms"] <= lat["p90_ms"] <= lat["p99_ms"]
        assert lat["throughput"] == pytest.approx(1e3 / lat["mean_ms"])
    assert data["ratios"]["median_ms"] == pytest.approx(
        data["lumen"]["latency"]["median_ms"] / data["onnxruntime"]["latency"]["median_ms"])
    assert data["arena"]["planned_mib"] <= data["arena"]["naive_mib"]
    [check] = data["outputs"]
    assert check["ok"] and check["shape"] == [4, 16] and check["max_rel"] < 1e-4


def test_bench_compares_with_onnxruntime_and_openvino(tiny_mlp, tmp_path, capsys):
    pytest.importorskip("openvino")
    report = tmp_path / "bench.json"
    status, out, _ = bench([tiny_mlp, "--compare", "onnxruntime,openvino", "--runs", "3",
                            "--threads", "1", "--no-memory", "--json", str(report)], capsys)
    assert status == 0
    assert "alternating lumen / onnxruntime, then lumen / openvino" in out
    assert "outputs agree with onnxruntime" in out and "outputs agree with openvino" in out
    data = json.loads(report.read_text())
    assert data["openvino"]["latency"]["runs"] == 3 and data["openvino_outputs_agree"] is True
    # Lumen alternates with each peer in turn: the OpenVINO ratios use that session's Lumen runs.
    assert data["openvino_session_lumen"]["runs"] == 3
    assert data["openvino_ratios"]["median_ms"] == pytest.approx(
        data["openvino_session_lumen"]["median_ms"] / data["openvino"]["latency"]["median_ms"])
    [check] = data["openvino_outputs"]
    assert check["ok"] and check["shape"] == [4, 16]
    # OpenVINO alone, and an unknown peer.
    assert bench([tiny_mlp, "--compare", "openvino", "--runs", "1", "--no-memory"], capsys)[0] == 0
    status, _, err = bench([tiny_mlp, "--compare", "tensorrt", "--runs", "1"], capsys)
    assert status == 1 and "onnxruntime, openvino" in err


def test_bench_json_to_stdout_without_compare(tiny_mlp, capsys):
    status, out, err = bench([tiny_mlp, "--runs", "2", "--no-memory", "--json", "-"], capsys)
    assert status == 0
    data = json.loads(out)  # the text report went to stderr
    assert data["onnxruntime"] is None and data["outputs_agree"] is None
    assert data["lumen"]["peak_memory_mib"] is None
    assert "median (ms)" in err


def test_bench_profile_writes_chrome_trace(tiny_mlp, tmp_path, capsys):
    trace = tmp_path / "trace.json"
    status, out, _ = bench([tiny_mlp, "--runs", "2", "--no-memory", "--profile",
                            "--profile-runs", "4", "--trace", str(trace)], capsys)
    assert status == 0
    assert "op type" in out and "fused_gemm" in out and str(trace) in out
    events = json.loads(trace.read_text())["traceEvents"]
    steps = lumen.load_onnx(tiny_mlp).compile().executable.steps
    spans = [e for e in events if e["ph"] == "X" and e["cat"] != "run"]
    assert {e["name"] for e in spans} == {s.node for s in steps}
    assert len(spans) == 4 * len(steps) and {e["tid"] for e in spans} == {0, 1, 2, 3}
    onnx_nodes = [n.name for n in onnx.load(tiny_mlp).graph.node]
    assert all(any(e["name"].startswith(n) for n in onnx_nodes) for e in spans)
    assert all(e["dur"] >= 0 and e["args"]["op"] == e["cat"] for e in spans)
    # Every span names its shapes, and the table shows them beside the node.
    assert all(" -> " in e["args"]["shapes"] for e in spans)
    assert any(" -> " in line and "fused_gemm" in line for line in out.splitlines())
    assert any(e["ph"] == "M" and "(median)" in e["args"]["name"] for e in events)


def test_bench_fails_when_outputs_disagree(tiny_mlp, capsys, monkeypatch):
    real = _bench._LumenEngine.outputs
    monkeypatch.setattr(_bench._LumenEngine, "outputs",
                        lambda self, results: [o * 1.01 for o in real(self, results)])
    status, out, err = bench([tiny_mlp, "--compare", "onnxruntime", "--runs", "1",
                              "--no-memory"], capsys)
    assert status == 1
    assert "outputs DISAGREE" in out and "FAIL" in out
    assert "outputs disagree with onnxruntime" in err


def test_bench_errors_are_one_line(tmp_path, capsys):
    missing = tmp_path / "missing.onnx"
    status, _, err = bench([str(missing)], capsys)
    assert status == 1 and err == f"lumen bench: error: {missing}: no such file\n"
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    status, _, err = bench([str(garbage)], capsys)
    assert status == 1 and err.startswith("lumen bench: error: ") and str(garbage) in err
    assert len(err.splitlines()) == 1


def test_console_entry_point(tiny_mlp):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(lumen.__file__)))
    proc = subprocess.run([sys.executable, "-m", "lumen", "bench", tiny_mlp, "--runs", "1",
                           "--warmup", "0", "--no-memory"], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    assert "1 timed runs" in proc.stdout


# --- Pieces -----------------------------------------------------------------------------------

def test_compare_outputs_tolerance():
    ref = np.array([1000.0, 1.0, 0.0], np.float32)
    # atol scales with the output's largest magnitude (1000): 0.05 off at 0 is within 0.1.
    [ok] = _bench.compare_outputs(["y"], [ref + [0.5, 0.0, 0.05]], [ref])
    assert ok.ok and ok.max_abs == pytest.approx(0.5) and ok.max_rel == pytest.approx(5e-4)
    [bad] = _bench.compare_outputs(["y"], [ref + [0.0, 0.0, 0.2]], [ref])
    assert not bad.ok and "1 of 3" in bad.problem
    [shape] = _bench.compare_outputs(["y"], [ref[:2]], [ref])
    assert not shape.ok and "shape" in shape.problem
    nan = np.array([np.nan, 1.0], np.float32)
    assert _bench.compare_outputs(["y"], [nan], [nan])[0].ok
    assert not _bench.compare_outputs(["y"], [nan], [np.ones(2, np.float32)])[0].ok
    ints = np.arange(4)
    assert _bench.compare_outputs(["i"], [ints], [ints])[0].ok
    assert not _bench.compare_outputs(["i"], [ints + [0, 0, 0, 1]], [ints])[0].ok


def test_compare_outputs_tied_detections():
    """Detections whose scores tie within the tolerance may come in another order (every output
    with their row axis follows); rows whose scores do not tie, or that differ, may not."""
    boxes = np.array([[0, 0, 4, 4], [1, 1, 5, 5], [2, 2, 6, 6], [3, 3, 7, 7]], np.float32)
    labels = np.array([3, 8, 70, 1])
    scores = np.array([0.9, 0.014854078, 0.014854078, 0.01], np.float32)
    ref = [boxes, labels, scores]
    order = np.array([0, 2, 1, 3])
    got = [boxes[order], labels[order], scores[order] + np.array([0, 3e-9, 0, 0], np.float32)]
    checks = _bench.compare_outputs(["boxes", "labels", "scores"], got, ref)
    assert all(c.ok for c in checks) and [c.tied_rows for c in checks] == [2, 2, 2]
    # Rows 0 and 1 do not tie (0.9 against 0.0149): swapped, they differ.
    order = np.array([1, 0, 2, 3])
    checks = _bench.compare_outputs(["boxes", "labels", "scores"],
                                    [boxes[order], labels[order], scores[order]], ref)
    assert not checks[0].ok and not checks[1].ok and not checks[2].ok
    # Tied rows in another order whose boxes differ as well: a real difference.
    order = np.array([0, 2, 1, 3])
    wrong = boxes[order].copy()
    wrong[1, 0] += 1
    checks = _bench.compare_outputs(["boxes", "labels", "scores"],
                                    [wrong, labels[order], scores[order]], ref)
    assert not checks[0].ok and not checks[1].ok and all(c.tied_rows == 0 for c in checks)


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_count_gflop():
    zeros = np.zeros
    model = _model(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),  # 1*4*8*8 * 3*3*3
         helper.make_node("Conv", ["c", "wg"], ["g"], group=2),  # 1*4*8*8 * 2*1*1
         helper.make_node("ConvTranspose", ["g", "wt"], ["t"]),  # 1*4*8*8 * 2*3*3
         helper.make_node("Flatten", ["t"], ["f"]),  # [1, 2*10*10]
         helper.make_node("Gemm", ["f", "b"], ["y"], transB=1),  # 1*5 * 200
         helper.make_node("MatMul", ["m", "k"], ["z"])],  # (N*3*5) * 4
        [f32("x", [1, 3, 8, 8]), f32("m", ["N", 3, 4])], [f32("y", None), f32("z", None)],
        [("w", zeros((4, 3, 3, 3), np.float32)), ("wg", zeros((4, 2, 1, 1), np.float32)),
         ("wt", zeros((4, 2, 3, 3), np.float32)), ("b", zeros((5, 200), np.float32)),
         ("k", zeros((4, 5), np.float32))])
    macs = 256 * 27 + 256 * 2 + 256 * 18 + 5 * 200
    gflop, uncounted = _bench.count_gflop(model, {"m": [2, 3, 4]})
    assert uncounted == [] and gflop == pytest.approx(2 * (macs + 2 * 15 * 4) / 1e9)
    gflop, uncounted = _bench.count_gflop(model)  # N unknown: that MatMul is left out
    assert len(uncounted) == 1 and gflop == pytest.approx(2 * macs / 1e9)


def test_make_inputs():
    model = _model([helper.make_node("Gather", ["table", "ids"], ["e"]),
                    helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.FLOAT)],
                   [helper.make_tensor_value_info("ids", TensorProto.INT64, ["B", 64]),
                    helper.make_tensor_value_info("mask", TensorProto.INT64, ["B", 64])],
                   [f32("e", None), f32("m", None)], [("table", np.zeros((7, 2), np.float32))])
    infos = [{"name": "ids", "dtype": "int64", "shape": ("B", 64)},
             {"name": "mask", "dtype": "int64", "shape": ("B", 64)},
             {"name": "x", "dtype": "float32", "shape": (2, None)}]
    feeds = _bench.make_inputs(infos, dims={"B": 3}, proto=model)
    assert feeds["ids"].shape == (3, 64) and feeds["ids"].dtype == np.int64
    assert feeds["ids"].min() >= 0 and feeds["ids"].max() < 7 and len(np.unique(feeds["ids"])) > 1
    assert (feeds["mask"] == 1).all()
    assert feeds["x"].shape == (2, 1) and feeds["x"].dtype == np.float32
    again = _bench.make_inputs(infos, dims={"B": 3}, proto=model)
    assert all((feeds[k] == again[k]).all() for k in feeds)  # fixed seed


# --- Suite models -----------------------------------------------------------------------------

TINY_BUILDS = {
    "mobilenet_v2": lambda p: models.mobilenet_v2(p, resolution=32, width=0.25, classes=10,
                                                  blocks=((1, 16, 1, 1), (6, 24, 2, 2))),
    "bert": lambda p: models.bert_encoder(p, layers=2, hidden=32, heads=4, ffn=64, seq=8,
                                          vocab=50),
    "mlp": lambda p: models.mlp(p, layers=3, width=8, batch=2),
    "gemm": lambda p: models.gemm(p, 16),
    "chain": lambda p: models.elementwise_chain(p, nodes=12, width=8),
}


@pytest.mark.parametrize("name", sorted(TINY_BUILDS))
def test_builders_make_valid_models(name, tmp_path):
    path = str(tmp_path / f"{name}.onnx")
    TINY_BUILDS[name](path)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    infos = [{"name": i.name, "dtype": "int64" if "int64" in i.type else "float32",
              "shape": i.shape} for i in session.get_inputs()]
    outputs = session.run(None, _bench.make_inputs(infos, proto=model))
    assert all(np.isfinite(o).all() and np.abs(o).max() > 0 for o in outputs)


def test_bert_structure(tmp_path):
    path = str(tmp_path / "bert.onnx")
    TINY_BUILDS["bert"](path)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ops.count("LayerNormalization") == 1 + 2 * 2 and ops.count("Softmax") == 2
    assert ops.count("Erf") == 2 and ops.count("MatMul") == 2 * 8


def test_suite_quick_run(tmp_path, capsys):
    report = tmp_path / "suite.json"
    status = suite.main(["--models", "^gemm256$", "--threads", "1", "--quick", "--json",
                         str(report), "--cache", str(tmp_path), "--peak-tool",
                         str(tmp_path / "none"), "--peak-gflops", "100"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "gemm256" in out and "geometric mean of ratios" in out
    [row] = json.loads(report.read_text())["threads"]["1"]["rows"]
    assert row["outputs_agree"] and row["gflop"] == pytest.approx(2 * 256**3 / 1e9)
    assert row["reference_steps"] == 0 and row["result"]["steps_per_backend"] == {"cpu": 1}


def test_suite_acceptance_reads_every_target():
    def row(model, ratio, agree=True, reference_steps=0):
        return {"model": model, "error": None, "ratio": ratio, "outputs_agree": agree,
                "lumen_gflops": None, "reference_steps": reference_steps}
    no_reference = "no step on the reference backend (a test oracle, never placed automatically)"
    _, good = suite.summarize([row("a", 0.8), row("b", 1.25)], 2, None)
    targets = dict(suite.acceptance(good))
    assert targets["outputs agree with onnxruntime on every model"] is True
    assert targets[no_reference] is True
    assert targets["geometric-mean ratio <= 1.0"] is True
    assert targets["no model above 1.3 (slowest: b at 1.25)"] is True
    assert targets["gemm4096 >= 85% of peak"] is None  # not in these rows
    _, bad = suite.summarize([row("a", 0.7, reference_steps=2), row("b", 1.35, agree=False)], 2,
                             None)
    targets = dict(suite.acceptance(bad))
    assert targets["outputs agree with onnxruntime on every model"] is False
    assert targets[no_reference] is False
    assert targets["geometric-mean ratio <= 1.0"] is True
    assert targets["no model above 1.3 (slowest: b at 1.35)"] is False


@pytest.mark.skipif(not os.path.exists(suite.PEAK_TOOL), reason="lumen_peak_flops not built")
def test_peak_flops_tool():
    proc = subprocess.run([suite.PEAK_TOOL, "--threads", "1", "--seconds", "0.01", "--trials",
                           "1"], capture_output=True, text=True, check=True)
    data = json.loads(proc.stdout)
    [result] = data["results"]
    assert result["threads"] == 1 and result["gflops"] > 1
    assert data["isa"] in ("avx512f", "avx2+fma", "generic")
