// PLACEHOLDER: being written.
#include "graph/passes/pass.h"

namespace lumen {
namespace {

class Placeholder final : public Pass {
 public:
  std::string_view name() const override { return "matmul_add_to_gemm"; }
  bool run(Graph &, PassContext &) override { return false; }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_add_to_gemm() {
  return std::make_unique<Placeholder>();
}

}  // namespace lumen
