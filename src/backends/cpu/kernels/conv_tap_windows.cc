#include "backends/cpu/kernels/conv_tap_windows.h"

namespace lumen::cpu {
namespace {

// Consecutive output positions of one dim that read the same taps [first, first + count).
struct Span {
  int64_t begin, size, first_tap, taps;
};

// The spans of one dim; empty when there are too many to be worth a GEMM each.
std::vector<Span> spans(int64_t size, int64_t kernel, int64_t out, int64_t stride, int64_t pad,
                        int64_t dilation) {
  constexpr size_t kMaxSpans = 16;
  std::vector<Span> result;
  for (int64_t o = 0; o < out; ++o) {
    // Taps t with 0 <= o * stride - pad + t * dilation < size.
    int64_t lo = 0, hi = 0;
    valid_range(o * stride - pad, dilation, size, kernel, lo, hi);
    if (!result.empty() && result.back().first_tap == lo && result.back().taps == hi - lo) {
      ++result.back().size;
      continue;
    }
    if (result.size() == kMaxSpans) return {};
    result.push_back({o, 1, lo, hi - lo});
  }
  return result;
}

}  // namespace

ConvParams TapWindow::params(const ConvParams &p) const {
  ConvParams q = p;
  q.kh = tap_rows, q.kw = tap_cols;
  q.oh = rows, q.ow = cols;
  q.pt = p.pt - tap_row0 * p.dh - row0 * p.sh;
  q.pl = p.pl - tap_col0 * p.dw - col0 * p.sw;
  return q;
}

std::vector<TapWindow> tap_windows(const ConvParams &p) {
  const std::vector<Span> rows = spans(p.h, p.kh, p.oh, p.sh, p.pt, p.dh);
  const std::vector<Span> cols = spans(p.w, p.kw, p.ow, p.sw, p.pl, p.dw);
  if (rows.empty() || cols.empty() || (rows.size() == 1 && cols.size() == 1)) return {};
  std::vector<TapWindow> windows;
  int64_t taps_read = 0;
  for (const Span &r : rows)
    for (const Span &c : cols) {
      windows.push_back(
          {r.begin, r.size, c.begin, c.size, r.first_tap, r.taps, c.first_tap, c.taps});
      taps_read += r.size * c.size * r.taps * c.taps;
    }
  const int64_t taps_all = p.oh * p.ow * p.kh * p.kw;
  if (2 * taps_read > taps_all) return {};
  return windows;
}

}  // namespace lumen::cpu
