// Python object -> lumen value conversions (tensors, attributes, dtypes, shapes).
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "bindings.h"
#include "lumen/container.h"

namespace lumen::python {
namespace {

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Releases a buffer view (dropping the reference it holds on its exporter) from any thread: the
// last Tensor viewing NumPy memory may die on a worker thread that does not hold the GIL.
void release_view(Py_buffer *view) {
  // Once the interpreter is gone (or going, on another thread) leaking beats crashing.
  if (Py_IsInitialized() && (!interpreter_finalizing() || PyGILState_Check())) {
    nb::gil_scoped_acquire gil;
    PyBuffer_Release(view);
  }
  delete view;
}

std::optional<DType> dtype_from_format(const char *format, Py_ssize_t itemsize) {
  if (!format) format = "B";
  char c = *format;
  if (c == '@' || c == '=' || (c == '<' && std::endian::native == std::endian::little) ||
      ((c == '>' || c == '!') && std::endian::native == std::endian::big))
    c = *++format;
  if (c == '\0' || format[1] != '\0') return std::nullopt;
  switch (c) {
    case 'e':
      return DType::Float16;
    case 'f':
      return DType::Float32;
    case 'd':
      return DType::Float64;
    case '?':
      return DType::Bool;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
      switch (itemsize) {
        case 1:
          return DType::UInt8;
        case 2:
          return DType::UInt16;
        case 4:
          return DType::UInt32;
        case 8:
          return DType::UInt64;
      }
      return std::nullopt;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      switch (itemsize) {
        case 1:
          return DType::Int8;
        case 2:
          return DType::Int16;
        case 4:
          return DType::Int32;
        case 8:
          return DType::Int64;
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// Wraps the memory `obj` exports through the buffer protocol, or returns nullopt when it cannot be
// described as a Tensor without copying (see to_tensor).
std::optional<Tensor> try_wrap_buffer(nb::handle obj, bool readonly_ok) {
  auto view = std::make_unique<Py_buffer>();
  if (PyObject_GetBuffer(obj.ptr(), view.get(), PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return std::nullopt;
  }
  auto reject = [&view]() -> std::optional<Tensor> {
    PyBuffer_Release(view.get());
    return std::nullopt;
  };
  const Py_ssize_t itemsize = view->itemsize;
  const std::optional<DType> dtype = dtype_from_format(view->format, itemsize);
  if (!dtype || static_cast<Py_ssize_t>(dtype_size(*dtype)) != itemsize) return reject();
  if ((view->readonly && !readonly_ok) || view->suboffsets) return reject();
  if (reinterpret_cast<uintptr_t>(view->buf) % static_cast<uintptr_t>(itemsize) != 0)
    return reject();

  std::vector<int64_t> dims(view->shape, view->shape + view->ndim);
  Shape shape(dims);
  std::vector<int64_t> strides = contiguous_strides(shape);
  for (int i = 0; i < view->ndim && view->strides; ++i) {
    const Py_ssize_t s = view->strides[i];
    if (dims[i] <= 1) continue;  // the stride of a size-1 dim is never used: keep the canonical one
    if (s < 0 || s % itemsize != 0) return reject();
    strides[i] = s / itemsize;
  }

  Py_buffer *raw = view.release();
  try {
    return Tensor::wrap(raw->buf, *dtype, shape, std::move(strides), [raw] { release_view(raw); });
  } catch (...) {
    PyBuffer_Release(raw);
    delete raw;
    throw;
  }
}

// An object in CUDA memory exporting DLPack (a PyTorch or CuPy tensor): wrapped without a copy as
// a tensor in the CUDA backend's memory. nullopt for objects elsewhere.
std::optional<Tensor> try_wrap_cuda_dlpack(nb::handle obj) {
  if (!nb::hasattr(obj, "__dlpack_device__")) return std::nullopt;
  const nb::tuple where = nb::cast<nb::tuple>(obj.attr("__dlpack_device__")());
  if (where.size() < 1 || nb::cast<int>(where[0]) != 2) return std::nullopt;  // kDLCUDA
  auto array = std::make_unique<nb::ndarray<>>(nb::cast<nb::ndarray<>>(obj));
  const char *pick = std::getenv("LUMEN_CUDA_DEVICE");
  if (array->device_id() != (pick ? std::atoi(pick) : 0))
    throw nb::value_error(str("a tensor on CUDA device ", array->device_id(),
                              "; Lumen runs on device ", pick ? pick : "0", " (LUMEN_CUDA_DEVICE)")
                              .c_str());
  std::optional<DType> dtype;
  for (DType d : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8,
                  DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::UInt16,
                  DType::UInt32, DType::UInt64, DType::Bool})
    if (dlpack_dtype(d) == array->dtype()) dtype = d;
  if (!dtype) throw nb::type_error("a CUDA DLPack tensor of a dtype Lumen does not have");
  std::vector<int64_t> dims(array->ndim()), strides(array->ndim());
  for (size_t i = 0; i < array->ndim(); ++i)
    dims[i] = static_cast<int64_t>(array->shape(i)), strides[i] = array->stride(i);
  // Device memory is never read on the host, where a non-contiguous input would be made
  // contiguous: the caller does it on the device.
  const std::vector<int64_t> packed = contiguous_strides(Shape(dims));
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] > 1 && strides[i] != packed[i])
      throw nb::value_error(
          "a non-contiguous CUDA tensor: make it contiguous on the device first "
          "(x.contiguous() in PyTorch)");
  void *data = array->data();
  nb::ndarray<> *held = array.release();
  // Released with the GIL, from whichever thread drops the last reference (as release_view).
  return Tensor::wrap(
      data, *dtype, Shape(dims), std::move(strides),
      [held] {
        if (Py_IsInitialized() && (!interpreter_finalizing() || PyGILState_Check())) {
          nb::gil_scoped_acquire gil;
          delete held;
        }
      },
      Device{DeviceType::CUDA, 0});
}

// The NumPy dtype a fallback copy converts to; raises TypeError when there is none.
nb::object target_dtype(nb::handle dtype, bool from_python_scalars) {
  const std::string kind = nb::cast<std::string>(dtype.attr("kind"));
  const auto itemsize = nb::cast<int64_t>(dtype.attr("itemsize"));
  const char *name = nullptr;
  if (kind == "f") {
    name = itemsize == 2                           ? "float16"
           : itemsize == 4                         ? "float32"
           : itemsize == 8 && !from_python_scalars ? "float64"
           : itemsize == 8                         ? "float32"
                                                   : "float64";
  } else if (kind == "i") {
    name = itemsize == 1 ? "int8" : itemsize == 2 ? "int16" : itemsize == 4 ? "int32" : "int64";
  } else if (kind == "u") {
    name = itemsize == 1 ? "uint8" : itemsize == 2 ? "uint16" : itemsize == 4 ? "uint32" : "uint64";
  } else if (kind == "b") {
    name = "bool";
  } else {
    throw nb::type_error(
        str("cannot convert an array of dtype ", nb::cast<std::string>(nb::str(dtype)),
            " to a lumen.Tensor (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, bool, "
            "str)")
            .c_str());
  }
  return numpy().attr("dtype")(name);
}

}  // namespace

nb::module_ numpy() {
  return nb::module_::import_("numpy");
}

namespace {

bool is_ml_dtypes_name(const std::string &name) {
  for (const char *n : {"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                        "uint4", "int4", "float4_e2m1fn", "float8_e8m0fnu", "uint2", "int2"})
    if (name == n) return true;
  return false;
}

// The lumen dtype of an ml_dtypes NumPy dtype (bfloat16, float8_*, int4 ...), if it is one.
std::optional<DType> ml_dtypes_dtype(nb::handle np_dtype) {
  const std::string name = nb::cast<std::string>(np_dtype.attr("name"));
  const int64_t itemsize = nb::cast<int64_t>(np_dtype.attr("itemsize"));
  if (name == "bfloat16" && itemsize == 2) return DType::BFloat16;
  if (itemsize == 1 && is_ml_dtypes_name(name)) return dtype_from_name(name);
  return std::nullopt;
}

// A string tensor from an array of str (bytes are decoded as UTF-8; other objects must be str).
Tensor strings_to_tensor(nb::handle array) {
  const Shape shape = to_shape(array.attr("shape"));
  Tensor t = Tensor::empty(shape, DType::String);
  std::string *out = t.data<std::string>();
  int64_t i = 0;
  for (nb::handle item : array.attr("ravel")()) {
    if (PyBytes_Check(item.ptr()))
      out[i++] =
          std::string(PyBytes_AsString(item.ptr()), static_cast<size_t>(PyBytes_Size(item.ptr())));
    else if (PyUnicode_Check(item.ptr()))
      out[i++] = nb::cast<std::string>(item);
    else
      throw nb::type_error(
          str("cannot convert an array holding ",
              nb::cast<std::string>(nb::str(nb::handle(Py_TYPE(item.ptr())).attr("__name__"))),
              " objects to a lumen.Tensor (object arrays must hold str)")
              .c_str());
  }
  return t;
}

}  // namespace

namespace {

Tensor container_value(nb::handle obj, DType dtype, const std::vector<DType> &element,
                       const std::string &what) {
  if (!is_container(dtype)) return to_tensor(obj);
  const std::vector<DType> inner(element.begin() + 1, element.end());
  if (dtype == DType::Optional)
    return make_optional(
        obj.is_none() ? Tensor() : container_value(obj, element.at(0), inner, what), element,
        what.c_str());
  if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr()))
    throw nb::type_error(
        str(what, ": a sequence input takes a list of arrays, got ",
            nb::cast<std::string>(nb::str(nb::handle(Py_TYPE(obj.ptr())).attr("__name__"))))
            .c_str());
  std::vector<Tensor> items;
  for (nb::handle item : obj) items.push_back(container_value(item, element.at(0), inner, what));
  return make_sequence(std::move(items), element, what.c_str());
}

}  // namespace

Tensor to_value(nb::handle obj, const ValueInfo &info) {
  return container_value(obj, info.dtype, info.element, "input '" + info.name + "'");
}

nb::object from_value(const Tensor &t) {
  if (t.dtype() == DType::Sequence) {
    nb::list items;
    for (const Tensor &item : container_of(t).items) items.append(from_value(item));
    return items;
  }
  if (t.dtype() == DType::Optional) {
    const Container &c = container_of(t);
    return c.items.empty() ? nb::none() : from_value(c.items[0]);
  }
  if (t.dtype() == DType::String) {
    const Tensor c = t.contiguous();
    nb::list flat;
    for (int64_t i = 0; i < c.numel(); ++i) {
      const std::string &s = c.data<std::string>()[i];
      flat.append(nb::steal(
          PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape")));
    }
    return numpy()
        .attr("array")(flat, nb::arg("dtype") = "object")
        .attr("reshape")(shape_to_tuple(t.shape()));
  }
  return nb::cast(t);
}

Tensor to_tensor(nb::handle obj, bool readonly_ok) {
  if (nb::isinstance<Tensor>(obj)) return nb::cast<Tensor>(obj);
  if (std::optional<Tensor> t = try_wrap_cuda_dlpack(obj)) return *std::move(t);
  if (std::optional<Tensor> t = try_wrap_buffer(obj, readonly_ok)) return *std::move(t);

  // Copy path. Plain Python numbers and lists follow lumen's defaults (float32), not NumPy's.
  const bool from_python = PyFloat_CheckExact(obj.ptr()) || PyLong_CheckExact(obj.ptr()) ||
                           PyBool_Check(obj.ptr()) || PyList_Check(obj.ptr()) ||
                           PyTuple_Check(obj.ptr());
  nb::module_ np = numpy();
  nb::object array = np.attr("asarray")(obj);
  // ml_dtypes' bfloat16, float8, int4 ... (NumPy kind 'V' mostly) have no buffer format: copy
  // their bits as unsigned integers of the same width and retag them.
  if (std::optional<DType> ml = ml_dtypes_dtype(array.attr("dtype"))) {
    nb::object bits = np.attr("array")(
        array.attr("view")(dtype_size(*ml) == 2 ? np.attr("uint16") : np.attr("uint8")),
        nb::arg("order") = "C", nb::arg("copy") = true);
    std::optional<Tensor> t = try_wrap_buffer(bits, true);
    if (!t)
      throw nb::type_error(
          str("cannot convert a ", dtype_name(*ml), " array to a lumen.Tensor").c_str());
    Tensor words = *std::move(t);
    return Tensor::wrap(words.raw_data(), *ml, words.shape(), words.strides(), [words] {});
  }
  const std::string kind = nb::cast<std::string>(array.attr("dtype").attr("kind"));
  if (kind == "U" || kind == "S" || kind == "O") return strings_to_tensor(array);
  nb::object target = target_dtype(array.attr("dtype"), from_python);
  if (!array.attr("dtype").equal(target)) array = array.attr("astype")(target);
  if (!array.is(obj))
    if (std::optional<Tensor> t = try_wrap_buffer(array, readonly_ok)) return *std::move(t);
  // Strides lumen cannot express, misaligned or read-only memory: a fresh C-ordered copy.
  array = np.attr("array")(array, nb::arg("dtype") = target, nb::arg("order") = "C",
                           nb::arg("copy") = true);
  if (std::optional<Tensor> t = try_wrap_buffer(array, true)) return *std::move(t);
  throw nb::type_error(
      str("cannot convert an object of type ",
          nb::cast<std::string>(nb::str(nb::handle(Py_TYPE(obj.ptr())).attr("__name__"))),
          " to a lumen.Tensor")
          .c_str());
}

DType to_dtype(nb::handle obj) {
  if (nb::isinstance<nb::str>(obj)) {
    const std::string name = nb::cast<std::string>(obj);
    if (name != "bfloat16" && !is_ml_dtypes_name(name)) {
      // Let NumPy resolve aliases such as "f4" or "float"; lumen names are checked below.
      nb::object resolved = numpy().attr("dtype")(obj);
      return dtype_from_name(nb::cast<std::string>(resolved.attr("name")));
    }
    return dtype_from_name(name);
  }
  return dtype_from_name(nb::cast<std::string>(numpy().attr("dtype")(obj).attr("name")));
}

Shape to_shape(nb::handle obj) {
  if (PyIndex_Check(obj.ptr())) return Shape{nb::cast<int64_t>(obj)};
  std::vector<int64_t> dims;
  for (nb::handle d : obj) dims.push_back(d.is_none() ? kUnknownDim : nb::cast<int64_t>(d));
  return Shape(std::move(dims));
}

nb::tuple shape_to_tuple(const Shape &shape) {
  nb::list dims;
  for (int64_t d : shape)
    if (d == kUnknownDim)
      dims.append(nb::none());
    else
      dims.append(d);
  return nb::tuple(dims);
}

Attributes to_attributes(nb::handle attrs) {
  Attributes result;
  if (attrs.is_none()) return result;
  for (auto [key, value] : nb::cast<nb::dict>(attrs)) {
    const std::string name = nb::cast<std::string>(key);
    PyObject *v = value.ptr();
    auto bad = [&](const char *what) {
      return nb::type_error(str("attribute '", name, "': unsupported value of type ",
                                Py_TYPE(v)->tp_name, " (", what, ")")
                                .c_str());
    };
    if (value.is_none()) continue;
    if (PyUnicode_Check(v)) {
      result.set(name, nb::cast<std::string>(value));
    } else if (PyIndex_Check(v) && !nb::hasattr(value, "shape")) {
      result.set(name, nb::cast<int64_t>(value));
    } else if (PyFloat_Check(v) ||
               (!nb::hasattr(value, "shape") && nb::hasattr(value, "__float__"))) {
      result.set(name, nb::cast<double>(value));
    } else if (PyList_Check(v) || PyTuple_Check(v)) {
      bool all_int = true, all_str = true, all_number = true;
      for (nb::handle item : value) {
        all_int &= PyIndex_Check(item.ptr()) != 0;
        all_str &= PyUnicode_Check(item.ptr()) != 0;
        all_number &= PyNumber_Check(item.ptr()) != 0;
      }
      if (all_int) {
        result.set(name, nb::cast<std::vector<int64_t>>(value));
      } else if (all_str) {
        result.set(name, nb::cast<std::vector<std::string>>(value));
      } else if (all_number) {
        std::vector<double> values;
        for (nb::handle item : value) values.push_back(nb::cast<double>(nb::float_(item)));
        result.set(name, std::move(values));
      } else {
        throw bad("lists must hold only ints, only floats or only strings");
      }
    } else if (nb::isinstance<Tensor>(value) || PyObject_CheckBuffer(v)) {
      result.set(name, to_tensor(value).clone());
    } else {
      throw bad("expected int, float, str, a list of those, or an array");
    }
  }
  return result;
}

}  // namespace lumen::python
