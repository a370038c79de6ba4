// fused_conv_max_pool(x, w, b?): max_pool2d(fused_conv(x, w, b)). The node carries fused_conv's
// attributes as they are and the max pool's prefixed "pool_" (pool_kernel_shape, pool_strides...);
// "band_rows" (optional, >= 1) fixes how many output rows the CPU kernel makes per band (tests;
// otherwise it picks bands that keep the conv's output in L2). Created by
// graph/passes/fuse_conv_max_pool.cc for a network's first conv, whose large output the pool
// would otherwise read back from memory.
#pragma once

#include <string>
#include <string_view>

#include "graph/ops/attribute_prefix.h"
#include "lumen/attributes.h"
#include "lumen/shape.h"

namespace lumen {

inline constexpr std::string_view kPoolPrefix = "pool_";
inline constexpr std::string_view kBandRowsAttr = "band_rows";

// The conv's attributes: the fused node's without the pool's and band_rows.
inline Attributes conv_stage_attributes(const Attributes &fused) {
  Attributes out;
  for (const auto &[key, value] : fused.items())
    if (!key.starts_with(kPoolPrefix) && key != kBandRowsAttr) out.set(key, value);
  return out;
}

// The max pool's own attributes ("pool_strides" -> "strides").
inline Attributes pool_stage_attributes(const Attributes &fused) {
  return unprefixed_attributes(fused, kPoolPrefix);
}

// The conv's output shape [N, M, OH, OW] for input x and weights w (shapes inference accepted).
inline Shape conv_stage_output_shape(const Shape &x, const Shape &w, const Attributes &conv) {
  const auto strides = conv.get_ints("strides", {1, 1});
  const auto pads = conv.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = conv.get_ints("dilations", {1, 1});
  const auto dim = [&](size_t axis) {
    return (x[2 + axis] + pads[axis] + pads[2 + axis] - dilations[axis] * (w[2 + axis] - 1) - 1) /
               strides[axis] +
           1;
  };
  return Shape{x[0], w[0], dim(0), dim(1)};
}

}  // namespace lumen
