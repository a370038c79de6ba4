"""The channel-blocked layout (graph/ops/nchwc.cc, passes/nchwc_layout.cc, cpu/kernels/nchwc.cc):
chains of pointwise and depthwise convs run as nchwc_conv and agree with the reference backend on
the unoptimized graph, over the shapes the kernels split differently (output groups of 1 to 3
blocks, input channels past one pass of 16 blocks, odd maps, strides, dilations, every fusable
activation, residuals, a symbolic batch)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import lumen


class Chain:
    """Builds Conv (+ activation) (+ residual Add) nodes one after another on 'x' [N, C, H, W]."""

    def __init__(self, channels, size, batch="N"):
        self.rng = np.random.default_rng(channels * 100 + size[0])
        self.nodes, self.inits = [], []
        self.last, self.channels, self.size, self.batch = "x", channels, size, batch
        self.input = helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   [batch, channels, *size])

    def conv(self, out, kernel=1, group=1, stride=1, pad=0, dilation=1, bias=True,
             activation=None, residual_from=None, **act_attrs):
        i = len(self.nodes)
        cg = self.channels // group
        w = (self.rng.standard_normal((out, cg, kernel, kernel)) /
             np.sqrt(cg * kernel * kernel)).astype(np.float32)
        self.inits.append(numpy_helper.from_array(w, f"w{i}"))
        inputs = [self.last, f"w{i}"]
        if bias:  # non-zero biases: a dropped bias fails
            b = (self.rng.standard_normal(out) * 0.5 + 0.25).astype(np.float32)
            self.inits.append(numpy_helper.from_array(b, f"b{i}"))
            inputs.append(f"b{i}")
        self.nodes.append(helper.make_node("Conv", inputs, [f"c{i}"], group=group,
                                           kernel_shape=[kernel, kernel], strides=[stride] * 2,
                                           pads=[pad] * 4, dilations=[dilation] * 2))
        last = f"c{i}"
        if residual_from:
            self.nodes.append(helper.make_node("Add", [last, residual_from], [f"r{i}"]))
            last = f"r{i}"
        if activation:
            self.nodes.append(helper.make_node(activation, [last], [f"a{i}"], **act_attrs))
            last = f"a{i}"
        self.last, self.channels = last, out
        return last

    def model(self):
        self.nodes.append(helper.make_node("Identity", [self.last], ["y"]))
        graph = helper.make_graph(self.nodes, "chain", [self.input],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(autouse=True, params=["fused", "unfused"])
def pointwise_depthwise(request, monkeypatch):
    """Every test runs with each expansion conv and its depthwise conv fused into one step and
    without, so that both kernels stay covered."""
    if request.param == "unfused":
        monkeypatch.setenv("LUMEN_FUSE_POINTWISE_DEPTHWISE", "0")
    return request.param


def blocked_convs(ops):
    """The blocked convs among a plan's steps, a fused expansion + depthwise step counting two."""
    return ops.count("nchwc_conv") + 2 * ops.count("nchwc_pointwise_depthwise")


def mobile_block_chain(batch="N"):
    """Inverted residual blocks: expand, depthwise, project (+ shortcut), with the activations
    mobile nets use, in the shapes that split the kernels' work differently."""
    c = Chain(24, (13, 11), batch)
    c.conv(136, activation="Relu")                                   # 17 blocks: 3s and 2s
    c.conv(136, kernel=3, group=136, pad=1, activation="Clip",
           min=0.0, max=6.0)                                         # 3x3 depthwise, relu6
    skip = c.conv(24, bias=False)                                    # 17 input blocks: 2 passes
    c.conv(40, activation="HardSwish")                               # 5 blocks: 3 + 2
    c.conv(40, kernel=5, group=40, stride=2, pad=2, activation="Sigmoid")  # 5x5 s2 depthwise
    c.conv(24, activation="LeakyRelu", alpha=0.1)                    # 3 blocks
    c.conv(24, kernel=3, group=24, pad=2, dilation=2, residual_from=None)  # dilated depthwise
    c.conv(8, stride=2)                                              # 1 block, strided 1x1
    c.conv(32, activation="Tanh")                                    # 4 blocks: 2 + 2
    c.conv(32, kernel=7, group=32, pad=3, activation="Relu")         # 7x7 depthwise
    return c, skip


def run_both(model, batch, seed=0):
    path_model = model.SerializeToString()
    x = np.random.default_rng(seed).standard_normal(
        [batch] + [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
    ).astype(np.float32)
    compiled = lumen.load_onnx(path_model).compile(backend="cpu", num_threads=2)
    got = compiled.run({"x": x})[0]
    want = lumen.load_onnx(path_model).compile(backend="reference", opt_level=0).run({"x": x})[0]
    return compiled, got, want


@pytest.mark.parametrize("batch", [1, 2])
def test_mobile_chain_runs_blocked_and_matches_the_reference(batch, pointwise_depthwise):
    chain, _ = mobile_block_chain(batch)
    compiled, got, want = run_both(chain.model(), batch)
    ops = [s.op for s in compiled.executable.steps]
    assert blocked_convs(ops) == 10, ops
    # Each expansion conv and its depthwise conv run as one step.
    assert ops.count("nchwc_pointwise_depthwise") == (4 if pointwise_depthwise == "fused" else 0)
    assert ops.count("to_nchwc") == 1 and ops.count("from_nchwc") == 1, ops
    assert all(s.backend == "cpu" for s in compiled.executable.steps)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_residual_inside_the_chain():
    c = Chain(16, (9, 9), 2)
    c.conv(48, activation="Relu")
    c.conv(48, kernel=3, group=48, pad=1, activation="Relu")
    skip = c.conv(16)
    c.conv(48, activation="Relu")
    c.conv(48, kernel=3, group=48, pad=1, activation="Relu")
    c.conv(16, residual_from=skip)                                   # fused residual, blocked
    c.conv(16, kernel=3, group=16, pad=1, residual_from=skip, activation="Relu")
    compiled, got, want = run_both(c.model(), 2)
    ops = [s.op for s in compiled.executable.steps]
    assert blocked_convs(ops) == 7, ops
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_lone_conv_and_uncovered_convs_stay_plain():
    c = Chain(12, (8, 8), 1)                 # 12 channels: not a multiple of the block
    c.conv(16, activation="Relu")
    c.conv(20, kernel=3, pad=1)             # 20 output channels: not whole blocks
    c.conv(24)                              # a lone pointwise conv
    compiled, got, want = run_both(c.model(), 1)
    ops = [s.op for s in compiled.executable.steps]
    assert "nchwc_conv" not in ops and "to_nchwc" not in ops, ops
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def plans_per_batch(data, image):
    """A model with a symbolic batch at batches 3 and 1, each run checked against the reference
    backend on the unoptimized graph; the ops of the plan made for each batch."""
    model = lumen.load_onnx(data).compile(backend="cpu", num_threads=2)
    reference = lumen.load_onnx(data).compile(backend="reference", opt_level=0)
    plans = []
    for batch in (3, 1):
        x = np.random.default_rng(batch).standard_normal((batch, *image)).astype(np.float32)
        want = reference.run({"x": x})[0]
        np.testing.assert_allclose(model.run({"x": x})[0], want, rtol=1e-4,
                                   atol=1e-4 * float(np.abs(want).max()))
        plans.append([s.op for s in model.executable.execute_profiled(x)[1].plan_steps])
    return plans


def test_symbolic_batch_plans_per_shape():
    chain, _ = mobile_block_chain()
    # The graph's shapes are known only per input shape: the plan for each one is blocked.
    for plan in plans_per_batch(chain.model().SerializeToString(), (24, 13, 11)):
        assert blocked_convs(plan) == 10, plan


def test_blocked_graph_runs_on_the_reference_backend():
    """The optimized graph (with the blocked ops) is still a graph any backend runs."""
    chain, _ = mobile_block_chain()
    data = chain.model().SerializeToString()
    x = np.random.default_rng(5).standard_normal((2, 24, 13, 11)).astype(np.float32)
    got = lumen.load_onnx(data).compile(backend="reference").run({"x": x})[0]
    want = lumen.load_onnx(data).compile(backend="reference", opt_level=0).run({"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("isa", ["baseline", "avx2"])
def test_narrower_kernels(isa, pointwise_depthwise):
    """The plain C++ loops (CPUs without AVX2) and, on an AVX-512 machine, the AVX2 kernels,
    through LUMEN_CPU_ISA in a fresh process."""
    import os
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, {here!r})
        import test_nchwc as t
        t.test_mobile_chain_runs_blocked_and_matches_the_reference(2, {mode!r})
        t.test_residual_inside_the_chain()
        t.test_large_maps_split_into_bands()
        t.test_grouped_convs_and_batch_norm_run_blocked()
        m = __import__("pytest").MonkeyPatch()
        for algorithm in ("nchwc_winograd", "nchwc_grouped"):
            t.test_dense_convs_run_blocked(m, algorithm, 2, (9, 8))
        t.test_first_conv_and_pools_run_blocked(12)
        t.test_blocked_max_pool_keeps_nan()
    """).format(here=os.path.dirname(os.path.abspath(__file__)), mode=pointwise_depthwise)
    env = dict(os.environ, LUMEN_CPU_ISA=isa)
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=300)


def test_squeeze_excitation_stays_blocked():
    """Global pooling, the two 1x1 convs on [N, C, 1, 1] and the Mul that scales the image join
    the chain: one layout change in, one out."""
    c = Chain(16, (10, 9), 2)
    c.conv(48, activation="Relu")
    dw = c.conv(48, kernel=3, group=48, pad=1, activation="HardSwish")
    c.nodes.append(helper.make_node("GlobalAveragePool", [dw], ["pooled"]))
    c.last = "pooled"
    c.conv(16, activation="Relu")
    scale = c.conv(48, activation="HardSigmoid", alpha=1 / 6, beta=0.5)
    c.nodes.append(helper.make_node("Mul", [dw, scale], ["scaled"]))
    c.nodes.append(helper.make_node("Neg", ["scaled"], ["negated"]))  # a plain element-wise op
    c.last = "negated"
    c.conv(24)
    compiled, got, want = run_both(c.model(), 2)
    ops = [s.op for s in compiled.executable.steps]
    assert blocked_convs(ops) == 5 and "global_avg_pool" not in ops, ops
    assert ops.count("to_nchwc") == 1 and ops.count("from_nchwc") == 1, ops
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_large_maps_split_into_bands():
    """Depthwise work items are bands of output rows (several per plane here) and pointwise ones
    runs of pixels: the splits must not change the result."""
    c = Chain(16, (37, 70), 1)
    c.conv(32, activation="Relu")
    c.conv(32, kernel=3, group=32, pad=1, activation="HardSwish")
    skip = c.conv(16)
    c.conv(32, activation="Sigmoid")
    c.conv(32, kernel=5, group=32, pad=2, activation="Relu")
    c.conv(16, residual_from=skip)
    c.conv(16, kernel=3, group=16, stride=2, pad=1, activation="Tanh")
    compiled, got, want = run_both(c.model(), 1)
    assert blocked_convs([s.op for s in compiled.executable.steps]) == 7
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_grouped_convs_and_batch_norm_run_blocked():
    """Groups of whole blocks (RegNet's 8 channels per group, and 16), any kernel, and a batch
    norm on its own (a 1x1 depthwise conv after folding) inside the chain."""
    c = Chain(16, (15, 12), 2)
    c.conv(32, activation="Relu")
    c.conv(32, kernel=3, group=4, pad=1, activation="Relu")           # 8 in, 8 out per group
    c.conv(48, kernel=3, group=2, stride=2, pad=1, dilation=1)        # 16 in, 24 out per group
    c.conv(48, kernel=5, group=6, pad=4, dilation=2, activation="Sigmoid")
    rng = np.random.default_rng(7)
    for name, values in (("scale", rng.uniform(0.5, 1.5, 48)), ("shift", rng.standard_normal(48)),
                         ("mean", rng.standard_normal(48)), ("var", rng.uniform(0.2, 2.0, 48))):
        c.inits.append(numpy_helper.from_array(values.astype(np.float32), name))
    c.nodes.append(helper.make_node("BatchNormalization", [c.last, "scale", "shift", "mean", "var"],
                                    ["bn"]))
    c.nodes.append(helper.make_node("Relu", ["bn"], ["bn_relu"]))
    c.last = "bn_relu"
    c.conv(16)
    compiled, got, want = run_both(c.model(), 2)
    steps = compiled.executable.steps
    assert blocked_convs([s.op for s in steps]) == 6, [s.op for s in steps]
    assert sum(s.algorithm == "nchwc_grouped" for s in steps) == 3
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("size", [(13, 11), (7, 7), (2, 3)])
def test_wide_pointwise_convs(size):
    """ResNet bottlenecks: 1x1 convs from 64 to 512 channels over 8 to 32 input blocks (passes of
    16), on maps that end mid-tile, with a residual and a strided 1x1 whose pixels span rows."""
    c = Chain(64, size, 2)
    skip = c.conv(256, activation="Relu")                      # 8 input blocks
    c.conv(64, activation="Relu")                              # 32 input blocks: two passes
    c.conv(64, kernel=3, pad=1, activation="Relu")
    c.conv(256, residual_from=skip, activation="Relu")
    c.conv(512, stride=2)                                      # strided: pixels span rows
    compiled, got, want = run_both(c.model(), c.batch)
    assert blocked_convs([s.op for s in compiled.executable.steps]) == 5
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("seed", range(12))
def test_random_geometries(seed):
    """Random maps (down to 1x1), kernels, strides, paddings and dilations (taps past every edge,
    kernels larger than the map) through pointwise -> depthwise -> grouped -> pointwise."""
    rng = np.random.default_rng(1000 + seed)
    h, w = (int(v) for v in rng.integers(1, 20, 2))
    c_in, mid = 8 * int(rng.integers(1, 4)), 8 * int(rng.integers(1, 6))
    c = Chain(c_in, (h, w), int(rng.integers(1, 4)))
    c.conv(mid, activation="Relu")
    depthwise_taps = 1
    for grouped in (False, True):
        k = int(rng.integers(1, 8))
        stride, dilation, pad = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
        size = c.size
        out = [(s + 2 * pad - dilation * (k - 1) - 1) // stride + 1 for s in size]
        if min(out) < 1:  # this kernel does not fit: a 1x1 one instead
            k, pad, out = 1, 0, [(s - 1) // stride + 1 for s in size]
        c.conv(mid, kernel=k, group=mid // 8 if grouped else mid, stride=stride, pad=pad,
               dilation=dilation, activation="HardSwish" if grouped else "Relu")
        c.size = tuple(out)
        depthwise_taps = depthwise_taps if grouped else k * k
    c.conv(16, activation="Sigmoid")
    compiled, got, want = run_both(c.model(), c.batch)
    if depthwise_taps > 1:  # a spatial conv: the chain runs blocked
        assert "nchwc_conv" in [s.op for s in compiled.executable.steps]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def dense_chain(batch, size):
    """Dense convs: 3x3 stride 1 (Winograd or direct taps) with every padding that moves the
    output size, odd maps, input channels past one pass of 16 blocks, 1 to 3 output blocks per
    filter group; and the ones only direct taps run (strided, 5x5, dilated, 1x7)."""
    c = Chain(16, size, batch)
    c.conv(24, kernel=3, pad=1, activation="Relu")                  # 3 blocks: one group
    skip = c.conv(136, kernel=3, pad=1, activation="HardSwish")     # 17 blocks: 3s and 2s
    c.conv(136, kernel=3, pad=1, residual_from=skip, activation="Clip", min=0.0, max=6.0)
    c.conv(16, kernel=3, pad=0, activation="Sigmoid")              # 17 input blocks; shrinks
    c.conv(40, kernel=3, pad=2)                                    # grows by 2
    c.conv(16, kernel=3, pad=2, dilation=2)                        # direct only from here
    c.conv(32, kernel=3, stride=2, pad=1, activation="Relu")
    c.conv(32, kernel=5, pad=2, activation="Tanh")
    return c


@pytest.mark.parametrize("algorithm", ["nchwc_winograd", "nchwc_grouped"])
@pytest.mark.parametrize("batch,size", [(1, (13, 11)), (2, (9, 8)), (1, (37, 70))])
def test_dense_convs_run_blocked(monkeypatch, algorithm, batch, size):
    """Every dense conv joins the chain; 3x3 stride-1 ones by each algorithm (forced), the
    large map splitting Winograd's work into parts of its tiles that end mid-row."""
    monkeypatch.setenv("LUMEN_FORCE_ALGORITHM", algorithm)
    compiled, got, want = run_both(dense_chain(batch, size).model(), batch)
    steps = compiled.executable.steps
    ops = [s.op for s in steps]
    assert blocked_convs(ops) == 8 and ops.count("to_nchwc") == 1, ops
    chosen = [s.algorithm.split()[0] for s in steps if s.op == "nchwc_conv"]
    assert chosen[:5] == [algorithm] * 5 and chosen[5:] == ["nchwc_grouped"] * 3, chosen
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_dense_convs_mostly_reading_padding_stay_plain():
    """A 3x3 conv with dilation 12 on a 14x14 map (DeepLab's ASPP) reads padding with 82% of its
    taps: it stays in NCHW, where tap windows skip those, and the chain goes around it."""
    c = Chain(16, (14, 14), 1)
    c.conv(32, activation="Relu")
    c.conv(32, kernel=3, pad=12, dilation=12, activation="Relu")
    c.conv(32, kernel=3, pad=1)
    c.conv(16, kernel=3, pad=2, dilation=2)                        # 2: mostly inside, blocked
    compiled, got, want = run_both(c.model(), 1)
    steps = compiled.executable.steps
    windows = [s for s in steps if "tap_windows" in s.algorithm]
    assert len(windows) == 1 and windows[0].op == "fused_conv", [s.op for s in steps]
    assert blocked_convs([s.op for s in steps]) == 2  # the 1x1 before it is left alone
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def pool(c, op, kernel, stride=1, pad=0, **attrs):
    """Appends a MaxPool / AveragePool node to chain c."""
    out = f"p{len(c.nodes)}"
    c.nodes.append(helper.make_node(op, [c.last], [out], kernel_shape=[kernel] * 2,
                                    strides=[stride] * 2, pads=[pad] * 4, **attrs))
    c.last = out
    return out


@pytest.mark.parametrize("channels", [3, 12, 130])
def test_first_conv_and_pools_run_blocked(channels):
    """A first conv on channels that are not whole blocks reads its input plain (no to_nchwc; 130
    channels take two passes of 16 blocks, the last one partly filled), and max and average pools
    in every form ONNX has (ceil mode, padding counted or not, dilation) stay in the chain."""
    c = Chain(channels, (23, 21), 2)
    c.conv(16, kernel=3, stride=2, pad=1, activation="Relu")       # reads x plain
    pool(c, "MaxPool", 3, stride=2, ceil_mode=1)
    c.conv(32, activation="Relu")
    pool(c, "AveragePool", 3, pad=1)                                # padding not counted
    c.conv(32, kernel=3, pad=1, activation="Relu")
    pool(c, "AveragePool", 2, stride=2, pad=1, count_include_pad=1, ceil_mode=1)
    pool(c, "MaxPool", 3, pad=2, dilations=[2, 2])
    c.conv(16, kernel=3, pad=1)
    compiled, got, want = run_both(c.model(), 2)
    ops = [s.op for s in compiled.executable.steps]
    assert blocked_convs(ops) == 4 and "to_nchwc" not in ops, ops
    assert ops.count("nchwc_max_pool2d") == 2 and ops.count("nchwc_avg_pool2d") == 2, ops
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_blocked_max_pool_keeps_nan():
    """NaN in a window gives NaN, in the first window and in the runs of interior windows the
    kernels pool several at a time."""
    for kernel, stride, size in ((2, 2, (6, 6)), (3, 2, (21, 43)), (3, 1, (9, 27))):
        c = Chain(8, size, 1)
        c.conv(8, kernel=3, pad=1)
        pool(c, "MaxPool", kernel, stride=stride)
        c.conv(8)
        x = np.random.default_rng(3).standard_normal((1, 8) + size).astype(np.float32)
        x[0, 2, 1, 1] = np.nan  # reaches the first window through the 3x3 conv
        if size[1] > 8:
            x[0, 2, size[0] // 2, size[1] // 2] = x[0, 5, size[0] - 1, size[1] - 2] = np.nan
        data = c.model().SerializeToString()
        compiled = lumen.load_onnx(data).compile(backend="cpu", num_threads=2)
        assert "nchwc_max_pool2d" in [s.op for s in compiled.executable.steps]
        got = compiled.run({"x": x})[0]
        want = lumen.load_onnx(data).compile(backend="reference", opt_level=0).run({"x": x})[0]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        assert np.isnan(got).any() and not np.isnan(got).all()
        np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(want), rtol=1e-4,
                                   atol=1e-4)


def test_first_conv_and_pools_with_a_symbolic_batch():
    """The entry conv and the blocked pools in the plans made per input shape of a model whose
    batch is symbolic."""
    c = Chain(3, (19, 17), "N")
    c.conv(16, kernel=7, stride=2, pad=3, activation="Relu")
    pool(c, "MaxPool", 3, stride=2, pad=1)
    c.conv(16, kernel=3, pad=1, activation="Relu")
    pool(c, "AveragePool", 2, stride=2, ceil_mode=1)
    c.conv(24)
    for plan in plans_per_batch(c.model().SerializeToString(), (3, 19, 17)):
        assert "to_nchwc" not in plan and plan.count("nchwc_max_pool2d") == 1, plan
