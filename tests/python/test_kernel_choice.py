"""Kernel choice by measurement (src/backends/cpu/kernel_choice.h): every algorithm a conv can be
given agrees with the reference backend, compiled steps say which algorithm they got and why, and
measured choices persist per machine on disk."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import lumen


def conv_model(x_shape, w_shape, group=1, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
               activation=None, residual=False):
    rng = np.random.default_rng(sum(x_shape) + sum(w_shape))
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    b = (rng.standard_normal(w_shape[0]) * 0.5 + 0.25).astype(np.float32)  # non-zero biases
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=group, strides=list(strides),
                              pads=list(pads), dilations=list(dilations))]
    last = "c"
    if residual:
        nodes.append(helper.make_node("Add", [last, "z"], ["r"]))
        last = "r"
    if activation:
        nodes.append(helper.make_node(activation, [last], ["a"]))
        last = "a"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    oh = (x_shape[2] + pads[0] + pads[2] - dilations[0] * (w_shape[2] - 1) - 1) // strides[0] + 1
    ow = (x_shape[3] + pads[1] + pads[3] - dilations[1] * (w_shape[3] - 1) - 1) // strides[1] + 1
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    if residual:
        inputs.append(helper.make_tensor_value_info(
            "z", TensorProto.FLOAT, [x_shape[0], w_shape[0], oh, ow]))
    graph = helper.make_graph(nodes, "conv", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# name: (algorithm, model keyword arguments). Each algorithm on shapes where its rule would not
# pick it as well as where it would.
CASES = {
    "winograd_3x3": ("winograd", dict(x_shape=(2, 16, 14, 14), w_shape=(24, 16, 3, 3),
                                      pads=(1, 1, 1, 1), activation="Relu")),
    "winograd_small_map": ("winograd", dict(x_shape=(1, 32, 7, 7), w_shape=(32, 32, 3, 3),
                                            pads=(1, 1, 1, 1), residual=True)),
    "winograd_tiny": ("winograd", dict(x_shape=(2, 3, 3, 5), w_shape=(5, 3, 3, 3),
                                       pads=(1, 1, 1, 1), activation="Relu")),
    "winograd_unpadded": ("winograd", dict(x_shape=(1, 8, 9, 8), w_shape=(4, 8, 3, 3))),
    "grid_3x3": ("gemm_grid", dict(x_shape=(2, 16, 14, 14), w_shape=(24, 16, 3, 3),
                                   pads=(1, 1, 1, 1), activation="Sigmoid")),
    "grid_s2": ("gemm_grid", dict(x_shape=(1, 8, 17, 15), w_shape=(12, 8, 3, 3), strides=(2, 2),
                                  pads=(1, 1, 1, 1), activation="HardSwish")),
    "grid_dilated": ("gemm_grid", dict(x_shape=(1, 8, 12, 12), w_shape=(8, 8, 3, 3),
                                       pads=(2, 2, 2, 2), dilations=(2, 2))),
    "gemm_3x3": ("gemm", dict(x_shape=(2, 16, 14, 14), w_shape=(24, 16, 3, 3), pads=(1, 1, 1, 1),
                              residual=True, activation="Relu")),
    "gemm_grouped": ("gemm", dict(x_shape=(1, 32, 9, 9), w_shape=(32, 8, 3, 3), group=4,
                                  pads=(1, 1, 1, 1))),
    "group_lanes": ("group_lanes", dict(x_shape=(2, 32, 9, 9), w_shape=(32, 8, 3, 3), group=4,
                                        pads=(1, 1, 1, 1), activation="Relu")),
    "group_lanes_rgb": ("group_lanes", dict(x_shape=(1, 3, 20, 20), w_shape=(16, 3, 3, 3),
                                            strides=(2, 2), pads=(1, 1, 1, 1))),
    "depthwise_lanes_wide": ("depthwise_lanes", dict(x_shape=(2, 12, 30, 30), w_shape=(12, 1, 3, 3),
                                                     group=12, pads=(1, 1, 1, 1),
                                                     activation="Relu")),
    "depthwise_lanes_5x5_s2": ("depthwise_lanes", dict(x_shape=(1, 10, 19, 19),
                                                       w_shape=(10, 1, 5, 5), group=10,
                                                       strides=(2, 2), pads=(2, 2, 2, 2),
                                                       residual=True)),
    "depthwise_planes_narrow": ("depthwise_planes", dict(x_shape=(2, 12, 7, 7),
                                                         w_shape=(12, 1, 3, 3), group=12,
                                                         pads=(1, 1, 1, 1), activation="Sigmoid")),
    "depthwise_planes_7x7": ("depthwise_planes", dict(x_shape=(1, 9, 14, 14),
                                                      w_shape=(9, 1, 7, 7), group=9,
                                                      pads=(3, 3, 3, 3))),
}


def _feeds(model):
    rng = np.random.default_rng(7)
    feeds = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = rng.uniform(-2, 2, size=shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_algorithm_matches_the_reference(case, tmp_path, monkeypatch):
    algorithm, kwargs = CASES[case]
    monkeypatch.setenv("LUMEN_FORCE_ALGORITHM", algorithm)
    monkeypatch.setenv("LUMEN_CACHE_DIR", str(tmp_path))
    path = str(tmp_path / "conv.onnx")
    model = conv_model(**kwargs)
    onnx.save(model, path)
    feeds = _feeds(model)
    compiled = lumen.load_onnx(path).compile(backend="cpu", num_threads=2)
    conv_steps = [s for s in compiled.executable.steps if "conv" in s.op]
    assert len(conv_steps) == 1
    assert conv_steps[0].algorithm.startswith(algorithm + " (forced"), conv_steps[0].algorithm
    got = compiled.run(feeds)[0]
    want = lumen.load_onnx(path).compile(backend="reference").run(feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_steps_say_which_algorithm_and_why(tmp_path, monkeypatch):
    monkeypatch.delenv("LUMEN_FORCE_ALGORITHM", raising=False)
    monkeypatch.setenv("LUMEN_CACHE_DIR", str(tmp_path))
    path = str(tmp_path / "conv.onnx")
    onnx.save(conv_model((1, 16, 14, 14), (16, 16, 3, 3), pads=(1, 1, 1, 1)), path)
    steps = lumen.load_onnx(path).compile(backend="cpu").executable.steps
    (conv,) = [s for s in steps if "conv" in s.op]
    # Winograd, the padded grid and im2col panels can all run it: each is timed.
    assert conv.algorithm.split(" ")[0] in {"winograd", "gemm_grid", "gemm"}
    assert "measured" in conv.algorithm
    for name in ("winograd", "gemm_grid", "gemm"):
        assert f"{name} " in conv.algorithm.split("(", 1)[1]
    # A 1x1 conv has one algorithm; with measuring off the rule decides.
    onnx.save(conv_model((1, 16, 14, 14), (8, 16, 1, 1)), path)
    (conv,) = [s for s in lumen.load_onnx(path).compile(backend="cpu").executable.steps
               if "conv" in s.op]
    assert conv.algorithm == "gemm (only algorithm)"
    monkeypatch.setenv("LUMEN_CALIBRATE", "0")
    onnx.save(conv_model((1, 6, 7, 7), (6, 1, 3, 3), group=6, pads=(1, 1, 1, 1)), path)
    (conv,) = [s for s in lumen.load_onnx(path).compile(backend="cpu").executable.steps
               if "conv" in s.op]
    assert conv.algorithm == "depthwise_lanes (rule)"


def test_measured_choices_persist_per_machine(tmp_path):
    """A second process compiling the same conv reads the first one's measurement from disk."""
    path = str(tmp_path / "conv.onnx")
    onnx.save(conv_model((1, 8, 12, 12), (8, 8, 3, 3), pads=(1, 1, 1, 1)), path)
    script = textwrap.dedent(f"""
        import lumen
        steps = lumen.load_onnx({path!r}).compile(backend="cpu", num_threads=2).executable.steps
        print([s.algorithm for s in steps if "conv" in s.op][0])
    """)
    env = dict(os.environ, LUMEN_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("LUMEN_FORCE_ALGORITHM", None)
    env.pop("LUMEN_CALIBRATE", None)
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.strip() for _ in range(2)]
    assert "(measured: " in runs[0], runs
    assert runs[1].startswith(runs[0].split(" ")[0] + " (measured before: "), runs
    cache = tmp_path / "cache" / "kernel_choices.tsv"
    lines = cache.read_text().splitlines()
    assert len(lines) == 1 and len(lines[0].split("\t")) == 5, lines
    # The machine field names this build (version, library size and time): a line from another
    # build of Lumen, whose kernels may differ, is not trusted.
    machine = lines[0].split("\t")[0]
    assert " / lumen " in machine and " build " in machine, machine
    cache.write_text(lines[0].replace(" build ", " build 1", 1) + "\n")
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert "(measured: " in again, again


@pytest.mark.parametrize("algorithm", ["conv_max_pool_fused", "conv_then_max_pool"])
def test_first_conv_and_max_pool_fused_or_apart(algorithm, tmp_path, monkeypatch):
    """fused_conv_max_pool times the fused kernel against the conv's own kernel then the pool."""
    monkeypatch.setenv("LUMEN_FORCE_ALGORITHM", algorithm)
    monkeypatch.setenv("LUMEN_CACHE_DIR", str(tmp_path))
    # t is over 1 MiB, as the fusing pass requires.
    model = conv_model((1, 3, 270, 262), (16, 3, 3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                       activation="Relu")
    pool = helper.make_node("MaxPool", ["y"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1])
    model.graph.node.append(pool)
    model.graph.output[0].name = "p"
    path = str(tmp_path / "stem.onnx")
    onnx.save(model, path)
    feeds = _feeds(model)
    compiled = lumen.load_onnx(path).compile(backend="cpu", num_threads=2)
    (step,) = [s for s in compiled.executable.steps if s.op == "fused_conv_max_pool"]
    assert step.algorithm.startswith(algorithm + " (forced"), step.algorithm
    got = compiled.run(feeds)[0]
    want = lumen.load_onnx(path).compile(backend="reference").run(feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
