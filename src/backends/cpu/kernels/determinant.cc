// CPU det (backends/common/determinant.h).
#include "backends/common/determinant.h"

namespace lumen {
namespace {

LUMEN_REGISTER_KERNEL("cpu", "det", determinant, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace
}  // namespace lumen
