// The CPU backend: BLAS (OpenBLAS, or Accelerate on macOS) for GEMM and our own multi-threaded
// kernels for the rest, all on the runtime's thread pool.
#include "core/backend.h"
#include "backends/cpu/kernel_choice.h"

namespace lumen {
namespace {

class CpuBackend final : public HostBackend {
 public:
  std::string_view name() const override { return "cpu"; }
  int priority() const override { return 100; }
  std::string driver_id() const override { return cpu::machine_id(); }
};

LUMEN_REGISTER_BACKEND(CpuBackend);

}  // namespace
}  // namespace lumen
