// Eager execution: one generic entry point; the Python package builds lumen.conv2d & co. on it.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace lumen::python {

void init_ops(nb::module_ &m) {
  m.def(
      "call_op",
      [](const std::string &op, nb::handle inputs, nb::handle attrs, const std::string &backend) {
        // Convert everything first: no Python object may be touched once the GIL is released.
        std::vector<Tensor> tensors;
        for (nb::handle x : inputs) tensors.push_back(x.is_none() ? Tensor() : to_tensor(x, true));
        const Attributes attributes = to_attributes(attrs);
        nb::gil_scoped_release release;
        return call_op(op, tensors, attributes, backend);
      },
      nb::arg("op"), nb::arg("inputs"), nb::arg("attrs") = nb::none(), nb::arg("backend") = "",
      R"doc(Runs one op eagerly and returns its outputs as a list of lumen.Tensor.

``inputs`` are lumen.Tensor or array-likes (converted as by lumen.tensor, zero-copy where possible);
None stands for an omitted optional input. ``attrs`` is a dict with ONNX attribute names.
``backend`` is "cpu", "reference" or "" (the preferred backend that has a kernel). The GIL is
released while the kernel runs. Raises lumen.Error naming the op and the shapes on bad input.)doc");
  m.def("list_ops", &list_ops, "Names of the registered ops.");
  m.def("list_backends", &list_backends, "Names of the backends built into this library.");
  m.def(
      "devices",
      [] {
        nb::list out;
        for (const BackendInfo &b : describe_backends()) {
          nb::dict d;
          d["backend"] = b.name;
          d["device"] = b.device;
          d["available"] = b.available;
          d["description"] = b.description;
          d["why_not"] = b.why_not;
          d["placed_automatically"] = b.placed_automatically;
          nb::dict counters;
          for (const auto &[name, value] : b.counters) counters[name.c_str()] = value;
          d["counters"] = counters;
          out.append(d);
        }
        return out;
      },
      "The backends built into this library, each with its device (memory space), whether it "
      "can be used here (and why not), the device model and driver, and whether automatic "
      "placement considers it (not the reference backend, a test oracle), and what it counts as it "
      "runs (Vulkan: command batches recorded, and resubmitted instead of recorded).");
}

}  // namespace lumen::python
