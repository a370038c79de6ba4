// ONNX loading: lumen._lumen.load_onnx_path / load_onnx_bytes return a Graph (see lumen/_onnx.py).
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "lumen/memory_budget.h"
#ifdef LUMEN_WITH_ONNX
#include "lumen/onnx.h"
#endif

namespace lumen::python {

void init_onnx(nb::module_ &m) {
#ifdef LUMEN_WITH_ONNX
  m.attr("has_onnx") = true;
  m.def(
      "load_onnx_path",
      [](const std::string &path, size_t max_memory) {
        nb::gil_scoped_release release;
        const MemoryBudgetScope budget(max_memory);
        return load_onnx(path);
      },
      nb::arg("path"), nb::arg("max_memory") = 0);
  m.def(
      "load_onnx_bytes",
      [](nb::bytes data, const std::string &base_dir, size_t max_memory) {
        std::string bytes(data.c_str(), data.size());
        nb::gil_scoped_release release;
        const MemoryBudgetScope budget(max_memory);
        return load_onnx_from_bytes(bytes, base_dir);
      },
      nb::arg("data"), nb::arg("base_dir") = "", nb::arg("max_memory") = 0);
#else
  m.attr("has_onnx") = false;
#endif
  m.def(
      "parse_memory_size",
      [](const std::string &text) { return parse_memory_size(text, "max_memory"); },
      nb::arg("text"));
  m.def("default_memory_budget", &default_memory_budget,
        "The memory budget when none is given: LUMEN_MAX_MEMORY, else the machine's memory.");
}

}  // namespace lumen::python
