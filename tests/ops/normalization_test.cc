// batch_norm and lrn: hand-computed values (each element recomputed here from the ONNX formula,
// plus a few known numbers), CPU against reference on random inputs (N = 0, zero spatial size,
// C = 1, rank 2 to 5, even and odd lrn sizes), batch_norm kernels run in place (y is x), and
// errors naming the op. Tolerances: batch_norm rtol 1e-5 / atol 1e-6 (the CPU folds scale, mean
// and var into a * x + b first); lrn rtol 1e-4 / atol 1e-6 (float pow and a float square sum on
// the CPU against double in the reference); float64 cases use the same bounds.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/thread_pool.h"
#include "graph/op_schema.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

using testing::all_close;
using testing::cpu_matches_reference;
using testing::random_tensor;

// batch_norm parameters for C channels: positive var.
std::vector<Tensor> bn_params(int64_t c, uint64_t seed, DType dtype = DType::Float32) {
  return {random_tensor({c}, seed, 0.5, 2.0, dtype), random_tensor({c}, seed + 1, -1, 1, dtype),
          random_tensor({c}, seed + 2, -1, 1, dtype), random_tensor({c}, seed + 3, 0.1, 3, dtype)};
}

std::vector<Tensor> bn_inputs(const Tensor &x, const std::vector<Tensor> &p) {
  return {x, p[0], p[1], p[2], p[3]};
}

TEST(NormalizationTest, BatchNormHandComputed) {
  // x [2, 2, 3]; channel 0: scale 2, bias 1, mean 0.5, var 4 -> y = 2 * (x - 0.5) / 2 + 1 = x + 0.5
  // (epsilon 0); channel 1: scale 1, bias -1, mean -1, var 0.25 -> y = (x + 1) / 0.5 - 1 = 2x + 1.
  const Tensor x = Tensor::from_vector<float>({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, 0, 1, 0.5f, 2, -3});
  const Tensor scale = Tensor::from_vector<float>({2}, {2, 1});
  const Tensor bias = Tensor::from_vector<float>({2}, {1, -1});
  const Tensor mean = Tensor::from_vector<float>({2}, {0.5f, -1});
  const Tensor var = Tensor::from_vector<float>({2}, {4, 0.25f});
  const std::vector<float> want = {1.5f, 2.5f, 3.5f, 9, 11, 13, -0.5f, 0.5f, 1.5f, 2, 5, -5};
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y =
        call_op("batch_norm", {x, scale, bias, mean, var}, {{"epsilon", 0.0}}, backend).at(0);
    ASSERT_EQ(y.shape(), (Shape{2, 2, 3}));
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(y.data<float>()[i], want[i], 1e-6) << backend << i;
  }
}

TEST(NormalizationTest, BatchNormDefaultEpsilonFormula) {
  // Every element recomputed from y = scale * (x - mean) / sqrt(var + 1e-5) + bias.
  const Tensor x = random_tensor({2, 3, 2, 2}, 7, -3, 3, DType::Float64);
  const auto p = bn_params(3, 10, DType::Float64);
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("batch_norm", bn_inputs(x, p), {}, backend).at(0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t c = (i / 4) % 3;
      const double want = p[0].data<double>()[c] * (x.data<double>()[i] - p[2].data<double>()[c]) /
                              std::sqrt(p[3].data<double>()[c] + 1e-5) +
                          p[1].data<double>()[c];
      EXPECT_NEAR(y.data<double>()[i], want, 1e-12 * (1 + std::abs(want))) << backend << i;
    }
  }
  // var 0 with epsilon 1e-5: 1 / sqrt(1e-5) = 316.227766...
  const Tensor one = Tensor::from_vector<float>({1, 1}, {1});
  const Tensor zero = Tensor::from_vector<float>({1}, {0});
  const Tensor unit = Tensor::from_vector<float>({1}, {1});
  for (const std::string backend : {"reference", "cpu"})
    EXPECT_NEAR(
        call_op("batch_norm", {one, unit, zero, zero, zero}, {}, backend).at(0).data<float>()[0],
        316.22776601683796, 1e-3)
        << backend;
}

// y[n, c, s] recomputed from the ONNX LRN definition, in double.
std::vector<double> lrn_expected(const Tensor &x, int64_t size, double alpha, double beta,
                                 double bias) {
  const Shape &sh = x.shape();
  const int64_t n = sh[0], ch = sh[1], s = x.numel() / std::max<int64_t>(1, n * ch);
  std::vector<double> out(size_t(x.numel()));
  const auto at = [&](int64_t b, int64_t c, int64_t j) {
    return testing::element_as_double(x, (b * ch + c) * s + j);
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t j = 0; j < s; ++j) {
        double sum = 0;
        const int64_t first = c - (size - 1) / 2;  // floor((size - 1) / 2) below
        const int64_t last = c + size / 2;         // ceil((size - 1) / 2) above
        for (int64_t i = first; i <= last; ++i)
          if (i >= 0 && i < ch) sum += at(b, i, j) * at(b, i, j);
        out[size_t((b * ch + c) * s + j)] = at(b, c, j) / std::pow(bias + alpha / size * sum, beta);
      }
  return out;
}

TEST(NormalizationTest, LrnHandComputed) {
  // x [1, 3, 1, 1] = [1, 2, 3], size 3, alpha 3, beta 1, bias 1 -> den = 1 + sum of squares:
  // c0: 1 + 1 + 4 = 6, c1: 1 + 1 + 4 + 9 = 15, c2: 1 + 4 + 9 = 14.
  const Tensor x = Tensor::from_vector<float>({1, 3, 1, 1}, {1, 2, 3});
  const Attributes attrs = {{"size", int64_t{3}}, {"alpha", 3.0}, {"beta", 1.0}, {"bias", 1.0}};
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("lrn", {x}, attrs, backend).at(0);
    ASSERT_EQ(y.shape(), (Shape{1, 3, 1, 1}));
    EXPECT_NEAR(y.data<float>()[0], 1.0 / 6, 1e-6) << backend;
    EXPECT_NEAR(y.data<float>()[1], 2.0 / 15, 1e-6) << backend;
    EXPECT_NEAR(y.data<float>()[2], 3.0 / 14, 1e-6) << backend;
  }
  // Even size 2: window [c, c + 1]. alpha 2 -> den = 1 + sum: c0: 1 + 1 + 4 = 6, c1: 1 + 4 + 9 =
  // 14, c2: 1 + 9 = 10.
  const Attributes even = {{"size", int64_t{2}}, {"alpha", 2.0}, {"beta", 1.0}};
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor y = call_op("lrn", {x}, even, backend).at(0);
    EXPECT_NEAR(y.data<float>()[0], 1.0 / 6, 1e-6) << backend;
    EXPECT_NEAR(y.data<float>()[1], 2.0 / 14, 1e-6) << backend;
    EXPECT_NEAR(y.data<float>()[2], 3.0 / 10, 1e-6) << backend;
  }
}

TEST(NormalizationTest, LrnMatchesFormula) {
  struct Case {
    Shape shape;
    int64_t size;
    double alpha, beta, bias;
  };
  const std::vector<Case> cases = {{{2, 5, 3, 4}, 3, 1e-4, 0.75, 1.0},
                                   {{2, 5, 3, 4}, 4, 0.5, 0.75, 2.0},
                                   {{1, 7, 2, 3}, 5, 2.0, 0.5, 0.5},
                                   {{1, 4, 2, 2}, 1, 1.0, 1.5, 1.0},
                                   {{3, 6, 1, 5}, 9, 0.3, 0.6, 1.2}};
  uint64_t seed = 40;
  for (const Case &c : cases) {
    const Tensor x = random_tensor(c.shape, seed++, -3, 3, DType::Float64);
    const Attributes attrs = {
        {"size", c.size}, {"alpha", c.alpha}, {"beta", c.beta}, {"bias", c.bias}};
    const std::vector<double> want = lrn_expected(x, c.size, c.alpha, c.beta, c.bias);
    for (const std::string backend : {"reference", "cpu"}) {
      const Tensor y = call_op("lrn", {x}, attrs, backend).at(0);
      for (int64_t i = 0; i < x.numel(); ++i)
        EXPECT_NEAR(y.data<double>()[i], want[size_t(i)], 1e-12 * (1 + std::abs(want[size_t(i)])))
            << backend << " " << c.shape.to_string() << " size " << c.size << " element " << i;
    }
  }
}

TEST(NormalizationTest, BatchNormCpuMatchesReference) {
  const std::vector<Shape> shapes = {{2, 3},          {5, 1},           {4, 7, 9},    {2, 3, 4, 5},
                                     {2, 3, 2, 3, 4}, {1, 1, 1, 1},     {0, 3, 4, 4}, {2, 3, 0, 4},
                                     {3, 16, 1000},   {1, 2, 300, 300}, {64, 512}};
  uint64_t seed = 1;
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const Shape &shape : shapes) {
      const Tensor x = random_tensor(shape, seed++, -5, 5, dtype);
      const auto p = bn_params(shape[1], seed += 4, dtype);
      for (double eps : {1e-5, 1e-3})
        EXPECT_TRUE(
            cpu_matches_reference("batch_norm", bn_inputs(x, p), {{"epsilon", eps}}, 1e-5, 1e-6))
            << x.to_string() << " epsilon " << eps;
    }
}

TEST(NormalizationTest, LrnCpuMatchesReference) {
  const std::vector<Shape> shapes = {{2, 5, 3, 4}, {1, 1, 4, 4},    {0, 3, 4, 4},
                                     {2, 4, 0, 3}, {2, 16, 7, 7},   {1, 8, 30, 30},
                                     {2, 3, 5},    {1, 6, 2, 3, 4}, {4, 64, 13, 13}};
  uint64_t seed = 200;
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const Shape &shape : shapes)
      for (int64_t size : {1, 2, 3, 4, 5, 11}) {
        const Tensor x = random_tensor(shape, seed++, -4, 4, dtype);
        for (double beta : {0.75, 0.5})
          EXPECT_TRUE(cpu_matches_reference(
              "lrn", {x}, {{"size", size}, {"alpha", 0.05}, {"beta", beta}, {"bias", 1.5}}, 1e-4,
              1e-6))
              << x.to_string() << " size " << size << " beta " << beta;
      }
  // Default alpha, beta and bias.
  EXPECT_TRUE(cpu_matches_reference("lrn", {random_tensor({2, 10, 17, 19}, 9, -50, 50)},
                                    {{"size", int64_t{5}}}, 1e-4, 1e-6));
}

TEST(NormalizationTest, BatchNormInPlace) {
  // The op is marked element-wise (the planner may give it x's memory as y); lrn is not.
  const OpSchema *schema = find_op("batch_norm");
  ASSERT_NE(schema, nullptr);
  EXPECT_TRUE(schema->elementwise);
  const OpSchema *lrn = find_op("lrn");
  ASSERT_NE(lrn, nullptr);
  EXPECT_FALSE(lrn->elementwise);
  // Run each backend's kernel with the output being the input and compare with call_op.
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor x = random_tensor({3, 5, 70, 70}, 11);
    const auto p = bn_params(5, 12);
    const Tensor want = call_op("batch_norm", bn_inputs(x, p), {}, backend).at(0);
    Tensor inout = x.clone();
    const KernelFn fn = kernel_registry(backend).find("batch_norm", DType::Float32);
    ASSERT_NE(fn, nullptr) << backend;
    const Attributes attrs;
    KernelContext ctx{.inputs = {&inout, &p[0], &p[1], &p[2], &p[3]},
                      .outputs = {&inout},
                      .attrs = attrs,
                      .pool = default_thread_pool(),
                      .op = "batch_norm",
                      .node = "in_place"};
    fn(ctx);
    EXPECT_TRUE(all_close(inout, want, 0, 0)) << backend;
  }
}

TEST(NormalizationTest, Errors) {
  const Tensor x = random_tensor({2, 3, 4, 4}, 1);
  const auto p = bn_params(3, 5);
  const Tensor four = random_tensor({4}, 2);
  // Wrong parameter length, for each of the four.
  const char *names[] = {"scale", "bias", "mean", "var"};
  for (size_t i = 1; i <= 4; ++i) {
    std::vector<Tensor> in = bn_inputs(x, p);
    in[i] = four;
    expect_error([&] { call_op("batch_norm", in); },
                 {"batch_norm", names[i - 1], "[2, 3, 4, 4]", "[4]"});
  }
  // Parameters must be 1-D.
  {
    std::vector<Tensor> in = bn_inputs(x, p);
    in[3] = random_tensor({3, 1}, 3);
    expect_error([&] { call_op("batch_norm", in); }, {"batch_norm", "mean", "1-D", "[3, 1]"});
  }
  // Rank 1 input.
  expect_error([&] { call_op("batch_norm", bn_inputs(random_tensor({3}, 4), p)); },
               {"batch_norm", "rank >= 2", "[3]"});
  // Missing inputs, wrong dtypes.
  expect_error([&] { call_op("batch_norm", {x, p[0], p[1], p[2]}); }, "batch_norm");
  expect_error(
      [&] {
        call_op("batch_norm", bn_inputs(x, {p[0], p[1], p[2], Tensor::zeros({3}, DType::Float64)}));
      },
      {"batch_norm", "var", "float64"});
  expect_error(
      [&] {
        call_op("batch_norm", bn_inputs(Tensor::zeros({2, 3}, DType::Int32), p));
      },
      {"batch_norm", "int32"});
  expect_error(
      [&] {
        call_op("batch_norm", bn_inputs(x, p), {{"epsilon", -1.0}});
      },
      {"batch_norm", "epsilon"});

  // lrn: size missing, not positive; wrong rank; wrong dtype.
  expect_error([&] { call_op("lrn", {x}); }, {"lrn", "size", "required"});
  expect_error([&] { call_op("lrn", {x}, {{"size", int64_t{0}}}); }, {"lrn", "size", "> 0"});
  expect_error([&] { call_op("lrn", {x}, {{"size", int64_t{-3}}}); }, {"lrn", "size", "-3"});
  expect_error(
      [&] {
        call_op("lrn", {random_tensor({2, 3}, 1)}, {{"size", int64_t{3}}});
      },
      {"lrn", "rank >= 3", "[2, 3]"});
  expect_error(
      [&] {
        call_op("lrn", {Tensor::zeros({1, 2, 2, 2}, DType::Int64)}, {{"size", int64_t{3}}});
      },
      {"lrn", "int64"});
}

TEST(NormalizationTest, ShapesPreserved) {
  for (const std::string backend : {"reference", "cpu"}) {
    const Tensor x = random_tensor({2, 3, 2, 3, 4}, 3);
    const Tensor y = call_op("batch_norm", bn_inputs(x, bn_params(3, 8)), {}, backend).at(0);
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_EQ(y.dtype(), DType::Float32);
    const Tensor z = call_op("lrn", {x}, {{"size", int64_t{2}}}, backend).at(0);
    EXPECT_EQ(z.shape(), x.shape());
    EXPECT_TRUE(all_close(
        call_op("lrn", {random_tensor({0, 3, 2, 2}, 1)}, {{"size", int64_t{3}}}, backend).at(0),
        Tensor::empty({0, 3, 2, 2})));
  }
}

}  // namespace
}  // namespace lumen
