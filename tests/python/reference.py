"""Plain NumPy references for the op tests: obviously correct, not fast."""

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def conv2d(x, w, b=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1):
    """NCHW x, OIHW w; pads = [h_begin, w_begin, h_end, w_end] (ONNX). im2col + einsum."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    assert c == cg * group and o % group == 0
    (sh, sw), (dh, dw) = strides, dilations
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    cols = np.empty((n, c, kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                                  j * dw: j * dw + sw * (ow - 1) + 1: sw]
    cols = cols.reshape(n, group, cg, kh, kw, oh, ow)
    wg = w.reshape(group, o // group, cg, kh, kw)
    y = np.einsum("ngcijhw,gocij->ngohw", cols, wg).reshape(n, o, oh, ow)
    if b is not None:
        y = y + b.astype(np.float64)[None, :, None, None]
    return y


def _pool_out(size, k, s, pb, pe, d, ceil_mode):
    span = size + pb + pe - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    # A window may not start in the end padding (PyTorch / ONNX rule).
    if ceil_mode and (out - 1) * s >= size + pb:
        out -= 1
    return out


def _windows(x, kernel, strides, pads, dilations, ceil_mode, fill, overhang_fill=None):
    """[N, C, OH, OW, KH, KW] windows of x padded with `fill`; cells past the padding that ceil_mode
    windows reach hold `overhang_fill` (default: `fill`)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    oh = _pool_out(h, kh, sh, pads[0], pads[2], dh, ceil_mode)
    ow = _pool_out(w, kw, sw, pads[1], pads[3], dw, ceil_mode)
    extra_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + pads[0] + pads[2]))
    extra_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + pads[1] + pads[3]))
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=fill)
    xp = np.pad(xp, ((0, 0), (0, 0), (0, extra_h), (0, extra_w)),
                constant_values=fill if overhang_fill is None else overhang_fill)
    out = np.empty((n, c, oh, ow, kh, kw), xp.dtype)
    for i in range(kh):
        for j in range(kw):
            out[..., i, j] = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                                j * dw: j * dw + sw * (ow - 1) + 1: sw]
    return out


def max_pool2d(x, kernel, strides, pads=(0, 0, 0, 0), dilations=(1, 1), ceil_mode=False):
    win = _windows(x.astype(np.float64), kernel, strides, pads, dilations, ceil_mode, -np.inf)
    return win.max(axis=(4, 5))


def avg_pool2d(x, kernel, strides, pads=(0, 0, 0, 0), ceil_mode=False, count_include_pad=False):
    """Divisor: the window's cells inside the input, plus its padding cells if count_include_pad
    (never the cells past the padding that ceil_mode windows reach)."""
    geometry = (kernel, strides, pads, (1, 1), ceil_mode)
    total = _windows(x.astype(np.float64), *geometry, 0.0).sum(axis=(4, 5))
    ones = np.ones((1, 1) + x.shape[2:])
    count = _windows(ones, *geometry, 1.0 if count_include_pad else 0.0, 0.0).sum(axis=(4, 5))
    return total / count


def softmax(x, axis=-1):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def gelu(x, approximate="none"):
    x = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def hard_sigmoid(x, alpha=0.2, beta=0.5):
    return np.clip(alpha * x.astype(np.float64) + beta, 0.0, 1.0)


def hard_swish(x):
    x = x.astype(np.float64)
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


def gemm(a, b, c=None, alpha=1.0, beta=1.0, trans_a=False, trans_b=False):
    a = a.astype(np.float64).T if trans_a else a.astype(np.float64)
    b = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    y = alpha * (a @ b)
    return y if c is None else y + beta * c.astype(np.float64)
