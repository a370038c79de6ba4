// Reference conv2d: the textbook seven nested loops, accumulated in double.
#include <vector>

#include "core/kernel.h"

namespace lumen {
namespace {

template <class T>
void conv2d(KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1);
  const Tensor &ty = ctx.output(0);
  const auto strides = ctx.attrs.get_ints("strides", {1, 1});
  const auto pads = ctx.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto dilations = ctx.attrs.get_ints("dilations", {1, 1});
  const int64_t group = ctx.attrs.get_int("group", 1);
  const int64_t n_batch = tx.shape()[0], c_in = tx.shape()[1], h = tx.shape()[2], w = tx.shape()[3];
  const int64_t m_out = tw.shape()[0], cg = tw.shape()[1], kh = tw.shape()[2], kw = tw.shape()[3];
  const int64_t oh = ty.shape()[2], ow = ty.shape()[3];
  if (group < 1 || c_in != cg * group || m_out % group != 0)
    ctx.fail("channels do not match: input ", tx.shape().to_string(), ", weight ",
             tw.shape().to_string(), ", group ", group);
  const int64_t mg = m_out / group;
  const T *x = tx.data<T>();
  const T *wt = tw.data<T>();
  const T *bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  T *y = ty.data<T>();
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t m = 0; m < m_out; ++m) {
      const int64_t g = m / mg;
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = bias ? static_cast<double>(bias[m]) : 0.0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t b = 0; b < kw; ++b) {
                const int64_t ih = i * strides[0] - pads[0] + a * dilations[0];
                const int64_t iw = j * strides[1] - pads[1] + b * dilations[1];
                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;  // zero padding
                const T xv = x[((n * c_in + g * cg + c) * h + ih) * w + iw];
                const T wv = wt[((m * cg + c) * kh + a) * kw + b];
                acc += static_cast<double>(xv) * static_cast<double>(wv);
              }
          y[((n * m_out + m) * oh + i) * ow + j] = static_cast<T>(acc);
        }
    }
}

LUMEN_REGISTER_KERNEL("reference", "conv2d", conv2d<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "conv2d", conv2d<double>, DType::Float64);

}  // namespace
}  // namespace lumen
