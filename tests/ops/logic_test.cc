// Comparison, logical, bitwise and selection ops on the reference backend: hand-computed values
// (broadcasting, NaN, shifts out of range) and errors naming the op; the CPU comparisons and
// where against the reference.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

template <class T>
std::vector<T> vals(const Tensor &t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}
std::vector<int> bools(const Tensor &t) {
  std::vector<int> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.data<bool>()[i] ? 1 : 0);
  return out;
}

TEST(LogicTest, ComparisonsBroadcast) {
  const Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, NAN});
  const Tensor b = Tensor::from_vector<float>({2}, {2, 2});
  EXPECT_EQ(bools(call_op("equal", {a, b})[0]), (std::vector<int>{0, 1, 0, 0}));
  EXPECT_EQ(bools(call_op("less", {a, b})[0]), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(bools(call_op("greater", {a, b})[0]), (std::vector<int>{0, 0, 1, 0}));
  EXPECT_EQ(bools(call_op("less_equal", {a, b})[0]), (std::vector<int>{1, 1, 0, 0}));
  EXPECT_EQ(bools(call_op("greater_equal", {a, b})[0]), (std::vector<int>{0, 1, 1, 0}));
  const Tensor u = Tensor::from_vector<uint64_t>({2}, {1, 18446744073709551615ull});
  const Tensor v = Tensor::from_vector<uint64_t>({1}, {2});
  EXPECT_EQ(bools(call_op("greater", {u, v})[0]), (std::vector<int>{0, 1}));
  EXPECT_EQ(call_op("less", {u, v})[0].dtype(), DType::Bool);
}

TEST(LogicTest, LogicalOps) {
  const Tensor a = Tensor::from_vector<bool>({2, 2}, {true, true, false, false});
  const Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  EXPECT_EQ(bools(call_op("logical_and", {a, b})[0]), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(bools(call_op("logical_or", {a, b})[0]), (std::vector<int>{1, 1, 1, 0}));
  EXPECT_EQ(bools(call_op("logical_xor", {a, b})[0]), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(bools(call_op("logical_not", {b})[0]), (std::vector<int>{0, 1}));
  const Tensor f = Tensor::from_vector<float>({2}, {1, 0});
  expect_error([&] { call_op("logical_and", {f, f}); }, {"logical_and", "bool", "float32"});
}

TEST(LogicTest, BitwiseAndShifts) {
  const Tensor a = Tensor::from_vector<int8_t>({3}, {12, -1, 5});
  const Tensor b = Tensor::from_vector<int8_t>({3}, {10, 3, 8});
  EXPECT_EQ(vals<int8_t>(call_op("bitwise_and", {a, b})[0]), (std::vector<int8_t>{8, 3, 0}));
  EXPECT_EQ(vals<int8_t>(call_op("bitwise_or", {a, b})[0]), (std::vector<int8_t>{14, -1, 13}));
  EXPECT_EQ(vals<int8_t>(call_op("bitwise_xor", {a, b})[0]), (std::vector<int8_t>{6, -4, 13}));
  EXPECT_EQ(vals<int8_t>(call_op("bitwise_not", {a})[0]), (std::vector<int8_t>{-13, 0, -6}));
  // Shifts by >= width or < 0: 0 to the left, the sign fill to the right.
  const Tensor x = Tensor::from_vector<int8_t>({4}, {-8, 64, -8, 3});
  const Tensor s = Tensor::from_vector<int8_t>({4}, {1, 1, 8, -1});
  EXPECT_EQ(vals<int8_t>(call_op("bit_shift", {x, s}, {{"direction", std::string("LEFT")}})[0]),
            (std::vector<int8_t>{-16, -128, 0, 0}));
  EXPECT_EQ(vals<int8_t>(call_op("bit_shift", {x, s}, {{"direction", std::string("RIGHT")}})[0]),
            (std::vector<int8_t>{-4, 32, -1, 0}));
  const Tensor u = Tensor::from_vector<uint32_t>({2}, {1, 256});
  const Tensor k = Tensor::from_vector<uint32_t>({1}, {4});
  EXPECT_EQ(vals<uint32_t>(call_op("bit_shift", {u, k}, {{"direction", std::string("RIGHT")}})[0]),
            (std::vector<uint32_t>{0, 16}));
  expect_error(
      [&] {
        call_op("bit_shift", {u, k}, {{"direction", std::string("UP")}});
      },
      {"bit_shift", "direction"});
  const Tensor f = Tensor::from_vector<float>({1}, {1});
  expect_error([&] { call_op("bitwise_and", {f, f}); }, {"bitwise_and", "integer"});
}

TEST(LogicTest, IsNanIsInf) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector<float>({4}, {1, NAN, inf, -inf});
  EXPECT_EQ(bools(call_op("is_nan", {x})[0]), (std::vector<int>{0, 1, 0, 0}));
  EXPECT_EQ(bools(call_op("is_inf", {x})[0]), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(bools(call_op("is_inf", {x}, {{"detect_negative", int64_t(0)}})[0]),
            (std::vector<int>{0, 0, 1, 0}));
  EXPECT_EQ(bools(call_op("is_inf", {x}, {{"detect_positive", int64_t(0)}})[0]),
            (std::vector<int>{0, 0, 0, 1}));
  const Tensor i = Tensor::from_vector<int32_t>({1}, {1});
  expect_error([&] { call_op("is_nan", {i}); }, {"is_nan", "int32"});
}

TEST(LogicTest, WhereBroadcastsThreeWays) {
  const Tensor c = Tensor::from_vector<bool>({2, 1}, {true, false});
  const Tensor x = Tensor::from_vector<int64_t>({3}, {1, 2, 3});
  const Tensor y = Tensor::from_vector<int64_t>({1}, {-1});
  const Tensor out = call_op("where", {c, x, y})[0];
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<int64_t>(out), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  const Tensor f = Tensor::from_vector<float>({1}, {1});
  expect_error([&] { call_op("where", {c, x, f}); }, {"where", "int64", "float32"});
  expect_error([&] { call_op("where", {x, x, x}); }, {"where", "bool"});
  const Tensor bad = Tensor::from_vector<int64_t>({2}, {1, 2});
  expect_error(
      [&] {
        call_op("where", {Tensor::zeros({3}, DType::Bool), bad, bad});
      },
      {"where", "[3]", "[2]"});
}

// The CPU kernels against the reference: every comparison over broadcast patterns and numeric
// dtypes, with ties and NaN; where with a scalar filler, same-shape x and y, a broadcast
// condition, a scalar x, and all three broadcasting differently, for element sizes 1 to 8.
TEST(LogicTest, CpuMatchesReference) {
  const auto expect_same = [](const Tensor &got, const Tensor &want, const std::string &what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    ASSERT_EQ(got.dtype(), want.dtype()) << what;
    const size_t bytes = static_cast<size_t>(got.numel()) * dtype_size(got.dtype());
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), bytes), 0) << what;
  };
  // Integer-valued, so ties are common; float32 also gets a NaN.
  const auto values = [](const Shape &shape, uint64_t seed, DType dtype) {
    Tensor f = testing::random_tensor(shape, seed, -3, 3, DType::Float64);
    Tensor t = Tensor::empty(shape, dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = std::floor(f.data<double>()[i]) + (i == 1 ? NAN : 0.0);
      const auto u = static_cast<int64_t>(std::isnan(v) ? 0 : v);
      switch (dtype) {
        case DType::Float32:
          t.data<float>()[i] = float(v);
          break;
        case DType::Float64:
          t.data<double>()[i] = v;
          break;
        case DType::Int8:
          t.data<int8_t>()[i] = int8_t(u);
          break;
        case DType::UInt8:
          t.data<uint8_t>()[i] = uint8_t(u + 3);
          break;
        case DType::Int16:
          t.data<int16_t>()[i] = int16_t(u);
          break;
        case DType::Int32:
          t.data<int32_t>()[i] = int32_t(u);
          break;
        case DType::Int64:
          t.data<int64_t>()[i] = u;
          break;
        case DType::UInt64:
          t.data<uint64_t>()[i] = uint64_t(u + 3) << 40;
          break;
        case DType::Bool:
          t.data<bool>()[i] = u > 0;
          break;
        default:
          static_cast<uint16_t *>(t.raw_data())[i] = uint16_t(u * 1000 + 7);
          break;
      }
    }
    return t;
  };
  const std::vector<DType> numeric = {DType::Float32, DType::Float64, DType::Int8,
                                      DType::UInt8,   DType::Int16,   DType::Int32,
                                      DType::Int64,   DType::UInt64,  DType::Bool};
  // The last: rank 13, above what the collapsed broadcast runs take.
  const Shape deep_a{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 3},
      deep_b{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1};
  const std::vector<std::pair<Shape, Shape>> pairs = {
      {{2, 3, 70}, {2, 3, 70}}, {{2, 3, 70}, {70}}, {{2, 1, 70}, {3, 1}}, {{5}, {}}, {{}, {4, 1}},
      {deep_a, deep_b}};
  uint64_t seed = 1;
  for (const std::string op : {"equal", "less", "greater", "less_equal", "greater_equal"})
    for (DType dtype : numeric)
      for (const auto &[sa, sb] : pairs) {
        const Tensor a = values(sa, seed++, dtype), b = values(sb, seed++, dtype);
        expect_same(call_op(op, {a, b}, {}, "cpu")[0], call_op(op, {a, b}, {}, "reference")[0],
                    op + " " + a.to_string() + " " + b.to_string());
      }
  struct WhereCase {
    Shape c, x, y;
  };
  for (const WhereCase &w : std::vector<WhereCase>{{{2, 3, 70}, {2, 3, 70}, {}},
                                                   {{2, 3, 70}, {70}, {70}},
                                                   {{2, 1, 70}, {2, 3, 70}, {2, 3, 70}},
                                                   {{2, 3, 70}, {}, {2, 3, 70}},
                                                   {{2, 3, 70}, {3, 1}, {1, 70}},
                                                   {{2, 1, 70}, {3, 1}, {1, 70}},
                                                   {{1, 5}, {4, 1}, {}},
                                                   {deep_a, deep_b, {3}}})
    for (DType dtype : {DType::Float32, DType::Int32, DType::Int64, DType::Float64, DType::Int8,
                        DType::Bool, DType::Float16}) {
      const Tensor c = call_op(
          "greater", {values(w.c, seed++, DType::Float32), Tensor::from_vector<float>({}, {0})})[0];
      const Tensor x = values(w.x, seed++, dtype), y = values(w.y, seed++, dtype);
      expect_same(call_op("where", {c, x, y}, {}, "cpu")[0],
                  call_op("where", {c, x, y}, {}, "reference")[0],
                  "where " + c.to_string() + " " + x.to_string() + " " + y.to_string());
    }
  // Strings are assigned element by element.
  const Tensor c = Tensor::from_vector<bool>({2, 2}, {true, false, false, true});
  const Tensor x = Tensor::from_vector<std::string>({2, 1}, {"a long string, not inlined", "b"});
  const Tensor y = Tensor::from_vector<std::string>({2}, {"c", "d"});
  for (const char *backend : {"cpu", "reference"}) {
    const Tensor picked = call_op("where", {c, x, y}, {}, backend)[0];
    ASSERT_EQ(picked.shape(), Shape({2, 2})) << backend;
    EXPECT_EQ(std::vector<std::string>(picked.data<std::string>(), picked.data<std::string>() + 4),
              (std::vector<std::string>{"a long string, not inlined", "d", "c", "b"}))
        << backend;
  }
}

}  // namespace
}  // namespace lumen
