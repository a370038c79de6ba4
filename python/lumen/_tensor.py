"""NumPy interop and operators for lumen.Tensor, attached to the native class."""

import numpy as np

from . import _lumen, _ops

Tensor = _lumen.Tensor

# Lumen dtypes NumPy sees through ml_dtypes (same names; one byte each except bfloat16).
_ML_DTYPES = frozenset({"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                        "float8_e5m2fnuz", "uint4", "int4", "float4_e2m1fn", "float8_e8m0fnu",
                        "uint2", "int2"})


def numpy(self):
    """A NumPy array viewing this tensor's memory (no copy; it keeps the tensor alive).

    bfloat16 and the narrow types (float8_e4m3fn, int4, float4_e2m1fn, ...) have no
    buffer-protocol format: they are viewed as the ``ml_dtypes`` type of the same name (the types
    onnx uses), which needs the ml_dtypes package."""
    if self.dtype in _ML_DTYPES:
        import ml_dtypes

        return np.asarray(memoryview(self._bits())).view(getattr(ml_dtypes, self.dtype))
    return np.asarray(memoryview(self))


def __array__(self, dtype=None, copy=None):
    """NumPy 2 protocol: zero-copy unless ``copy=True`` or a different ``dtype`` is requested
    (``copy=False`` with a different dtype raises ValueError)."""
    array = numpy(self)
    if dtype is not None and np.dtype(dtype) != array.dtype:
        if copy is False:
            raise ValueError(f"cannot view a {self.dtype} tensor as {np.dtype(dtype)} without a copy")
        return array.astype(dtype)
    return array.copy() if copy else array


def _reshape(self, *shape):
    """t.reshape(2, 3) or t.reshape((2, 3)); see lumen.reshape."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return _ops.reshape(self, shape)


def _operator(fn, reflected=False):
    if reflected:
        return lambda self, other: fn(other, self)
    return lambda self, other: fn(self, other)


Tensor.numpy = numpy
Tensor.__array__ = __array__
# Ensures ndarray <op> Tensor defers to Tensor's reflected operator (the result stays a Tensor).
Tensor.__array_priority__ = 1000
Tensor.reshape = _reshape
Tensor.T = property(lambda self: _ops.transpose(self), doc="The tensor with its dims reversed.")
for _name, _fn in [("add", _ops.add), ("sub", _ops.sub), ("mul", _ops.mul),
                   ("truediv", _ops.div), ("matmul", _ops.matmul), ("pow", _ops.pow)]:
    setattr(Tensor, f"__{_name}__", _operator(_fn))
    setattr(Tensor, f"__r{_name}__", _operator(_fn, reflected=True))
Tensor.__neg__ = lambda self: _ops.neg(self)
Tensor.__abs__ = lambda self: _ops.abs(self)
