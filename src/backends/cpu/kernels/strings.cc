// CPU string kernels: string_concat, equal on strings, string_split, string_normalizer and
// label_encoder (see src/graph/ops/strings.cc). Strings are objects: no vector code, one element
// at a time; the broadcast is collapsed into runs like the numeric binary kernels'.
#include <unordered_map>

#include "backends/common/broadcast.h"
#include "core/kernel.h"
#include "core/string_ops.h"

namespace lumen {
namespace {

// y[i] = f(a[i], b[i]) over the broadcast of a and b.
template <class Out, class F>
void broadcast_strings(KernelContext &ctx, F f) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &y = ctx.output(0);
  BroadcastLoop runs;
  if (!runs.init(a.shape(), b.shape(), y.shape()))
    ctx.fail("more than ", kMaxBroadcastRank, " dims are not supported");
  const std::string *pa = a.data<std::string>(), *pb = b.data<std::string>();
  Out *py = y.data<Out>();
  const int64_t sa = runs.a_walks() ? 1 : 0, sb = runs.b_walks() ? 1 : 0;
  runs.for_range(0, y.numel(), [&](int64_t yo, int64_t ao, int64_t bo, int64_t len) {
    for (int64_t i = 0; i < len; ++i) py[yo + i] = f(pa[ao + i * sa], pb[bo + i * sb]);
  });
}

void string_concat(KernelContext &ctx) {
  broadcast_strings<std::string>(ctx,
                                 [](const std::string &a, const std::string &b) { return a + b; });
}

void string_equal(KernelContext &ctx) {
  broadcast_strings<bool>(ctx, [](const std::string &a, const std::string &b) { return a == b; });
}

void string_split(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &pieces = ctx.output(0), &counts = ctx.output(1);
  const std::string delimiter = ctx.attrs.get_string("delimiter", "");
  const int64_t maxsplit = ctx.attrs.get_int("maxsplit", -1);
  const int64_t width = pieces.shape()[pieces.rank() - 1];
  std::string *out = pieces.data<std::string>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<std::string> parts = strings::split(x.data<std::string>()[i], delimiter, maxsplit);
    if (static_cast<int64_t>(parts.size()) > width)
      ctx.fail("element ", i, " splits into ", parts.size(), " pieces, planned for ", width);
    counts.data<int64_t>()[i] = static_cast<int64_t>(parts.size());
    for (int64_t k = 0; k < width; ++k)
      out[i * width + k] = k < static_cast<int64_t>(parts.size()) ? std::move(parts[k]) : "";
  }
}

void string_normalizer(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  std::vector<std::string> stops;
  if (const Tensor *t = ctx.attrs.get_tensor("stopwords"))
    stops.assign(t->data<std::string>(), t->data<std::string>() + t->numel());
  const bool case_sensitive = ctx.attrs.get_int("is_case_sensitive", 0) != 0;
  const std::string action = ctx.attrs.get_string("case_change_action", "NONE");
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string &word = x.data<std::string>()[i];
    if (strings::is_stopword(word, stops, case_sensitive)) continue;
    kept.push_back(action == "LOWER"   ? strings::to_lower(word)
                   : action == "UPPER" ? strings::to_upper(word)
                                       : word);
  }
  if (kept.empty()) kept.emplace_back();
  if (static_cast<int64_t>(kept.size()) != y.numel())
    ctx.fail("kept ", kept.size(), " strings, planned for ", y.numel());
  std::move(kept.begin(), kept.end(), y.data<std::string>());
}

template <class K, class V>
void encode(KernelContext &ctx) {
  const Tensor &keys = *ctx.attrs.get_tensor("keys"), &values = *ctx.attrs.get_tensor("values");
  const V fallback = ctx.attrs.get_tensor("default")->contiguous().data<V>()[0];
  std::unordered_map<K, V> table;
  for (int64_t i = 0; i < keys.numel(); ++i)
    table.emplace(keys.data<K>()[i], values.data<V>()[i]);  // the first of repeated keys wins
  const K *x = ctx.input(0).data<K>();
  V *y = ctx.output(0).data<V>();
  for (int64_t i = 0, n = ctx.input(0).numel(); i < n; ++i) {
    auto it = table.find(x[i]);
    y[i] = it == table.end() ? fallback : it->second;
  }
}

template <class K>
void encode_from(KernelContext &ctx) {
  switch (ctx.attrs.get_tensor("values")->dtype()) {
    case DType::String:
      return encode<K, std::string>(ctx);
    case DType::Int64:
      return encode<K, int64_t>(ctx);
    case DType::Float32:
      return encode<K, float>(ctx);
    case DType::Int32:
      return encode<K, int32_t>(ctx);
    case DType::Int16:
      return encode<K, int16_t>(ctx);
    case DType::Float64:
      return encode<K, double>(ctx);
    default:
      ctx.fail("values of dtype ", dtype_name(ctx.attrs.get_tensor("values")->dtype()),
               " are not supported");
  }
}

void label_encoder(KernelContext &ctx) {
  switch (ctx.input(0).dtype()) {
    case DType::String:
      return encode_from<std::string>(ctx);
    case DType::Int64:
      return encode_from<int64_t>(ctx);
    case DType::Int32:
      return encode_from<int32_t>(ctx);
    case DType::Int16:
      return encode_from<int16_t>(ctx);
    case DType::Float32:
      return encode_from<float>(ctx);
    case DType::Float64:
      return encode_from<double>(ctx);
    default:
      ctx.fail("inputs of dtype ", dtype_name(ctx.input(0).dtype()), " are not supported");
  }
}

LUMEN_REGISTER_KERNEL("cpu", "string_concat", string_concat, DType::String);
LUMEN_REGISTER_KERNEL("cpu", "equal", string_equal, DType::String);
LUMEN_REGISTER_KERNEL("cpu", "string_split", string_split, DType::String);
LUMEN_REGISTER_KERNEL("cpu", "string_normalizer", string_normalizer, DType::String);
LUMEN_REGISTER_KERNEL("cpu", "label_encoder", label_encoder, DType::String, DType::Int64,
                      DType::Int32, DType::Int16, DType::Float32, DType::Float64);

}  // namespace
}  // namespace lumen
