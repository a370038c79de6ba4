// Symbolic shape inference by probing. The graph's unknown input dims are symbols ("batch", "seq";
// an unnamed unknown dim is a symbol of its own). Shape inference runs three times with every
// symbol given a different size, evaluating small shape-arithmetic tensors on the way (shape ->
// gather -> concat -> reshape): first multiples of 32 below 512 (for up to four symbols), which
// models with stride-32 feature maps or 512 positions accept, then sizes 2 to 14 for the values
// that left unknown (CLIP's 77 positions). A dim that is the same in all three probes is static;
// one that follows a symbol, or a simple expression of one or two (c*s+b, s+t+b, c*s*t), is named
// after it. Reusing the ops' own inference keeps this right for every op without a second,
// symbolic rule per op. Nothing plans with the result: plans are made per concrete shape at run
// time (ShapePlanCache); this names the dims of intermediate values and outputs.
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/op_schema.h"
#include "graph/passes/pattern.h"
#include "graph/symbolic_probe.h"
#include "lumen/graph.h"
#include "lumen/ops.h"

namespace lumen {
namespace {

constexpr size_t kProbes = 3;
// Small tensors are evaluated (shape arithmetic); anything larger only has its shape inferred.
constexpr int64_t kMaxEvaluatedElements = 1024;

struct Symbol {
  std::string name;  // "" for an unnamed unknown dim: expressions using it stay unnamed
  std::array<int64_t, kProbes> sizes{};
};

// Symbol `index` has size scale * probe_k(index, probe) in probe `probe`: k distinct within a
// probe, and no symbol's three sizes an affine function of another's ((k2 - k0) / (k1 - k0)
// differs from symbol to symbol), so a dim that follows one symbol cannot be mistaken for an
// expression of another.
int64_t probe_k(size_t index, size_t probe) {
  static constexpr int64_t kTable[4][kProbes] = {{2, 3, 5}, {4, 6, 7}, {8, 9, 13}, {10, 14, 11}};
  if (index < 4) return kTable[index][probe];
  const auto j = static_cast<int64_t>(index);  // ratio 2 + j, beyond the table's 3, 1.5, 5, 0.25
  const int64_t k[kProbes] = {8 * j, 8 * j + 1, 9 * j + 2};
  return k[probe];
}

// The outputs' shapes (and small values) of `node` given its inputs' probed shapes and values;
// nullopt when an input is not known or inference fails.
std::optional<std::vector<ProbedValue>> probe_node(const Node *node, const Probe &probe) {
  std::vector<TensorType> types(node->inputs().size());
  std::vector<Tensor> values(node->inputs().size());
  InferContext ctx{.attrs = node->attrs(), .op = node->op(), .node = node->name()};
  bool all_valued = true;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    const Value *in = node->inputs()[i];
    ctx.inputs.push_back(in ? &types[i] : nullptr);
    ctx.values.push_back(nullptr);
    if (!in) continue;
    auto it = probe.find(in);
    if (it == probe.end() || is_container(in->dtype())) return std::nullopt;
    types[i] = {in->dtype(), it->second.shape, in->element_type()};
    values[i] = it->second.value;
    if (values[i].defined()) ctx.values[i] = &values[i];
    all_valued = all_valued && values[i].defined();
  }
  std::vector<TensorType> out_types;
  try {
    out_types = infer_types(get_op(node->op()), ctx);
  } catch (const Error &) {
    return std::nullopt;
  } catch (const DeferredInference &) {
    return std::nullopt;
  }
  if (out_types.size() != node->outputs().size()) return std::nullopt;
  std::vector<ProbedValue> outputs;
  for (const TensorType &t : out_types) {
    if (!t.shape.is_static() || is_container(t.dtype)) return std::nullopt;
    outputs.push_back({t.shape, Tensor()});
  }
  // shape/size need only the input's shape; other ops run when every input is known and the
  // outputs are small (the arithmetic that feeds reshape, expand, slice, resize...).
  if (!types.empty())
    if (std::optional<Tensor> value =
            shape_query_value(node->op(), types[0].shape, node->attrs())) {
      outputs[0].value = *std::move(value);
      return outputs;
    }
  const bool small = std::all_of(out_types.begin(), out_types.end(), [](const TensorType &t) {
    int64_t n = 1;
    for (int64_t d : t.shape)
      if (__builtin_mul_overflow(n, d, &n) || n > kMaxEvaluatedElements) return false;
    return !holds_objects(t.dtype);
  });
  if (!all_valued || !small || is_nondeterministic(node->op())) return outputs;
  try {
    std::vector<Tensor> results = call_op(node->op(), values, node->attrs());
    if (results.size() == outputs.size())
      for (size_t i = 0; i < results.size(); ++i)
        if (results[i].shape() == outputs[i].shape) outputs[i].value = std::move(results[i]);
  } catch (const Error &) {
    // Not evaluable here (no eager kernel, a value error the run will report): shapes only.
  }
  return outputs;
}

// The graph's symbols and, per input, the symbol of each dim (-1 for a known dim).
struct Symbols {
  std::vector<Symbol> symbols;
  std::vector<std::pair<const Value *, std::vector<int>>> of_input;
};

// One symbol per distinct name; each unnamed unknown dim is a symbol of its own.
Symbols collect_symbols(const std::vector<Value *> &inputs) {
  Symbols out;
  std::map<std::string, int> by_name;
  for (const Value *in : inputs) {
    if (!in->has_shape() || is_container(in->dtype())) continue;
    std::vector<int> dims(in->shape().rank(), -1);
    for (size_t i = 0; i < dims.size(); ++i) {
      if (in->shape()[i] != kUnknownDim) continue;
      const std::string name = i < in->dim_names().size() ? in->dim_names()[i] : "";
      auto it = name.empty() ? by_name.end() : by_name.find(name);
      if (it == by_name.end()) {
        out.symbols.push_back({name, {}});
        if (!name.empty()) by_name[name] = static_cast<int>(out.symbols.size() - 1);
        dims[i] = static_cast<int>(out.symbols.size() - 1);
      } else {
        dims[i] = it->second;
      }
    }
    out.of_input.emplace_back(in, std::move(dims));
  }
  return out;
}

Probe run_probe(const Graph &graph, const std::map<const Value *, Shape> &input_shapes) {
  Probe probe;
  for (const Value *in : graph.inputs()) {
    auto it = input_shapes.find(in);
    if (it != input_shapes.end()) probe[in] = {it->second, Tensor()};
  }
  for (const Node *node : graph.topological_order()) {
    for (const Value *in : node->inputs())
      if (in && in->is_constant() && !probe.count(in))
        probe[in] = {in->constant().shape(), in->constant()};
    auto outputs = probe_node(node, probe);
    if (!outputs) continue;
    for (size_t i = 0; i < outputs->size(); ++i) probe[node->output(i)] = std::move((*outputs)[i]);
  }
  return probe;
}

// Three probes at one scale, and the symbols with the sizes they took in them.
struct ScaleProbes {
  std::array<Probe, kProbes> probes;
  std::vector<Symbol> symbols;
};

// Probes at three scales of sizes: multiples of 32 below 512; 2 to 14 (models whose dims are
// bounded, such as CLIP's 77 positions, fail the others); multiples of 1024 (a threshold in the
// model's own shape arithmetic, such as min(seq, 4096), shows up between them). In probe p of a
// scale, symbol s has size scale * probe_k(s, p).
std::vector<ScaleProbes> probe_scales(const Graph &graph, const Symbols &symbols) {
  std::vector<ScaleProbes> scales;
  for (const int64_t scale : {32, 1, 1024}) {
    ScaleProbes &at = scales.emplace_back();
    at.symbols = symbols.symbols;
    for (size_t s = 0; s < at.symbols.size(); ++s)
      for (size_t p = 0; p < kProbes; ++p) at.symbols[s].sizes[p] = scale * probe_k(s, p);
    for (size_t p = 0; p < kProbes; ++p) {
      std::map<const Value *, Shape> shapes;
      for (const auto &[in, dims] : symbols.of_input) {
        std::vector<int64_t> sizes = in->shape().dims();
        for (size_t i = 0; i < dims.size(); ++i)
          if (dims[i] >= 0) sizes[i] = at.symbols[static_cast<size_t>(dims[i])].sizes[p];
        shapes[in] = Shape(std::move(sizes));
      }
      at.probes[p] = run_probe(graph, shapes);
    }
  }
  return scales;
}

std::string term(int64_t coefficient, const std::string &name) {
  return coefficient == 1 ? name : std::to_string(coefficient) + "*" + name;
}

std::string with_offset(std::string expr, int64_t offset) {
  if (offset > 0) return expr + "+" + std::to_string(offset);
  if (offset < 0) return expr + "-" + std::to_string(-offset);
  return expr;
}

// d = c * s + b for all probes, c >= 1 an integer.
std::optional<std::string> fit_linear(const std::array<int64_t, kProbes> &d, const Symbol &s) {
  const int64_t ds = s.sizes[1] - s.sizes[0], dd = d[1] - d[0];
  if (dd <= 0 || dd % ds != 0) return std::nullopt;
  const int64_t c = dd / ds, b = d[0] - c * s.sizes[0];
  for (size_t p = 0; p < kProbes; ++p)
    if (d[p] != c * s.sizes[p] + b) return std::nullopt;
  return with_offset(term(c, s.name), b);
}

// d = s + t + b or d = c * s * t for all probes.
std::optional<std::string> fit_pair(const std::array<int64_t, kProbes> &d, const Symbol &s,
                                    const Symbol &t) {
  const int64_t b = d[0] - s.sizes[0] - t.sizes[0];
  bool sum = true, product = d[0] % (s.sizes[0] * t.sizes[0]) == 0;
  const int64_t c = product ? d[0] / (s.sizes[0] * t.sizes[0]) : 0;
  for (size_t p = 0; p < kProbes; ++p) {
    sum = sum && d[p] == s.sizes[p] + t.sizes[p] + b;
    product = product && d[p] == c * s.sizes[p] * t.sizes[p];
  }
  // Names in alphabetical order, so the same dims always read the same.
  const auto [first, second] = std::minmax(s.name, t.name);
  if (sum) return with_offset(first + "+" + second, b);
  if (product) return term(c, first + "*" + second);
  return std::nullopt;
}

// The name of a dim that varies between probes; "" when no expression fits (or it involves an
// unnamed symbol). Division is not tried: sizes that are all multiples of 32 cannot tell
// floor(h/2) from ceil(h/2), and a wrong name is worse than none.
std::string fit_dim(const std::array<int64_t, kProbes> &d, const std::vector<Symbol> &symbols) {
  for (const Symbol &s : symbols)
    if (auto expr = fit_linear(d, s)) return s.name.empty() ? "" : *expr;
  for (size_t i = 0; i < symbols.size(); ++i)
    for (size_t j = i + 1; j < symbols.size(); ++j)
      if (auto expr = fit_pair(d, symbols[i], symbols[j]))
        return symbols[i].name.empty() || symbols[j].name.empty() ? "" : *expr;
  return "";
}

// The symbolic shape of `v` from its shapes in the probes; nullopt when a probe did not reach it
// or the ranks differ.
std::optional<SymbolicShape> symbolic_shape_of(const Value *v,
                                               const std::array<Probe, kProbes> &probes,
                                               const std::vector<Symbol> &symbols) {
  std::array<const Shape *, kProbes> shapes{};
  for (size_t p = 0; p < kProbes; ++p) {
    auto it = probes[p].find(v);
    if (it == probes[p].end()) return std::nullopt;
    shapes[p] = &it->second.shape;
  }
  const size_t rank = shapes[0]->rank();
  if (shapes[1]->rank() != rank || shapes[2]->rank() != rank) return std::nullopt;
  SymbolicShape symbolic{Shape(std::vector<int64_t>(rank, kUnknownDim)),
                         std::vector<std::string>(rank)};
  for (size_t i = 0; i < rank; ++i) {
    const std::array<int64_t, kProbes> d{(*shapes[0])[i], (*shapes[1])[i], (*shapes[2])[i]};
    if (d[0] == d[1] && d[0] == d[2])
      symbolic.dims[i] = d[0];
    else
      symbolic.names[i] = fit_dim(d, symbols);
  }
  return symbolic;
}

}  // namespace

std::vector<Probe> probe_symbolic_dims(const Graph &graph) {
  const Symbols symbols = collect_symbols(graph.inputs());
  std::vector<Probe> out;
  if (symbols.symbols.empty()) return out;
  for (ScaleProbes &at : probe_scales(graph, symbols))
    for (Probe &probe : at.probes) out.push_back(std::move(probe));
  return out;
}

void Graph::infer_symbolic_shapes() {
  for (const auto &v : values_) v->symbolic_.reset();
  const Symbols symbols = collect_symbols(inputs_);
  if (symbols.symbols.empty()) return;
  // A dim is fixed, or named, only when every scale that reaches the value agrees: min(seq, 77)
  // is 77 for every multiple of 32 above 77 and seq below it, so it is neither.
  const std::vector<ScaleProbes> scales = probe_scales(*this, symbols);
  for (const auto &v : values_) {
    if (v->has_shape_ || v->is_input_ || v->is_constant()) continue;
    std::optional<SymbolicShape> agreed;
    for (const ScaleProbes &at : scales) {
      const std::optional<SymbolicShape> seen = symbolic_shape_of(v.get(), at.probes, at.symbols);
      if (!seen) continue;
      if (!agreed) {
        agreed = seen;
        continue;
      }
      if (seen->dims.rank() != agreed->dims.rank()) {
        agreed.reset();
        break;
      }
      for (size_t i = 0; i < seen->dims.rank(); ++i)
        if (seen->dims[i] != agreed->dims[i] || seen->names[i] != agreed->names[i]) {
          agreed->dims[i] = kUnknownDim;
          agreed->names[i].clear();
        }
    }
    v->symbolic_ = std::move(agreed);
  }
}

}  // namespace lumen
