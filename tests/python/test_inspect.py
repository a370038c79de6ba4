"""Introspection: Graph.nodes(), model.summary()/report(), save_optimized() as ONNX and its round
trip through lumen.load_onnx, and the `lumen inspect` command."""

import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import lumen

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.skipif(not lumen._lumen.has_onnx, reason="built without the importer")

SECTIONS = ("Op counts", "Passes", "Fused groups", "Memory plan", "Steps")


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def make_model(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_bn_relu():
    rng = np.random.default_rng(0)
    init = {
        "w": rng.standard_normal((4, 3, 3, 3)), "b": rng.standard_normal(4),
        "scale": rng.standard_normal(4), "bias": rng.standard_normal(4),
        "mean": rng.standard_normal(4), "var": rng.random(4) + 0.5,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["bn"],
                         name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["y"], name="relu"),
    ]
    model = make_model(nodes, [f32("x", [1, 3, 8, 8])], [f32("y", [1, 4, 8, 8])],
                       [numpy_helper.from_array(v.astype(np.float32), k) for k, v in init.items()])
    return model, {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}


def mlp():
    rng = np.random.default_rng(1)
    init = {"w1": rng.standard_normal((16, 32)), "b1": rng.standard_normal(32),
            "w2": rng.standard_normal((32, 8)), "b2": rng.standard_normal(8)}
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"], name="fc1"),
        helper.make_node("Add", ["m1", "b1"], ["a1"], name="bias1"),
        helper.make_node("Relu", ["a1"], ["h"], name="act1"),
        helper.make_node("MatMul", ["h", "w2"], ["m2"], name="fc2"),
        helper.make_node("Add", ["m2", "b2"], ["a2"], name="bias2"),
        helper.make_node("Relu", ["a2"], ["y"], name="act2"),
    ]
    model = make_model(nodes, [f32("x", [4, 16])], [f32("y", [4, 8])],
                       [numpy_helper.from_array(v.astype(np.float32), k) for k, v in init.items()])
    return model, {"x": rng.standard_normal((4, 16)).astype(np.float32)}


MODELS = {"conv_bn_relu": conv_bn_relu, "mlp": mlp}


@pytest.fixture(params=sorted(MODELS))
def model_and_feeds(request):
    return MODELS[request.param]()


def onnxruntime_outputs(model, feeds):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


# --- graph introspection ---------------------------------------------------------------------

def test_graph_nodes_values_and_attributes():
    g = lumen.Graph()
    x = g.add_input("x", [1, 3, 8, 8])
    w = g.add_constant("w", np.arange(4 * 3 * 9, dtype=np.float32).reshape(4, 3, 3, 3))
    c = g.add_op("conv2d", [x, w], name="conv", strides=[1, 1], pads=[1, 1, 1, 1], group=1)
    y = g.add_op("leaky_relu", [c], name="act", alpha=0.25)
    g.mark_output(y)

    nodes = g.nodes()
    assert [n.op for n in nodes] == ["conv2d", "leaky_relu"]
    conv, act = nodes
    assert conv.name == "conv" and conv.outputs[0].name == "conv"
    assert [v.name for v in conv.inputs] == ["x", "w"]
    assert conv.attributes["pads"] == [1, 1, 1, 1] and conv.attributes["group"] == 1
    assert conv.attribute_kinds["pads"] == "ints" and conv.attribute_kinds["group"] == "int"
    assert act.attributes == {"alpha": 0.25} and act.attribute_kinds == {"alpha": "float"}
    assert [n.name for n in conv.outputs[0].users] == ["act"]
    assert act.inputs[0].producer.name == "conv"
    assert x.producer is None and x.constant is None

    value = w.constant
    assert isinstance(value, np.ndarray) and value.shape == (4, 3, 3, 3)
    value[...] = 0  # a copy: the graph's constant is unchanged
    assert w.constant.sum() > 0

    # Nodes and values keep their graph alive.
    del g, x, w, c, y, nodes, conv
    assert act.inputs[0].producer.inputs[1].constant.shape == (4, 3, 3, 3)


def test_omitted_input_is_none_and_tensor_attribute_is_array():
    g = lumen.Graph()
    x = g.add_input("x", [1, 3, 8, 8])
    w = g.add_constant("w", np.ones((4, 3, 3, 3), np.float32))
    z = g.add_input("z", [1, 4, 8, 8])
    y = g.add_op("fused_conv", [x, w, None, z], pads=[1, 1, 1, 1], activation="relu")
    g.mark_output(y)
    (node,) = g.nodes()
    assert node.inputs[2] is None and node.inputs[3].name == "z"
    assert node.attributes["activation"] == "relu"

    g2 = lumen.Graph()
    shape = g2.add_input("s", [2], dtype="int64")
    g2.mark_output(g2.add_op("constant_of_shape", [shape], value=np.array([2.5], np.float32)))
    (node,) = g2.nodes()
    assert node.attribute_kinds["value"] == "tensor"
    np.testing.assert_array_equal(node.attributes["value"], np.array([2.5], np.float32))


# --- summary and report ----------------------------------------------------------------------

def test_summary_has_every_section(model_and_feeds):
    model, _ = model_and_feeds
    text = lumen.load_onnx(model).summary()
    for section in SECTIONS:
        assert section in text, f"no '{section}' section in:\n{text}"
    assert "total" in text
    compiled = lumen.load_onnx(model).compile()
    text = compiled.summary()
    for step in compiled.executable.steps:
        assert step.node in text
    memory = compiled.executable.memory
    if memory.spaces:  # a fully fused model may have no intermediates at all
        assert "planned/naive" in text and memory.spaces[0].space in text
    if not memory.planned:
        assert "not planned" in text


def test_report_is_json_and_has_the_fields(model_and_feeds):
    model, _ = model_and_feeds
    report = lumen.load_onnx(model).report()
    assert json.loads(json.dumps(report)) == report
    assert report["opt_level"] == 2
    assert {"inputs", "outputs", "ops", "passes", "fused", "memory", "steps"} <= set(report)
    ops = report["ops"]
    assert ops["total_before"] == sum(ops["before"].values()) == len(model.graph.node)
    assert ops["total_after"] == sum(ops["after"].values()) == len(report["steps"])
    assert ops["total_after"] <= ops["total_before"]
    for p in report["passes"]:
        assert {"name", "nodes_before", "nodes_after", "changes", "milliseconds"} <= set(p)
        assert isinstance(p["changes"], list)
    for s in report["steps"]:
        assert s["backend"] and s["dtype"] == "float32" and "attributes" in s
    for f in report["fused"]:
        assert f["op"].startswith("fused_") or f["op"] in ("layer_norm", "gelu")
    assert isinstance(report["memory"]["planned"], bool)
    for space in report["memory"]["spaces"]:
        assert space["planned_bytes"] <= space["naive_bytes"]
        assert {"naive_bytes", "lower_bound_bytes", "planned_over_naive",
                "planned_over_bound", "num_values", "in_place"} <= set(space)


def test_compiled_model_keeps_its_optimize_report():
    model, _ = mlp()
    compiled = lumen.load_onnx(model).compile(opt_level=1)
    assert compiled.optimize_report.opt_level == 1
    assert compiled.report()["opt_level"] == 1
    level0 = lumen.load_onnx(model).report(opt_level=0)
    assert level0["ops"]["before"] == level0["ops"]["after"]


def test_summary_shows_fused_groups_and_unplanned_memory():
    from lumen._inspect import format_summary

    report = {
        "opt_level": 2, "inputs": [], "outputs": [],
        "ops": {"before": {"conv2d": 1, "relu": 1}, "after": {"fused_conv": 1},
                "total_before": 2, "total_after": 1},
        "passes": [{"name": "fuse_bias_activation", "nodes_before": 2, "nodes_after": 1,
                    "changes": ["relu 'act' into conv 'conv'"], "milliseconds": 0.1}],
        "fused": [{"node": "conv", "op": "fused_conv", "backend": "cpu", "dtype": "float32",
                   "attributes": "{activation=relu}", "inputs": ["x", "w", None]}],
        "memory": {"planned": False, "spaces": []},
        "steps": [{"node": "conv", "op": "fused_conv", "backend": "cpu", "dtype": "float32",
                   "attributes": "{activation=relu}",
                   "algorithm": "winograd (measured: winograd 10 us, gemm 20 us)"}],
    }
    text = format_summary(report)
    assert "winograd (measured: winograd 10 us, gemm 20 us)" in text
    assert "relu 'act' into conv 'conv'" in text
    assert "fused_conv(x, w, -)" in text and "{activation=relu}" in text
    assert "not planned" in text


# --- save_optimized and the "lumen" domain --------------------------------------------------

def test_save_optimized_round_trip_matches_onnxruntime(model_and_feeds, tmp_path):
    model, feeds = model_and_feeds
    expected = onnxruntime_outputs(model, feeds)
    path = tmp_path / "optimized.onnx"
    saved = lumen.load_onnx(model).save_optimized(str(path))
    onnx.checker.check_model(str(path), full_check=True)
    domains = {n.domain for n in saved.graph.node}
    imported = {o.domain for o in saved.opset_import}
    assert domains - {""} <= imported - {""}
    assert len(saved.graph.node) <= len(model.graph.node)
    reloaded = lumen.load_onnx(str(path))
    assert [i["name"] for i in reloaded.inputs] == [i.name for i in model.graph.input]
    outputs = reloaded.compile().run(feeds)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_lumen_domain_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    g = lumen.Graph()
    x = g.add_input("x", [1, 3, 8, 8])
    z = g.add_input("z", [1, 4, 8, 8])
    w = g.add_constant("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    c = g.add_op("fused_conv", [x, w, None, z], name="conv", pads=[1, 1, 1, 1],
                 activation="leaky_relu", activation_alpha=0.1)
    y = g.add_op("gelu", [c], name="gelu")
    g.mark_output(y)

    from lumen._export import graph_to_onnx

    proto = graph_to_onnx(g)
    onnx.checker.check_model(proto, full_check=True)
    ops = {(n.domain, n.op_type) for n in proto.graph.node}
    assert ("lumen", "fused_conv") in ops
    assert any(o.domain == "lumen" and o.version == 1 for o in proto.opset_import)

    feeds = {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32),
             "z": rng.standard_normal((1, 4, 8, 8)).astype(np.float32)}
    want = np.asarray(g.compile()(feeds)[0])
    path = tmp_path / "fused.onnx"
    onnx.save(proto, str(path))
    reloaded = lumen.load_onnx(str(path))
    (node,) = [n for n in reloaded.graph.nodes() if n.op == "fused_conv"]
    assert node.inputs[2] is None and node.attributes["activation"] == "leaky_relu"
    np.testing.assert_allclose(reloaded.compile(opt_level=0).run(feeds)[0], want, rtol=1e-5,
                               atol=1e-6)


# --- the command line --------------------------------------------------------------------------

def run_cli(*args):
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(lumen.__file__))
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "lumen", *args], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.fixture
def model_path(tmp_path):
    model, _ = conv_bn_relu()
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    return str(path)


def test_cli_json(model_path):
    result = run_cli("inspect", model_path, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ops"]["total_before"] == 3 and report["steps"]


def test_cli_text_and_dump_passes(model_path, tmp_path, capsys):
    from lumen.cli import main

    dump = tmp_path / "passes"
    assert main(["inspect", model_path, "--opt-level", "1", "--dump-passes", str(dump)]) == 0
    out = capsys.readouterr().out
    assert "(opt_level 1)" in out and all(s in out for s in SECTIONS)
    assert dump.is_dir()


def test_routing_gives_every_step_its_reason(model_path, capsys):
    """routing() and `lumen inspect --routing`: each step's backend and the place stage's reason.
    Automatic placement names what decided and that the reference backend is never placed
    automatically; a pinned backend says it was pinned."""
    from lumen.cli import main

    model = lumen.load_onnx(model_path)
    routes = model.compile().routing()
    assert routes
    for r in routes:
        assert r["reason"].startswith(r["backend"] + ": "), r
        if r["estimates_us"]:  # a GPU backend is here too (Vulkan): every candidate estimated
            assert " vs " in r["reason"] and set(r["estimates_us"]) >= {"cpu", r["backend"]}, r
        else:
            assert r["backend"] == "cpu", r
            assert "placed automatically" in r["reason"], r
            assert "not placed automatically: reference" in r["reason"], r  # each op has one
    pinned = model.compile(backend="reference").routing()
    assert all(r["reason"] == "reference: pinned (backend='reference')" for r in pinned), pinned
    assert main(["inspect", model_path, "--routing"]) == 0
    out = capsys.readouterr().out
    assert "reason" in out.splitlines()[0] and routes[0]["node"] in out
    assert "Memory plan" not in out  # only the routing table


def test_cli_errors(tmp_path):
    missing = run_cli("inspect", str(tmp_path / "missing.onnx"))
    assert missing.returncode != 0
    assert "no such file" in missing.stderr and "Traceback" not in missing.stderr

    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"this is not a model")
    bad = run_cli("inspect", str(garbage))
    assert bad.returncode != 0
    assert "garbage.onnx" in bad.stderr and "Traceback" not in bad.stderr

    usage = run_cli("inspect")  # argparse: exit 2 with a usage line
    assert usage.returncode == 2 and "usage" in usage.stderr


def test_cli_on_a_light_model_from_the_onnx_package(capsys):
    from lumen import conformance
    from lumen.cli import main

    try:
        paths = glob.glob(os.path.join(conformance._onnx_dir(), "light", "light_*.onnx"))
    except Exception:  # noqa: BLE001  (no onnx test data in this install)
        paths = []
    if not paths:
        pytest.skip("the onnx package has no light models")
    path = min(paths, key=os.path.getsize)
    assert main(["inspect", path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ops"]["total_after"] <= report["ops"]["total_before"]
