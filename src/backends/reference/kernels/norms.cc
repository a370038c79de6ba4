// Reference layer_norm, rms_norm, instance_norm, group_norm, lp_norm and mean_variance_norm: the
// ONNX formulas in double. Every op maps each element to a statistics group (the index of the
// element with the normalized dims removed), accumulates per group, then normalizes. Parameters
// that broadcast to x are expanded to x's shape first (backends/common/norm_kernels.h).
#include "backends/common/norm_kernels.h"

namespace lumen {
namespace {

using norm_kernels::batch_norm_training;
using norm_kernels::group_norm;
using norm_kernels::instance_norm;
using norm_kernels::layer_norm;
using norm_kernels::lp_norm;
using norm_kernels::mean_variance_norm;
using norm_kernels::rms_norm;

#define LUMEN_NORM_KERNEL(op, fn)                                                            \
  LUMEN_REGISTER_KERNEL("reference", op, fn, DType::Float32, DType::Float64, DType::Float16, \
                        DType::BFloat16)
LUMEN_NORM_KERNEL("layer_norm", layer_norm);
LUMEN_NORM_KERNEL("rms_norm", rms_norm);
LUMEN_NORM_KERNEL("instance_norm", instance_norm);
LUMEN_NORM_KERNEL("group_norm", group_norm);
LUMEN_NORM_KERNEL("batch_norm_training", batch_norm_training);
LUMEN_NORM_KERNEL("lp_norm", lp_norm);
LUMEN_NORM_KERNEL("mean_variance_norm", mean_variance_norm);

}  // namespace
}  // namespace lumen
