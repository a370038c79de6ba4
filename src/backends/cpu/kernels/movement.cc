// CPU slice, split and expand for any dtype. All three are affine gathers: output element
// (i0, .., in) reads input element base + sum(i_d * stride_d), where a stride is a slice step
// times the input's stride, or 0 for a broadcast dim. Output rows are processed in parallel; a
// row whose input stride is one element is a memcpy.
//
// Tile, any dtype, by copying finished blocks of the output (below); trilu and eye_like by rows,
// each a copied (or one-valued) run between zeroed ones.
//
// And pad, every mode (constant, edge, reflect, wrap), any dtype of 1, 2, 4 or 8 bytes, pads
// negative (cropping) as well, by output rows (all dims but the last): a row whose leading
// indices fall in constant padding is the fill value; otherwise its source row is found once and
// copied as one run, with the last dim's padded columns taken from a per-call column map. The
// reference kernel maps every element's index through the padding, ~50x slower; the semantics
// are its (backends/reference/kernels/movement.cc).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/dtype_lists.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kRowGrain = 1 << 14;  // bytes of output per parallel task, roughly

// y[out] = x[base + sum(out[d] * strides[d])], strides and base in elements. The caller guarantees
// that every index read is inside x (inference checked the shapes).
void affine_gather(ThreadPool &pool, const Tensor &x, Tensor &y, int64_t base,
                   const std::vector<int64_t> &strides) {
  const int64_t n = y.numel();
  if (n == 0) return;
  const auto elem = static_cast<int64_t>(dtype_size(y.dtype()));
  const size_t rank = y.rank();
  const int64_t inner = rank ? y.shape()[rank - 1] : 1;
  const int64_t inner_stride = rank ? strides[rank - 1] : 0;
  const int64_t rows = n / inner;
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  const int64_t grain = std::max<int64_t>(1, kRowGrain / std::max<int64_t>(1, inner * elem));
  pool.parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(rank ? rank - 1 : 0);
    for (int64_t row = begin; row < end; ++row) {
      int64_t rem = row, offset = base;
      for (size_t d = index.size(); d-- > 0;) {
        offset += (rem % y.shape()[d]) * strides[d];
        rem /= y.shape()[d];
      }
      char *out = dst + row * inner * elem;
      const char *in = src + offset * elem;
      if (inner_stride == 1) {
        std::memcpy(out, in, static_cast<size_t>(inner * elem));
      } else {
        for (int64_t i = 0; i < inner; ++i)
          std::memcpy(out + i * elem, in + i * inner_stride * elem, static_cast<size_t>(elem));
      }
    }
  });
}

void slice(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const auto starts = ctx.input_ints(1);
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    axes = ctx.input_ints(3);
  } else {
    for (size_t a = 0; a < starts.size(); ++a) axes.push_back(static_cast<int64_t>(a));
  }
  std::vector<int64_t> steps(starts.size(), 1);
  if (ctx.has_input(4)) steps = ctx.input_ints(4);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, axes and steps differ in length");
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<int64_t> strides = in_strides;
  int64_t base = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t axis = x.shape().normalize_axis(axes[i]);
    const int64_t dim = x.shape()[axis];
    if (dim == 0 || y.shape()[axis] == 0) continue;
    int64_t s = starts[i];
    if (s < 0) s += dim;
    s = steps[i] > 0 ? std::clamp(s, int64_t{0}, dim) : std::clamp(s, int64_t{0}, dim - 1);
    base += s * in_strides[axis];
    // A dim of one output element reads only its start; its step may be any size.
    strides[axis] = y.shape()[axis] == 1 ? 0 : steps[i] * in_strides[axis];
  }
  affine_gather(ctx.pool, x, y, base, strides);
}

void split(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t axis = x.shape().normalize_axis(ctx.attrs.get_int("axis", 0));
  const int64_t dim = x.shape()[axis], index = ctx.attrs.get_int("index", 0);
  std::vector<int64_t> sizes;
  if (ctx.has_input(1)) {
    sizes = ctx.input_ints(1);
  } else if (ctx.attrs.has("split")) {
    sizes = ctx.attrs.get_ints("split", {});
  } else {
    const int64_t n = std::max<int64_t>(1, ctx.attrs.get_int("num_outputs", 1));
    const int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::clamp(dim - i * chunk, int64_t{0}, chunk));
  }
  int64_t offset = 0;
  for (int64_t i = 0; i < index && i < static_cast<int64_t>(sizes.size()); ++i) offset += sizes[i];
  const std::vector<int64_t> strides = contiguous_strides(x.shape());
  affine_gather(ctx.pool, x, y, offset * strides[axis], strides);
}

void expand(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t lead = y.rank() - x.rank();
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<int64_t> strides(y.rank(), 0);
  for (size_t d = 0; d < x.rank(); ++d) strides[d + lead] = x.shape()[d] == 1 ? 0 : in_strides[d];
  affine_gather(ctx.pool, x, y, 0, strides);
}

// Fills dst[0, copies * block) with `copies` copies of dst[0, block) by doubling: log2(copies)
// memcpys, however small the block.
void replicate(char *dst, size_t block, int64_t copies) {
  const size_t total = block * static_cast<size_t>(copies);
  for (size_t filled = block; filled < total;) {
    const size_t n = std::min(filled, total - filled);
    std::memcpy(dst + filled, dst, n);
    filled += n;
  }
}

// Tile, inside out: each input row is copied to its place in the output and repeated along the
// last dim; then, from the innermost dim outwards, each finished block of x[d] output rows is
// repeated repeats[d] times after itself. Every output byte is written once, by memcpys whose
// length grows with the repeats (the affine gather's per-row index walk is 20x slower on
// repeated short rows).
void tile(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (y.numel() == 0) return;
  const size_t rank = x.rank();
  const auto elem = dtype_size(x.dtype());
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  if (rank == 0) return std::memcpy(dst, src, elem), void();
  // out_stride[d]: bytes of one index step of output dim d.
  std::vector<size_t> out_stride(rank);
  out_stride[rank - 1] = elem;
  for (size_t d = rank - 1; d-- > 0;)
    out_stride[d] = out_stride[d + 1] * static_cast<size_t>(y.shape()[d + 1]);
  const auto repeats = [&](size_t d) { return y.shape()[d] / x.shape()[d]; };
  // The output offset of the first copy of input row `row` (an index over x's leading dims).
  const auto row_offset = [&](int64_t row, size_t dims) {
    size_t offset = 0;
    for (size_t d = dims; d-- > 0;) {
      offset += static_cast<size_t>(row % x.shape()[d]) * out_stride[d];
      row /= x.shape()[d];
    }
    return offset;
  };
  const int64_t last = x.shape()[rank - 1], rows = x.numel() / last;
  const size_t row_bytes = static_cast<size_t>(last) * elem;
  const int64_t row_grain = std::max<int64_t>(
      1, kRowGrain / static_cast<int64_t>(row_bytes * static_cast<size_t>(repeats(rank - 1))));
  ctx.pool.parallel_for(rows, row_grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      char *out = dst + row_offset(r, rank - 1);
      std::memcpy(out, src + static_cast<size_t>(r) * row_bytes, row_bytes);
      replicate(out, row_bytes, repeats(rank - 1));
    }
  });
  // Dim d: for each index over the leading dims (first copies only), the block of x[d] rows of
  // dim d is complete; repeat it.
  int64_t prefixes = rows;
  for (size_t d = rank - 1; d-- > 0;) {
    prefixes /= x.shape()[d];
    const size_t block = static_cast<size_t>(x.shape()[d]) * out_stride[d];
    const int64_t grain = std::max<int64_t>(
        1, kRowGrain / static_cast<int64_t>(block * static_cast<size_t>(repeats(d))));
    ctx.pool.parallel_for(prefixes, grain, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) replicate(dst + row_offset(p, d), block, repeats(d));
    });
  }
}

// Trilu over the last two dims [m, n]: row i keeps columns j with j - i >= k (upper) or
// j - i <= k (lower), one memcpy between zeroed runs (zero bytes are zero in every dtype).
void trilu(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (y.numel() == 0) return;
  const int64_t k = ctx.has_input(1) ? ctx.input_ints(1).at(0) : 0;
  const bool upper = ctx.attrs.get_int("upper", 1) != 0;
  const size_t r = x.rank();
  const int64_t m = x.shape()[r - 2], n = x.shape()[r - 1], rows = x.numel() / n;
  const auto elem = static_cast<int64_t>(dtype_size(x.dtype()));
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  ctx.pool.parallel_for(
      rows, std::max<int64_t>(1, kRowGrain / (n * elem)), [&](int64_t r0, int64_t r1) {
        for (int64_t row = r0; row < r1; ++row) {
          // Kept columns [lo, hi), clamped to the row; i + k cannot overflow (|k| is a dim size or
          // less once clamped).
          const int64_t i = row % m, shift = std::clamp(k, -n - m, n + m);
          const int64_t lo = upper ? std::clamp(i + shift, int64_t{0}, n) : 0;
          const int64_t hi = upper ? n : std::clamp(i + shift + 1, int64_t{0}, n);
          char *out = dst + row * n * elem;
          const char *in = src + row * n * elem;
          std::memset(out, 0, static_cast<size_t>(lo * elem));
          if (hi > lo)
            std::memcpy(out + lo * elem, in + lo * elem, static_cast<size_t>((hi - lo) * elem));
          std::memset(out + std::max(lo, hi) * elem, 0,
                      static_cast<size_t>((n - std::max(lo, hi)) * elem));
        }
      });
}

enum class Mode { Constant, Edge, Reflect, Wrap };

// The input index of output index `out` along a dim of size `dim` padded by `begin` in front, or
// -1 for the fill value (constant mode).
int64_t source_index(int64_t out, int64_t begin, int64_t dim, Mode mode) {
  int64_t i = out - begin;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case Mode::Constant:
      return -1;
    case Mode::Edge:
      return std::clamp(i, int64_t{0}, dim - 1);
    case Mode::Wrap:
      return ((i % dim) + dim) % dim;
    case Mode::Reflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      i = ((i % period) + period) % period;
      return i >= dim ? period - i : i;
    }
  }
  return -1;
}

void pad_rows(KernelContext &ctx, const std::vector<int64_t> &begin, Mode mode,
              const unsigned char *fill);

void pad(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t rank = x.rank(), elem = dtype_size(y.dtype());
  const std::string mode_name = ctx.attrs.get_string("mode", "constant");
  const Mode mode = mode_name == "edge"      ? Mode::Edge
                    : mode_name == "reflect" ? Mode::Reflect
                    : mode_name == "wrap"    ? Mode::Wrap
                                             : Mode::Constant;
  if (mode == Mode::Constant && mode_name != "constant")
    ctx.fail("unknown mode '", mode_name, "'; expected constant, reflect, edge or wrap");
  if (elem > 8) ctx.fail("cannot pad ", dtype_name(y.dtype()), " values");  // none is registered
  if (rank == 0) {  // a scalar has nothing to pad
    std::memcpy(y.raw_data(), x.raw_data(), elem);
    return;
  }
  if (y.numel() == 0) return;
  // Pads per dim, from the pads input over the axes input (all dims when absent).
  const auto pads = ctx.input_ints(1);
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) axes = ctx.input_ints(3);
  if (axes.empty())
    for (size_t a = 0; a < pads.size() / 2; ++a) axes.push_back(static_cast<int64_t>(a));
  std::vector<int64_t> begin(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i)
    begin[Shape(std::vector<int64_t>(rank)).normalize_axis(axes[i])] = pads[i];
  unsigned char fill[8] = {};
  if (ctx.has_input(2) && ctx.input(2).numel() == 1) {
    std::memcpy(fill, ctx.input(2).raw_data(), elem);  // its dtype was checked by inference
  } else if (const double value = ctx.attrs.get_float("value", 0.0); value != 0.0) {
    // The `value` attribute of Pad before opset 11, converted to y's dtype.
    bin::visit_dtype(y.dtype(), [&](auto tag) {
      const auto v = bin::convert<decltype(tag)>(value);
      std::memcpy(fill, &v, sizeof(v));
    });
  }
  if (mode != Mode::Constant && x.numel() == 0)
    ctx.fail("mode ", mode_name, " cannot pad an empty dim of input ", x.shape().to_string());
  pad_rows(ctx, begin, mode, fill);
}

// y = x padded (or cropped, where negative) by begin[d] in front of each dim, to y's shape.
void pad_rows(KernelContext &ctx, const std::vector<int64_t> &begin, Mode mode,
              const unsigned char *fill) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t rank = x.rank(), elem = dtype_size(y.dtype());
  const int64_t last = y.shape()[rank - 1], in_last = x.shape()[rank - 1];
  // The last dim's source column of every output column, and the run [j0, j1) copied as is.
  std::vector<int64_t> column(static_cast<size_t>(last));
  int64_t j0 = last, j1 = last;
  for (int64_t j = 0; j < last; ++j) {
    column[j] = in_last == 0 ? -1 : source_index(j, begin[rank - 1], in_last, mode);
    if (j - begin[rank - 1] >= 0 && j - begin[rank - 1] < in_last) {
      j0 = std::min(j0, j);
      j1 = j + 1;
    }
  }
  const int64_t rows = y.numel() / last;
  const auto *src = static_cast<const unsigned char *>(x.raw_data());
  auto *dst = static_cast<unsigned char *>(y.raw_data());
  const auto put = [&](unsigned char *out, int64_t col, const unsigned char *row) {
    std::memcpy(out, col < 0 ? fill : row + col * elem, elem);
  };
  ctx.pool.parallel_for(rows, std::max<int64_t>(1, 8192 / last), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      unsigned char *out = dst + static_cast<size_t>(r * last) * elem;
      // The source row: each leading output index mapped through the padding.
      int64_t rem = r, in_row = 0, stride = 1;
      bool filled = false;
      for (size_t d = rank - 1; d-- > 0;) {
        const int64_t i = source_index(rem % y.shape()[d], begin[d], x.shape()[d], mode);
        rem /= y.shape()[d];
        if (i < 0) filled = true;
        in_row += i * stride;
        stride *= x.shape()[d];
      }
      if (filled) {
        for (int64_t j = 0; j < last; ++j) std::memcpy(out + j * elem, fill, elem);
        continue;
      }
      const unsigned char *row = src + static_cast<size_t>(in_row * in_last) * elem;
      for (int64_t j = 0; j < j0; ++j) put(out + j * elem, column[j], row);
      if (j1 > j0)
        std::memcpy(out + j0 * elem, row + (j0 - begin[rank - 1]) * elem,
                    static_cast<size_t>(j1 - j0) * elem);
      for (int64_t j = j1; j < last; ++j) put(out + j * elem, column[j], row);
    }
  });
}

// CenterCropPad: each dim cropped (centered, the extra element at the end) or zero-padded
// (centered) to the output's size: a pad with negative begin pads where it crops.
void center_crop_pad(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  const Tensor &y = ctx.output(0);
  if (y.numel() == 0) return;
  if (x.rank() == 0) return std::memcpy(ctx.output(0).raw_data(), x.raw_data(), x.nbytes()), void();
  std::vector<int64_t> begin(x.rank());
  for (size_t d = 0; d < x.rank(); ++d) {
    const int64_t dim = x.shape()[d], want = y.shape()[d];
    begin[d] = want < dim ? -((dim - want) / 2) : (want - dim) / 2;
  }
  const unsigned char zero[8] = {};
  pad_rows(ctx, begin, Mode::Constant, zero);
}

// ReverseSequence: for each batch entry b, its first lens[b] time steps reversed; slices of the
// dims after the batch and time axes (which are 0 and 1 in either order) copied whole.
void reverse_sequence(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const int64_t batch_axis = ctx.attrs.get_int("batch_axis", 1);
  const int64_t time_axis = ctx.attrs.get_int("time_axis", 0);
  const auto lens = ctx.input_ints(1);
  const int64_t steps = x.shape()[static_cast<size_t>(time_axis)];
  const int64_t batch = x.shape()[static_cast<size_t>(batch_axis)];
  if (static_cast<int64_t>(lens.size()) != batch)
    ctx.fail("sequence_lens has ", lens.size(), " values for a batch of ", batch);
  for (int64_t l : lens)
    if (l < 0 || l > steps) ctx.fail("sequence length ", l, " is out of range");
  if (y.numel() == 0) return;
  const size_t block = x.nbytes() / static_cast<size_t>(steps * batch);
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  const auto offset = [&](int64_t t, int64_t b) {
    return static_cast<size_t>(time_axis == 0 ? t * batch + b : b * steps + t) * block;
  };
  ctx.pool.parallel_for(steps * batch, std::max<int64_t>(1, kRowGrain / int64_t(block + 1)),
                        [&](int64_t i0, int64_t i1) {
                          for (int64_t i = i0; i < i1; ++i) {
                            const int64_t t = i / batch, b = i % batch;
                            const int64_t len = lens[static_cast<size_t>(b)];
                            std::memcpy(dst + offset(t, b),
                                        src + offset(t < len ? len - 1 - t : t, b), block);
                          }
                        });
}

// EyeLike: zeros with ones on diagonal k.
void eye_like(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const int64_t k = ctx.attrs.get_int("k", 0);
  const size_t elem = dtype_size(y.dtype());
  unsigned char one[8] = {};
  if (!bin::visit_dtype(y.dtype(), [&](auto tag) {
        const auto v = bin::convert<decltype(tag)>(1.0);
        std::memcpy(one, &v, sizeof(v));
      }))
    ctx.fail("no cpu kernel for ", dtype_name(y.dtype()));
  auto *dst = static_cast<unsigned char *>(y.raw_data());
  std::memset(dst, 0, y.nbytes());
  if (y.rank() != 2) return;
  const int64_t rows = y.shape()[0], cols = y.shape()[1];
  for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i)
    std::memcpy(dst + static_cast<size_t>(i * cols + i + k) * elem, one, elem);
}

// Col2Im: input column l of block element b (for each image and channel) adds into image pixel
// l * stride - pad_begin + b * dilation per spatial dim when that lies inside the image. Planes
// (image, channel) in parallel; the block positions of each dim found once.
template <class T>
void col2im(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const auto image = ctx.input_ints(1), block = ctx.input_ints(2);
  const size_t n = image.size();
  const auto strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(n, 1));
  const auto dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(n, 1));
  const auto pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> count(n), image_stride(n, 1);
  int64_t block_size = 1, pixels = 1;
  for (size_t i = n; i-- > 0;) {
    count[i] =
        (image[i] + pads[i] + pads[i + n] - dilations[i] * (block[i] - 1) - 1) / strides[i] + 1;
    block_size *= block[i];
    image_stride[i] = pixels;
    pixels *= image[i];
  }
  // pos[d][b * count[d] + l]: the pixel coordinate of block element b at block position l, or -1.
  std::vector<std::vector<int64_t>> pos(n);
  for (size_t d = 0; d < n; ++d)
    for (int64_t b = 0; b < block[d]; ++b)
      for (int64_t l = 0; l < count[d]; ++l) {
        const int64_t p = l * strides[d] - pads[d] + b * dilations[d];
        pos[d].push_back(p >= 0 && p < image[d] ? p : -1);
      }
  const int64_t cols = x.shape()[2];
  T *out = y.data<T>();
  const T *in = x.data<T>();
  std::fill_n(out, y.numel(), T(0));
  ctx.pool.parallel_for(y.shape()[0] * y.shape()[1], 1, [&](int64_t p0, int64_t p1) {
    std::vector<int64_t> b(n), l(n);
    for (int64_t nc = p0; nc < p1; ++nc)
      for (int64_t bi = 0; bi < block_size; ++bi) {
        for (int64_t rem = bi, d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
          b[static_cast<size_t>(d)] = rem % block[static_cast<size_t>(d)];
          rem /= block[static_cast<size_t>(d)];
        }
        const T *column = in + (nc * block_size + bi) * cols;
        std::fill(l.begin(), l.end(), int64_t{0});
        for (int64_t li = 0; li < cols; ++li) {
          int64_t pixel = 0;
          for (size_t d = 0; d < n && pixel >= 0; ++d) {
            const int64_t p = pos[d][static_cast<size_t>(b[d] * count[d] + l[d])];
            pixel = p < 0 ? -1 : pixel + p * image_stride[d];
          }
          if (pixel >= 0) out[nc * pixels + pixel] += column[li];
          for (size_t d = n; d-- > 0;) {  // the next block position
            if (++l[d] < count[d]) break;
            l[d] = 0;
          }
        }
      }
  });
}

// BitCast: the bytes, unchanged, as the output's dtype (same element size, checked by inference).
void bit_cast(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  if (y.nbytes() != x.nbytes()) ctx.fail("output size ", y.nbytes(), " != input ", x.nbytes());
  if (x.nbytes() > 0 && x.raw_data() != y.raw_data())
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
}

LUMEN_REGISTER_KERNEL("cpu", "slice", slice, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "split", split, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "expand", expand, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "pad", pad, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "tile", tile, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "trilu", trilu, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "center_crop_pad", center_crop_pad, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "reverse_sequence", reverse_sequence, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "eye_like", eye_like, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "bit_cast", bit_cast, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("cpu", "col2im", col2im<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "col2im", col2im<double>, DType::Float64);

}  // namespace
}  // namespace lumen
