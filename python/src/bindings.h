// Shared pieces of the `lumen._lumen` extension: conversions between Python objects and lumen
// values, and the per-concept init functions that module.cc calls. Every function here expects the
// GIL to be held.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "lumen/lumen.h"

namespace lumen::python {

namespace nb = nanobind;

// Converts `obj` to a Tensor. A lumen.Tensor is returned as is (sharing memory). Objects exposing
// the buffer protocol (NumPy arrays, memoryviews, ...) are wrapped without copying when lumen can
// describe them: a supported dtype, byte strides that are non-negative multiples of the item size
// and aligned data. Anything else goes through numpy.asarray and is copied into a fresh C-ordered
// array (Python floats become float32, unsigned 16/32-bit ints widen to int32/int64). Read-only
// buffers are wrapped only when `readonly_ok` (op inputs, which kernels never write); otherwise
// they are copied, since a Tensor's memory is always writable. Raises TypeError for objects that
// have no lumen dtype (strings, complex numbers, uint64, ...).
Tensor to_tensor(nb::handle obj, bool readonly_ok = false);

// A graph input's value: for a sequence a list (or tuple) of items, for an optional None (empty)
// or its item, else an array-like (to_tensor). NumPy arrays of str convert to string tensors.
Tensor to_value(nb::handle obj, const ValueInfo &info);
// An executable's output: a sequence as a list, an optional as None or its item, a string tensor
// as a NumPy array of str objects, any other tensor as a lumen.Tensor.
nb::object from_value(const Tensor &t);

// A dict of attribute values (None values skipped): int/bool -> int, float -> float, str -> string,
// sequences of those -> lists, array-likes -> tensor. Raises TypeError naming the attribute.
Attributes to_attributes(nb::handle attrs);

// A dtype from a name ("float32"), a NumPy dtype or a scalar type (numpy.float32, float, bool).
DType to_dtype(nb::handle obj);
// A shape from a sequence of ints; None stands for an unknown dimension.
Shape to_shape(nb::handle obj);
nb::tuple shape_to_tuple(const Shape &shape);

nb::module_ numpy();

// DLPack's code for a dtype (every dtype but the narrow ones has one).
nb::dlpack::dtype dlpack_dtype(DType dtype);

void init_tensor(nb::module_ &m);
void init_ops(nb::module_ &m);
void init_graph(nb::module_ &m);
void init_onnx(nb::module_ &m);

}  // namespace lumen::python
