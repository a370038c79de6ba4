// PLACEHOLDER: being written.
#include "graph/passes/pass.h"

namespace lumen {
namespace {

class Placeholder final : public Pass {
 public:
  std::string_view name() const override { return "eliminate_no_ops"; }
  bool run(Graph &, PassContext &) override { return false; }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_no_ops() {
  return std::make_unique<Placeholder>();
}

}  // namespace lumen
