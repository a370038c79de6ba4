// Helpers for op tests: random inputs, running an op on a named backend, and comparing results.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/scalar.h"
#include "lumen/lumen.h"

namespace lumen::testing {

// Uniform values in [lo, hi), as float32 (or the given floating dtype), fixed seed.
inline Tensor random_tensor(const Shape &shape, uint64_t seed, double lo = -1.0, double hi = 1.0,
                            DType dtype = DType::Float32) {
  Tensor t = Tensor::empty(shape, dtype);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  const int64_t n = t.numel();
  switch (dtype) {
    case DType::Float32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = float(dist(rng));
      break;
    case DType::Float64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = dist(rng);
      break;
    case DType::Int32:
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = int32_t(std::floor(dist(rng)));
      break;
    case DType::Int64:
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = int64_t(std::floor(dist(rng)));
      break;
    default:
      ADD_FAILURE() << "random_tensor: unsupported dtype";
      break;
  }
  return t;
}

inline double element_as_double(const Tensor &t, int64_t i) {
  switch (t.dtype()) {
    case DType::Float32:
      return t.data<float>()[i];
    case DType::Float64:
      return t.data<double>()[i];
    case DType::Int32:
      return t.data<int32_t>()[i];
    case DType::Int64:
      return double(t.data<int64_t>()[i]);
    case DType::UInt8:
      return t.data<uint8_t>()[i];
    case DType::Int8:
      return t.data<int8_t>()[i];
    case DType::Int16:
      return t.data<int16_t>()[i];
    case DType::UInt16:
      return t.data<uint16_t>()[i];
    case DType::UInt32:
      return t.data<uint32_t>()[i];
    case DType::UInt64:
      return double(t.data<uint64_t>()[i]);
    case DType::Bool:
      return t.data<bool>()[i];
    case DType::Float16:
      return scalar::half_to_float(t.data<Float16>()[i]);
    case DType::BFloat16:
      return scalar::bfloat16_to_float(t.data<BFloat16>()[i]);
    default:
      ADD_FAILURE() << "element_as_double: unsupported dtype";
      return 0;
  }
}

// |actual - expected| <= atol + rtol * |expected| for every element; shapes and dtypes equal.
inline ::testing::AssertionResult all_close(const Tensor &actual, const Tensor &expected,
                                            double rtol = 1e-5, double atol = 1e-6) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape())
    return ::testing::AssertionFailure()
           << "got " << actual.to_string() << ", expected " << expected.to_string();
  const Tensor a = actual.contiguous(), e = expected.contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = element_as_double(a, i), y = element_as_double(e, i);
    if ((std::isnan(x) && std::isnan(y)) || x == y) continue;  // x == y: equal infinities too
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y)))
      return ::testing::AssertionFailure() << "element " << i << ": got " << x << ", expected " << y
                                           << " (" << a.to_string() << ")";
  }
  return ::testing::AssertionSuccess();
}

// Expects `fn` to throw lumen::Error whose message contains every one of `needles`.
template <class Fn>
void expect_error(Fn &&fn, const std::vector<std::string> &needles) {
  try {
    fn();
    ADD_FAILURE() << "expected lumen::Error";
  } catch (const Error &e) {
    const std::string msg = e.what();
    for (const auto &needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos) << "'" << needle << "' not in: " << msg;
  }
}
template <class Fn>
void expect_error(Fn &&fn, const char *needle) {
  expect_error(std::forward<Fn>(fn), std::vector<std::string>{needle});
}

// Runs `op` on the "cpu" and "reference" backends and checks they agree.
inline ::testing::AssertionResult cpu_matches_reference(const std::string &op,
                                                        const std::vector<Tensor> &inputs,
                                                        const Attributes &attrs = {},
                                                        double rtol = 1e-5, double atol = 1e-5) {
  const auto expected = call_op(op, inputs, attrs, "reference");
  const auto actual = call_op(op, inputs, attrs, "cpu");
  if (expected.size() != actual.size())
    return ::testing::AssertionFailure() << "output counts differ";
  for (size_t i = 0; i < expected.size(); ++i) {
    auto r = all_close(actual[i], expected[i], rtol, atol);
    if (!r) return r << " [op " << op << ", output " << i << "]";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace lumen::testing
