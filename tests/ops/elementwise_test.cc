// Broadcasting binary ops: hand-computed values on the reference backend (including integer
// truncation and NaN propagation), CPU against reference for every op, dtype and broadcasting
// pattern (exact ops at rtol 1e-6; pow at rtol 1e-5), and errors naming the op.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

using testing::all_close;
using testing::cpu_matches_reference;
using testing::random_tensor;

template <class T>
std::vector<T> values(const Tensor &t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

Tensor run(const std::string &op, const Tensor &a, const Tensor &b,
           const std::string &backend = "reference") {
  return call_op(op, {a, b}, {}, backend).at(0);
}

TEST(ElementwiseTest, HandComputedFloat) {
  const Tensor a = Tensor::from_vector<float>({3}, {1, 2, 3});
  const Tensor b = Tensor::from_vector<float>({}, {10});
  EXPECT_EQ(values<float>(run("add", a, b)), (std::vector<float>{11, 12, 13}));
  EXPECT_EQ(values<float>(run("sub", a, b)), (std::vector<float>{-9, -8, -7}));
  EXPECT_EQ(values<float>(run("sub", b, a)), (std::vector<float>{9, 8, 7}));
  EXPECT_EQ(values<float>(run("mul", a, b)), (std::vector<float>{10, 20, 30}));
  const Tensor c = Tensor::from_vector<float>({2}, {1, 2});
  const Tensor d = Tensor::from_vector<float>({2}, {4, 8});
  EXPECT_EQ(values<float>(run("div", c, d)), (std::vector<float>{0.25f, 0.25f}));
  const Tensor e = Tensor::from_vector<float>({2}, {2, 3});
  const Tensor f = Tensor::from_vector<float>({2}, {3, 2});
  EXPECT_EQ(values<float>(run("pow", e, f)), (std::vector<float>{8, 9}));
  EXPECT_EQ(values<float>(run("maximum", e, f)), (std::vector<float>{3, 3}));
  EXPECT_EQ(values<float>(run("minimum", e, f)), (std::vector<float>{2, 2}));
}

// pow by a scalar 2, 3 or 4 is computed by multiplication (float32 and float64, negative bases,
// NaN, -0); other exponents take std::pow.
TEST(ElementwiseTest, PowBySmallIntegerMatchesReference) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor x = testing::random_tensor({3, 70}, 50, -4, 4, dtype);
    if (dtype == DType::Float32) {
      x.data<float>()[0] = NAN, x.data<float>()[1] = -0.0f;
    }
    for (double e : {2.0, 3.0, 4.0, 2.5, 1.0}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " ^ " + std::to_string(e));
      Tensor exponent = Tensor::empty(Shape{}, dtype);
      if (dtype == DType::Float32)
        exponent.data<float>()[0] = float(e);
      else
        exponent.data<double>()[0] = e;
      EXPECT_TRUE(testing::cpu_matches_reference("pow", {x, exponent}, {}, 1e-6, 0));
    }
  }
}

TEST(ElementwiseTest, HandComputedBroadcast) {
  // [2,1] + [1,3] -> [2,3]
  const Tensor a = Tensor::from_vector<float>({2, 1}, {10, 20});
  const Tensor b = Tensor::from_vector<float>({1, 3}, {1, 2, 3});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = run("add", a, b, backend);
    EXPECT_EQ(y.shape(), (Shape{2, 3}));
    EXPECT_EQ(values<float>(y), (std::vector<float>{11, 12, 13, 21, 22, 23}));
    // [2,3] - [3]
    const Tensor m = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor v = Tensor::from_vector<float>({3}, {1, 1, 2});
    EXPECT_EQ(values<float>(run("sub", m, v, backend)), (std::vector<float>{0, 1, 1, 3, 4, 4}));
  }
}

TEST(ElementwiseTest, IntegerDivisionTruncates) {
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor a = Tensor::from_vector<int32_t>({4}, {7, -7, 7, -7});
    const Tensor b = Tensor::from_vector<int32_t>({4}, {2, 2, -2, -2});
    EXPECT_EQ(values<int32_t>(run("div", a, b, backend)), (std::vector<int32_t>{3, -3, -3, 3}));
    const Tensor c = Tensor::from_vector<int64_t>({2}, {9, -9});
    const Tensor d = Tensor::from_vector<int64_t>({}, {4});
    EXPECT_EQ(values<int64_t>(run("div", c, d, backend)), (std::vector<int64_t>{2, -2}));
    // INT_MIN / -1 overflows in C; here it wraps instead of trapping.
    const int32_t lo = std::numeric_limits<int32_t>::min();
    const Tensor e = Tensor::from_vector<int32_t>({2}, {lo, 6});
    const Tensor f = Tensor::from_vector<int32_t>({}, {-1});
    EXPECT_EQ(values<int32_t>(run("div", e, f, backend)), (std::vector<int32_t>{lo, -6}));
  }
}

TEST(ElementwiseTest, IntegerOpsWrapAndCompare) {
  for (const std::string backend : {"reference", "cpu"}) {
    const int32_t hi = std::numeric_limits<int32_t>::max();
    const Tensor a = Tensor::from_vector<int32_t>({3}, {hi, -5, 3});
    const Tensor b = Tensor::from_vector<int32_t>({3}, {1, 4, -8});
    EXPECT_EQ(values<int32_t>(run("add", a, b, backend)),
              (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -1, -5}));
    EXPECT_EQ(values<int32_t>(run("maximum", a, b, backend)), (std::vector<int32_t>{hi, 4, 3}));
    EXPECT_EQ(values<int32_t>(run("minimum", a, b, backend)), (std::vector<int32_t>{1, -5, -8}));
    EXPECT_EQ(values<int32_t>(run("mul", a, b, backend))[1], -20);
  }
}

TEST(ElementwiseTest, MaximumMinimumPropagateNan) {
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor a = Tensor::from_vector<float>({3}, {NAN, 1, 2});
    const Tensor b = Tensor::from_vector<float>({3}, {0, NAN, 1});
    for (const std::string op : {"maximum", "minimum"}) {
      const auto y = values<float>(run(op, a, b, backend));
      EXPECT_TRUE(std::isnan(y[0])) << op << " " << backend;
      EXPECT_TRUE(std::isnan(y[1])) << op << " " << backend;
      EXPECT_EQ(y[2], op == "maximum" ? 2.0f : 1.0f);
    }
  }
}

struct ShapePair {
  Shape a, b;
};

std::vector<ShapePair> broadcast_cases() {
  return {{{2, 3, 4}, {4}},
          {{2, 1, 4}, {3, 1}},
          {{}, {5}},
          {{5}, {}},
          {{}, {}},
          {{2, 3, 4}, {2, 3, 4}},
          {{1}, {1}},
          {{0, 3}, {3}},
          {{2, 0, 4}, {1, 4}},
          {{3}, {0, 3}},
          {{3, 1, 5}, {1, 4, 1}},
          {{4, 1}, {4, 6}},
          {{2, 3, 1, 5}, {3, 7, 1}},
          {{1, 1, 6}, {5, 1, 1}},
          {{6, 1}, {1}},
          // One operand full, the other with a run of 1s before a short row (the row-broadcast
          // path): a blocked per-channel scale either way round, a leading run, a run of one dim,
          // and two runs (the general loop).
          {{2, 3, 4, 5, 8}, {2, 3, 1, 1, 8}},
          {{2, 3, 1, 1, 8}, {2, 3, 4, 5, 8}},
          {{1, 1, 1, 8}, {2, 3, 5, 8}},
          {{3, 7, 5}, {3, 1, 5}},
          {{2, 3, 4, 5, 8}, {2, 1, 4, 1, 8}}};
}

// Inputs of `dtype` for `op`: divisors never zero, pow bases positive.
Tensor operand(const std::string &op, bool second, const Shape &shape, uint64_t seed, DType dtype) {
  const bool is_int = dtype == DType::Int32 || dtype == DType::Int64;
  if (op == "pow") return random_tensor(shape, seed, second ? -3 : 0.1, 3, dtype);
  Tensor t = random_tensor(shape, seed, is_int ? -50 : -4, is_int ? 50 : 4, dtype);
  if (op == "div" && second && is_int)
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dtype == DType::Int32 && t.data<int32_t>()[i] == 0) t.data<int32_t>()[i] = 1;
      if (dtype == DType::Int64 && t.data<int64_t>()[i] == 0) t.data<int64_t>()[i] = -1;
    }
  return t;
}

const std::vector<std::string> kOps = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};

std::vector<DType> dtypes_for(const std::string &op) {
  if (op == "pow") return {DType::Float32, DType::Float64};
  return {DType::Float32, DType::Float64, DType::Int32, DType::Int64};
}

TEST(ElementwiseTest, CpuMatchesReferenceBroadcasting) {
  uint64_t seed = 1;
  for (const std::string &op : kOps)
    for (DType dtype : dtypes_for(op))
      for (const ShapePair &c : broadcast_cases()) {
        const Tensor a = operand(op, false, c.a, seed++, dtype);
        const Tensor b = operand(op, true, c.b, seed++, dtype);
        const auto y = call_op(op, {a, b}, {}, "reference").at(0);
        EXPECT_EQ(y.shape(), *broadcast_shapes(c.a, c.b)) << op;
        EXPECT_TRUE(cpu_matches_reference(op, {a, b}, {}, 1e-6, 1e-7))
            << op << " " << a.to_string() << " " << b.to_string();
      }
}

TEST(ElementwiseTest, CpuMatchesReferenceLarge) {
  const std::vector<ShapePair> cases = {{{1 << 20}, {1 << 20}},
                                        {{1024, 1024}, {1024, 1}},
                                        {{1024, 1024}, {1024}},
                                        {{}, {1 << 20}},
                                        {{2, 512, 1}, {2, 1, 1024}}};
  uint64_t seed = 1000;
  for (const std::string &op : kOps)
    for (const ShapePair &c : cases) {
      const DType dtype = op == "div" ? DType::Int32 : DType::Float32;
      const Tensor a = operand(op, false, c.a, seed++, dtype);
      const Tensor b = operand(op, true, c.b, seed++, dtype);
      EXPECT_TRUE(cpu_matches_reference(op, {a, b}, {}, 1e-6, 1e-7))
          << op << " " << a.to_string() << " " << b.to_string();
    }
  const Tensor a = operand("div", false, {1 << 20}, 7, DType::Float64);
  const Tensor b = operand("div", true, {1 << 20}, 8, DType::Float64);
  EXPECT_TRUE(cpu_matches_reference("div", {a, b}, {}, 1e-12, 1e-14));
}

TEST(ElementwiseTest, IntegerDivisionByZeroIsError) {
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor a = Tensor::from_vector<int32_t>({3}, {1, 2, 3});
    const Tensor b = Tensor::from_vector<int32_t>({3}, {1, 0, 3});
    expect_error([&] { call_op("div", {a, b}, {}, backend); }, {"div", "division by zero"});
    const Tensor c = Tensor::from_vector<int64_t>({2, 1}, {5, 6});
    const Tensor z = Tensor::from_vector<int64_t>({}, {0});
    expect_error([&] { call_op("div", {c, z}, {}, backend); }, {"div", "division by zero"});
    // Empty output: nothing is divided, so no error.
    const Tensor e = Tensor::from_vector<int32_t>({0, 3}, {});
    EXPECT_EQ(call_op("div", {e, b}, {}, backend).at(0).shape(), (Shape{0, 3}));
  }
  // Float division by zero is IEEE: inf.
  const Tensor f = Tensor::from_vector<float>({1}, {1});
  const Tensor g = Tensor::from_vector<float>({1}, {0});
  EXPECT_TRUE(std::isinf(call_op("div", {f, g}, {}, "cpu").at(0).data<float>()[0]));
}

TEST(ElementwiseTest, BroadcastMismatchIsError) {
  const Tensor a = random_tensor({2, 3}, 1), b = random_tensor({4}, 2);
  for (const std::string &op : kOps)
    expect_error([&] { call_op(op, {a, b}); }, {"'" + op + "'", "[2, 3]", "[4]"});
  expect_error(
      [&] {
        call_op("add", {random_tensor({2, 3, 4}, 1), random_tensor({3, 1, 5}, 2)});
      },
      {"add", "[2, 3, 4]", "[3, 1, 5]"});
}

TEST(ElementwiseTest, DtypeMismatchIsError) {
  const Tensor a = random_tensor({3}, 1, -1, 1, DType::Float32);
  const Tensor b = random_tensor({3}, 2, -1, 1, DType::Int32);
  expect_error([&] { call_op("mul", {a, b}); }, {"mul", "float32", "int32"});
  expect_error([&] { call_op("add", {b, a}, {}, "cpu"); }, {"add", "int32", "float32"});
  // bool is not numeric.
  const Tensor u = Tensor::zeros({2}, DType::Bool);
  expect_error([&] { call_op("add", {u, u}); }, {"add", "bool"});
  expect_error([&] { call_op("pow", {a, u}); }, {"pow", "bool"});
  expect_error([&] { call_op("add", {a}); }, {"add", "expected 2 inputs, got 1"});
}

}  // namespace
}  // namespace lumen

namespace lumen {
namespace {

// Graph-time inference with unknown dims (kUnknownDim prints as "?").
TEST(ElementwiseTest, InferenceWithUnknownDims) {
  const TensorType a{DType::Float32, Shape{kUnknownDim, 3}}, b{DType::Float32, Shape{4, 1, 1}};
  const Attributes attrs;
  InferContext ctx{.inputs = {&a, &b}, .attrs = attrs, .op = "add", .node = "n1"};
  const auto out = infer_types(get_op("add"), ctx);
  EXPECT_EQ(out.at(0).shape, (Shape{4, kUnknownDim, 3}));
  const TensorType c{DType::Float32, Shape{kUnknownDim, 2}}, d{DType::Float32, Shape{5, 3}};
  InferContext bad{.inputs = {&c, &d}, .attrs = attrs, .op = "mul", .node = "n2"};
  expect_error([&] { infer_types(get_op("mul"), bad); }, {"mul", "n2", "[?, 2]", "[5, 3]"});
}

}  // namespace
}  // namespace lumen

namespace lumen {
namespace {

template <class T>
std::vector<T> vals(const Tensor &t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

TEST(ElementwiseTest, SmallAndUnsignedIntegersWrap) {
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor a = Tensor::from_vector<int8_t>({3}, {127, -128, 10});
    const Tensor b = Tensor::from_vector<int8_t>({3}, {1, -1, -3});
    EXPECT_EQ(vals<int8_t>(call_op("add", {a, b}, {}, backend)[0]),
              (std::vector<int8_t>{-128, 127, 7}));
    EXPECT_EQ(vals<int8_t>(call_op("div", {a, b}, {}, backend)[0]),
              (std::vector<int8_t>{127, -128, -3}));
    const Tensor c = Tensor::from_vector<uint16_t>({2}, {65535, 3});
    const Tensor d = Tensor::from_vector<uint16_t>({2}, {65535, 5});
    EXPECT_EQ(vals<uint16_t>(call_op("mul", {c, d}, {}, backend)[0]),
              (std::vector<uint16_t>{1, 15}));
    EXPECT_EQ(vals<uint16_t>(call_op("sub", {c, d}, {}, backend)[0]),
              (std::vector<uint16_t>{0, 65534}));
    // Division by UINT_MAX is a plain unsigned division.
    const Tensor e = Tensor::from_vector<uint32_t>({2}, {7, 4294967295u});
    const Tensor f = Tensor::from_vector<uint32_t>({2}, {4294967295u, 4294967295u});
    EXPECT_EQ(vals<uint32_t>(call_op("div", {e, f}, {}, backend)[0]),
              (std::vector<uint32_t>{0, 1}));
    const Tensor g = Tensor::from_vector<uint64_t>({2}, {5, 1});
    const Tensor h = Tensor::from_vector<uint64_t>({1}, {3});
    EXPECT_EQ(vals<uint64_t>(call_op("maximum", {g, h}, {}, backend)[0]),
              (std::vector<uint64_t>{5, 3}));
  }
}

TEST(ElementwiseTest, HalfPrecisionRoundsToNearestEven) {
  // float16 1.0 = 0x3C00, 2^-11 = 0x1000 (half an ulp of 1): 1 + 2^-11 ties to even -> 1.0;
  // 1 + 3 * 2^-11 ties up to 1 + 2^-9 (0x3C02).
  const Tensor a = Tensor::from_vector<Float16>({2}, {Float16{0x3C00}, Float16{0x3C01}});
  const Tensor b = Tensor::from_vector<Float16>({2}, {Float16{0x1000}, Float16{0x1000}});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("add", {a, b}, {}, backend)[0];
    EXPECT_EQ(y.data<Float16>()[0].bits, 0x3C00);
    EXPECT_EQ(y.data<Float16>()[1].bits, 0x3C02);
  }
  // bfloat16 1.0 = 0x3F80; 1.5 * 2 = 3 = 0x4040.
  const Tensor c = Tensor::from_vector<BFloat16>({1}, {BFloat16{0x3FC0}});
  const Tensor d = Tensor::from_vector<BFloat16>({1}, {BFloat16{0x4000}});
  EXPECT_EQ(call_op("mul", {c, d})[0].data<BFloat16>()[0].bits, 0x4040);
}

TEST(ElementwiseTest, PowMixedDtypes) {
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor fb = Tensor::from_vector<float>({3}, {1.5f, 2, -2});
    const Tensor ie = Tensor::from_vector<int64_t>({3}, {2, -1, 3});
    const Tensor y = call_op("pow", {fb, ie}, {}, backend)[0];
    EXPECT_EQ(y.dtype(), DType::Float32);
    EXPECT_EQ(vals<float>(y), (std::vector<float>{2.25f, 0.5f, -8}));
    const Tensor ib = Tensor::from_vector<int32_t>({3}, {2, 3, -2});
    const Tensor fe = Tensor::from_vector<float>({3}, {3, 0.5f, 2});
    const Tensor z = call_op("pow", {ib, fe}, {}, backend)[0];
    EXPECT_EQ(z.dtype(), DType::Int32);
    EXPECT_EQ(vals<int32_t>(z), (std::vector<int32_t>{8, 1, 4}));
    const Tensor ie2 = Tensor::from_vector<int32_t>({3}, {10, 2, -1});
    EXPECT_EQ(vals<int32_t>(call_op("pow", {ib, ie2}, {}, backend)[0]),
              (std::vector<int32_t>{1024, 9, 0}));
  }
}

}  // namespace
}  // namespace lumen
