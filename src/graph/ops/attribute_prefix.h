// Fused nodes carry the attributes of the ops they fuse under a prefix (pool_strides,
// activation_alpha, pointwise_activation): the attributes under one prefix, unprefixed.
#pragma once

#include <string_view>

#include "lumen/attributes.h"

namespace lumen {

// {pool_strides=..., pads=...} with prefix "pool_" -> {strides=...}.
inline Attributes unprefixed_attributes(const Attributes &attrs, std::string_view prefix) {
  Attributes out;
  for (const auto &[key, value] : attrs.items())
    if (key.starts_with(prefix)) out.set(key.substr(prefix.size()), value);
  return out;
}

}  // namespace lumen
