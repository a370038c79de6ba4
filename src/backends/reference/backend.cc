// The reference backend: plain loops that are easy to check by reading. It is the ground truth the
// tests compare every other backend against, and runs only where a caller names it: automatic
// placement never puts a node here.
#include "core/backend.h"

namespace lumen {
namespace {

class ReferenceBackend final : public HostBackend {
 public:
  std::string_view name() const override { return "reference"; }
  int priority() const override { return 0; }
  bool placed_automatically() const override { return false; }
};

LUMEN_REGISTER_BACKEND(ReferenceBackend);

}  // namespace
}  // namespace lumen
