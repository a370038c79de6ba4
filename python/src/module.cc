// The `lumen._lumen` extension module. Users import the `lumen` package, which wraps this.
#include "bindings.h"

NB_MODULE(_lumen, m) {
  namespace nb = nanobind;
  m.doc() = "Native core of the lumen package (use `import lumen`).";
  nb::exception<lumen::Error>(m, "Error", PyExc_RuntimeError);
  lumen::python::init_tensor(m);
  lumen::python::init_ops(m);
  lumen::python::init_graph(m);
  lumen::python::init_onnx(m);
}
