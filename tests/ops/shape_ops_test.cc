// reshape, transpose, concat: hand-computed results, CPU against reference byte for byte for many
// shapes and every element size, and errors naming the op and the shapes.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

using testing::random_tensor;

// Random bytes of any dtype (Bool gets 0/1 so every byte is a valid bool).
Tensor random_any(const Shape &shape, DType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(shape, dtype);
  std::mt19937_64 rng(seed);
  auto *p = static_cast<unsigned char *>(t.raw_data());
  for (size_t i = 0; i < t.nbytes(); ++i)
    p[i] = static_cast<unsigned char>(dtype == DType::Bool ? rng() & 1 : rng());
  return t;
}

::testing::AssertionResult same_bytes(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return ::testing::AssertionFailure() << a.to_string() << " vs " << b.to_string();
  if (a.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0)
    return ::testing::AssertionFailure() << "bytes differ for " << a.to_string();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult cpu_equals_reference(const std::string &op,
                                                const std::vector<Tensor> &inputs,
                                                const Attributes &attrs) {
  const Tensor want = call_op(op, inputs, attrs, "reference").at(0);
  const Tensor got = call_op(op, inputs, attrs, "cpu").at(0);
  return same_bytes(got, want) << " [" << op << " " << attrs.to_string() << "]";
}

template <class T>
std::vector<T> values(const Tensor &t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

const std::vector<DType> kAllDTypes = {
    DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8,
    DType::Int16,   DType::Int32,   DType::Int64,    DType::UInt8,   DType::Bool};

Attributes shape_attr(std::vector<int64_t> shape, int64_t allowzero = 0) {
  Attributes a{{"shape", std::move(shape)}};
  if (allowzero) a.set("allowzero", allowzero);
  return a;
}

// ---- reshape ---------------------------------------------------------------------------------

TEST(ShapeOpsTest, ReshapeHandComputed) {
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("reshape", {x}, shape_attr({3, 2}), backend).at(0);
    EXPECT_EQ(y.shape(), (Shape{3, 2}));
    EXPECT_EQ(values<float>(y), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(call_op("reshape", {x}, shape_attr({-1}), backend).at(0).shape(), (Shape{6}));
    EXPECT_EQ(call_op("reshape", {x}, shape_attr({0, -1, 1}), backend).at(0).shape(),
              (Shape{2, 3, 1}));
  }
}

TEST(ShapeOpsTest, ReshapeInference) {
  const Tensor x = random_tensor({2, 3, 4}, 1);
  auto shape_of = [&](const Tensor &t, Attributes attrs) {
    return call_op("reshape", {t}, attrs).at(0).shape();
  };
  EXPECT_EQ(shape_of(x, shape_attr({0, -1})), (Shape{2, 12}));
  EXPECT_EQ(shape_of(x, shape_attr({-1, 0, 2, 2})), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(shape_of(x, shape_attr({4, 0, 2})), (Shape{4, 3, 2}));
  // Scalars and size-1.
  const Tensor s = Tensor::from_vector<float>({}, {7});
  EXPECT_EQ(shape_of(s, shape_attr({1, 1})), (Shape{1, 1}));
  EXPECT_EQ(shape_of(s, shape_attr({-1})), (Shape{1}));
  EXPECT_EQ(shape_of(random_tensor({1, 1}, 2), shape_attr({})), Shape{});
  // Empty tensors: 0 copies, allowzero keeps a real 0.
  const Tensor e = random_tensor({0, 3}, 3);
  EXPECT_EQ(shape_of(e, shape_attr({3, 0}, 1)), (Shape{3, 0}));
  EXPECT_EQ(shape_of(e, shape_attr({0, 3})), (Shape{0, 3}));  // 0 copies the input's 0
  EXPECT_EQ(shape_of(e, shape_attr({-1, 3})), (Shape{0, 3}));
  EXPECT_EQ(shape_of(e, shape_attr({3, 5, 0}, 1)), (Shape{3, 5, 0}));
}

TEST(ShapeOpsTest, ReshapeCpuMatchesReference) {
  uint64_t seed = 1;
  for (DType dtype : kAllDTypes) {
    EXPECT_TRUE(cpu_equals_reference("reshape", {random_any({2, 3, 4}, dtype, seed++)},
                                     shape_attr({4, -1})));
    EXPECT_TRUE(cpu_equals_reference("reshape", {random_any({}, dtype, seed++)}, shape_attr({1})));
    EXPECT_TRUE(cpu_equals_reference("reshape", {random_any({0, 4}, dtype, seed++)},
                                     shape_attr({4, 0}, 1)));
  }
  EXPECT_TRUE(cpu_equals_reference("reshape", {random_any({1 << 20}, DType::Float32, 9)},
                                   shape_attr({1024, -1})));
}

TEST(ShapeOpsTest, ReshapeErrors) {
  const Tensor x = random_tensor({2, 3}, 1);
  expect_error(
      [&] {
        call_op("reshape", {x}, shape_attr({4, 2}));
      },
      {"reshape", "[2, 3]", "[4, 2]", "6 elements", "8 elements"});
  expect_error([&] { call_op("reshape", {x}, shape_attr({-1, -1})); }, {"reshape", "-1"});
  expect_error([&] { call_op("reshape", {x}, shape_attr({4, -1})); }, {"reshape", "[2, 3]"});
  expect_error([&] { call_op("reshape", {x}, shape_attr({2, -3})); }, {"reshape", "-3"});
  expect_error([&] { call_op("reshape", {x}, shape_attr({0, 0, 0})); }, {"reshape", "rank 2"});
  expect_error([&] { call_op("reshape", {x}); }, {"reshape", "shape"});
  expect_error(
      [&] {
        call_op("reshape", {random_tensor({0, 3}, 1)}, shape_attr({0, -1}, 1));
      },
      {"reshape", "allowzero"});
  // 0 copies the input's 0, so -1 could be anything.
  expect_error(
      [&] {
        call_op("reshape", {random_tensor({0, 3}, 1)}, shape_attr({0, -1}));
      },
      {"reshape", "-1 cannot be inferred"});
}

// ---- transpose -------------------------------------------------------------------------------

TEST(ShapeOpsTest, TransposeHandComputed) {
  const Tensor x = Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("transpose", {x}, {}, backend).at(0);  // default: reversed
    EXPECT_EQ(y.shape(), (Shape{3, 2}));
    EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
    const Tensor z = Tensor::from_vector<float>({2, 1, 2}, {1, 2, 3, 4});
    const Tensor w =
        call_op("transpose", {z}, {{"perm", std::vector<int64_t>{2, 0, 1}}}, backend).at(0);
    EXPECT_EQ(w.shape(), (Shape{2, 2, 1}));
    EXPECT_EQ(values<float>(w), (std::vector<float>{1, 3, 2, 4}));
    const Tensor id =
        call_op("transpose", {z}, {{"perm", std::vector<int64_t>{0, 1, 2}}}, backend).at(0);
    EXPECT_EQ(values<float>(id), (std::vector<float>{1, 2, 3, 4}));
  }
}

TEST(ShapeOpsTest, TransposeCpuMatchesReference) {
  uint64_t seed = 1;
  const std::vector<std::vector<int64_t>> perms3 = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                    {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (DType dtype : kAllDTypes)
    for (const auto &perm : perms3) {
      EXPECT_TRUE(cpu_equals_reference("transpose", {random_any({5, 37, 33}, dtype, seed++)},
                                       {{"perm", perm}}));
      EXPECT_TRUE(cpu_equals_reference("transpose", {random_any({2, 1, 3}, dtype, seed++)},
                                       {{"perm", perm}}));
    }
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{2, 16, 33, 35}, {0, 2, 3, 1}},  // NCHW -> NHWC
      {{2, 33, 35, 16}, {0, 3, 1, 2}},  // NHWC -> NCHW
      {{1, 3, 1, 5}, {3, 2, 0, 1}},
      {{4, 3, 2, 5, 6}, {4, 1, 3, 0, 2}},
      {{0, 3}, {1, 0}},
      {{3, 0, 2}, {2, 0, 1}},
      {{}, {}},
      {{1}, {0}},
      {{7}, {0}},
      {{64, 1}, {1, 0}},
  };
  for (const auto &[shape, perm] : cases)
    for (DType dtype : {DType::Float32, DType::Int8, DType::Float16, DType::Int64})
      EXPECT_TRUE(
          cpu_equals_reference("transpose", {random_any(shape, dtype, seed++)}, {{"perm", perm}}))
          << shape.to_string();
}

TEST(ShapeOpsTest, TransposeCpuMatchesReferenceLarge) {
  EXPECT_TRUE(cpu_equals_reference("transpose", {random_any({1024, 1024}, DType::Float32, 1)}, {}));
  EXPECT_TRUE(cpu_equals_reference("transpose", {random_any({1000, 1030}, DType::UInt8, 2)}, {}));
  EXPECT_TRUE(cpu_equals_reference("transpose", {random_any({4, 64, 64, 64}, DType::Float32, 3)},
                                   {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}));
  EXPECT_TRUE(cpu_equals_reference("transpose", {random_any({64, 128, 128}, DType::Int64, 4)},
                                   {{"perm", std::vector<int64_t>{1, 0, 2}}}));  // row copies
}

TEST(ShapeOpsTest, TransposeErrors) {
  const Tensor x = random_tensor({2, 3, 4}, 1);
  for (const std::vector<int64_t> &perm :
       std::vector<std::vector<int64_t>>{{0, 0, 1}, {0, 1}, {0, 1, 3}, {-1, 0, 1}, {0, 1, 2, 3}})
    expect_error(
        [&] {
          call_op("transpose", {x}, {{"perm", perm}});
        },
        {"transpose", "perm", "[2, 3, 4]"});
}

// ---- concat ----------------------------------------------------------------------------------

Attributes axis_attr(int64_t axis) {
  return {{"axis", axis}};
}

TEST(ShapeOpsTest, ConcatHandComputed) {
  const Tensor a = Tensor::from_vector<float>({1, 2}, {1, 2});
  const Tensor b = Tensor::from_vector<float>({2, 2}, {3, 4, 5, 6});
  const Tensor c = Tensor::from_vector<float>({2, 1}, {7, 8});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("concat", {a, b}, axis_attr(0), backend).at(0);
    EXPECT_EQ(y.shape(), (Shape{3, 2}));
    EXPECT_EQ(values<float>(y), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    const Tensor z = call_op("concat", {b, c, b}, axis_attr(-1), backend).at(0);
    EXPECT_EQ(z.shape(), (Shape{2, 5}));
    EXPECT_EQ(values<float>(z), (std::vector<float>{3, 4, 7, 3, 4, 5, 6, 8, 5, 6}));
    const Tensor single = call_op("concat", {b}, axis_attr(1), backend).at(0);
    EXPECT_EQ(values<float>(single), (std::vector<float>{3, 4, 5, 6}));
  }
}

TEST(ShapeOpsTest, ConcatCpuMatchesReference) {
  uint64_t seed = 1;
  for (DType dtype : kAllDTypes) {
    const Tensor a = random_any({2, 3, 4}, dtype, seed++);
    const Tensor b = random_any({2, 5, 4}, dtype, seed++);
    const Tensor c = random_any({2, 1, 4}, dtype, seed++);
    const Tensor e = random_any({2, 0, 4}, dtype, seed++);
    EXPECT_TRUE(cpu_equals_reference("concat", {a, b, e, c}, axis_attr(1)));
    EXPECT_TRUE(cpu_equals_reference("concat", {a, a}, axis_attr(0)));
    EXPECT_TRUE(cpu_equals_reference("concat", {a, a, a}, axis_attr(-1)));
    EXPECT_TRUE(cpu_equals_reference("concat", {e, e}, axis_attr(1)));
    EXPECT_TRUE(cpu_equals_reference("concat", {e, e}, axis_attr(0)));
    EXPECT_TRUE(cpu_equals_reference("concat", {random_any({1}, dtype, seed++)}, axis_attr(0)));
  }
}

TEST(ShapeOpsTest, ConcatCpuMatchesReferenceLarge) {
  const Tensor a = random_any({1 << 20}, DType::Float32, 1);
  const Tensor b = random_any({1 << 19}, DType::Float32, 2);
  EXPECT_TRUE(cpu_equals_reference("concat", {a, b}, axis_attr(0)));  // few long rows
  const Tensor c = random_any({1024, 512}, DType::Float32, 3);
  const Tensor d = random_any({1024, 3}, DType::Float32, 4);
  EXPECT_TRUE(cpu_equals_reference("concat", {c, d, c}, axis_attr(1)));  // many rows
  const Tensor e = random_any({2, 1 << 19}, DType::Int16, 5);
  EXPECT_TRUE(cpu_equals_reference("concat", {e, e}, axis_attr(1)));
}

TEST(ShapeOpsTest, ConcatErrors) {
  const Tensor a = random_tensor({2, 3}, 1);
  expect_error(
      [&] {
        call_op("concat", {a, random_tensor({2, 4}, 2)}, axis_attr(0));
      },
      {"concat", "[2, 3]", "[2, 4]"});
  expect_error(
      [&] {
        call_op("concat", {a, random_tensor({2, 3, 1}, 2)}, axis_attr(0));
      },
      {"concat", "rank", "[2, 3, 1]"});
  expect_error(
      [&] {
        call_op("concat", {a, Tensor::zeros({2, 3}, DType::Int32)}, axis_attr(0));
      },
      {"concat", "float32", "int32"});
  expect_error([&] { call_op("concat", {a, a}); }, {"concat", "axis"});
  expect_error([&] { call_op("concat", {a, a}, axis_attr(2)); }, {"concat", "axis 2"});
  expect_error([&] { call_op("concat", {a, a}, axis_attr(-3)); }, {"concat", "axis -3"});
  expect_error([&] { call_op("concat", {Tensor::from_vector<float>({}, {1})}, axis_attr(0)); },
               {"concat", "rank 0"});
  expect_error([&] { call_op("concat", {}, axis_attr(0)); }, {"concat", "inputs, got 0"});
}

}  // namespace
}  // namespace lumen

namespace lumen {
namespace {

TEST(ShapeOpsTest, InferenceWithUnknownDims) {
  const TensorType x{DType::Float32, Shape{kUnknownDim, 3, 4}};
  const Attributes reshape_attrs = shape_attr({0, -1});
  InferContext r{.inputs = {&x}, .attrs = reshape_attrs, .op = "reshape", .node = "r"};
  EXPECT_EQ(infer_types(get_op("reshape"), r).at(0).shape, (Shape{kUnknownDim, kUnknownDim}));
  const Attributes no_attrs;
  InferContext t{.inputs = {&x}, .attrs = no_attrs, .op = "transpose", .node = "t"};
  EXPECT_EQ(infer_types(get_op("transpose"), t).at(0).shape, (Shape{4, 3, kUnknownDim}));
  const TensorType y{DType::Float32, Shape{2, 5, 4}};
  const Attributes axis1 = axis_attr(1), axis0 = axis_attr(0);
  InferContext c1{.inputs = {&x, &y}, .attrs = axis1, .op = "concat", .node = "c1"};
  EXPECT_EQ(infer_types(get_op("concat"), c1).at(0).shape, (Shape{2, 8, 4}));
  InferContext c0{.inputs = {&x, &y}, .attrs = axis0, .op = "concat", .node = "c0"};
  // Dim 1 differs (3 vs 5) and is not the axis.
  expect_error([&] { infer_types(get_op("concat"), c0); },
               {"concat", "c0", "[?, 3, 4]", "[2, 5, 4]"});
  const TensorType w{DType::Float32, Shape{1, 3, 4}};
  InferContext c2{.inputs = {&w, &x}, .attrs = axis0, .op = "concat", .node = "c2"};
  EXPECT_EQ(infer_types(get_op("concat"), c2).at(0).shape, (Shape{kUnknownDim, 3, 4}));
}

}  // namespace
}  // namespace lumen

namespace lumen {
namespace {

Tensor i64(std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// ---- reshape with a shape input, squeeze, unsqueeze, flatten ---------------------------------

TEST(ShapeOpsTest, ReshapeShapeInput) {
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("reshape", {x, i64({3, -1})}, {}, backend).at(0);
    EXPECT_EQ(y.shape(), (Shape{3, 2}));
    EXPECT_EQ(values<float>(y), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(call_op("reshape", {x, i64({0, 1, -1})}, {}, backend).at(0).shape(),
              (Shape{2, 1, 3}));
  }
  expect_error([&] { call_op("reshape", {x, i64({4, 2})}); }, {"reshape", "[2, 3]", "[4, 2]"});
  expect_error(
      [&] {
        call_op("reshape", {x, Tensor::from_vector<float>({1}, {6})});
      },
      {"reshape", "int32 or int64"});
}

TEST(ShapeOpsTest, SqueezeUnsqueezeFlatten) {
  const Tensor x = Tensor::from_vector<int32_t>({1, 3, 1, 2}, {1, 2, 3, 4, 5, 6});
  for (const std::string backend : {"reference", "cpu"}) {
    EXPECT_EQ(call_op("squeeze", {x}, {}, backend).at(0).shape(), (Shape{3, 2}));
    EXPECT_EQ(call_op("squeeze", {x, i64({-2})}, {}, backend).at(0).shape(), (Shape{1, 3, 2}));
    EXPECT_EQ(call_op("squeeze", {x}, {{"axes", std::vector<int64_t>{0}}}, backend).at(0).shape(),
              (Shape{3, 1, 2}));
    const Tensor u = call_op("unsqueeze", {x, i64({0, -1})}, {}, backend).at(0);
    EXPECT_EQ(u.shape(), (Shape{1, 1, 3, 1, 2, 1}));
    EXPECT_EQ(values<int32_t>(u), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(call_op("unsqueeze", {x}, {{"axes", std::vector<int64_t>{2}}}, backend).at(0).shape(),
              (Shape{1, 3, 1, 1, 2}));
    EXPECT_EQ(call_op("flatten", {x}, {{"axis", int64_t{2}}}, backend).at(0).shape(),
              (Shape{3, 2}));
    EXPECT_EQ(call_op("flatten", {x}, {{"axis", int64_t{0}}}, backend).at(0).shape(),
              (Shape{1, 6}));
    EXPECT_EQ(call_op("flatten", {x}, {{"axis", int64_t{-1}}}, backend).at(0).shape(),
              (Shape{3, 2}));
  }
  expect_error([&] { call_op("squeeze", {x, i64({1})}); }, {"squeeze", "axis 1", "size 3"});
  expect_error([&] { call_op("squeeze", {x, i64({4})}); }, {"squeeze", "out of range"});
  expect_error([&] { call_op("unsqueeze", {x}); }, {"unsqueeze", "axes"});
  expect_error([&] { call_op("unsqueeze", {x, i64({1, 1})}); }, {"unsqueeze", "repeated"});
  expect_error([&] { call_op("unsqueeze", {x, i64({6})}); }, {"unsqueeze", "out of range"});
  expect_error([&] { call_op("flatten", {x}, {{"axis", int64_t{5}}}); }, {"flatten", "axis 5"});
}

TEST(ShapeOpsTest, ShapeSizeConstantOfShape) {
  const Tensor x = random_tensor({2, 3, 4}, 1);
  for (const std::string backend : {"reference", "cpu"}) {
    EXPECT_EQ(values<int64_t>(call_op("shape", {x}, {}, backend).at(0)),
              (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(
        values<int64_t>(
            call_op("shape", {x}, {{"start", int64_t{-2}}, {"end", int64_t{10}}}, backend).at(0)),
        (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(
        call_op("shape", {x}, {{"start", int64_t{2}}, {"end", int64_t{1}}}, backend).at(0).shape(),
        (Shape{0}));
    const Tensor n = call_op("size", {x}, {}, backend).at(0);
    EXPECT_EQ(n.shape(), Shape{});
    EXPECT_EQ(n.data<int64_t>()[0], 24);
    const Tensor z = call_op("constant_of_shape", {i64({2, 2})}, {}, backend).at(0);
    EXPECT_EQ(values<float>(z), (std::vector<float>{0, 0, 0, 0}));
    const Tensor seven = call_op("constant_of_shape", {i64({3})},
                                 {{"value", Tensor::from_vector<int32_t>({1}, {7})}}, backend)
                             .at(0);
    EXPECT_EQ(values<int32_t>(seven), (std::vector<int32_t>{7, 7, 7}));
    EXPECT_EQ(call_op("constant_of_shape", {i64({2, 0})}, {}, backend).at(0).shape(),
              (Shape{2, 0}));
    // Several 64 KiB fill chunks and a partial last one, with an 8-byte value.
    const Tensor big = call_op("constant_of_shape", {i64({3, 12345})},
                               {{"value", Tensor::from_vector<double>({1}, {-2.5})}}, backend)
                           .at(0);
    const std::vector<double> got = values<double>(big);
    EXPECT_EQ(got.size(), 3u * 12345u);
    EXPECT_EQ(std::count(got.begin(), got.end(), -2.5), static_cast<long>(got.size()));
  }
  expect_error(
      [&] {
        call_op("constant_of_shape", {i64({2, -1})});
      },
      {"constant_of_shape", "negative"});
}

}  // namespace
}  // namespace lumen
