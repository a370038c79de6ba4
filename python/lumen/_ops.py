"""Eager ops: thin wrappers over ``_lumen.call_op`` that translate Python-style arguments into
lumen's ONNX-named attributes. Every function takes lumen.Tensor or array-likes and an optional
keyword ``backend`` ("cpu", "reference"; None picks the preferred backend with a kernel)."""

import numpy as np

from . import _lumen

__all__ = [
    "matmul", "gemm", "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "relu", "sigmoid", "tanh", "silu", "hard_swish", "softplus", "exp", "log", "sqrt", "neg",
    "abs", "leaky_relu", "elu", "gelu", "hard_sigmoid", "clip", "softmax", "log_softmax",
    "reshape", "transpose", "concat", "conv2d", "max_pool2d", "avg_pool2d", "global_avg_pool",
    "global_max_pool",
]


def call(op, inputs, attrs=None, *, backend=None):
    """Runs ``op`` on ``inputs`` and returns its single output (see ``_lumen.call_op``)."""
    return _lumen.call_op(op, inputs, attrs, backend or "")[0]


def _pair(value, what):
    if isinstance(value, (int, np.integer)):
        return [int(value)] * 2
    value = [int(v) for v in value]
    if len(value) != 2:
        raise ValueError(f"{what}: expected an int or 2 ints, got {value}")
    return value


def _pads(padding):
    """int -> all sides; (h, w) -> symmetric; 4 ints -> ONNX order [h_begin, w_begin, h_end, w_end]."""
    if isinstance(padding, (int, np.integer)):
        return [int(padding)] * 4
    padding = [int(p) for p in padding]
    if len(padding) == 2:
        return padding * 2
    if len(padding) != 4:
        raise ValueError(f"padding: expected an int, 2 or 4 ints, got {padding}")
    return padding


def _dtype_of(x):
    if isinstance(x, _lumen.Tensor):
        return x.dtype
    return _lumen.tensor(x).dtype


def _is_python_scalar(x):
    return isinstance(x, (bool, int, float))


def _binary(op, a, b, backend):
    # A Python scalar takes the dtype of the other operand, so `t * 2` keeps t's dtype.
    if _is_python_scalar(a) and not _is_python_scalar(b):
        a = np.asarray(a, dtype=_dtype_of(b))
    elif _is_python_scalar(b) and not _is_python_scalar(a):
        b = np.asarray(b, dtype=_dtype_of(a))
    return call(op, [a, b], backend=backend)


def _make_binary(op, doc):
    def fn(a, b, *, backend=None):
        return _binary(op, a, b, backend)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"{doc} Element-wise with NumPy broadcasting; Python scalars take the other operand's dtype."
    return fn


def _make_unary(op, doc):
    def fn(x, *, backend=None):
        return call(op, [x], backend=backend)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc
    return fn


add = _make_binary("add", "a + b.")
sub = _make_binary("sub", "a - b.")
mul = _make_binary("mul", "a * b.")
div = _make_binary("div", "a / b.")
pow = _make_binary("pow", "a ** b.")  # noqa: A001 (mirrors numpy.pow)
maximum = _make_binary("maximum", "max(a, b).")
minimum = _make_binary("minimum", "min(a, b).")

relu = _make_unary("relu", "max(x, 0).")
sigmoid = _make_unary("sigmoid", "1 / (1 + exp(-x)).")
tanh = _make_unary("tanh", "tanh(x).")
silu = _make_unary("silu", "x * sigmoid(x).")
hard_swish = _make_unary("hard_swish", "x * relu6(x + 3) / 6.")
softplus = _make_unary("softplus", "log(1 + exp(x)).")
exp = _make_unary("exp", "exp(x).")
log = _make_unary("log", "Natural logarithm.")
sqrt = _make_unary("sqrt", "Square root.")
neg = _make_unary("neg", "-x.")
abs = _make_unary("abs", "|x|.")  # noqa: A001
global_avg_pool = _make_unary("global_avg_pool", "Mean over the spatial dims of NCHW: [N, C, 1, 1].")
global_max_pool = _make_unary("global_max_pool", "Max over the spatial dims of NCHW: [N, C, 1, 1].")


def matmul(a, b, *, backend=None):
    """Matrix product with NumPy semantics (1-D promotion, batch dims broadcast)."""
    return call("matmul", [a, b], backend=backend)


def gemm(a, b, c=None, *, alpha=1.0, beta=1.0, trans_a=False, trans_b=False, backend=None):
    """alpha * op(a) @ op(b) + beta * c for 2-D a, b (ONNX Gemm); c broadcasts and is optional."""
    attrs = {"alpha": float(alpha), "beta": float(beta), "transA": int(trans_a), "transB": int(trans_b)}
    return call("gemm", [a, b] if c is None else [a, b, c], attrs, backend=backend)


def leaky_relu(x, alpha=0.01, *, backend=None):
    """x if x >= 0 else alpha * x."""
    return call("leaky_relu", [x], {"alpha": float(alpha)}, backend=backend)


def elu(x, alpha=1.0, *, backend=None):
    """x if x >= 0 else alpha * (exp(x) - 1)."""
    return call("elu", [x], {"alpha": float(alpha)}, backend=backend)


def gelu(x, approximate="none", *, backend=None):
    """Gaussian error linear unit; approximate="tanh" uses the tanh formula."""
    return call("gelu", [x], {"approximate": approximate}, backend=backend)


def hard_sigmoid(x, alpha=0.2, beta=0.5, *, backend=None):
    """max(0, min(1, alpha * x + beta)) (ONNX defaults; PyTorch's is alpha=1/6)."""
    return call("hard_sigmoid", [x], {"alpha": float(alpha), "beta": float(beta)}, backend=backend)


def clip(x, min=None, max=None, *, backend=None):  # noqa: A002 (ONNX/NumPy names)
    """Clamps x to [min, max]; None leaves that side open."""
    attrs = {"min": None if min is None else float(min), "max": None if max is None else float(max)}
    return call("clip", [x], attrs, backend=backend)


def softmax(x, axis=-1, *, backend=None):
    """exp(x) / sum(exp(x)) along ``axis``."""
    return call("softmax", [x], {"axis": int(axis)}, backend=backend)


def log_softmax(x, axis=-1, *, backend=None):
    """log(softmax(x)) along ``axis``, computed stably."""
    return call("log_softmax", [x], {"axis": int(axis)}, backend=backend)


def reshape(x, shape, *, backend=None):
    """A tensor with the same elements and a new shape (one dim may be -1, 0 copies the input dim)."""
    shape = [int(shape)] if isinstance(shape, (int, np.integer)) else [int(d) for d in shape]
    return call("reshape", [x], {"shape": shape}, backend=backend)


def transpose(x, perm=None, *, backend=None):
    """Permutes the dims; perm=None reverses them."""
    attrs = None if perm is None else {"perm": [int(p) for p in perm]}
    return call("transpose", [x], attrs, backend=backend)


def concat(tensors, axis=0, *, backend=None):
    """Joins tensors along ``axis``."""
    return call("concat", list(tensors), {"axis": int(axis)}, backend=backend)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, backend=None):
    """2-D convolution of NCHW ``x`` with OIHW ``weight`` (O = out channels, I = C / groups).

    stride and dilation: int or (h, w); padding: int, (h, w) or (h_begin, w_begin, h_end, w_end).
    """
    attrs = {"strides": _pair(stride, "stride"), "pads": _pads(padding),
             "dilations": _pair(dilation, "dilation"), "group": int(groups)}
    return call("conv2d", [x, weight] if bias is None else [x, weight, bias], attrs, backend=backend)


def _pool_attrs(kernel_size, stride, padding, ceil_mode):
    kernel = _pair(kernel_size, "kernel_size")
    return {"kernel_shape": kernel, "strides": kernel if stride is None else _pair(stride, "stride"),
            "pads": _pads(padding), "ceil_mode": int(ceil_mode)}


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, *, backend=None):
    """Max pooling over NCHW; stride defaults to kernel_size; padding as in conv2d."""
    attrs = _pool_attrs(kernel_size, stride, padding, ceil_mode)
    attrs["dilations"] = _pair(dilation, "dilation")
    return call("max_pool2d", [x], attrs, backend=backend)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=False, *,
               backend=None):
    """Average pooling over NCHW; padded cells count in the divisor only if count_include_pad."""
    attrs = _pool_attrs(kernel_size, stride, padding, ceil_mode)
    attrs["count_include_pad"] = int(count_include_pad)
    return call("avg_pool2d", [x], attrs, backend=backend)
