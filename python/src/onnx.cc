// ONNX loading: lumen._lumen.load_onnx_path / load_onnx_bytes return a Graph (see lumen/_onnx.py).
#include <nanobind/stl/string.h>

#include "bindings.h"
#ifdef LUMEN_WITH_ONNX
#include "lumen/onnx.h"
#endif

namespace lumen::python {

void init_onnx(nb::module_ &m) {
#ifdef LUMEN_WITH_ONNX
  m.attr("has_onnx") = true;
  m.def(
      "load_onnx_path",
      [](const std::string &path) {
        nb::gil_scoped_release release;
        return load_onnx(path);
      },
      nb::arg("path"));
  m.def(
      "load_onnx_bytes",
      [](nb::bytes data, const std::string &base_dir) {
        std::string bytes(data.c_str(), data.size());
        nb::gil_scoped_release release;
        return load_onnx_from_bytes(bytes, base_dir);
      },
      nb::arg("data"), nb::arg("base_dir") = "");
#else
  m.attr("has_onnx") = false;
#endif
}

}  // namespace lumen::python
