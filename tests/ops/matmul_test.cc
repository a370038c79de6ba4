// matmul and gemm: hand-computed values, CPU vs reference on many shapes, and errors.
// Tolerances for CPU (BLAS, float32, another summation order) vs reference (double accumulation):
// rtol 1e-4, atol 1e-4. float64 cases use rtol 1e-10, atol 1e-10.
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::cpu_matches_reference;
using testing::random_tensor;

constexpr double kRtol = 1e-4, kAtol = 1e-4;
constexpr double kRtol64 = 1e-10, kAtol64 = 1e-10;

// The message of the lumen::Error `fn` throws, or "<no error>".
template <class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

Tensor f32(const Shape &shape, const std::vector<float> &values) {
  return Tensor::from_vector(shape, values);
}

// Expects both backends to produce `expected`.
void expect_both(const std::string &op, const std::vector<Tensor> &inputs, const Attributes &attrs,
                 const Tensor &expected) {
  for (const char *backend : {"reference", "cpu"}) {
    const auto out = call_op(op, inputs, attrs, backend);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(all_close(out[0], expected, 1e-6, 1e-6)) << "backend " << backend;
  }
}

// --- matmul ------------------------------------------------------------------------------------

TEST(MatmulOp, HandComputed2x2) {
  expect_both("matmul", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 6, 7, 8})}, {},
              f32({2, 2}, {19, 22, 43, 50}));
}

TEST(MatmulOp, HandComputedNonSquare) {
  // [2, 3] @ [3, 1]
  expect_both("matmul", {f32({2, 3}, {1, 0, -1, 2, 3, 4}), f32({3, 1}, {2, 5, 7})}, {},
              f32({2, 1}, {-5, 47}));
}

TEST(MatmulOp, HandComputedOneDimensional) {
  // vector . vector -> scalar; matrix @ vector -> vector; vector @ matrix -> vector.
  expect_both("matmul", {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})}, {}, f32({}, {32}));
  expect_both("matmul", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {1, 0, -1})}, {},
              f32({2}, {-2, -2}));
  expect_both("matmul", {f32({2}, {1, -1}), f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {},
              f32({3}, {-3, -3, -3}));
}

TEST(MatmulOp, HandComputedBroadcastBatch) {
  // [2, 1, 2] @ [2, 1]: each batch row times the shared column.
  expect_both("matmul", {f32({2, 1, 2}, {1, 2, 3, 4}), f32({2, 1}, {10, 1})}, {},
              f32({2, 1, 1}, {12, 34}));
}

TEST(MatmulOp, OutputShapes) {
  auto shape_of = [](const Shape &a, const Shape &b) {
    return call_op("matmul", {Tensor::zeros(a), Tensor::zeros(b)}, {}, "reference")[0].shape();
  };
  EXPECT_EQ(shape_of({2, 1, 3, 4}, {5, 4, 6}), (Shape{2, 5, 3, 6}));
  EXPECT_EQ(shape_of({4}, {4}), (Shape{}));
  EXPECT_EQ(shape_of({4}, {3, 4, 6}), (Shape{3, 6}));
  EXPECT_EQ(shape_of({3, 2, 4}, {4}), (Shape{3, 2}));
  EXPECT_EQ(shape_of({0, 3, 4}, {4, 5}), (Shape{0, 3, 5}));
  EXPECT_EQ(shape_of({1, 3, 0}, {2, 0, 5}), (Shape{2, 3, 5}));
}

TEST(MatmulOp, InfersUnknownDims) {
  // Graph inputs may have unknown dims: they pass through, and only known dims are checked.
  const TensorType a{DType::Float32, Shape{kUnknownDim, 3, 4}};
  const TensorType b{DType::Float32, Shape{4, kUnknownDim}};
  const Attributes attrs;
  InferContext ctx{.inputs = {&a, &b}, .attrs = attrs, .op = "matmul", .node = "mm"};
  const auto out = infer_types(get_op("matmul"), ctx);
  EXPECT_EQ(out[0].shape, (Shape{kUnknownDim, 3, kUnknownDim}));
  const TensorType bad{DType::Float32, Shape{5, kUnknownDim}};
  InferContext bad_ctx{.inputs = {&a, &bad}, .attrs = attrs, .op = "matmul", .node = "mm"};
  const std::string msg = error_of([&] { infer_types(get_op("matmul"), bad_ctx); });
  EXPECT_NE(msg.find("node 'mm'"), std::string::npos) << msg;
}

TEST(MatmulOp, ZeroInnerDimGivesZeros) {
  for (const char *backend : {"reference", "cpu"}) {
    const auto out = call_op("matmul", {Tensor::zeros({3, 0}), Tensor::zeros({0, 4})}, {}, backend);
    EXPECT_TRUE(all_close(out[0], Tensor::zeros({3, 4}))) << backend;
    const auto batched =
        call_op("matmul", {Tensor::zeros({2, 3, 0}), Tensor::zeros({2, 0, 4})}, {}, backend);
    EXPECT_TRUE(all_close(batched[0], Tensor::zeros({2, 3, 4}))) << backend;
  }
}

TEST(MatmulOp, CpuMatchesReference) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3}, {3, 4}},
      {{1, 1}, {1, 1}},
      {{1, 7}, {7, 1}},
      {{5}, {5}},
      {{5}, {5, 3}},
      {{4, 5}, {5}},
      {{3, 4, 5}, {5}},
      {{5}, {2, 5, 3}},
      {{2, 1, 3, 4}, {5, 4, 6}},
      {{2, 3, 4}, {4, 6}},
      {{3, 4}, {2, 4, 6}},
      {{1, 3, 4}, {2, 4, 6}},
      {{2, 3, 4}, {1, 4, 6}},
      {{4, 1, 2, 3}, {1, 5, 3, 2}},
      {{0, 3}, {3, 4}},
      {{3, 4}, {4, 0}},
      {{3, 0}, {0, 4}},
      {{0, 3, 4}, {4, 5}},
      {{2, 3, 4}, {0, 1, 4, 5}},
      {{128, 96}, {96, 80}},          // big enough to split over threads
      {{300, 17}, {17, 3}},           // tall and thin
      {{3, 40}, {40, 500}},           // wide: split by columns
      {{8, 64, 64}, {8, 64, 64}},     // batches over threads
      {{2, 64, 70}, {70, 90}},        // batch folded into M
      {{3, 1, 64, 70}, {5, 70, 33}},  // broadcast batches
  };
  uint64_t seed = 1;
  for (const auto &[a, b] : cases) {
    SCOPED_TRACE(a.to_string() + " @ " + b.to_string());
    EXPECT_TRUE(cpu_matches_reference(
        "matmul", {random_tensor(a, seed), random_tensor(b, seed + 1)}, {}, kRtol, kAtol));
    EXPECT_TRUE(cpu_matches_reference("matmul",
                                      {random_tensor(a, seed, -1, 1, DType::Float64),
                                       random_tensor(b, seed + 1, -1, 1, DType::Float64)},
                                      {}, kRtol64, kAtol64));
    seed += 2;
  }
}

TEST(MatmulOp, InnerDimensionMismatchNamesOpAndShapes) {
  auto run = [] { call_op("matmul", {Tensor::zeros({2, 3}), Tensor::zeros({4, 5})}); };
  EXPECT_THROW(run(), Error);
  const std::string msg = error_of(run);
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;
}

TEST(MatmulOp, OtherErrors) {
  // Rank 0 operand, mismatched batch dims, mixed dtypes, integer inputs.
  for (const auto &inputs : std::vector<std::vector<Tensor>>{
           {Tensor::zeros({}), Tensor::zeros({3})},
           {Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 4, 5})},
           {Tensor::zeros({2, 3}), Tensor::zeros({3, 2}, DType::Float64)},
           {Tensor::zeros({2, 3}, DType::Int32), Tensor::zeros({3, 2}, DType::Int32)}}) {
    EXPECT_THROW(call_op("matmul", inputs), Error);
    const std::string msg = error_of([&] { call_op("matmul", inputs); });
    EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  }
}

// --- gemm --------------------------------------------------------------------------------------

TEST(GemmOp, HandComputed) {
  // 2 * A @ B + 0.5 * C with C a row [N].
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {0, 1, 1, 0});
  const Attributes attrs{{"alpha", 2.0}, {"beta", 0.5}};
  expect_both("gemm", {a, b, f32({2}, {10, 20})}, attrs, f32({2, 2}, {9, 12, 13, 16}));
  // No C: beta is ignored.
  expect_both("gemm", {a, b}, attrs, f32({2, 2}, {4, 2, 8, 6}));
  // transA: A^T = [[1, 3], [2, 4]]; C [M, 1].
  expect_both("gemm", {a, b, f32({2, 1}, {1, -1})}, {{"transA", int64_t{1}}},
              f32({2, 2}, {4, 2, 3, 1}));
  // transB with B = [[1, 2], [0, 1]]: B^T = [[1, 0], [2, 1]]; A @ B^T = [[5, 2], [11, 4]].
  expect_both("gemm", {a, f32({2, 2}, {1, 2, 0, 1}), f32({}, {100})}, {{"transB", int64_t{1}}},
              f32({2, 2}, {105, 102, 111, 104}));
}

TEST(GemmOp, CpuMatchesReference) {
  const int64_t m = 5, n = 7, k = 3;
  const std::vector<Shape> c_shapes = {{}, {1}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}};
  uint64_t seed = 100;
  for (int trans_a = 0; trans_a < 2; ++trans_a)
    for (int trans_b = 0; trans_b < 2; ++trans_b) {
      const Shape sa = trans_a ? Shape{k, m} : Shape{m, k};
      const Shape sb = trans_b ? Shape{n, k} : Shape{k, n};
      const Attributes attrs{{"transA", int64_t{trans_a}},
                             {"transB", int64_t{trans_b}},
                             {"alpha", 0.75},
                             {"beta", -1.5}};
      SCOPED_TRACE("transA=" + std::to_string(trans_a) + " transB=" + std::to_string(trans_b));
      const Tensor a = random_tensor(sa, seed++), b = random_tensor(sb, seed++);
      EXPECT_TRUE(cpu_matches_reference("gemm", {a, b}, attrs, kRtol, kAtol));
      for (const Shape &sc : c_shapes) {
        SCOPED_TRACE("C " + sc.to_string());
        EXPECT_TRUE(
            cpu_matches_reference("gemm", {a, b, random_tensor(sc, seed++)}, attrs, kRtol, kAtol));
      }
      const Tensor a64 = random_tensor(sa, seed++, -1, 1, DType::Float64);
      const Tensor b64 = random_tensor(sb, seed++, -1, 1, DType::Float64);
      const Tensor c64 = random_tensor({m, n}, seed++, -1, 1, DType::Float64);
      EXPECT_TRUE(cpu_matches_reference("gemm", {a64, b64, c64}, attrs, kRtol64, kAtol64));
    }
  // Large enough to split over threads, transposed.
  EXPECT_TRUE(cpu_matches_reference(
      "gemm", {random_tensor({90, 200}, 7), random_tensor({150, 90}, 8), random_tensor({150}, 9)},
      {{"transA", int64_t{1}}, {"transB", int64_t{1}}}, kRtol, kAtol));
}

TEST(GemmOp, ZeroSizeDims) {
  // K == 0: Y = beta * C.
  for (const char *backend : {"reference", "cpu"}) {
    const auto out =
        call_op("gemm", {Tensor::zeros({2, 0}), Tensor::zeros({0, 3}), f32({3}, {1, 2, 3})},
                {{"beta", 2.0}}, backend);
    EXPECT_TRUE(all_close(out[0], f32({2, 3}, {2, 4, 6, 2, 4, 6}))) << backend;
  }
  EXPECT_TRUE(cpu_matches_reference("gemm", {Tensor::zeros({0, 4}), random_tensor({4, 3}, 1)}));
  EXPECT_TRUE(cpu_matches_reference("gemm", {random_tensor({2, 4}, 1), Tensor::zeros({4, 0})}));
}

TEST(GemmOp, Errors) {
  const std::vector<std::pair<std::vector<Tensor>, Attributes>> cases = {
      {{Tensor::zeros({2, 3}), Tensor::zeros({4, 5})}, {}},                        // inner dims
      {{Tensor::zeros({3, 2}), Tensor::zeros({3, 5})}, {{"transA", int64_t{0}}}},  // inner dims
      {{Tensor::zeros({2, 3, 1}), Tensor::zeros({3, 5})}, {}},                     // rank
      {{Tensor::zeros({3}), Tensor::zeros({3, 5})}, {}},                           // rank
      {{Tensor::zeros({2, 3}), Tensor::zeros({3, 5}), Tensor::zeros({3})}, {}},    // C [3] vs N=5
      {{Tensor::zeros({2, 3}), Tensor::zeros({3, 5}), Tensor::zeros({5, 2})}, {}},
      {{Tensor::zeros({2, 3}), Tensor::zeros({3, 5}), Tensor::zeros({1, 2, 5})}, {}},
  };
  for (const auto &c : cases) {
    const auto &inputs = c.first;
    const auto &attrs = c.second;
    EXPECT_THROW(call_op("gemm", inputs, attrs), Error);
    const std::string msg = error_of([&] { call_op("gemm", inputs, attrs); });
    EXPECT_NE(msg.find("gemm"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace lumen
