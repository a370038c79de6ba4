// The boxes non_max_suppression selects (see nms_selection.h).
#include "graph/ops/nms_selection.h"

#include <algorithm>
#include <cmath>

#include "core/scalar.h"

namespace lumen {
namespace {

// The first element of an optional scalar input as double; 0 when absent or empty.
double scalar_f64(const Tensor *t) {
  return t && t->numel() > 0 ? scalar::values_as_double(*t)[0] : 0.0;
}

// Boxes as corners (x0 <= x1, y0 <= y1) and areas, for the IoU tests.
struct Corners {
  std::vector<double> x0, y0, x1, y1, area;
  void push(const double *v, bool center) {
    double ax0, ax1, ay0, ay1;
    if (center) {
      ax0 = v[0] - v[2] / 2, ax1 = v[0] + v[2] / 2, ay0 = v[1] - v[3] / 2, ay1 = v[1] + v[3] / 2;
    } else {
      ax0 = std::min(v[1], v[3]), ax1 = std::max(v[1], v[3]);
      ay0 = std::min(v[0], v[2]), ay1 = std::max(v[0], v[2]);
    }
    x0.push_back(ax0), x1.push_back(ax1), y0.push_back(ay0), y1.push_back(ay1);
    area.push_back((ax1 - ax0) * (ay1 - ay0));
  }
  void push(const Corners &o, size_t i) {
    x0.push_back(o.x0[i]), y0.push_back(o.y0[i]), x1.push_back(o.x1[i]), y1.push_back(o.y1[i]);
    area.push_back(o.area[i]);
  }
  void clear() { x0.clear(), y0.clear(), x1.clear(), y1.clear(), area.clear(); }
};

// True when a kept box (index k of `kept`) suppresses box i of `all`: IoU > threshold. The kept
// boxes are contiguous so the test streams through them; most pairs fail the overlap test.
bool suppressed(const Corners &all, size_t i, const Corners &kept, double threshold) {
  const double bx0 = all.x0[i], bx1 = all.x1[i], by0 = all.y0[i], by1 = all.y1[i];
  const double area_b = all.area[i];
  for (size_t k = 0; k < kept.x0.size(); ++k) {
    const double ix0 = std::max(kept.x0[k], bx0), ix1 = std::min(kept.x1[k], bx1);
    const double iy0 = std::max(kept.y0[k], by0), iy1 = std::min(kept.y1[k], by1);
    if (ix1 <= ix0 || iy1 <= iy0) continue;
    const double inter = (ix1 - ix0) * (iy1 - iy0);
    const double area_a = kept.area[k], uni = area_a + area_b - inter;
    if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) continue;
    if (inter / uni > threshold) return true;
  }
  return false;
}
}  // namespace

// Inputs: boxes [B, S, 4], scores [B, C, S], then optional max_output_boxes_per_class (int),
// iou_threshold, score_threshold (float scalars). Shapes were checked by the caller.
std::vector<std::array<int64_t, 3>> nms_select(const std::vector<const Tensor *> &in, bool center) {
  const Tensor &boxes = *in[0], &scores = *in[1];
  const int64_t B = boxes.shape()[0], S = boxes.shape()[1], C = scores.shape()[1];
  // Read as an integer: exporters write "no limit" as INT64_MAX, which a double rounds to 2^63,
  // out of int64's range.
  int64_t max_out = 0;
  if (in.size() > 2 && in[2] && in[2]->numel() > 0) {
    const Tensor &t = *in[2];
    max_out = t.dtype() == DType::Int64 ? t.data<int64_t>()[0]
              : t.dtype() == DType::Int32
                  ? t.data<int32_t>()[0]
                  : static_cast<int64_t>(std::clamp(scalar_f64(&t), 0.0, 9.0e18));
    max_out = std::max<int64_t>(0, max_out);
  }
  const double iou = in.size() > 3 ? scalar_f64(in[3]) : 0.0;
  const bool has_score = in.size() > 4 && in[4] && in[4]->numel() > 0;
  const double score_thr = has_score ? scalar_f64(in[4]) : 0.0;
  const std::vector<double> bv = scalar::values_as_double(boxes),
                            sv = scalar::values_as_double(scores);
  std::vector<std::array<int64_t, 3>> out;
  if (max_out == 0) return out;
  Corners corners, kept;
  for (int64_t b = 0; b < B; ++b) {
    corners.clear();
    for (int64_t i = 0; i < S; ++i) corners.push(&bv[size_t((b * S + i) * 4)], center);
    for (int64_t c = 0; c < C; ++c) {
      const double *s = &sv[size_t((b * C + c) * S)];
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < S; ++i)
        if (!has_score || s[i] > score_thr) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
      kept.clear();
      for (int64_t i : cand) {
        if (int64_t(kept.x0.size()) >= max_out) break;
        if (suppressed(corners, size_t(i), kept, iou)) continue;
        kept.push(corners, size_t(i));
        out.push_back({b, c, i});
      }
    }
  }
  return out;
}

}  // namespace lumen
