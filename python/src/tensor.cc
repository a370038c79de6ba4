// lumen.Tensor: properties, the buffer protocol and DLPack export, plus the tensor factories.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <random>

#include "bindings.h"

namespace lumen::python {
namespace {

// PEP 3118 format characters, or nullptr for dtypes Python has no format for (bfloat16).
const char *buffer_format(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "f";
    case DType::Float16:
      return "e";
    case DType::Float64:
      return "d";
    case DType::Int8:
      return "b";
    case DType::Int16:
      return "h";
    case DType::Int32:
      return "i";
    case DType::Int64:
      return "q";
    case DType::UInt8:
      return "B";
    case DType::UInt16:
      return "H";
    case DType::UInt32:
      return "I";
    case DType::UInt64:
      return "Q";
    case DType::Bool:
      return "?";
    default:  // bfloat16 and the narrow (float8, int4, ...) types: no PEP 3118 format
      return nullptr;
  }
}

// bf_getbuffer: exposes the tensor's memory (with its strides) read-write. The view holds a
// reference to the Python Tensor, which keeps the memory alive.
int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  view->obj = nullptr;
  auto refuse = [](const char *why) {
    PyErr_SetString(PyExc_BufferError, why);
    return -1;
  };
  if (!nb::inst_ready(self)) return refuse("lumen.Tensor: not initialized");
  const Tensor &t = *nb::inst_ptr<Tensor>(self);
  if (!t.defined()) return refuse("lumen.Tensor: undefined tensor");
  if (!t.device().is_host()) {
    const std::string why = str("lumen.Tensor: in ", t.device().to_string(),
                                " memory, not the host's; t.to('cpu') copies it there");
    PyErr_SetString(PyExc_BufferError, why.c_str());
    return -1;
  }
  const char *format = buffer_format(t.dtype());
  if (!format) return refuse("lumen.Tensor: this dtype has no buffer-protocol format");
  const bool contiguous = t.is_contiguous();
  if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !contiguous)
    return refuse("lumen.Tensor: not contiguous; request a strided buffer");
  const bool wants_contiguous = (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                                (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS;
  if (wants_contiguous && !contiguous) return refuse("lumen.Tensor: not contiguous");
  if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && t.rank() > 1)
    return refuse("lumen.Tensor: tensors are C-ordered, not Fortran-ordered");

  const size_t rank = t.rank();
  const auto itemsize = static_cast<Py_ssize_t>(dtype_size(t.dtype()));
  auto *dims = new Py_ssize_t[2 * rank + 1];  // shape, then byte strides
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = static_cast<Py_ssize_t>(t.shape()[i]);
    dims[rank + i] = static_cast<Py_ssize_t>(t.strides()[i]) * itemsize;
  }
  view->buf = t.numel() ? t.raw_data() : nullptr;
  view->obj = Py_NewRef(self);
  view->len = static_cast<Py_ssize_t>(t.nbytes());
  view->readonly = 0;
  view->itemsize = itemsize;
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char *>(format) : nullptr;
  view->ndim = static_cast<int>(rank);
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? dims : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? dims + rank : nullptr;
  view->suboffsets = nullptr;
  view->internal = dims;
  return 0;
}

void tensor_releasebuffer(PyObject *, Py_buffer *view) {
  delete[] static_cast<Py_ssize_t *>(view->internal);
}

PyType_Slot tensor_slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void *>(tensor_getbuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void *>(tensor_releasebuffer)},
    {0, nullptr},
};

// __dlpack__: describes the memory as a nanobind ndarray owned by the Python Tensor and lets that
// ndarray implement the protocol (versioned capsules, max_version, dl_device, copy). Host and CUDA
// memory (a consumer such as PyTorch reads CUDA outputs in place; Lumen's CUDA streams
// synchronize with the default stream, and a run's outputs are complete when it returns).
nb::object tensor_dlpack(nb::handle self, nb::kwargs kwargs) {
  const Tensor &t = nb::cast<const Tensor &>(self);
  const bool cuda = t.device().type == DeviceType::CUDA;
  if (!t.device().is_host() && !cuda)
    throw nb::buffer_error(str("lumen.Tensor: ", t.device().to_string(),
                               " memory is not exported through DLPack; t.to('cpu') copies it to "
                               "the host")
                               .c_str());
  if (is_narrow(t.dtype()))
    throw nb::buffer_error(
        str("lumen.Tensor: ", dtype_name(t.dtype()), " tensors do not export DLPack").c_str());
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::ndarray<nb::array_api> array(t.numel() ? t.raw_data() : nullptr, t.rank(), shape.data(), self,
                                   t.strides().data(), dlpack_dtype(t.dtype()),
                                   cuda ? nb::device::cuda::value : nb::device::cpu::value,
                                   cuda ? t.device().index : 0);
  return nb::cast(array).attr("__dlpack__")(**kwargs);
}

// Shapes in factories may be given as f(2, 3) or f((2, 3)).
Shape shape_from_args(nb::args args) {
  if (args.size() == 1 && !PyIndex_Check(args[0].ptr())) return to_shape(args[0]);
  return to_shape(args);
}

}  // namespace

nb::dlpack::dtype dlpack_dtype(DType dtype) {
  using Code = nb::dlpack::dtype_code;
  Code code = is_floating(dtype) ? Code::Float : Code::Int;
  if (dtype == DType::BFloat16) code = Code::Bfloat;
  if (dtype == DType::UInt8 || dtype == DType::UInt16 || dtype == DType::UInt32 ||
      dtype == DType::UInt64)
    code = Code::UInt;
  if (dtype == DType::Bool) code = Code::Bool;
  return {static_cast<uint8_t>(code), static_cast<uint8_t>(dtype_size(dtype) * 8), 1};
}

void init_tensor(nb::module_ &m) {
  nb::class_<Tensor>(m, "Tensor", nb::type_slots(tensor_slots), R"doc(
An n-dimensional array in lumen's memory model: dtype, shape, strides (in elements) and a shared
buffer. Copying a Tensor object shares memory; ``clone()`` copies. ``lumen.Tensor(obj)`` is
``lumen.tensor(obj)``. NumPy interop is zero-copy in both directions (see the module docs).)doc")
      .def(
          "__init__", [](Tensor *self, nb::handle obj) { new (self) Tensor(to_tensor(obj)); },
          nb::arg("data"))
      .def_prop_ro("shape", [](const Tensor &t) { return shape_to_tuple(t.shape()); })
      .def_prop_ro(
          "dtype", [](const Tensor &t) { return std::string(dtype_name(t.dtype())); },
          "The element type as a string such as 'float32' (NumPy accepts it: np.dtype(t.dtype)).")
      .def_prop_ro("ndim", [](const Tensor &t) { return t.rank(); })
      .def_prop_ro("size", [](const Tensor &t) { return t.numel(); })
      .def_prop_ro("nbytes", [](const Tensor &t) { return t.nbytes(); })
      .def_prop_ro(
          "strides", [](const Tensor &t) { return nb::tuple(nb::cast(t.strides())); },
          "Strides in elements (NumPy's are in bytes).")
      .def_prop_ro("device", [](const Tensor &t) { return t.device().to_string(); })
      .def(
          "_bits",
          [](const Tensor &t) {
            // The same memory as unsigned integers of the same width: how bfloat16 and the
            // narrow (float8, int4, ...) tensors reach NumPy (viewed back as ml_dtypes types).
            const size_t size = dtype_size(t.dtype());
            const DType as = size == 1   ? DType::UInt8
                             : size == 2 ? DType::UInt16
                             : size == 4 ? DType::UInt32
                                         : DType::UInt64;
            return Tensor::wrap(
                t.numel() ? t.raw_data() : nullptr, as, t.shape(), t.strides(), [t] {}, t.device());
          },
          "A view of this tensor's memory as unsigned integers of the same width.")
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("contiguous", &Tensor::contiguous,
           "This tensor if C-contiguous, else a contiguous copy.")
      .def("clone", &Tensor::clone, "A contiguous copy of the data.")
      .def("__len__",
           [](const Tensor &t) {
             if (t.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
             return t.shape()[0];
           })
      .def("__repr__", [](const Tensor &t) { return "lumen." + t.to_string(); })
      .def("__dlpack__", &tensor_dlpack,
           "DLPack export (zero-copy); keywords as in the array API (stream, max_version, "
           "dl_device, copy).")
      .def(
          "__dlpack_device__",
          [](const Tensor &t) {
            // DLPack's device codes: kDLCPU 1, kDLCUDA 2, kDLVulkan 7, kDLMetal 8.
            switch (t.device().type) {
              case DeviceType::CPU:
                return nb::make_tuple(1, 0);
              case DeviceType::CUDA:
                return nb::make_tuple(2, t.device().index);
              case DeviceType::Vulkan:
                return nb::make_tuple(7, t.device().index);
              case DeviceType::Metal:
                return nb::make_tuple(8, t.device().index);
              default:
                throw nb::buffer_error(
                    str("lumen.Tensor: ", t.device().to_string(), " has no DLPack device").c_str());
            }
          })
      .def(
          "to",
          [](const Tensor &t, const std::string &backend) {
            nb::gil_scoped_release release;
            return to_device(t, backend);
          },
          nb::arg("backend"),
          "This tensor in the memory of `backend` ('cpu': host memory; 'vulkan', 'cuda': the "
          "GPU's): itself where it is there already, else a copy. Feeds and reads plans compiled "
          "with input_device / output_device.");

  m.def(
      "to_device",
      [](nb::handle obj, const std::string &backend) {
        const Tensor t = to_tensor(obj);
        nb::gil_scoped_release release;
        return to_device(t, backend);
      },
      nb::arg("data"), nb::arg("backend"),
      "An array-like in the memory of `backend` (see Tensor.to): what a plan compiled with "
      "input_device=backend reads without a copy.");
  m.def(
      "tensor", [](nb::handle obj) { return to_tensor(obj); }, nb::arg("data"),
      R"doc(A Tensor from any array-like. Shares memory with NumPy arrays and other buffer-protocol
objects when lumen can describe them (supported dtype, non-negative strides that are multiples of
the item size, aligned data, writable); otherwise copies, as for Python lists and scalars (floats
become float32, ints int64). A lumen.Tensor is returned as is.)doc");
  m.def(
      "from_numpy",
      [](nb::handle obj) {
        if (!nb::isinstance(obj, numpy().attr("ndarray")))
          throw nb::type_error("from_numpy: expected a numpy.ndarray");
        return to_tensor(obj);
      },
      nb::arg("array"),
      R"doc(A Tensor viewing a NumPy array's memory (keeping the array alive), with the array's
strides. Copies only when lumen cannot view it (see lumen.tensor).)doc");
  m.def(
      "randn",
      [](nb::args args, std::optional<uint64_t> seed) {
        if (!seed) seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
        return Tensor::randn(shape_from_args(args), *seed);
      },
      nb::arg("shape"), nb::kw_only(), nb::arg("seed") = nb::none(),
      "randn(*shape, seed=None): float32 N(0, 1) samples; the same seed gives the same tensor.");
  m.def(
      "zeros",
      [](nb::args args, nb::handle dtype) {
        return Tensor::zeros(shape_from_args(args), to_dtype(dtype));
      },
      nb::arg("shape"), nb::kw_only(), nb::arg("dtype") = "float32",
      "zeros(*shape, dtype='float32')");
  m.def(
      "empty",
      [](nb::args args, nb::handle dtype) {
        return Tensor::empty(shape_from_args(args), to_dtype(dtype));
      },
      nb::arg("shape"), nb::kw_only(), nb::arg("dtype") = "float32",
      "empty(*shape, dtype='float32'): uninitialized memory.");
}

}  // namespace lumen::python
