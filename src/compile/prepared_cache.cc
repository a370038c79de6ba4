#include "compile/prepared_cache.h"

#include <sstream>
#include <variant>

namespace lumen {
namespace {

// Exact equality; tensor attributes are equal when they are the same memory (constants are never
// written, and the cache keeps them alive).
bool same_attributes(const Attributes &a, const Attributes &b) {
  if (a.items().size() != b.items().size()) return false;
  for (auto ia = a.items().begin(), ib = b.items().begin(); ia != a.items().end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.index() != ib->second.index()) return false;
    const bool same = std::visit(
        [&](const auto &va) {
          using T = std::decay_t<decltype(va)>;
          const T &vb = std::get<T>(ib->second);
          if constexpr (std::is_same_v<T, Tensor>)
            return va.raw_data() == vb.raw_data() && va.dtype() == vb.dtype() &&
                   va.shape() == vb.shape();
          else
            return va == vb;
        },
        ia->second);
    if (!same) return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<const void> PreparedCache::get(PrepareFn prepare, const PrepareContext &ctx,
                                               std::string_view backend, DType dtype) {
  std::ostringstream key;
  key << backend << '|' << ctx.op << '|' << dtype_name(dtype);
  std::vector<Tensor> constants;
  for (size_t i = 0; i < ctx.input_shapes.size(); ++i) {
    const Tensor *c = ctx.constant(i);
    key << '|';
    if (c) {
      key << c->raw_data() << ' ' << dtype_name(c->dtype()) << c->shape().to_string();
      constants.push_back(*c);
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end();) {  // forget what no plan holds
    std::erase_if(it->second, [](const Entry &e) { return e.prepared.expired(); });
    it = it->second.empty() ? entries_.erase(it) : std::next(it);
  }
  std::vector<Entry> &bucket = entries_[key.str()];
  for (const Entry &e : bucket)
    if (same_attributes(e.attrs, ctx.attrs))
      if (std::shared_ptr<const void> prepared = e.prepared.lock()) {
        ctx.algorithm = e.algorithm;
        return prepared;
      }
  ctx.shape_specific = false;
  std::shared_ptr<const void> prepared = prepare(ctx);
  if (prepared && !ctx.shape_specific)
    bucket.push_back({ctx.attrs, std::move(constants), prepared, ctx.algorithm});
  return prepared;
}

}  // namespace lumen
