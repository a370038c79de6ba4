// libFuzzer target: shape inference of every registered op on fuzzed inputs (count, dtypes,
// ranks, dims unknown or not, small constant int64 values) and attributes (the names ops read,
// ints, floats, int lists, strings). Either lumen::Error, a deferral to run time, or output
// types whose dims are all known sizes or unknown.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "lumen/error.h"
#include "lumen/tensor.h"

namespace {

const std::vector<std::string> &ops() {
  static const std::vector<std::string> names = lumen::registered_ops();
  return names;
}

constexpr lumen::DType kDtypes[] = {
    lumen::DType::Float32, lumen::DType::Float16, lumen::DType::Int64,   lumen::DType::Int32,
    lumen::DType::Bool,    lumen::DType::UInt8,   lumen::DType::Float64, lumen::DType::String};

// Attribute names the ops of the registry read, the common ones.
constexpr const char *kAttrNames[] = {"axis",
                                      "axes",
                                      "perm",
                                      "kernel_shape",
                                      "strides",
                                      "pads",
                                      "dilations",
                                      "group",
                                      "keepdims",
                                      "epsilon",
                                      "alpha",
                                      "beta",
                                      "to",
                                      "mode",
                                      "auto_pad",
                                      "ceil_mode",
                                      "transA",
                                      "transB",
                                      "shape",
                                      "value",
                                      "split",
                                      "num_outputs",
                                      "k",
                                      "largest",
                                      "starts",
                                      "ends",
                                      "blocksize",
                                      "batch_dims",
                                      "reduction",
                                      "output_padding",
                                      "output_shape",
                                      "allowzero",
                                      "direction",
                                      "hidden_size",
                                      "q_num_heads",
                                      "kv_num_heads",
                                      "block",
                                      "start",
                                      "end",
                                      "count_include_pad",
                                      "noop_with_empty_axes"};

lumen::Attributes fuzzed_attributes(FuzzedDataProvider &in) {
  lumen::Attributes attrs;
  const int count = in.ConsumeIntegralInRange<int>(0, 6);
  for (int i = 0; i < count; ++i) {
    const std::string name = in.PickValueInArray(kAttrNames);
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        attrs.set(name, in.ConsumeIntegralInRange<int64_t>(-8, 64));
        break;
      case 1:
        attrs.set(name, in.ConsumeFloatingPointInRange<double>(-4.0, 4.0));
        break;
      case 2: {
        std::vector<int64_t> values(in.ConsumeIntegralInRange<size_t>(0, 8));
        for (int64_t &v : values) v = in.ConsumeIntegralInRange<int64_t>(-4, 16);
        attrs.set(name, values);
        break;
      }
      default:
        attrs.set(name, in.ConsumeRandomLengthString(12));
        break;
    }
  }
  return attrs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string &op = ops()[in.ConsumeIntegralInRange<size_t>(0, ops().size() - 1)];
  const lumen::OpSchema &schema = lumen::get_op(op);
  if (schema.takes_containers) return 0;  // their inputs are sequences and optionals
  const int inputs = in.ConsumeIntegralInRange<int>(0, 8);
  std::vector<lumen::TensorType> types(static_cast<size_t>(inputs));
  std::vector<std::unique_ptr<lumen::Tensor>> values(types.size());
  std::vector<const lumen::TensorType *> input_ptrs;
  std::vector<const lumen::Tensor *> value_ptrs;
  for (size_t i = 0; i < types.size(); ++i) {
    types[i].dtype = in.PickValueInArray(kDtypes);
    std::vector<int64_t> dims(in.ConsumeIntegralInRange<size_t>(0, 5));
    for (int64_t &d : dims) d = in.ConsumeIntegralInRange<int64_t>(-1, 12);
    types[i].shape = lumen::Shape(dims);
    // Now and then a known value: a short int64 vector (shapes, axes, sizes), its type to match.
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
      std::vector<int64_t> v(in.ConsumeIntegralInRange<size_t>(0, 6));
      for (int64_t &x : v) x = in.ConsumeIntegralInRange<int64_t>(-3, 16);
      values[i] = std::make_unique<lumen::Tensor>(
          lumen::Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
      types[i] = {lumen::DType::Int64, lumen::Shape{static_cast<int64_t>(v.size())}};
    }
    const bool omitted = in.ConsumeIntegralInRange<int>(0, 7) == 0;  // an omitted optional
    input_ptrs.push_back(omitted ? nullptr : &types[i]);
    value_ptrs.push_back(omitted ? nullptr : values[i].get());
  }
  const lumen::Attributes attrs = fuzzed_attributes(in);
  const lumen::InferContext ctx{
      .inputs = input_ptrs, .attrs = attrs, .op = op, .node = "fuzzed", .values = value_ptrs};
  std::vector<lumen::TensorType> out;
  try {
    out = lumen::infer_types(schema, ctx);
  } catch (const lumen::Error &) {
    return 0;
  } catch (const lumen::DeferredInference &) {
    return 0;
  }
  for (const lumen::TensorType &t : out)
    for (int64_t d : t.shape)
      if (d < lumen::kUnknownDim) {
        std::fprintf(stderr, "op '%s' inferred dim %lld\n", op.c_str(), static_cast<long long>(d));
        std::abort();
      }
  return 0;
}
