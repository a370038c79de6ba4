// The CPU's normalizations for the dtypes its own kernels (kernels/normalization.cc) leave out:
// float64 layer, RMS, instance and group norms, and batch_norm_training (training graphs only) in
// every float type, by the double-precision loops shared with the reference
// (backends/common/norm_kernels.h).
#include "backends/common/norm_kernels.h"

namespace lumen {
namespace {

LUMEN_REGISTER_KERNEL("cpu", "layer_norm", norm_kernels::layer_norm, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "rms_norm", norm_kernels::rms_norm, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "instance_norm", norm_kernels::instance_norm, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "group_norm", norm_kernels::group_norm, DType::Float64);
LUMEN_REGISTER_KERNEL("cpu", "batch_norm_training", norm_kernels::batch_norm_training,
                      DType::Float32, DType::Float64, DType::Float16, DType::BFloat16);

}  // namespace
}  // namespace lumen
