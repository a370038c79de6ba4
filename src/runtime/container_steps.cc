// The executor's sequence and optional steps (see src/graph/ops/sequence.cc for the ops). Items
// put into a container are copies (containers are shared and immutable, so they are never copied
// again): an input may be memory of this run's arena, which later steps overwrite.
#include <algorithm>

#include "lumen/container.h"
#include "runtime/executable_impl.h"
#include "runtime/tensor_pieces.h"

namespace lumen {
namespace {

const Container &sequence_in(const ExecutionStep &step, const Tensor &t) {
  if (!t.defined() || t.dtype() != DType::Sequence)
    step_fail(step, "expected a sequence, got ", t.to_string());
  return container_of(t);
}

std::string what(const ExecutionStep &step) {
  return "op '" + step.schema->name + "' (node '" + step.node + "')";
}

int64_t scalar_int(const ExecutionStep &step, const Tensor &t, const char *name) {
  const Tensor c = t.contiguous();
  if (c.numel() != 1) step_fail(step, name, " must be one integer, got ", c.to_string());
  if (c.dtype() == DType::Int64) return c.data<int64_t>()[0];
  if (c.dtype() == DType::Int32) return c.data<int32_t>()[0];
  step_fail(step, name, " must be int32 or int64, got ", c.to_string());
}

// A position in [-size, size) (or [-size, size] where `end_ok`: insertion), made non-negative.
size_t position(const ExecutionStep &step, const Tensor &t, size_t size, bool end_ok) {
  const int64_t p = scalar_int(step, t, "position");
  const auto n = static_cast<int64_t>(size);
  if (p < -n || p > n || (p == n && !end_ok))
    step_fail(step, "position ", p, " is out of range for a sequence of ", n, " items");
  return static_cast<size_t>(p < 0 ? p + n : p);
}

Tensor sequence_like(const ExecutionStep &step, const Container &seq, std::vector<Tensor> items) {
  return make_sequence(std::move(items), seq.element, what(step).c_str());
}

std::vector<Tensor> run_construct(const ExecutionStep &step, const std::vector<Tensor> &in) {
  std::vector<Tensor> items;
  for (const Tensor &t : in) items.push_back(t.clone());
  const std::vector<DType> element = item_type(items.at(0));
  return {make_sequence(std::move(items), element, what(step).c_str())};
}

std::vector<Tensor> run_empty(const ExecutionStep &step, const std::vector<Tensor> &) {
  return {make_sequence({}, element_from_text(step.attrs.get_string("element", "")),
                        what(step).c_str())};
}

std::vector<Tensor> run_insert(const ExecutionStep &step, const std::vector<Tensor> &in) {
  const Container &seq = sequence_in(step, in.at(0));
  std::vector<Tensor> items = seq.items;
  const size_t at =
      in.size() > 2 && in[2].defined() ? position(step, in[2], items.size(), true) : items.size();
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(at), in.at(1).clone());
  return {sequence_like(step, seq, std::move(items))};
}

std::vector<Tensor> run_at(const ExecutionStep &step, const std::vector<Tensor> &in) {
  const Container &seq = sequence_in(step, in.at(0));
  return {seq.items[position(step, in.at(1), seq.items.size(), false)]};
}

std::vector<Tensor> run_erase(const ExecutionStep &step, const std::vector<Tensor> &in) {
  const Container &seq = sequence_in(step, in.at(0));
  std::vector<Tensor> items = seq.items;
  if (items.empty()) step_fail(step, "cannot erase from an empty sequence");
  const size_t at = in.size() > 1 && in[1].defined() ? position(step, in[1], items.size(), false)
                                                     : items.size() - 1;
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(at));
  return {sequence_like(step, seq, std::move(items))};
}

std::vector<Tensor> run_length(const ExecutionStep &step, const std::vector<Tensor> &in) {
  const auto n = static_cast<int64_t>(sequence_in(step, in.at(0)).items.size());
  return {Tensor::from_vector<int64_t>(Shape{}, {n})};
}

// Pieces of `split` (a scalar: equal chunks, the last one smaller; a list: the sizes), or of
// size 1 without it, when keepdims=0 with the axis removed.
std::vector<Tensor> run_split(const ExecutionStep &step, const std::vector<Tensor> &in) {
  const Tensor &x = in.at(0);
  const size_t axis = x.shape().normalize_axis(step.attrs.get_int("axis", 0), "axis");
  const int64_t length = x.shape()[axis];
  std::vector<int64_t> sizes;
  const bool has_split = in.size() > 1 && in[1].defined();
  if (!has_split) {
    sizes.assign(static_cast<size_t>(length), 1);
  } else if (in[1].rank() == 0) {
    const int64_t chunk = scalar_int(step, in[1], "split");
    if (chunk <= 0) step_fail(step, "split must be positive, got ", chunk);
    for (int64_t done = 0; done < length; done += chunk)
      sizes.push_back(std::min(chunk, length - done));
  } else {
    const Tensor s = in[1].contiguous();
    int64_t total = 0;
    for (int64_t i = 0; i < s.numel(); ++i) {
      const int64_t v = s.dtype() == DType::Int64 ? s.data<int64_t>()[i] : s.data<int32_t>()[i];
      if (v < 0) step_fail(step, "split sizes must not be negative, got ", v);
      sizes.push_back(v);
      total += v;
    }
    if (total != length)
      step_fail(step, "split sizes add up to ", total, ", the axis has ", length);
  }
  const bool squeeze = !has_split && step.attrs.get_int("keepdims", 1) == 0;
  std::vector<Tensor> items;
  int64_t start = 0;
  for (int64_t size : sizes) {
    Tensor piece = slice_along(x, axis, start, size);
    items.push_back(squeeze ? squeeze_at(piece, axis) : piece);
    start += size;
  }
  return {make_sequence(std::move(items), {x.dtype()}, what(step).c_str())};
}

std::vector<Tensor> run_concat(const ExecutionStep &step, const std::vector<Tensor> &in) {
  const Container &seq = sequence_in(step, in.at(0));
  if (seq.items.empty()) step_fail(step, "cannot concatenate an empty sequence");
  const bool new_axis = step.attrs.get_int("new_axis", 0) != 0;
  const auto rank = static_cast<int64_t>(seq.items[0].rank()) + (new_axis ? 1 : 0);
  int64_t axis = step.attrs.get_int("axis", 0);
  if (axis < -rank || axis >= rank) step_fail(step, "axis ", axis, " out of range");
  if (axis < 0) axis += rank;
  std::vector<Tensor> parts;
  for (const Tensor &t : seq.items)
    parts.push_back(new_axis ? unsqueeze_at(t, static_cast<size_t>(axis)) : t);
  return {concat_along(parts, static_cast<size_t>(axis), what(step))};
}

std::vector<Tensor> run_map(const ExecutionStep &step, const std::vector<Tensor> &in) {
  const Executable::Impl &body = subgraph(step, "body");
  const size_t length = sequence_in(step, in.at(0)).items.size();
  for (const Tensor &t : in)
    if (t.dtype() == DType::Sequence && container_of(t).items.size() != length)
      step_fail(step, "sequences differ in length: ", length, " and ",
                container_of(t).items.size());
  std::vector<std::vector<Tensor>> results(body.outputs.size());
  std::vector<Tensor> args(in.size());
  for (size_t k = 0; k < length; ++k) {
    for (size_t i = 0; i < in.size(); ++i)
      args[i] = in[i].dtype() == DType::Sequence ? container_of(in[i]).items[k] : in[i];
    std::vector<Tensor> outs = run_subgraph(step, body, args);
    for (size_t o = 0; o < outs.size(); ++o) results[o].push_back(outs[o].clone());
  }
  std::vector<Tensor> sequences;
  for (size_t o = 0; o < results.size(); ++o) {
    const std::vector<DType> element = item_type(body.outputs[o].dtype, body.outputs[o].element);
    sequences.push_back(make_sequence(std::move(results[o]), element, what(step).c_str()));
  }
  return sequences;
}

std::vector<Tensor> run_optional(const ExecutionStep &step, const std::vector<Tensor> &in) {
  if (!in.empty() && in[0].defined()) {
    const std::vector<DType> element = item_type(in[0]);
    return {make_optional(in[0].clone(), element, what(step).c_str())};
  }
  return {make_optional(Tensor(), element_from_text(step.attrs.get_string("element", "")),
                        what(step).c_str())};
}

std::vector<Tensor> run_has_element(const ExecutionStep &, const std::vector<Tensor> &in) {
  bool has = !in.empty() && in[0].defined();
  if (has && in[0].dtype() == DType::Optional) has = !container_of(in[0]).items.empty();
  return {Tensor::from_vector<bool>(Shape{}, {has})};
}

std::vector<Tensor> run_get_element(const ExecutionStep &step, const std::vector<Tensor> &in) {
  if (in.at(0).dtype() != DType::Optional) return {in[0]};
  const Container &opt = container_of(in[0]);
  if (opt.items.empty()) step_fail(step, "the optional is empty");
  return {opt.items[0]};
}

[[maybe_unused]] const bool registered = [] {
  register_builtin_step("sequence_construct", run_construct);
  register_builtin_step("sequence_empty", run_empty);
  register_builtin_step("sequence_insert", run_insert);
  register_builtin_step("sequence_at", run_at);
  register_builtin_step("sequence_erase", run_erase);
  register_builtin_step("sequence_length", run_length);
  register_builtin_step("split_to_sequence", run_split);
  register_builtin_step("concat_from_sequence", run_concat);
  register_builtin_step("sequence_map", run_map);
  register_builtin_step("optional", run_optional);
  register_builtin_step("optional_has_element", run_has_element);
  register_builtin_step("optional_get_element", run_get_element);
  return true;
}();

}  // namespace
}  // namespace lumen
