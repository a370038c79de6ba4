// Output windows of a 2-D conv by the kernel taps that read the input there. Where padding is a
// large part of what the kernel covers (dilated convs on small maps: DeepLab's ASPP runs a 3x3 conv
// with dilation 12 on a 14x14 map, where 82% of the taps read padding), the conv runs one GEMM
// per window with only that window's taps instead of one GEMM that multiplies the zeros too.
#pragma once

#include <vector>

#include "backends/cpu/kernels/conv_params.h"

namespace lumen::cpu {

struct TapWindow {
  int64_t row0, rows, col0, cols;                  // output positions
  int64_t tap_row0, tap_rows, tap_col0, tap_cols;  // kernel taps (none: tap_rows or tap_cols 0)
  // The conv of this window alone: the same input, only the window's taps and outputs (pads
  // shifted accordingly, negative where the window starts inside the image).
  ConvParams params(const ConvParams &p) const;
};

// The windows covering the output, when skipping the taps that read padding saves at least half
// of the conv's multiply-adds; empty otherwise.
std::vector<TapWindow> tap_windows(const ConvParams &p);

}  // namespace lumen::cpu
