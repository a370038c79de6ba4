// Reference data-movement kernels (see src/graph/ops/movement.cc for the op list). Each output
// element is computed alone: its index is mapped to the input index it copies (or to a fill
// value), and elem_size bytes are copied, so one kernel serves every dtype. Every input index is
// checked against the input's shape before reading.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/common/binary_functors.h"
#include "backends/common/dtype_lists.h"
#include "core/kernel.h"

namespace lumen {
namespace {

// Axes from input i, or attribute axes, or 0..count-1; normalized.
std::vector<int64_t> axes_of(const KernelContext &ctx, size_t i, size_t rank, size_t count) {
  std::vector<int64_t> axes;
  if (ctx.has_input(i)) {
    axes = ctx.input_ints(i);
  } else if (ctx.attrs.has("axes")) {
    axes = ctx.attrs.get_ints("axes", {});
  } else {
    for (size_t a = 0; a < count; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  for (int64_t &a : axes)
    a = static_cast<int64_t>(Shape(std::vector<int64_t>(rank)).normalize_axis(a));
  return axes;
}

// For each output element: `map(out_index, in_index)` fills in_index and returns false when the
// element takes the fill value instead. The input index is bounds-checked.
template <class Map>
void copy_mapped(const KernelContext &ctx, const Tensor &x, Tensor &y, const char *fill,
                 Map &&map) {
  const size_t elem = dtype_size(y.dtype());
  const size_t out_rank = y.rank(), in_rank = x.rank();
  const auto *src = static_cast<const char *>(x.raw_data());
  auto *dst = static_cast<char *>(y.raw_data());
  std::vector<int64_t> out(out_rank), in(in_rank);
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    int64_t rem = i;
    for (size_t d = out_rank; d-- > 0;) {
      out[d] = rem % y.shape()[d];
      rem /= y.shape()[d];
    }
    if (!map(out, in)) {
      std::memcpy(dst + i * elem, fill, elem);
      continue;
    }
    int64_t offset = 0;
    for (size_t d = 0; d < in_rank; ++d) {
      if (in[d] < 0 || in[d] >= x.shape()[d])
        ctx.fail("internal: index ", in[d], " out of range for dim ", d, " of input ",
                 x.shape().to_string());
      offset = offset * x.shape()[d] + in[d];
    }
    std::memcpy(dst + i * elem, src + offset * elem, elem);
  }
}

// ---- Conversions for the ops that make values -------------------------------------------------

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000)
    return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
  if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to infinity
  if (abs < 0x38800000) {                                              // subnormal or zero in half
    const float a = std::fabs(f) * 16777216.0f;  // 2^24: units of the smallest subnormal
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a)));
  }
  const uint32_t mant = abs & 0x7fffff;
  uint32_t h = ((abs >> 23) - 112) << 10 | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float half_to_float(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  float v =
      e == 0 ? std::ldexp(static_cast<float>(m), -24)
             : (e == 31 ? (m ? NAN : INFINITY) : std::ldexp(static_cast<float>(1024 + m), e - 25));
  return (h & 0x8000) ? -v : v;
}

float bf16_to_float(uint16_t b) {
  const uint32_t x = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Writes `v` as one element of `dtype` at dst; integers saturate (NaN gives 0), as values out of
// an integer type's range have no conversion.
void store_as(DType dtype, double v, void *dst) {
  auto put = [&](auto value) { std::memcpy(dst, &value, sizeof(value)); };
  switch (dtype) {
    case DType::Float32:
      put(static_cast<float>(v));
      break;
    case DType::Float64:
      put(v);
      break;
    case DType::Float16:
      put(float_to_half(static_cast<float>(v)));
      break;
    case DType::BFloat16:
      put(float_to_bf16(static_cast<float>(v)));
      break;
    case DType::Int8:
      put(bin::float_to_int<int8_t>(v));
      break;
    case DType::Int16:
      put(bin::float_to_int<int16_t>(v));
      break;
    case DType::Int32:
      put(bin::float_to_int<int32_t>(v));
      break;
    case DType::Int64:
      put(bin::float_to_int<int64_t>(v));
      break;
    case DType::UInt8:
      put(bin::float_to_int<uint8_t>(v));
      break;
    case DType::UInt16:
      put(bin::float_to_int<uint16_t>(v));
      break;
    case DType::UInt32:
      put(bin::float_to_int<uint32_t>(v));
      break;
    case DType::UInt64:
      put(bin::float_to_int<uint64_t>(v));
      break;
    case DType::Bool:
      put(static_cast<bool>(v != 0));
      break;
    default:
      fail("a ", dtype_name(dtype), " scalar value is not supported here");
  }
}

double load_as_double(const Tensor &t) {
  const void *p = t.raw_data();
  auto get = [&](auto value) {
    std::memcpy(&value, p, sizeof(value));
    return value;
  };
  switch (t.dtype()) {
    case DType::Float32:
      return get(float{});
    case DType::Float64:
      return get(double{});
    case DType::Float16:
      return half_to_float(get(uint16_t{}));
    case DType::BFloat16:
      return bf16_to_float(get(uint16_t{}));
    case DType::Int8:
      return get(int8_t{});
    case DType::Int16:
      return get(int16_t{});
    case DType::Int32:
      return get(int32_t{});
    case DType::Int64:
      return static_cast<double>(get(int64_t{}));
    case DType::UInt8:
      return get(uint8_t{});
    case DType::UInt16:
      return get(uint16_t{});
    case DType::UInt32:
      return get(uint32_t{});
    case DType::UInt64:
      return static_cast<double>(get(uint64_t{}));
    case DType::Bool:
      return get(bool{});
    default:
      fail("a ", dtype_name(t.dtype()), " scalar value is not supported here");
  }
}

// ---- Kernels ---------------------------------------------------------------------------------

// Output dims align with the input's from the right; broadcast (size-1) input dims read index 0.
void expand(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t lead = y.rank() - x.rank();
  copy_mapped(ctx, x, y, nullptr, [&](const auto &out, auto &in) {
    for (size_t d = 0; d < in.size(); ++d) in[d] = x.shape()[d] == 1 ? 0 : out[d + lead];
    return true;
  });
}

void tile(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  copy_mapped(ctx, x, y, nullptr, [&](const auto &out, auto &in) {
    for (size_t d = 0; d < in.size(); ++d) in[d] = out[d] % x.shape()[d];
    return true;
  });
}

// in[axis] = start + out[axis] * step, with start clamped as ONNX Slice does.
void slice(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t rank = x.rank();
  const auto starts = ctx.input_ints(1);
  const auto axes = axes_of(ctx, 3, rank, starts.size());
  std::vector<int64_t> steps(starts.size(), 1);
  if (ctx.has_input(4)) steps = ctx.input_ints(4);
  std::vector<int64_t> first(rank, 0), step(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t dim = x.shape()[axes[i]];
    int64_t s = starts[i];
    if (s < 0) s += dim;
    if (dim == 0) continue;  // nothing is read along an empty dim
    s = steps[i] > 0 ? std::clamp(s, int64_t{0}, dim) : std::clamp(s, int64_t{0}, dim - 1);
    first[axes[i]] = s;
    step[axes[i]] = steps[i];
  }
  copy_mapped(ctx, x, y, nullptr, [&](const auto &out, auto &in) {
    for (size_t d = 0; d < rank; ++d) in[d] = first[d] + out[d] * step[d];
    return true;
  });
}

// Part `index` along `axis`: its offset is the sum of the sizes before it.
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
    const int64_t n = ctx.attrs.get_int("num_outputs", 1);
    const int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::clamp(dim - i * chunk, int64_t{0}, chunk));
  }
  int64_t offset = 0;
  for (int64_t i = 0; i < index && i < static_cast<int64_t>(sizes.size()); ++i) offset += sizes[i];
  copy_mapped(ctx, x, y, nullptr, [&](const auto &out, auto &in) {
    for (size_t d = 0; d < in.size(); ++d) in[d] = out[d] + (d == axis ? offset : 0);
    return true;
  });
}

void pad(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t rank = x.rank();
  const std::string mode = ctx.attrs.get_string("mode", "constant");
  const auto pads = ctx.input_ints(1);
  const auto axes = axes_of(ctx, 3, rank, rank);
  std::vector<int64_t> begin(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) begin[axes[i]] = pads[i];
  std::vector<char> fill(dtype_size(y.dtype()), 0);
  if (ctx.has_input(2) && ctx.input(2).numel() == 1)
    std::memcpy(fill.data(), ctx.input(2).raw_data(), fill.size());
  else
    store_as(y.dtype(), ctx.attrs.get_float("value", 0.0), fill.data());
  copy_mapped(ctx, x, y, fill.data(), [&](const auto &out, auto &in) {
    for (size_t d = 0; d < rank; ++d) {
      const int64_t dim = x.shape()[d];
      int64_t i = out[d] - begin[d];
      if (i >= 0 && i < dim) {
        in[d] = i;
        continue;
      }
      if (mode == "constant") return false;
      if (mode == "edge") {
        i = std::clamp(i, int64_t{0}, dim - 1);
      } else if (mode == "wrap") {
        i = ((i % dim) + dim) % dim;
      } else if (dim == 1) {  // reflect on a single element
        i = 0;
      } else {  // reflect: the period is 2 * (dim - 1)
        const int64_t period = 2 * (dim - 1);
        i = ((i % period) + period) % period;
        if (i >= dim) i = period - i;
      }
      in[d] = i;
    }
    return true;
  });
}

void range(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const DType dtype = y.dtype();
  const size_t elem = dtype_size(dtype);
  auto *dst = static_cast<char *>(y.raw_data());
  if (dtype == DType::Int64 || dtype == DType::Int32 || dtype == DType::Int16) {
    const auto start = static_cast<int64_t>(load_as_double(ctx.input(0)));
    const auto delta = static_cast<int64_t>(load_as_double(ctx.input(2)));
    for (int64_t i = 0; i < y.numel(); ++i)
      store_as(dtype, static_cast<double>(start + i * delta), dst + i * elem);
    return;
  }
  const double start = load_as_double(ctx.input(0));
  // start + i * step, with step taken as (start + delta) - start as NumPy's arange does, so
  // results match ONNX's reference bit for bit in float64.
  const double step = (start + load_as_double(ctx.input(2))) - start;
  for (int64_t i = 0; i < y.numel(); ++i)
    store_as(dtype, start + static_cast<double>(i) * step, dst + i * elem);
}

// Keeps element (.., i, j) where j - i >= k (upper) or j - i <= k (lower); zeros the rest.
void trilu(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const int64_t k = ctx.has_input(1) ? ctx.input_ints(1).at(0) : 0;
  const bool upper = ctx.attrs.get_int("upper", 1) != 0;
  const std::vector<char> zero(dtype_size(x.dtype()), 0);
  const size_t r = x.rank();
  copy_mapped(ctx, x, y, zero.data(), [&](const auto &out, auto &in) {
    const int64_t diff = out[r - 1] - out[r - 2];
    if (upper ? diff < k : diff > k) return false;
    for (size_t d = 0; d < r; ++d) in[d] = out[d];
    return true;
  });
}

void depth_to_space(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const int64_t b = ctx.attrs.get_int("blocksize", 1);
  const bool crd = ctx.attrs.get_string("mode", "DCR") == "CRD";
  const int64_t c_out = y.shape()[1];
  copy_mapped(ctx, x, y, nullptr, [&](const auto &out, auto &in) {
    const int64_t i = out[2] % b, j = out[3] % b;
    in[0] = out[0];
    in[1] = crd ? out[1] * b * b + i * b + j : (i * b + j) * c_out + out[1];
    in[2] = out[2] / b;
    in[3] = out[3] / b;
    return true;
  });
}

void space_to_depth(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const int64_t b = ctx.attrs.get_int("blocksize", 1);
  const int64_t c_in = x.shape()[1];
  const bool crd = ctx.attrs.get_string("mode", "DCR") == "CRD";
  copy_mapped(ctx, x, y, nullptr, [&](const auto &out, auto &in) {
    // DCR: out channel (i*b + j)*C + c; CRD: c*b*b + i*b + j.
    const int64_t block = crd ? out[1] % (b * b) : out[1] / c_in, i = block / b, j = block % b;
    in[0] = out[0];
    in[1] = crd ? out[1] / (b * b) : out[1] % c_in;
    in[2] = out[2] * b + i;
    in[3] = out[3] * b + j;
    return true;
  });
}

void eye_like(KernelContext &ctx) {
  Tensor &y = ctx.output(0);
  const int64_t k = ctx.attrs.get_int("k", 0);
  const size_t elem = dtype_size(y.dtype());
  std::vector<char> one(elem), zero(elem);
  store_as(y.dtype(), 1.0, one.data());
  store_as(y.dtype(), 0.0, zero.data());
  auto *dst = static_cast<char *>(y.raw_data());
  const int64_t cols = y.shape()[1];
  for (int64_t i = 0; i < y.numel(); ++i)
    std::memcpy(dst + i * elem, (i % cols) - (i / cols) == k ? one.data() : zero.data(), elem);
}

void reverse_sequence(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const auto batch = static_cast<size_t>(ctx.attrs.get_int("batch_axis", 1));
  const auto time = static_cast<size_t>(ctx.attrs.get_int("time_axis", 0));
  const auto lens = ctx.input_ints(1);
  for (int64_t l : lens)
    if (l < 0 || l > x.shape()[time]) ctx.fail("sequence length ", l, " is out of range");
  copy_mapped(ctx, x, y, nullptr, [&](const auto &out, auto &in) {
    for (size_t d = 0; d < in.size(); ++d) in[d] = out[d];
    const int64_t len = lens.at(static_cast<size_t>(out[batch]));
    if (out[time] < len) in[time] = len - 1 - out[time];
    return true;
  });
}

// Crops (centered, extra element at the end) or zero-pads (centered) each listed axis.
void center_crop_pad(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const size_t rank = x.rank();
  std::vector<int64_t> shift(rank, 0);  // in = out + shift
  for (size_t d = 0; d < rank; ++d) {
    const int64_t dim = x.shape()[d], want = y.shape()[d];
    shift[d] = want < dim ? (dim - want) / 2 : -((want - dim) / 2);
  }
  const std::vector<char> zero(dtype_size(x.dtype()), 0);
  copy_mapped(ctx, x, y, zero.data(), [&](const auto &out, auto &in) {
    for (size_t d = 0; d < rank; ++d) {
      in[d] = out[d] + shift[d];
      if (in[d] < 0 || in[d] >= x.shape()[d]) return false;
    }
    return true;
  });
}

// Each input column l is one block position; element (c, b) of it adds into the image pixel
// l * stride - pad_begin + b * dilation when that lies inside the image.
template <class T>
void col2im(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  Tensor &y = ctx.output(0);
  const auto image = ctx.input_ints(1), block = ctx.input_ints(2);
  const size_t n = image.size();
  const auto strides = ctx.attrs.get_ints("strides", std::vector<int64_t>(n, 1));
  const auto dilations = ctx.attrs.get_ints("dilations", std::vector<int64_t>(n, 1));
  const auto pads = ctx.attrs.get_ints("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> count(n);  // blocks per spatial dim
  int64_t block_size = 1, pixels = 1;
  for (size_t i = 0; i < n; ++i) {
    count[i] =
        (image[i] + pads[i] + pads[i + n] - dilations[i] * (block[i] - 1) - 1) / strides[i] + 1;
    block_size *= block[i];
    pixels *= image[i];
  }
  const int64_t batch = y.shape()[0], channels = y.shape()[1], cols = x.shape()[2];
  T *out = y.data<T>();
  const T *in = x.data<T>();
  std::fill_n(out, y.numel(), T(0));
  std::vector<int64_t> b(n), l(n);
  for (int64_t nc = 0; nc < batch * channels; ++nc) {
    for (int64_t bi = 0; bi < block_size; ++bi) {
      for (int64_t rem = bi, d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
        b[d] = rem % block[d];
        rem /= block[d];
      }
      for (int64_t li = 0; li < cols; ++li) {
        for (int64_t rem = li, d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
          l[d] = rem % count[d];
          rem /= count[d];
        }
        int64_t pixel = 0;
        bool inside = true;
        for (size_t d = 0; d < n && inside; ++d) {
          const int64_t p = l[d] * strides[d] - pads[d] + b[d] * dilations[d];
          inside = p >= 0 && p < image[d];
          pixel = pixel * image[d] + p;
        }
        if (inside) out[nc * pixels + pixel] += in[(nc * block_size + bi) * cols + li];
      }
    }
  }
}

LUMEN_REGISTER_KERNEL("reference", "col2im", col2im<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "col2im", col2im<double>, DType::Float64);
LUMEN_REGISTER_KERNEL("reference", "expand", expand, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "tile", tile, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "slice", slice, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "split", split, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "pad", pad, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "range", range, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16, DType::Int16, DType::Int32, DType::Int64);
LUMEN_REGISTER_KERNEL("reference", "trilu", trilu, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "depth_to_space", depth_to_space, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "space_to_depth", space_to_depth, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "eye_like", eye_like, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "reverse_sequence", reverse_sequence, LUMEN_ALL_DTYPES);
LUMEN_REGISTER_KERNEL("reference", "center_crop_pad", center_crop_pad, LUMEN_ALL_DTYPES);

}  // namespace
}  // namespace lumen
