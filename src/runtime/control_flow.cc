// The executor's control-flow steps (if, loop, scan): each runs the compiled plans of its step's
// subgraphs on the step's inputs and returns the step's outputs.
#include <algorithm>
#include <cstdlib>

#include "lumen/container.h"
#include "runtime/executable_impl.h"
#include "runtime/run_deadline.h"
#include "runtime/tensor_pieces.h"

namespace lumen {

const Executable::Impl &subgraph(const ExecutionStep &step, const char *name) {
  auto it = step.subgraphs.find(name);
  if (it == step.subgraphs.end()) step_fail(step, "subgraph '", name, "' was not compiled");
  return *it->second;
}

std::vector<Tensor> run_subgraph(const ExecutionStep &step, const Executable::Impl &plan,
                                 const std::vector<Tensor> &inputs) {
  if (inputs.size() != plan.input_slots.size())
    step_fail(step, "a subgraph takes ", plan.input_slots.size(), " inputs, got ", inputs.size());
  // The plan was made for these types: a value that changed shape between iterations must not
  // reach a plan made for another shape.
  std::vector<Tensor> wrapped;  // items given for optional inputs, wrapped (ONNX allows it)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo &want = plan.inputs[i];
    if (want.dtype == DType::Optional && inputs[i].defined() &&
        inputs[i].dtype() != DType::Optional && item_type(inputs[i]) == want.element) {
      if (wrapped.empty()) wrapped = inputs;
      wrapped[i] = make_optional(inputs[i], want.element);
    }
  }
  if (!wrapped.empty()) return run_subgraph(step, plan, wrapped);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo &want = plan.inputs[i];
    const Shape &got = inputs[i].shape();
    bool fits = inputs[i].dtype() == want.dtype;
    if (plan.input_rank_known[i]) {
      fits = fits && got.rank() == want.shape.rank();
      for (size_t d = 0; fits && d < got.rank(); ++d)
        fits = want.shape[d] == kUnknownDim || want.shape[d] == got[d];
    }
    if (!fits)
      step_fail(step, "subgraph input '", want.name, "' must be ", dtype_name(want.dtype), " ",
                plan.input_rank_known[i] ? want.shape.to_string() : "(any shape)", ", got ",
                dtype_name(inputs[i].dtype()), " ", got.to_string());
  }
  StepTimer untimed(nullptr);  // the step is timed as a whole by the caller
  return plan.run(inputs, untimed);
}

namespace {

// A Loop whose condition never turns false and that has no trip count would run forever: past
// this many iterations it fails instead (LUMEN_MAX_LOOP_ITERATIONS overrides it).
int64_t max_loop_iterations() {
  static const int64_t limit = [] {
    const char *env = std::getenv("LUMEN_MAX_LOOP_ITERATIONS");
    const long long value = env ? std::atoll(env) : 0;
    return value > 0 ? static_cast<int64_t>(value) : int64_t{10'000'000};
  }();
  return limit;
}

bool scalar_bool(const ExecutionStep &step, const Tensor &t, const char *what) {
  if (t.dtype() != DType::Bool || t.numel() != 1)
    step_fail(step, what, " must be one bool, got ", dtype_name(t.dtype()), " ",
              t.shape().to_string());
  return t.contiguous().data<bool>()[0];
}

// Element index `index` along `axis` of x: a copy with that axis removed.
Tensor take_slice(const Tensor &x, size_t axis, int64_t index) {
  return squeeze_at(slice_along(x, axis, index, 1), axis);
}

// The slices stacked along a new `axis` (negative counts from the end of the result); with no
// slices, a [0] tensor of `dtype` (the element shape is unknown without one).
Tensor stack(const ExecutionStep &step, const std::vector<Tensor> &slices, int64_t axis,
             DType dtype) {
  if (slices.empty()) return Tensor::empty(Shape{0}, dtype);
  const auto rank = static_cast<int64_t>(slices[0].rank()) + 1;
  if (axis < -rank || axis >= rank) step_fail(step, "output axis ", axis, " out of range");
  if (axis < 0) axis += rank;
  std::vector<Tensor> parts;
  for (const Tensor &s : slices) {
    if (s.shape() != slices[0].shape())
      step_fail(step, "scan output slices differ: ", slices[0].shape().to_string(), " and ",
                s.shape().to_string());
    parts.push_back(unsqueeze_at(s, static_cast<size_t>(axis)));
  }
  return concat_along(parts, static_cast<size_t>(axis),
                      "op '" + step.schema->name + "' (node '" + step.node + "')");
}

std::vector<Tensor> run_if(const ExecutionStep &step, const std::vector<Tensor> &inputs) {
  const bool cond = scalar_bool(step, inputs.at(0), "cond");
  const std::vector<Tensor> captures(inputs.begin() + 1, inputs.end());
  std::vector<Tensor> outs =
      run_subgraph(step, subgraph(step, cond ? "then_branch" : "else_branch"), captures);
  if (outs.size() != step.outputs.size())
    step_fail(step, "the branch gives ", outs.size(), " outputs, the node has ",
              step.outputs.size());
  return outs;
}

std::vector<Tensor> run_loop(const ExecutionStep &step, const std::vector<Tensor> &inputs) {
  const Executable::Impl &body = subgraph(step, "body");
  const auto n = static_cast<size_t>(step.attrs.get_int("num_carried", 0));
  if (inputs.size() < 2 + n) step_fail(step, "needs ", 2 + n, " inputs, got ", inputs.size());
  int64_t trip_count = -1;  // none
  if (inputs[0].defined()) {
    if (inputs[0].dtype() != DType::Int64 || inputs[0].numel() != 1)
      step_fail(step, "M must be one int64, got ", inputs[0].shape().to_string());
    trip_count = inputs[0].contiguous().data<int64_t>()[0];
  }
  bool cond = inputs[1].defined() ? scalar_bool(step, inputs[1], "cond") : true;
  std::vector<Tensor> body_inputs(2);
  body_inputs.insert(body_inputs.end(), inputs.begin() + 2, inputs.end());
  const size_t k = body.outputs.size() - 1 - n;  // scan outputs
  std::vector<std::vector<Tensor>> scans(k);
  const int64_t limit = max_loop_iterations();
  for (int64_t i = 0; cond && (trip_count < 0 || i < trip_count); ++i) {
    check_run_deadline(step.schema->name, step.node);  // a body of no steps checks nothing
    if (i >= limit)
      step_fail(step, "more than ", limit,
                " iterations (no trip count stops it; LUMEN_MAX_LOOP_ITERATIONS raises the limit)");
    body_inputs[0] = Tensor::from_vector<int64_t>({}, {i});
    body_inputs[1] = Tensor::empty(Shape{}, DType::Bool);
    body_inputs[1].data<bool>()[0] = cond;
    std::vector<Tensor> outs = run_subgraph(step, body, body_inputs);
    cond = scalar_bool(step, outs[0], "the body's condition output");
    for (size_t c = 0; c < n; ++c) body_inputs[2 + c] = std::move(outs[1 + c]);
    for (size_t s = 0; s < k; ++s) scans[s].push_back(std::move(outs[1 + n + s]));
  }
  std::vector<Tensor> results(body_inputs.begin() + 2, body_inputs.begin() + 2 + n);
  // An optional that entered a body giving its item, and no iteration ran: the item.
  for (size_t c = 0; c < n; ++c)
    if (results[c].dtype() == DType::Optional && body.outputs[1 + c].dtype != DType::Optional) {
      const Container &opt = container_of(results[c]);
      if (opt.items.empty())
        step_fail(step, "loop-carried value ", c, " is an empty optional and no iteration ran");
      results[c] = opt.items[0];
    }
  for (size_t s = 0; s < k; ++s)
    results.push_back(stack(step, scans[s], 0, body.outputs[1 + n + s].dtype));
  return results;
}

std::vector<Tensor> run_scan(const ExecutionStep &step, const std::vector<Tensor> &inputs) {
  const Executable::Impl &body = subgraph(step, "body");
  const auto n = static_cast<size_t>(step.attrs.get_int("num_carried", 0));
  const auto m = static_cast<size_t>(step.attrs.get_int("num_scan_inputs", 0));
  if (inputs.size() < n + m) step_fail(step, "needs ", n + m, " inputs, got ", inputs.size());
  const size_t k = body.outputs.size() - n;
  const auto in_axes = step.attrs.get_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  const auto in_dirs = step.attrs.get_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  const auto out_axes = step.attrs.get_ints("scan_output_axes", std::vector<int64_t>(k, 0));
  const auto out_dirs = step.attrs.get_ints("scan_output_directions", std::vector<int64_t>(k, 0));
  if (in_axes.size() != m || in_dirs.size() != m || out_axes.size() != k || out_dirs.size() != k)
    step_fail(step, "scan axes and directions must have one value per scan input and output");
  std::vector<size_t> axes(m);
  int64_t length = -1;
  for (size_t j = 0; j < m; ++j) {
    const Tensor &x = inputs[n + j];
    axes[j] = x.shape().normalize_axis(in_axes[j], "scan_input_axes");
    const int64_t l = x.shape()[axes[j]];
    if (length >= 0 && l != length)
      step_fail(step, "scan inputs differ in length: ", length, " and ", l);
    length = l;
  }
  std::vector<Tensor> body_inputs(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(n));
  body_inputs.resize(n + m);
  body_inputs.insert(body_inputs.end(), inputs.begin() + static_cast<std::ptrdiff_t>(n + m),
                     inputs.end());
  std::vector<std::vector<Tensor>> scans(k);
  for (int64_t t = 0; t < length; ++t) {
    for (size_t j = 0; j < m; ++j)
      body_inputs[n + j] = take_slice(inputs[n + j], axes[j], in_dirs[j] ? length - 1 - t : t);
    std::vector<Tensor> outs = run_subgraph(step, body, body_inputs);
    for (size_t c = 0; c < n; ++c) body_inputs[c] = std::move(outs[c]);
    for (size_t s = 0; s < k; ++s) scans[s].push_back(std::move(outs[n + s]));
  }
  std::vector<Tensor> results(body_inputs.begin(),
                              body_inputs.begin() + static_cast<std::ptrdiff_t>(n));
  for (size_t s = 0; s < k; ++s) {
    if (out_dirs[s]) std::reverse(scans[s].begin(), scans[s].end());
    results.push_back(stack(step, scans[s], out_axes[s], body.outputs[n + s].dtype));
  }
  return results;
}

[[maybe_unused]] const bool registered = [] {
  register_builtin_step("if", run_if);
  register_builtin_step("loop", run_loop);
  register_builtin_step("scan", run_scan);
  return true;
}();

}  // namespace
}  // namespace lumen
