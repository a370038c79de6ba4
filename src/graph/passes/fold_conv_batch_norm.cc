// PLACEHOLDER: being written.
#include "graph/passes/pass.h"

namespace lumen {
namespace {

class Placeholder final : public Pass {
 public:
  std::string_view name() const override { return "fold_conv_batch_norm"; }
  bool run(Graph &, PassContext &) override { return false; }
};

}  // namespace

std::unique_ptr<Pass> make_fold_conv_batch_norm() {
  return std::make_unique<Placeholder>();
}

}  // namespace lumen
