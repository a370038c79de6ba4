// CPU window generators and mel_weight_matrix (backends/common/spectral_window_kernels.h).
#include "backends/common/spectral_window_kernels.h"

namespace lumen {
namespace {

using spectral_window_kernels::mel_weight_matrix;
using spectral_window_kernels::window;

LUMEN_REGISTER_KERNEL("cpu", "hann_window", window<0>, DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("cpu", "hamming_window", window<1>, DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("cpu", "blackman_window", window<2>, DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("cpu", "mel_weight_matrix", mel_weight_matrix, DType::Int32, DType::Int64);

}  // namespace
}  // namespace lumen
