#include "graph/op_work.h"

namespace lumen {
namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

double dim(const Shape &shape, int64_t i) {
  const int64_t rank = static_cast<int64_t>(shape.rank());
  if (i < 0) i += rank;
  if (i < 0 || i >= rank || shape[i] == kUnknownDim) return 1;
  return static_cast<double>(shape[i]);
}

double bytes_of(const TensorType &type) {
  return holds_objects(type.dtype) ? 0 : estimated_numel(type.shape) * dtype_size(type.dtype);
}

// Multiply-adds per output element, times two.
double dense_flops(std::string_view op, const Attributes &attrs,
                   const std::vector<const TensorType *> &in, double out_elements) {
  const auto has = [&](size_t i) { return i < in.size() && in[i] != nullptr; };
  if (!has(0) || !has(1)) return -1;
  const Shape &a = in[0]->shape, &b = in[1]->shape;
  if (contains(op, "gemm")) return 2 * out_elements * dim(a, attrs.get_int("transA", 0) ? 0 : 1);
  if (contains(op, "matmul")) return 2 * out_elements * dim(a, -1);
  if (op == "attention" && a.rank() >= 3 && b.rank() >= 3)  // Q K^T and the weighted sum of V
    return 4 * estimated_numel(a) * dim(b, -2);
  if (op == "lstm" || op == "gru" || op == "rnn") {  // X [seq, batch, in]; W and R per gate
    const double steps = dim(a, 0) * dim(a, 1);
    return 2 * steps * (estimated_numel(b) + (has(2) ? estimated_numel(in[2]->shape) : 0));
  }
  if (contains(op, "conv")) {  // every weight input [M, C/group, k...]: MACs per output element
    double flops = 0;
    for (size_t i = 1; i < in.size(); ++i)
      if (has(i) && in[i]->shape.rank() >= 3)
        flops += 2 * out_elements * estimated_numel(in[i]->shape) / dim(in[i]->shape, 0);
    return flops > 0 ? flops : -1;
  }
  return -1;
}

}  // namespace

double estimated_numel(const Shape &shape) {
  double n = 1;
  for (size_t i = 0; i < shape.rank(); ++i) n *= shape[i] == kUnknownDim ? 1.0 : shape[i];
  return n;
}

OpWork estimate_work(std::string_view op, const Attributes &attrs,
                     const std::vector<const TensorType *> &inputs,
                     const std::vector<TensorType> &outputs) {
  OpWork work;
  double out_elements = 0;
  for (const TensorType &out : outputs) {
    work.bytes += bytes_of(out);
    out_elements += estimated_numel(out.shape);
  }
  for (const TensorType *in : inputs)
    if (in) work.bytes += bytes_of(*in);
  const double dense =
      outputs.empty() ? -1 : dense_flops(op, attrs, inputs, estimated_numel(outputs[0].shape));
  work.flops = dense >= 0 ? dense : out_elements;
  return work;
}

}  // namespace lumen
