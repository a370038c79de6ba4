"""Every eager op against NumPy, on every backend."""

import numpy as np
import pytest

import lumen
import reference as ref

BACKENDS = ["cpu", "reference"]
EXPECTED_OPS = {
    "relu", "matmul", "gemm", "conv2d", "max_pool2d", "avg_pool2d", "global_avg_pool",
    "global_max_pool", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "leaky_relu",
    "sigmoid", "tanh", "gelu", "silu", "elu", "softplus", "hard_sigmoid", "hard_swish", "clip",
    "exp", "log", "sqrt", "neg", "abs", "softmax", "log_softmax", "reshape", "transpose", "concat",
}

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def rand(*shape, low=-3.0, high=3.0, seed=0):
    rng = np.random.default_rng(seed + 1000 * len(shape) + sum(shape))
    return rng.uniform(low, high, size=shape).astype(np.float32)


def check(actual, expected, rtol=1e-4, atol=1e-5):
    assert isinstance(actual, lumen.Tensor)
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def test_expected_ops_are_registered(backend):
    assert EXPECTED_OPS <= set(lumen.list_ops())
    assert backend in lumen.list_backends()


# --- Element-wise unary --------------------------------------------------------------------------
UNARY = {
    "relu": (lumen.relu, lambda x: np.maximum(x, 0), {}),
    "sigmoid": (lumen.sigmoid, ref.sigmoid, {}),
    "tanh": (lumen.tanh, np.tanh, {}),
    "silu": (lumen.silu, lambda x: x * ref.sigmoid(x), {}),
    "hard_swish": (lumen.hard_swish, ref.hard_swish, {}),
    "softplus": (lumen.softplus, lambda x: np.log1p(np.exp(x.astype(np.float64))), {}),
    "exp": (lumen.exp, lambda x: np.exp(x.astype(np.float64)), {}),
    "log": (lumen.log, np.log, {"low": 0.01}),
    "sqrt": (lumen.sqrt, np.sqrt, {"low": 0.0}),
    "neg": (lumen.neg, np.negative, {}),
    "abs": (lumen.abs, np.abs, {}),
    "gelu": (lumen.gelu, ref.gelu, {}),
}


@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 5), (0, 4), (), (1037,)])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(backend, name, shape):
    fn, expected, domain = UNARY[name]
    x = rand(*shape, low=domain.get("low", -3.0))
    check(fn(x, backend=backend), expected(x))


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda x, b: lumen.leaky_relu(x, backend=b), lambda x: np.where(x >= 0, x, 0.01 * x)),
        (lambda x, b: lumen.leaky_relu(x, 0.3, backend=b), lambda x: np.where(x >= 0, x, 0.3 * x)),
        (lambda x, b: lumen.elu(x, backend=b), lambda x: np.where(x >= 0, x, np.expm1(x))),
        (lambda x, b: lumen.elu(x, alpha=0.5, backend=b),
         lambda x: np.where(x >= 0, x, 0.5 * np.expm1(x))),
        (lambda x, b: lumen.gelu(x, approximate="tanh", backend=b),
         lambda x: ref.gelu(x, "tanh")),
        (lambda x, b: lumen.hard_sigmoid(x, backend=b), ref.hard_sigmoid),
        (lambda x, b: lumen.hard_sigmoid(x, alpha=1 / 6, beta=0.5, backend=b),
         lambda x: ref.hard_sigmoid(x, 1 / 6, 0.5)),
        (lambda x, b: lumen.clip(x, -1.0, 2.0, backend=b), lambda x: np.clip(x, -1, 2)),
        (lambda x, b: lumen.clip(x, min=0.5, backend=b), lambda x: np.maximum(x, 0.5)),
        (lambda x, b: lumen.clip(x, max=0.5, backend=b), lambda x: np.minimum(x, 0.5)),
    ],
    ids=["leaky_relu", "leaky_relu_alpha", "elu", "elu_alpha", "gelu_tanh", "hard_sigmoid",
         "hard_sigmoid_torch", "clip", "clip_min", "clip_max"],
)
def test_unary_with_attributes(backend, call, expected):
    for shape in [(4, 7), (0, 2), (1,)]:
        x = rand(*shape)
        check(call(x, backend), expected(x))


# --- Element-wise binary -------------------------------------------------------------------------
BINARY = {
    "add": (lumen.add, np.add),
    "sub": (lumen.sub, np.subtract),
    "mul": (lumen.mul, np.multiply),
    "div": (lumen.div, np.divide),
    "pow": (lumen.pow, lambda a, b: np.power(a.astype(np.float64), b)),
    "maximum": (lumen.maximum, np.maximum),
    "minimum": (lumen.minimum, np.minimum),
}
SHAPE_PAIRS = [
    ((3, 4), (3, 4)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 3, 4)),
    ((2, 1, 4), (1, 3, 1)),
    ((3, 1), (1, 0)),
    ((), (2, 3)),
    ((5, 1, 1), (1,)),
    ((1000,), (1000,)),
]


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(backend, name, shapes):
    fn, expected = BINARY[name]
    positive = name in ("div", "pow")
    a = rand(*shapes[0], low=0.5 if positive else -3.0, seed=1)
    b = rand(*shapes[1], low=0.5 if positive else -3.0, high=2.0 if name == "pow" else 3.0, seed=2)
    check(fn(a, b, backend=backend), expected(a, b), rtol=1e-4)


def test_binary_scalars_and_operators(backend):
    a = lumen.tensor(rand(2, 3, seed=3))
    b = rand(2, 3, seed=4)
    an = a.numpy()
    check(lumen.add(a, 2, backend=backend), an + 2)
    check(lumen.mul(0.5, a, backend=backend), 0.5 * an)
    check(lumen.sub(1.0, a, backend=backend), 1 - an)
    check(lumen.div(a, 4, backend=backend), an / 4)
    check(lumen.pow(lumen.abs(a), 2, backend=backend), np.abs(an) ** 2)
    # Operators use the default backend.
    check(a + b, an + b)
    check(b + a, b + an)
    check(a - b, an - b)
    check(b - a, b - an)
    check(a * 3, an * 3)
    check(a / b, an / b)
    check(2 / (a * a + 1), 2 / (an * an + 1))
    check(-a, -an)
    check(abs(a), np.abs(an))
    check(a @ b.T, an @ b.T)
    check(a.T, an.T)
    check(a.reshape(3, 2), an.reshape(3, 2))


# --- Matmul and gemm -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (4, 5)), ((1, 1), (1, 1)), ((2, 3, 4), (4, 5)), ((4, 5), (2, 5, 3)),
     ((2, 1, 3, 4), (5, 4, 6)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((0, 4), (4, 5)),
     ((3, 0), (0, 5)), ((2, 0, 4), (4, 3)), ((65, 70), (70, 33))],
    ids=str,
)
def test_matmul(backend, shapes):
    a, b = rand(*shapes[0], seed=5), rand(*shapes[1], seed=6)
    check(lumen.matmul(a, b, backend=backend), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("c_shape", [None, (5,), (3, 5), (1, 5), (3, 1)])
def test_gemm(backend, trans_a, trans_b, c_shape):
    a = rand(*((4, 3) if trans_a else (3, 4)), seed=7)
    b = rand(*((5, 4) if trans_b else (4, 5)), seed=8)
    c = None if c_shape is None else rand(*c_shape, seed=9)
    kwargs = dict(alpha=0.5, beta=2.0, trans_a=trans_a, trans_b=trans_b)
    check(lumen.gemm(a, b, c, backend=backend, **kwargs), ref.gemm(a, b, c, **kwargs), atol=1e-4)


def test_gemm_defaults(backend):
    a, b, c = rand(3, 4), rand(4, 5), rand(3, 5)
    check(lumen.gemm(a, b, c, backend=backend), a.astype(np.float64) @ b + c, atol=1e-4)
    check(lumen.gemm(a, b, backend=backend), a.astype(np.float64) @ b, atol=1e-4)


# --- Convolution ---------------------------------------------------------------------------------
CONV_CASES = {
    # name: (x shape, w shape, bias, kwargs for lumen.conv2d)
    "3x3_pad1": ((1, 3, 8, 8), (4, 3, 3, 3), False, dict(padding=1)),
    "bias": ((2, 3, 7, 6), (5, 3, 3, 3), True, dict(padding=(1, 1))),
    "stride2": ((1, 4, 9, 9), (6, 4, 3, 3), True, dict(stride=2, padding=1)),
    "stride_hw": ((1, 2, 9, 10), (3, 2, 3, 2), False, dict(stride=(2, 3))),
    "dilation2": ((1, 3, 10, 10), (4, 3, 3, 3), True, dict(dilation=2, padding=2)),
    "groups2": ((2, 4, 6, 6), (6, 2, 3, 3), True, dict(groups=2, padding=1)),
    "depthwise": ((1, 8, 7, 7), (8, 1, 3, 3), True, dict(groups=8, padding=1)),
    "asym_pads": ((1, 2, 6, 7), (3, 2, 3, 3), False, dict(padding=(0, 1, 2, 0))),
    "1x1": ((2, 16, 5, 5), (8, 16, 1, 1), True, dict()),
    "5x5_big": ((1, 3, 32, 32), (16, 3, 5, 5), True, dict(padding=2, stride=1)),
    "kernel_eq_input": ((1, 2, 4, 4), (3, 2, 4, 4), False, dict()),
    # Items big enough for a GEMM over every thread, run one image per thread.
    "batch3_big": ((3, 32, 20, 20), (48, 32, 3, 3), True, dict(padding=1)),
    "batch2_1x1_big": ((2, 64, 24, 24), (96, 64, 1, 1), True, dict()),
}


def _ref_conv(x, w, b, kwargs):
    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    padding = kwargs.get("padding", 0)
    pads = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
    if len(pads) == 2:
        pads = pads * 2
    return ref.conv2d(x, w, b, pair(kwargs.get("stride", 1)), pads,
                      pair(kwargs.get("dilation", 1)), kwargs.get("groups", 1))


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv2d(backend, case):
    x_shape, w_shape, with_bias, kwargs = CONV_CASES[case]
    x, w = rand(*x_shape, seed=10), rand(*w_shape, seed=11)
    b = rand(w_shape[0], seed=12) if with_bias else None
    check(lumen.conv2d(x, w, b, backend=backend, **kwargs), _ref_conv(x, w, b, kwargs),
          rtol=1e-4, atol=1e-4)


# --- Pooling -------------------------------------------------------------------------------------
POOL_CASES = {
    # name: (x shape, kwargs)
    "2x2": ((1, 3, 8, 8), dict(kernel_size=2)),
    "3x3_s2_p1": ((2, 2, 9, 9), dict(kernel_size=3, stride=2, padding=1)),
    "3x3_s1_p1": ((1, 4, 6, 5), dict(kernel_size=3, stride=1, padding=1)),
    "rect": ((1, 2, 7, 9), dict(kernel_size=(2, 3), stride=(1, 2))),
    "ceil": ((1, 2, 7, 7), dict(kernel_size=2, stride=2, ceil_mode=True)),
    "ceil_pad": ((1, 1, 6, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "asym_pads": ((1, 2, 6, 6), dict(kernel_size=3, stride=1, padding=(1, 0, 0, 1))),
}


def _pool_geometry(kwargs):
    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    kernel = pair(kwargs["kernel_size"])
    strides = pair(kwargs.get("stride") or kwargs["kernel_size"])
    padding = kwargs.get("padding", 0)
    pads = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
    return kernel, strides, pads * 2 if len(pads) == 2 else pads, kwargs.get("ceil_mode", False)


@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_max_pool2d(backend, case):
    x_shape, kwargs = POOL_CASES[case]
    x = rand(*x_shape, seed=13)
    kernel, strides, pads, ceil_mode = _pool_geometry(kwargs)
    check(lumen.max_pool2d(x, backend=backend, **kwargs),
          ref.max_pool2d(x, kernel, strides, pads, (1, 1), ceil_mode))


def test_max_pool2d_dilation(backend):
    x = rand(1, 2, 9, 9, seed=14)
    check(lumen.max_pool2d(x, 3, stride=1, dilation=2, backend=backend),
          ref.max_pool2d(x, (3, 3), (1, 1), (0, 0, 0, 0), (2, 2)))


def test_max_pool2d_negative_inputs_with_padding(backend):
    # Padding must never win a max: all inputs negative.
    x = -np.abs(rand(1, 1, 4, 4, seed=15)) - 1
    check(lumen.max_pool2d(x, 3, stride=1, padding=1, backend=backend),
          ref.max_pool2d(x, (3, 3), (1, 1), (1, 1, 1, 1)))


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_avg_pool2d(backend, case, count_include_pad):
    x_shape, kwargs = POOL_CASES[case]
    x = rand(*x_shape, seed=16)
    kernel, strides, pads, ceil_mode = _pool_geometry(kwargs)
    check(lumen.avg_pool2d(x, backend=backend, count_include_pad=count_include_pad, **kwargs),
          ref.avg_pool2d(x, kernel, strides, pads, ceil_mode, count_include_pad))


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 1, 1, 1), (1, 7, 13, 2)])
def test_global_pools(backend, shape):
    x = rand(*shape, seed=17)
    check(lumen.global_avg_pool(x, backend=backend), x.mean(axis=(2, 3), keepdims=True))
    check(lumen.global_max_pool(x, backend=backend), x.max(axis=(2, 3), keepdims=True))


# --- Softmax -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, axis", [((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((7,), 0),
                                         ((2, 1000), -1), ((4, 1), -1)])
def test_softmax(backend, shape, axis):
    x = rand(*shape, low=-10, high=10, seed=18)
    check(lumen.softmax(x, axis=axis, backend=backend), ref.softmax(x, axis))
    check(lumen.log_softmax(x, axis=axis, backend=backend), ref.log_softmax(x, axis), atol=1e-4)


def test_softmax_default_axis_and_large_values(backend):
    x = rand(2, 6, seed=19) * 1000  # overflows a naive exp
    check(lumen.softmax(x, backend=backend), ref.softmax(x))
    check(lumen.log_softmax(x, backend=backend), ref.log_softmax(x), rtol=1e-4, atol=1e-3)


# --- Shape ops -----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, new_shape", [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)),
                                              ((2, 3, 4), (4, -1, 2)), ((6,), (1, 6, 1)),
                                              ((0, 3), (0, 3, 1)), ((2, 3, 4), (0, -1))])
def test_reshape(backend, shape, new_shape):
    x = rand(*shape, seed=20)
    # ONNX semantics: a 0 copies the input's dim at that position.
    expected_shape = [shape[i] if d == 0 else d for i, d in enumerate(new_shape)]
    check(lumen.reshape(x, new_shape, backend=backend), x.reshape(expected_shape))


@pytest.mark.parametrize("shape, perm", [((2, 3), None), ((2, 3, 4), None), ((2, 3, 4), (1, 0, 2)),
                                         ((2, 3, 4, 5), (0, 2, 3, 1)), ((1, 0, 3), (2, 1, 0))])
def test_transpose(backend, shape, perm):
    x = rand(*shape, seed=21)
    check(lumen.transpose(x, perm, backend=backend), np.transpose(x, perm))


@pytest.mark.parametrize("shapes, axis", [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1),
                                          ([(2, 3, 4), (2, 3, 2)], -1), ([(0, 3), (2, 3)], 0),
                                          ([(3,)], 0)])
def test_concat(backend, shapes, axis):
    xs = [rand(*s, seed=22 + i) for i, s in enumerate(shapes)]
    check(lumen.concat(xs, axis=axis, backend=backend), np.concatenate(xs, axis=axis))


# --- Inputs --------------------------------------------------------------------------------------
def test_non_contiguous_inputs(backend):
    a = rand(6, 8, seed=23)
    check(lumen.relu(a[:, ::2], backend=backend), np.maximum(a[:, ::2], 0))
    check(lumen.add(a.T, a.T, backend=backend), a.T + a.T)
    check(lumen.matmul(a.T, a, backend=backend), a.T.astype(np.float64) @ a, atol=1e-4)
    check(lumen.relu(a[::-1], backend=backend), np.maximum(a[::-1], 0))
    x = rand(1, 8, 5, 5, seed=24)
    w = rand(8, 4, 3, 3, seed=25)
    check(lumen.conv2d(x[:, ::2], w[::2].transpose(0, 1, 3, 2), padding=1, backend=backend),
          ref.conv2d(x[:, ::2], w[::2].transpose(0, 1, 3, 2), pads=(1, 1, 1, 1)), atol=1e-4)


def test_python_lists_and_call_op(backend):
    check(lumen.relu([[-1.0, 2.0], [3.0, -4.0]], backend=backend), [[0, 2], [3, 0]])
    (out,) = lumen.call_op("add", [[1.0, 2.0], np.float32(3)], {}, backend)
    check(out, [4, 5])
