// PLACEHOLDER: being written.
#include "graph/passes/pass.h"

namespace lumen {
namespace {

class Placeholder final : public Pass {
 public:
  std::string_view name() const override { return "common_subexpression_elimination"; }
  bool run(Graph &, PassContext &) override { return false; }
};

}  // namespace

std::unique_ptr<Pass> make_common_subexpression_elimination() {
  return std::make_unique<Placeholder>();
}

}  // namespace lumen
