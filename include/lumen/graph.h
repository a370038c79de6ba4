// The graph IR: SSA values produced by nodes. The same classes serve the C++ builder API, the
// ONNX importer and the optimization passes. A Graph owns its nodes and values; the raw pointers it
// hands out stay valid until the node/value is removed or the Graph is destroyed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lumen/attributes.h"
#include "lumen/tensor.h"

namespace lumen {

class Graph;
class Node;
class Runtime;
class Executable;

// What one optimization pass did.
struct PassRecord {
  std::string pass;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  std::vector<std::string> changes;  // one line per rewrite, naming the nodes involved
  double milliseconds = 0;
};

// What Graph::optimize did: node counts per op before and after, and every pass that ran.
struct OptimizeReport {
  int opt_level = 0;
  std::map<std::string, int> ops_before;
  std::map<std::string, int> ops_after;
  std::vector<PassRecord> passes;
  std::string to_string() const;
};

// How Graph::compile treats a graph whose input shapes are known only at run time. Such a graph
// compiles once; each execute() then runs a plan made for its concrete input shapes (shapes
// resolved, re-optimized at `opt_level`, memory planned, weights packed), kept in a cache of
// `shape_cache_capacity` plans, the least recently used evicted first.
struct CompileOptions {
  int opt_level = 2;
  size_t shape_cache_capacity = 8;
  // The memory budget (lumen/memory_budget.h) of compiling and of every run, in bytes: a plan
  // whose arena or a run whose tensor needs more fails with lumen::Error. 0: the default.
  size_t max_memory = 0;
  // Routing that corrects itself (runtime/adaptive_plan.h): the second and third runs are timed
  // step by step, and where a step that matters took over twice or under half the router's
  // estimate, the timings go to the cost model and the graph is placed again between runs (at
  // most 3 times; Executable::replans says why). Off: the placement is fixed at compile time.
  bool adaptive = false;
  // Where the caller's tensors live: the name of a backend whose memory holds the inputs given to
  // execute, and the one whose memory the outputs are returned in ("" or "cpu": host memory;
  // "vulkan": Vulkan buffers). The plan reads inputs there, copying each only to the devices whose
  // steps need it (an input given in other memory is moved there first), and copies outputs made
  // elsewhere after the last step; the router counts those copies. Sequences and optionals stay
  // in host memory.
  std::string input_device;
  std::string output_device;
};

struct OptimizeOptions {
  // Print the graph after every pass that changed it: "-" for stderr, a folder for one file per
  // pass ("03_constant_folding.txt"), empty for none. Defaults to $LUMEN_DUMP_GRAPH.
  std::string dump;
  bool dump_from_env = true;
  // The backends the graph will be compiled for, when pinned: a pass that would make nodes of an
  // op none of them has a kernel for is undone (fusions into CPU-only ops, on a GPU). Null: every
  // op may be made. See lumen::ops_supported_by.
  std::function<bool(const std::string &op)> target_supports = nullptr;
};

class Value {
 public:
  const std::string &name() const { return name_; }
  DType dtype() const { return dtype_; }
  // A sequence or optional value (dtype Sequence/Optional, shape []): its items' type, see
  // Container::element. Empty for tensors.
  const std::vector<DType> &element_type() const { return element_; }
  // Meaningful only when has_shape(): inference cannot run past inputs with unknown dims until
  // run time. Dims may be kUnknownDim.
  const Shape &shape() const { return shape_; }
  bool has_shape() const { return has_shape_; }
  Node *producer() const { return producer_; }  // nullptr for graph inputs and constants
  const std::vector<Node *> &users() const { return users_; }
  bool is_input() const { return is_input_; }
  bool is_constant() const { return constant_.defined(); }
  const Tensor &constant() const { return constant_; }
  // Symbolic names of dims (ONNX dim_param, e.g. "batch"), "" for unnamed ones; empty when the
  // value has none.
  const std::vector<std::string> &dim_names() const { return dim_names_; }
  // For a value whose shape waits for run time (has_shape() false): its rank and dims as
  // Graph::infer_symbolic_shapes found them from the graph's symbolic input dims. For reports and
  // exported shapes; plans are made per concrete shape. nullopt when not known.
  const std::optional<SymbolicShape> &symbolic_shape() const { return symbolic_; }

 private:
  friend class Graph;
  std::vector<std::string> dim_names_;
  std::optional<SymbolicShape> symbolic_;
  std::string name_;
  DType dtype_ = DType::Float32;
  std::vector<DType> element_;
  Shape shape_;
  bool has_shape_ = false;
  bool is_input_ = false;
  Node *producer_ = nullptr;
  std::vector<Node *> users_;  // one entry per use (a node using a value twice appears twice)
  Tensor constant_;
};

class Node {
 public:
  const std::string &op() const { return op_; }
  const std::string &name() const { return name_; }
  const std::vector<Value *> &inputs() const { return inputs_; }  // nullptr: omitted optional
  const std::vector<Value *> &outputs() const { return outputs_; }
  Value *input(size_t i) const { return inputs_.at(i); }
  Value *output(size_t i = 0) const { return outputs_.at(i); }
  const Attributes &attrs() const { return attrs_; }

 private:
  friend class Graph;
  std::string op_;
  std::string name_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  Attributes attrs_;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph &&) noexcept;
  Graph &operator=(Graph &&) noexcept;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  // A deep copy (constants share their tensors' memory, which is never written).
  Graph clone() const;

  // --- Building -------------------------------------------------------------------------------
  // A runtime input; dims may be kUnknownDim (checked against the real tensor at run time).
  Value *add_input(const std::string &name, const Shape &shape, DType dtype = DType::Float32);
  // An input whose rank is not known either (a subgraph's input taking an outer value whose shape
  // is known only at run time). Its users' shapes are inferred at run time.
  Value *add_input_of_unknown_shape(const std::string &name, DType dtype);
  // A sequence or optional input: `kind` is DType::Sequence or DType::Optional, `element` the
  // items' type (see Container::element), e.g. {DType::Float32}.
  Value *add_container_input(const std::string &name, DType kind, std::vector<DType> element);
  // A trainable-style weight initialised with N(0, 1) values from a seed derived from `name`, so
  // the same graph always computes the same thing. Use add_constant for given values.
  Value *add_weight(const std::string &name, const Shape &shape, DType dtype = DType::Float32);
  Value *add_constant(const std::string &name, Tensor value);
  // Adds a node and returns its single output. Types and shapes are inferred at once, so a wrong
  // rank or shape is a lumen::Error here, naming the op, the node and the shapes.
  Value *add_op(const std::string &op, const std::vector<Value *> &inputs,
                const Attributes &attrs = {}, const std::string &name = "");
  // The same for ops with several outputs; returns the node. Outputs are named "name:i" unless
  // `output_names` gives names (an empty entry keeps the default for that output).
  Node *add_node(const std::string &op, const std::vector<Value *> &inputs,
                 const Attributes &attrs = {}, const std::string &name = "",
                 const std::vector<std::string> &output_names = {});
  void mark_output(Value *value);
  // Records symbolic dim names for a value (documentation for users; shapes stay kUnknownDim).
  void set_dim_names(Value *value, std::vector<std::string> names);
  // Narrows a graph input's shape (fixing dims that were unknown: same rank, known dims kept; any
  // shape for an input of unknown shape) and re-infers the types of the whole graph.
  void set_input_shape(Value *input, const Shape &shape);

  // --- Inspection -----------------------------------------------------------------------------
  const std::vector<Value *> &inputs() const { return inputs_; }
  const std::vector<Value *> &outputs() const { return outputs_; }
  std::vector<Node *> nodes() const;  // in insertion order
  size_t num_nodes() const { return nodes_.size(); }
  Value *find_value(const std::string &name) const;  // nullptr when absent
  // Nodes ordered so that producers come before users; throws lumen::Error on a cycle.
  std::vector<Node *> topological_order() const;
  // Checks structure and types: every input defined and owned by this graph, no cycles, unique
  // value names, outputs produced, arity, and that stored types match inference. Throws
  // lumen::Error describing the first problem.
  void verify() const;
  std::string to_string() const;  // one line per node, in topological order

  // --- Rewriting (used by passes) -------------------------------------------------------------
  void set_input(Node *node, size_t index, Value *value);
  // Graph outputs included. When `from` is a graph output, `to` must be a node's output that is not
  // one (see can_replace; otherwise lumen::Error): the two swap names, so the graph's outputs keep
  // their names across rewrites.
  void replace_all_uses(Value *from, Value *to);
  // Whether replace_all_uses(from, to) keeps every graph output's name: false when `from` is a
  // graph output and `to` is a graph input, a constant or another graph output.
  bool can_replace(const Value *from, const Value *to) const;
  // Removes constants without users (they are not nodes, so node removal leaves them behind).
  size_t remove_unused_constants();
  // A name not used by any value yet, built from `base`.
  std::string fresh_name(const std::string &base) { return unique_name(base); }
  // Removes a node whose outputs have no users and are not graph outputs.
  void remove_node(Node *node);
  // Copies the nodes of `sub` into this graph, its inputs bound to `inputs` (values of this
  // graph, one per input of `sub`), node and value names prefixed with `prefix`. Returns the
  // values standing for the outputs of `sub` (an input of `inputs` where `sub` passes one through).
  std::vector<Value *> inline_graph(const Graph &sub, const std::vector<Value *> &inputs,
                                    const std::string &prefix);
  // Re-runs type inference over the whole graph (after rewrites).
  void infer_types();
  // Propagates the inputs' symbolic dims by name through shape inference (so `N` and `N` are
  // known equal, and `seq` + 1 is named "seq+1") and sets symbolic_shape() on every value whose
  // shape waits for run time. The importer, optimize() and set_input_shape() call it.
  void infer_symbolic_shapes();

  // --- Compilation ------------------------------------------------------------------------------
  // Runs the optimization pipeline for `opt_level` (0: none, 1: basic, 2: all), then verifies.
  OptimizeReport optimize(int opt_level = 2, const OptimizeOptions &options = {});
  // Compiles a snapshot of this graph for `runtime`. The returned Executable is owned by the
  // runtime and stays valid until runtime->release(it) or the Runtime is destroyed; later changes
  // to this Graph do not affect it.
  Executable *compile(Runtime *runtime, const CompileOptions &options = {}) const;

 private:
  Value *new_value(const std::string &name);
  bool owns(const Value *value) const;
  std::string unique_name(const std::string &base);
  void infer_node(Node *node);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value *> values_by_name_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  uint64_t next_id_ = 0;
};

}  // namespace lumen
