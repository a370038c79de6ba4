// nchwc_pointwise_depthwise(x, w1, b1?, w2, b2?): nchwc_conv(nchwc_conv(x, w1, b1), w2, b2), a
// pointwise conv (1x1, one group, stride 1, unpadded) whose output t feeds only a depthwise conv:
// the expansion and depthwise convs of an inverted residual block (MobileNet, EfficientNet,
// MNASNet). The node carries the depthwise conv's attributes as they are and the pointwise conv's
// prefixed "pointwise_" (pointwise_activation, ...); "block" is shared. "band_rows" (optional,
// >= 1) fixes how many output rows the CPU kernel makes per band (tests; otherwise bands keep t's
// rows in L2). Created by graph/passes/fuse_pointwise_depthwise.cc: t, the largest tensor of the
// block, is made band by band in cache instead of being written to memory and read back.
#pragma once

#include <string_view>

#include "graph/ops/attribute_prefix.h"
#include "lumen/attributes.h"

namespace lumen {

inline constexpr std::string_view kPointwisePrefix = "pointwise_";
inline constexpr std::string_view kPointwiseDepthwiseBandRowsAttr = "band_rows";

// The pointwise conv's attributes (with the shared "block").
inline Attributes pointwise_stage_attributes(const Attributes &fused) {
  Attributes out = unprefixed_attributes(fused, kPointwisePrefix);
  if (fused.has("block")) out.set("block", fused.get_int("block", 8));
  return out;
}

// The depthwise conv's attributes: the fused node's without the pointwise conv's and band_rows.
inline Attributes depthwise_stage_attributes(const Attributes &fused) {
  Attributes out;
  for (const auto &[key, value] : fused.items())
    if (!key.starts_with(kPointwisePrefix) && key != kPointwiseDepthwiseBandRowsAttr)
      out.set(key, value);
  return out;
}

}  // namespace lumen
