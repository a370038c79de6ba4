"""Lumen: a deep-learning inference runtime.

Quick start::

    import lumen, numpy as np
    x = lumen.randn(1, 3, 224, 224)
    w = lumen.randn(64, 3, 3, 3)
    y = lumen.conv2d(x, w, stride=(1, 1), padding=(1, 1))
    z = lumen.relu(y)
    np.asarray(z)            # a NumPy view of z's memory, no copy

Eager ops (``lumen.conv2d``, ``lumen.matmul``, ``lumen.softmax``, ...) accept ``lumen.Tensor`` or
any array-like and a keyword ``backend="cpu" | "reference"``; they return ``lumen.Tensor``. Attribute
names are Pythonic (``stride``, ``padding``, ``groups``) and map to ONNX ones (``strides``,
``pads``, ``group``). ``lumen.call_op(op, inputs, attrs, backend)`` runs any registered op by its
ONNX-style attribute dict and returns a list of outputs. Errors raise ``lumen.Error``, a
``RuntimeError``.

Graphs::

    g = lumen.Graph()
    x = g.add_input("x", [1, 10])
    y = g.add_op("matmul", [x, g.add_constant("w", np.ones((10, 5), np.float32))])
    g.mark_output(y)
    exe = g.compile()                    # or g.compile(lumen.Runtime(num_threads=4))
    (out,) = exe(np.ones((1, 10), np.float32))   # or exe.execute({"x": ...})

Tensors and NumPy
-----------------
* ``Tensor.dtype`` is a string ("float32", "int64", ...); NumPy accepts it (``np.dtype(t.dtype)``).
  Supported: float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, uint16,
  uint32, uint64, bool (bfloat16 has no buffer-protocol format: ``numpy()`` views it as
  ``ml_dtypes.bfloat16``).
* ``Tensor.shape`` is a tuple, ``Tensor.strides`` is in *elements*.
* Lumen -> NumPy is always zero-copy: ``t.numpy()``, ``np.asarray(t)`` (``__array__`` honours NumPy
  2's ``copy=`` keyword), the buffer protocol (``memoryview(t)``) and DLPack
  (``np.from_dlpack(t)``, ``t.__dlpack__``/``t.__dlpack_device__``). The view keeps the tensor's
  memory alive. Outputs of ops and executables are ordinary tensors with the same guarantees.
* NumPy -> lumen: ``lumen.from_numpy(a)``, ``lumen.tensor(a)``, ``lumen.Tensor(a)``,
  ``lumen.from_dlpack(obj)`` and every op argument *wrap* the array's memory (writes are visible
  both ways) and keep the array alive, as long as lumen can describe it: a supported dtype,
  byte strides that are non-negative multiples of the item size (non-contiguous views such as
  ``a[:, ::2]`` or ``a.T`` are wrapped with their strides; kernels get contiguous copies
  automatically), item-aligned data and writable memory. Otherwise the data is **copied** into a
  fresh C-ordered array: negative strides (``a[::-1]``), strides that are not multiples of the
  item size (fields of structured arrays), misaligned data, read-only arrays (except as op inputs,
  which are never written, so they are wrapped), unsupported dtypes that convert losslessly
  (long double -> float64), non-native byte order, and Python scalars and lists (floats become
  float32, ints int64). Complex, string and object arrays raise TypeError.
* In binary ops a Python scalar takes the dtype of the other operand (``t * 2`` stays float32).
* ``Graph.add_constant`` copies its array: later changes to the array do not affect the graph.

Executables
-----------
``Executable.execute(*inputs)`` / ``execute({name: value})`` / ``exe(...)`` return a list of
``lumen.Tensor`` (zero-copy to NumPy). ``inputs``/``outputs`` list ``TensorInfo`` (name, dtype,
shape) and ``steps`` the placed nodes. The GIL is released while ops and executables run, so
several Python threads can execute the same Executable concurrently. An Executable keeps its
Runtime alive; ``Graph.compile()`` without a runtime uses a shared default Runtime.
"""

import numpy as _np

from . import _lumen
from ._lumen import (Error, Executable, Graph, MemoryReport, Node, OptimizeReport, Runtime, Step,
                     Tensor, TensorInfo, Value, call_op, devices, empty, from_numpy, list_backends,
                     list_ops, randn, tensor, to_device, zeros)
from . import _tensor  # noqa: F401  (attaches NumPy interop and operators to Tensor)
from ._ops import *  # noqa: F401,F403
from ._ops import __all__ as _ops_all
from ._onnx import CompiledModel, Model, load_onnx
from ._session import (ExecutionMode, GraphOptimizationLevel, InferenceSession, ModelMetadata,
                       NodeArg, RunOptions, SessionOptions, get_available_providers, get_device)
from ._session import __all__ as _session_all

__version__ = "0.1.0"


def from_dlpack(obj):
    """A Tensor sharing the memory of any object implementing ``__dlpack__`` (CPU memory).

    The import goes through ``numpy.from_dlpack``, so it is zero-copy with the same rules as
    lumen.from_numpy (read-only producers are copied)."""
    if isinstance(obj, Tensor):
        return obj
    return tensor(_np.from_dlpack(obj))


__all__ = ["Error", "Executable", "Graph", "MemoryReport", "Node", "OptimizeReport", "Runtime",
           "Step", "Tensor", "TensorInfo", "Value",
           "call_op", "devices", "empty", "from_dlpack", "from_numpy", "list_backends", "list_ops", "randn",
           "tensor", "to_device", "zeros", "load_onnx", "Model", "CompiledModel"] + _ops_all + _session_all
