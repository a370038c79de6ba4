// A 2-D pooling window over `planes` planes of H x W (float32 NCHW): kernel, strides, padding at
// both ends, dilations; a global pooling is one window over the whole plane (H = 1, W = plane).
// Plain values, so CUDA kernels take it as it is (device_kernel_params.h reads it from a node).
#pragma once

#include <cstdint>

namespace lumen {

struct PoolWindow {
  int64_t planes = 0, H = 1, W = 1, OH = 1, OW = 1, KH = 1, KW = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, ph_end = 0, pw_end = 0, dh = 1, dw = 1;
  // Average pooling: whether the divisor counts padding inside [0, H + ph_end) x [0, W + pw_end).
  bool count_include_pad = false;
};

}  // namespace lumen
