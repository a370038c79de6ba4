// Element-wise CUDA kernels over several element types: cast, where and the comparisons. A
// thread per output element (grid.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cuda/std/limits>
#include <type_traits>

#include "backends/cuda/kernels/grid.cuh"
#include "backends/cuda/kernels/launch.h"

namespace lumen::cuda {
namespace {

// Every value through double, except integers to integers (exact, wrapping like C++).
template <class T>
__device__ inline double to_double(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return static_cast<double>(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return static_cast<double>(__bfloat162float(v));
  else
    return static_cast<double>(v);
}

template <class T>
inline constexpr bool kFloating =
    std::is_floating_point_v<T> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class To, class From>
__device__ inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return to_double(v) != 0.0;  // NaN is true, as != 0
  } else if constexpr (std::is_same_v<To, __half>) {
    return __double2half(to_double(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __double2bfloat16(to_double(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    if constexpr (std::is_same_v<From, __half> || std::is_same_v<From, __nv_bfloat16>)
      return static_cast<To>(to_double(v));
    else
      return static_cast<To>(v);           // one rounding, as on the CPU
  } else if constexpr (kFloating<From>) {  // to an integer: truncate, saturate, NaN to 0
    const double d = to_double(v);
    if (d != d) return To(0);
    constexpr double lo = static_cast<double>(::cuda::std::numeric_limits<To>::min());
    constexpr double hi = static_cast<double>(::cuda::std::numeric_limits<To>::max());
    if (d <= lo) return ::cuda::std::numeric_limits<To>::min();
    if (d >= hi) return ::cuda::std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

template <class From, class To>
__global__ void cast_kernel(const From *x, To *y, int64_t n) {
  LUMEN_GRID_LOOP(i, n) {
    y[i] = convert<To>(x[i]);
  }
}

template <class From, class To>
void cast_to(const void *x, void *y, int64_t n, cudaStream_t stream) {
  cast_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const From *>(x),
                                                      static_cast<To *>(y), n);
}

template <class From>
cudaError_t cast_from(int to, const void *x, void *y, int64_t n, cudaStream_t stream) {
  switch (to) {
    case kF32:
      cast_to<From, float>(x, y, n, stream);
      break;
    case kF16:
      cast_to<From, __half>(x, y, n, stream);
      break;
    case kBF16:
      cast_to<From, __nv_bfloat16>(x, y, n, stream);
      break;
    case kF64:
      cast_to<From, double>(x, y, n, stream);
      break;
    case kI8:
      cast_to<From, int8_t>(x, y, n, stream);
      break;
    case kI32:
      cast_to<From, int32_t>(x, y, n, stream);
      break;
    case kI64:
      cast_to<From, int64_t>(x, y, n, stream);
      break;
    case kU8:
      cast_to<From, uint8_t>(x, y, n, stream);
      break;
    case kBool:
      cast_to<From, bool>(x, y, n, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <class T>
__global__ void where_kernel(const bool *cond, const T *a, const T *b, T *y, Walk w) {
  LUMEN_GRID_LOOP(i, w.count) {
    int64_t at[3];
    walk_offsets(w, i, at);
    y[i] = cond[at[0]] ? a[at[1]] : b[at[2]];
  }
}

template <class T>
__global__ void compare_kernel(int code, const T *a, const T *b, bool *y, Walk w) {
  LUMEN_GRID_LOOP(i, w.count) {
    int64_t at[2];
    walk_offsets(w, i, at);
    const T u = a[at[0]], v = b[at[1]];
    switch (code) {
      case kEqual:
        y[i] = u == v;
        break;
      case kLess:
        y[i] = u < v;
        break;
      case kGreater:
        y[i] = u > v;
        break;
      case kLessEqual:
        y[i] = u <= v;
        break;
      default:
        y[i] = u >= v;
    }
  }
}

}  // namespace

cudaError_t launch_cast(int from, int to, const void *x, void *y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (from) {
    case kF32:
      return cast_from<float>(to, x, y, n, stream);
    case kF16:
      return cast_from<__half>(to, x, y, n, stream);
    case kBF16:
      return cast_from<__nv_bfloat16>(to, x, y, n, stream);
    case kF64:
      return cast_from<double>(to, x, y, n, stream);
    case kI8:
      return cast_from<int8_t>(to, x, y, n, stream);
    case kI32:
      return cast_from<int32_t>(to, x, y, n, stream);
    case kI64:
      return cast_from<int64_t>(to, x, y, n, stream);
    case kU8:
      return cast_from<uint8_t>(to, x, y, n, stream);
    case kBool:
      return cast_from<bool>(to, x, y, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_where(int element_bytes, const bool *cond, const void *a, const void *b, void *y,
                         const Walk &walk, cudaStream_t stream) {
  if (walk.count == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(walk.count);
  switch (element_bytes) {
    case 1:
      where_kernel<<<blocks, kThreads, 0, stream>>>(cond, static_cast<const uint8_t *>(a),
                                                    static_cast<const uint8_t *>(b),
                                                    static_cast<uint8_t *>(y), walk);
      break;
    case 2:
      where_kernel<<<blocks, kThreads, 0, stream>>>(cond, static_cast<const uint16_t *>(a),
                                                    static_cast<const uint16_t *>(b),
                                                    static_cast<uint16_t *>(y), walk);
      break;
    case 4:
      where_kernel<<<blocks, kThreads, 0, stream>>>(cond, static_cast<const uint32_t *>(a),
                                                    static_cast<const uint32_t *>(b),
                                                    static_cast<uint32_t *>(y), walk);
      break;
    case 8:
      where_kernel<<<blocks, kThreads, 0, stream>>>(cond, static_cast<const uint64_t *>(a),
                                                    static_cast<const uint64_t *>(b),
                                                    static_cast<uint64_t *>(y), walk);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_compare(int code, int type, const void *a, const void *b, bool *y,
                           const Walk &walk, cudaStream_t stream) {
  if (walk.count == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(walk.count);
  switch (type) {
    case kF32:
      compare_kernel<<<blocks, kThreads, 0, stream>>>(code, static_cast<const float *>(a),
                                                      static_cast<const float *>(b), y, walk);
      break;
    case kI32:
      compare_kernel<<<blocks, kThreads, 0, stream>>>(code, static_cast<const int32_t *>(a),
                                                      static_cast<const int32_t *>(b), y, walk);
      break;
    case kI64:
      compare_kernel<<<blocks, kThreads, 0, stream>>>(code, static_cast<const int64_t *>(a),
                                                      static_cast<const int64_t *>(b), y, walk);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace lumen::cuda
