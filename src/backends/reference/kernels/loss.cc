// Reference negative_log_likelihood_loss and softmax_cross_entropy_loss
// (backends/common/loss_kernels.h).
#include "backends/common/loss_kernels.h"

namespace lumen {
namespace {

using loss_kernels::loss;

LUMEN_REGISTER_KERNEL("reference", "negative_log_likelihood_loss", loss<false>, DType::Float32,
                      DType::Float64, DType::Float16, DType::BFloat16);
LUMEN_REGISTER_KERNEL("reference", "softmax_cross_entropy_loss", loss<true>, DType::Float32,
                      DType::Float64, DType::Float16, DType::BFloat16);

}  // namespace
}  // namespace lumen
