// Reference linear_attention and causal_conv_with_state
// (backends/common/linear_attention_kernels.h).
#include "backends/common/linear_attention_kernels.h"

namespace lumen {
namespace {

using linear_attention_kernels::causal_conv_with_state;
using linear_attention_kernels::linear_attention;

}  // namespace

LUMEN_REGISTER_KERNEL("reference", "linear_attention", linear_attention, DType::Float32,
                      DType::Float64, DType::Float16, DType::BFloat16);
LUMEN_REGISTER_KERNEL("reference", "causal_conv_with_state", causal_conv_with_state, DType::Float32,
                      DType::Float64, DType::Float16, DType::BFloat16);

}  // namespace lumen
