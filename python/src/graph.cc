// Graph builder, Runtime and Executable bindings.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <iterator>
#include <optional>
#include <type_traits>
#include <variant>

#include "bindings.h"
#include "lumen/container.h"

namespace lumen::python {
namespace {

// The Python face of an Executable. The C++ object is owned by its Runtime, so this holds the
// Python Runtime alive and hands the Executable back to it when collected.
struct PyExecutable {
  Executable *exe = nullptr;
  nb::object runtime;  // a lumen.Runtime

  PyExecutable(Executable *e, nb::object rt) : exe(e), runtime(std::move(rt)) {}
  PyExecutable(const PyExecutable &) = delete;
  PyExecutable &operator=(const PyExecutable &) = delete;
  ~PyExecutable() {
    if (exe) nb::cast<Runtime &>(runtime).release(exe);
  }

  // Read-only arrays are copied (to_tensor's default): an output may alias an input's memory.
  nb::list execute(nb::args args) const { return to_python(run(args, nullptr)); }

  std::pair<nb::list, RunProfile> execute_profiled(nb::args args) const {
    RunProfile profile;
    std::vector<Tensor> outputs = run(args, &profile);
    return {to_python(outputs), std::move(profile)};
  }

 private:
  static nb::list to_python(const std::vector<Tensor> &outputs) {
    nb::list out;
    for (const Tensor &t : outputs) out.append(from_value(t));
    return out;
  }

  // Input `index`'s value: sequences and optionals come as lists and None.
  Tensor input_value(size_t index, nb::handle value) const {
    const std::vector<ValueInfo> &infos = exe->inputs();
    if (index >= infos.size()) return to_tensor(value);  // execute() reports the count
    return to_value(value, infos[index]);
  }

  // Positional inputs, or one dict of name -> array.
  std::vector<Tensor> run(nb::args args, RunProfile *profile) const {
    if (args.size() == 1 && nb::isinstance<nb::dict>(args[0])) {
      std::map<std::string, Tensor> feeds;
      const std::vector<ValueInfo> &infos = exe->inputs();
      for (auto [name, value] : nb::cast<nb::dict>(args[0])) {
        const auto key = nb::cast<std::string>(name);
        size_t index = 0;
        while (index < infos.size() && infos[index].name != key) ++index;
        feeds.emplace(key, input_value(index, value));
      }
      nb::gil_scoped_release release;
      return exe->execute(feeds, profile);
    }
    std::vector<Tensor> inputs;
    for (nb::handle value : args) inputs.push_back(input_value(inputs.size(), value));
    nb::gil_scoped_release release;
    return exe->execute(inputs, profile);
  }
};

// `with lumen._lumen.RunTimeout(seconds):` runs of this thread stop between steps past it.
struct PyRunTimeout {
  double seconds;
  std::optional<RunTimeoutScope> scope;
};

nb::object default_runtime() {
  nb::module_ m = nb::module_::import_("lumen._lumen");
  nb::object rt = m.attr("_default_runtime");
  if (rt.is_none()) {
    rt = m.attr("Runtime")();
    m.attr("_default_runtime") = rt;
  }
  return rt;
}

std::vector<Value *> to_values(nb::handle inputs) {
  std::vector<Value *> values;
  for (nb::handle v : inputs) values.push_back(v.is_none() ? nullptr : nb::cast<Value *>(v));
  return values;
}

// A NumPy array owning a copy of `t`: the caller may keep it after the graph is gone.
nb::object tensor_to_numpy_copy(const Tensor &t) {
  return nb::cast(t.clone(), nb::rv_policy::move).attr("numpy")().attr("copy")();
}

nb::object attr_to_python(const AttrValue &value) {
  return std::visit(
      [](const auto &v) -> nb::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Tensor>)
          return tensor_to_numpy_copy(v);
        else if constexpr (std::is_same_v<T, std::shared_ptr<Graph>>)
          return nb::cast(v->clone(), nb::rv_policy::move);  // a copy the caller owns
        else
          return nb::cast(v);
      },
      value);
}

// The ONNX-style kind of an attribute; an exporter needs it for empty lists, whose Python form
// ([]) does not say what they hold.
const char *attr_kind(const AttrValue &value) {
  static constexpr const char *kinds[] = {"int",    "float",   "string", "ints",
                                          "floats", "strings", "tensor", "graph"};
  static_assert(std::variant_size_v<AttrValue> == std::size(kinds));
  return kinds[value.index()];
}

std::string info_repr(const char *kind, const std::string &name, DType dtype, const Shape &shape) {
  return str("lumen.", kind, "('", name, "', ", dtype_name(dtype), ", ", shape.to_string(), ")");
}

nb::list shape_list(const std::vector<Shape> &shapes) {
  nb::list out;
  for (const Shape &shape : shapes) out.append(shape_to_tuple(shape));
  return out;
}

}  // namespace

void init_graph(nb::module_ &m) {
  using nb::rv_policy;
  m.attr("_default_runtime") = nb::none();

  nb::class_<Runtime>(m, "Runtime", R"doc(
Execution context: thread pool and backend choice; owns the Executables compiled for it.
``num_threads=0`` uses all cores; ``backend=""`` places each node on the preferred backend.)doc")
      .def(
          "__init__",
          [](Runtime *self, int num_threads, const std::string &backend) {
            new (self) Runtime(RuntimeOptions{.num_threads = num_threads, .backend = backend});
          },
          nb::arg("num_threads") = 0, nb::arg("backend") = "")
      .def_prop_ro("num_threads", &Runtime::num_threads)
      .def_prop_ro("backend", [](const Runtime &rt) { return rt.options().backend; });

  nb::class_<Value>(m, "Value", "An SSA value of a Graph: valid while the graph holds it.")
      .def_prop_ro("name", &Value::name)
      .def_prop_ro("dtype", [](const Value &v) { return std::string(dtype_name(v.dtype())); })
      .def_prop_ro(
          "type", [](const Value &v) { return type_name(v.dtype(), v.element_type()); },
          "'float32', or for sequences and optionals 'seq(float32)', 'optional(seq(int64))'...")
      .def_prop_ro(
          "shape",
          [](const Value &v) -> nb::object {
            if (!v.has_shape()) return nb::none();
            return shape_to_tuple(v.shape());
          },
          "A tuple (None for unknown dims), or None when not inferred.")
      .def_prop_ro("dim_names", &Value::dim_names,
                   "Symbolic dim names (ONNX dim_param), '' for unnamed dims; [] when none.")
      .def_prop_ro(
          "symbolic_shape",
          [](const Value &v) -> nb::object {
            if (!v.symbolic_shape()) return nb::none();
            const SymbolicShape &s = *v.symbolic_shape();
            nb::list dims;
            for (size_t i = 0; i < s.dims.rank(); ++i) {
              if (s.dims[i] >= 0)
                dims.append(s.dims[i]);
              else if (!s.names[i].empty())
                dims.append(s.names[i]);
              else
                dims.append(nb::none());
            }
            return nb::tuple(dims);
          },
          "For a value whose shape waits for run time: the shape found from the inputs' symbolic "
          "dims, ints, names or expressions ('batch', 'seq+1', 'batch*seq') and None for dims "
          "with no name; None when not found.")
      .def_prop_ro("is_input", &Value::is_input)
      .def_prop_ro("is_constant", &Value::is_constant)
      .def_prop_ro(
          "constant",
          [](const Value &v) -> nb::object {
            if (!v.is_constant()) return nb::none();
            return tensor_to_numpy_copy(v.constant());
          },
          "A NumPy copy of a constant's value, None for other values.")
      .def_prop_ro("producer", &Value::producer, rv_policy::reference_internal,
                   "The Node computing this value, None for inputs and constants.")
      .def_prop_ro("users", &Value::users, rv_policy::reference_internal,
                   "Nodes using this value (a node using it twice appears twice).")
      .def("__repr__", [](const Value &v) {
        return info_repr("Value", v.name(), v.dtype(), v.has_shape() ? v.shape() : Shape{});
      });

  nb::class_<Node>(m, "Node", "A node of a Graph: valid while the graph holds it.")
      .def_prop_ro("op", &Node::op)
      .def_prop_ro("name", &Node::name)
      .def_prop_ro("inputs", &Node::inputs, rv_policy::reference_internal,
                   "Input Values; None for an omitted optional input.")
      .def_prop_ro("outputs", &Node::outputs, rv_policy::reference_internal)
      .def_prop_ro(
          "attributes",
          [](const Node &n) {
            nb::dict attrs;
            for (const auto &[name, value] : n.attrs().items())
              attrs[name.c_str()] = attr_to_python(value);
            return attrs;
          },
          "A dict: ints, floats, strings, lists of those, NumPy arrays for tensors (copies).")
      .def_prop_ro(
          "attribute_kinds",
          [](const Node &n) {
            std::map<std::string, std::string> kinds;
            for (const auto &[name, value] : n.attrs().items()) kinds[name] = attr_kind(value);
            return kinds;
          },
          "Attribute name -> 'int', 'float', 'string', 'ints', 'floats', 'strings' or 'tensor'.")
      .def("__repr__",
           [](const Node &n) { return str("lumen.Node('", n.name(), "', op='", n.op(), "')"); });

  nb::class_<ValueInfo>(m, "TensorInfo", "Name, dtype and shape of an Executable input/output.")
      .def_ro("name", &ValueInfo::name)
      .def_prop_ro("dtype", [](const ValueInfo &v) { return std::string(dtype_name(v.dtype)); })
      .def_prop_ro("shape", [](const ValueInfo &v) { return shape_to_tuple(v.shape); })
      .def_prop_ro(
          "element",
          [](const ValueInfo &v) {
            std::vector<std::string> names;
            for (DType d : v.element) names.emplace_back(dtype_name(d));
            return names;
          },
          "A sequence's or optional's items' type, outermost first (['float32'], "
          "['sequence', 'int64']); [] for tensors.")
      .def_prop_ro(
          "type", [](const ValueInfo &v) { return type_name(v.dtype, v.element); },
          "'float32', 'seq(float32)', 'optional(seq(int64))'...")
      .def("__repr__",
           [](const ValueInfo &v) { return info_repr("TensorInfo", v.name, v.dtype, v.shape); });

  nb::class_<StepInfo>(m, "Step", "One step of an Executable: node, op and backend.")
      .def_ro("node", &StepInfo::node)
      .def_ro("op", &StepInfo::op)
      .def_ro("backend", &StepInfo::backend)
      .def_ro("dtype", &StepInfo::dtype, "The dtype that keyed the kernel choice.")
      .def_ro("algorithm", &StepInfo::algorithm,
              "The algorithm the kernel chose at compile time and why ('' if it has one).")
      .def_ro("attributes", &StepInfo::attributes, "The node's attributes as text.")
      .def_ro("placement", &StepInfo::placement, "Why the step runs on its backend, in one line.")
      .def_prop_ro(
          "estimates_us",
          [](const StepInfo &s) {
            nb::dict out;
            for (const auto &[backend, us] : s.estimates_us) out[backend.c_str()] = us;
            return out;
          },
          "Estimated microseconds on each candidate backend where devices were weighed ({} "
          "otherwise).")
      .def_ro("copies_us", &StepInfo::copies_us,
              "Estimated microseconds of the copies into this step's memory that it pays.")
      .def_prop_ro(
          "input_shapes", [](const StepInfo &s) { return shape_list(s.input_shapes); },
          "Each input's shape at compile time (None for an unknown dim).")
      .def_prop_ro(
          "output_shapes", [](const StepInfo &s) { return shape_list(s.output_shapes); },
          "Each output's shape at compile time.")
      .def("__repr__", [](const StepInfo &s) {
        return str("lumen.Step(node='", s.node, "', op='", s.op, "', backend='", s.backend,
                   "', dtype='", s.dtype, "')");
      });

  nb::class_<MemorySpaceReport>(m, "MemorySpaceReport",
                                "The memory plan of one memory space (intermediates only).")
      .def_ro("space", &MemorySpaceReport::space)
      .def_ro("naive_bytes", &MemorySpaceReport::naive_bytes)
      .def_ro("planned_bytes", &MemorySpaceReport::planned_bytes)
      .def_ro("lower_bound_bytes", &MemorySpaceReport::lower_bound_bytes)
      .def_ro("num_values", &MemorySpaceReport::num_values)
      .def_ro("in_place", &MemorySpaceReport::in_place)
      .def_ro("views", &MemorySpaceReport::views)
      .def_ro("concat_parts", &MemorySpaceReport::concat_parts);

  nb::class_<StepTiming>(m, "StepTiming", "Wall-clock time of one step of one run.")
      .def_ro("step", &StepTiming::step, "Index into Executable.steps.")
      .def_ro("start_us", &StepTiming::start_us, "Microseconds from the start of the run.")
      .def_ro("duration_us", &StepTiming::duration_us);
  nb::class_<RunProfile>(m, "RunProfile", "Per-step times of one execute_profiled() call.")
      .def_ro("steps", &RunProfile::steps)
      .def_ro("plan_steps", &RunProfile::plan_steps,
              "The steps that ran (for a dynamic graph, those of the plan for these shapes).")
      .def_ro("total_us", &RunProfile::total_us);

  nb::class_<MemoryReport>(m, "MemoryReport", R"doc(
The memory plan of an Executable. ``planned`` is False when some shapes are known only at run time
(intermediates then come from the caching allocator).)doc")
      .def_ro("planned", &MemoryReport::planned)
      .def_ro("spaces", &MemoryReport::spaces)
      .def("__str__", &MemoryReport::to_string);

  nb::class_<PassRecord>(m, "PassRecord", "What one optimization pass did.")
      .def_ro("name", &PassRecord::pass)
      .def_ro("nodes_before", &PassRecord::nodes_before)
      .def_ro("nodes_after", &PassRecord::nodes_after)
      .def_ro("changes", &PassRecord::changes)
      .def_ro("milliseconds", &PassRecord::milliseconds);

  nb::class_<OptimizeReport>(m, "OptimizeReport", "What Graph.optimize did.")
      .def_ro("opt_level", &OptimizeReport::opt_level)
      .def_ro("ops_before", &OptimizeReport::ops_before)
      .def_ro("ops_after", &OptimizeReport::ops_after)
      .def_ro("passes", &OptimizeReport::passes)
      .def("__str__", &OptimizeReport::to_string);

  nb::class_<Graph>(m, "Graph", R"doc(
A graph under construction. Values returned by the builder methods keep the graph alive; a Value
removed by optimize() must not be used afterwards.)doc")
      .def(nb::init<>())
      .def(
          "add_input",
          [](Graph &g, const std::string &name, nb::handle shape, nb::handle dtype) {
            return g.add_input(name, to_shape(shape), to_dtype(dtype));
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("dtype") = "float32",
          rv_policy::reference_internal, "A runtime input; None in `shape` is an unknown dim.")
      .def(
          "add_weight",
          [](Graph &g, const std::string &name, nb::handle shape, nb::handle dtype) {
            return g.add_weight(name, to_shape(shape), to_dtype(dtype));
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("dtype") = "float32",
          rv_policy::reference_internal, "A weight filled with N(0, 1) values seeded by its name.")
      .def(
          "add_constant",
          [](Graph &g, const std::string &name, nb::handle value) {
            // A copy: later changes to the caller's array must not change the graph.
            return g.add_constant(name, to_tensor(value).clone());
          },
          nb::arg("name"), nb::arg("value"), rv_policy::reference_internal,
          "A constant holding a copy of `value` (any array-like).")
      .def(
          "add_op",
          [](Graph &g, const std::string &op, nb::handle inputs, const std::string &name,
             nb::kwargs attrs) {
            return g.add_op(op, to_values(inputs), to_attributes(attrs), name);
          },
          nb::arg("op"), nb::arg("inputs"), nb::arg("name") = "", nb::arg("attrs"),
          rv_policy::reference_internal,
          "Adds a node (keyword arguments are its ONNX-named attributes) and returns its output.")
      .def("mark_output", &Graph::mark_output, nb::arg("value"))
      .def_prop_ro("inputs", &Graph::inputs, rv_policy::reference_internal)
      .def_prop_ro("outputs", &Graph::outputs, rv_policy::reference_internal)
      .def_prop_ro("num_nodes", &Graph::num_nodes)
      .def("nodes", &Graph::topological_order, rv_policy::reference_internal,
           "The nodes in topological order (producers before users).")
      .def("clone", &Graph::clone, "A deep copy (constants share their memory).")
      .def(
          "op_counts",
          [](const Graph &g) {
            std::map<std::string, int> counts;
            for (const Node *n : g.nodes()) ++counts[n->op()];
            return counts;
          },
          "Number of nodes per op type.")
      .def("verify", &Graph::verify)
      .def(
          "optimize",
          [](Graph &g, int opt_level, const std::string &dump, const std::string &backend) {
            OptimizeOptions options{.dump = dump, .target_supports = ops_supported_by(backend)};
            nb::gil_scoped_release release;
            return g.optimize(opt_level, options);
          },
          nb::arg("opt_level") = 2, nb::arg("dump") = "", nb::arg("backend") = "",
          "Runs the optimization pipeline in place and returns an OptimizeReport. `dump`: '-' "
          "prints the graph after each pass that changed it, a folder gets one file per pass "
          "(default: $LUMEN_DUMP_GRAPH). `backend`: the backend(s) the graph is for when pinned "
          "('vulkan', 'cpu,vulkan'): a pass that would make ops none of them runs is undone.")
      .def(
          "compile",
          [](const Graph &g, nb::handle runtime, int opt_level, size_t shape_cache_capacity,
             size_t max_memory, bool adaptive, std::string input_device,
             std::string output_device) {
            nb::object rt = runtime.is_none() ? default_runtime() : nb::borrow(runtime);
            Runtime &native = nb::cast<Runtime &>(rt);
            Executable *exe = nullptr;
            {
              nb::gil_scoped_release release;
              exe = g.compile(&native, CompileOptions{.opt_level = opt_level,
                                                      .shape_cache_capacity = shape_cache_capacity,
                                                      .max_memory = max_memory,
                                                      .adaptive = adaptive,
                                                      .input_device = std::move(input_device),
                                                      .output_device = std::move(output_device)});
            }
            return new PyExecutable(exe, std::move(rt));
          },
          nb::arg("runtime") = nb::none(), nb::arg("opt_level") = 2,
          nb::arg("shape_cache_capacity") = 8, nb::arg("max_memory") = 0,
          nb::arg("adaptive") = false, nb::arg("input_device") = "", nb::arg("output_device") = "",
          rv_policy::take_ownership,
          "Compiles a snapshot of the graph for `runtime` (default: a shared module Runtime). A "
          "graph with input dims known only at run time gets a plan per input-shape signature "
          "when a signature comes a second time (optimized at `opt_level`, memory planned), "
          "keeping the `shape_cache_capacity` most recently used. `max_memory`: the memory budget "
          "in bytes of compiling and of every run (0: the default, see lumen.memory_budget). "
          "`adaptive`: runs 2 and 3 are timed, and where steps disagree with the router's "
          "estimates the graph is placed again between runs (at most 3 times; see replans). "
          "`input_device` / `output_device`: the backend whose memory the inputs are given in / "
          "the outputs are returned in ('vulkan'; default: host memory).")
      .def("__str__", &Graph::to_string);

  nb::class_<PyRunTimeout>(m, "RunTimeout", R"doc(
with RunTimeout(seconds): runs on this thread stop between steps once `seconds` have passed, with
a lumen.Error naming the node (CompiledModel.run(timeout=) uses it).)doc")
      .def(nb::init<double>(), nb::arg("seconds"))
      .def("__enter__", [](PyRunTimeout &t) { t.scope.emplace(t.seconds); })
      .def("__exit__", [](PyRunTimeout &t, nb::args) { t.scope.reset(); });

  nb::class_<PyExecutable>(m, "Executable", R"doc(
A compiled graph; immutable and safe to execute from several threads at once (the GIL is released
while it runs). It keeps its Runtime alive.)doc")
      .def("execute", &PyExecutable::execute, nb::arg("inputs"), R"doc(
execute(*inputs) or execute({name: array}) -> list of lumen.Tensor (zero-copy to NumPy).
Inputs are array-likes, converted as by lumen.tensor.)doc")
      .def("__call__", &PyExecutable::execute, nb::arg("inputs"))
      .def("execute_profiled", &PyExecutable::execute_profiled, nb::arg("inputs"), R"doc(
execute_profiled(*inputs) -> (outputs, RunProfile): the same run, timing every kernel call.)doc")
      .def_prop_ro("inputs", [](const PyExecutable &e) { return e.exe->inputs(); })
      .def_prop_ro("outputs", [](const PyExecutable &e) { return e.exe->outputs(); })
      .def_prop_ro("steps", [](const PyExecutable &e) { return e.exe->steps(); })
      .def_prop_ro(
          "replans", [](const PyExecutable &e) { return e.exe->replans(); },
          "Compiled with adaptive=True: one line per time the plan was redone, and why.")
      .def_prop_ro(
          "memory", [](const PyExecutable &e) { return e.exe->memory(); },
          "The MemoryReport (a copy).")
      .def_prop_ro("runtime", [](const PyExecutable &e) { return e.runtime; })
      .def("summary", [](const PyExecutable &e) { return e.exe->summary(); })
      .def("__str__", [](const PyExecutable &e) { return e.exe->summary(); });
}

}  // namespace lumen::python
