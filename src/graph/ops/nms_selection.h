// The rows non_max_suppression outputs: per batch and class, the boxes whose score is above
// score_threshold (all boxes when it is omitted) in descending score order (ties: lower index
// first), each kept unless its IoU with an already kept box of that class exceeds iou_threshold,
// at most max_output_boxes_per_class per class. The op's meaning, so shape inference (the output's
// row count depends on it) and every backend's kernel select the same boxes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "lumen/tensor.h"

namespace lumen {

// Inputs as the op takes them: boxes [B, S, 4], scores [B, C, S], then optional
// max_output_boxes_per_class (int), iou_threshold and score_threshold (float scalars); shapes
// checked by the caller. center: boxes as (x, y, w, h) rather than corners. Rows (batch, class,
// box index).
std::vector<std::array<int64_t, 3>> nms_select(const std::vector<const Tensor *> &in, bool center);

}  // namespace lumen
