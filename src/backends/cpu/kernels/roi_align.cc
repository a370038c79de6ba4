// CPU roi_align (float32): per roi, the sampling points of every output bin (sampling_ratio per
// side, or ceil(bin size)) are computed once, as four pixel offsets and bilinear weights each
// (points more than one pixel outside the map count 0, others are clamped to it, as ONNX defines);
// then every channel of the roi's image is reduced over them, average or max of the weighted
// corners. (roi, channel) pairs are shared out over the pool.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/common/roi_align_sample.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// A sampling point as the inner loop reads it: float weights, all 0 (and offsets 0) for a point
// outside the map.
struct Sample {
  int64_t offset[4];
  float weight[4];
};

void roi_align(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &rois = ctx.input(1), &batch = ctx.input(2);
  Tensor &y = ctx.output(0);
  const RoiAlignParams params = roi_align_params(ctx.attrs);
  const bool avg = params.avg;
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t R = y.shape()[0], OH = y.shape()[2], OW = y.shape()[3];
  const float *px = x.data<float>(), *pr = rois.data<float>();
  float *py = y.data<float>();
  for (int64_t r = 0; r < R; ++r) {
    const int64_t b = roi_batch(ctx, batch, r, N);
    const double roi[4] = {pr[r * 4], pr[r * 4 + 1], pr[r * 4 + 2], pr[r * 4 + 3]};
    const RoiBins bins(params, roi, OH, OW);
    const int64_t gh = bins.gh, gw = bins.gw, per_bin = gh * gw;
    const float inv_count = float(1.0 / double(std::max<int64_t>(per_bin, 1)));
    std::vector<Sample> samples(static_cast<size_t>(OH * OW * per_bin));
    for (int64_t ph = 0; ph < OH; ++ph)
      for (int64_t pw = 0; pw < OW; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            const RoiSample p = roi_sample(bins.y(ph, iy), bins.x(pw, ix), H, W);
            Sample &s = samples[size_t(((ph * OW + pw) * gh + iy) * gw + ix)];
            for (int k = 0; k < 4; ++k) {
              s.offset[k] = p.offset[k];
              s.weight[k] = float(p.weight[k]);  // 0 outside the map
            }
          }
    ctx.pool.parallel_for(C, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const float *img = px + (b * C + c) * H * W;
        float *out = py + (r * C + c) * OH * OW;
        for (int64_t bin = 0; bin < OH * OW; ++bin) {
          const Sample *s = samples.data() + bin * per_bin;
          float acc = 0;
          for (int64_t k = 0; k < per_bin; ++k) {
            const Sample &p = s[k];
            if (avg) {
              acc += p.weight[0] * img[p.offset[0]] + p.weight[1] * img[p.offset[1]] +
                     p.weight[2] * img[p.offset[2]] + p.weight[3] * img[p.offset[3]];
            } else {
              const float m = std::max(
                  std::max(p.weight[0] * img[p.offset[0]], p.weight[1] * img[p.offset[1]]),
                  std::max(p.weight[2] * img[p.offset[2]], p.weight[3] * img[p.offset[3]]));
              acc = k == 0 ? m : std::max(acc, m);
            }
          }
          out[bin] = avg ? acc * inv_count : acc;
        }
      }
    });
  }
}

LUMEN_REGISTER_KERNEL("cpu", "roi_align", roi_align, DType::Float32);

}  // namespace
}  // namespace lumen
