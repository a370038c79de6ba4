// reduce_*, argmax/argmin, top_k, cumsum/cumprod, hardmax and einsum: hand-computed results on the
// reference backend (and cpu, which falls back or has its own kernels), plus errors naming the op.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

using testing::all_close;
using testing::random_tensor;

Tensor f32(const Shape &s, std::vector<float> v) {
  return Tensor::from_vector<float>(s, v);
}
Tensor i64(const Shape &s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(s, v);
}

// "" picks the preferred backend (cpu, falling back to reference where cpu has no kernel).
const std::vector<std::string> kBackends = {"reference", ""};

TEST(ReduceTest, ReductionsHandComputed) {
  const Tensor x = f32({2, 3}, {1, 2, 3, -4, 5, 6});
  for (const auto &b : kBackends) {
    const Attributes axis1{{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
    EXPECT_TRUE(all_close(call_op("reduce_sum", {x}, axis1, b)[0], f32({2}, {6, 7})));
    EXPECT_TRUE(all_close(call_op("reduce_mean", {x}, axis1, b)[0], f32({2}, {2, 7.f / 3})));
    EXPECT_TRUE(all_close(call_op("reduce_max", {x}, axis1, b)[0], f32({2}, {3, 6})));
    EXPECT_TRUE(all_close(call_op("reduce_min", {x}, axis1, b)[0], f32({2}, {1, -4})));
    EXPECT_TRUE(all_close(call_op("reduce_prod", {x}, axis1, b)[0], f32({2}, {6, -120})));
    EXPECT_TRUE(all_close(call_op("reduce_l1", {x}, axis1, b)[0], f32({2}, {6, 15})));
    EXPECT_TRUE(all_close(call_op("reduce_l2", {x}, axis1, b)[0],
                          f32({2}, {std::sqrt(14.f), std::sqrt(77.f)})));
    EXPECT_TRUE(all_close(call_op("reduce_sum_square", {x}, axis1, b)[0], f32({2}, {14, 77})));
    EXPECT_TRUE(all_close(call_op("reduce_log_sum", {x}, axis1, b)[0],
                          f32({2}, {std::log(6.f), std::log(7.f)})));
    const float lse0 = std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f));
    const float lse1 = std::log(std::exp(-4.f) + std::exp(5.f) + std::exp(6.f));
    EXPECT_TRUE(all_close(call_op("reduce_log_sum_exp", {x}, axis1, b)[0], f32({2}, {lse0, lse1})));
    // Axes as an input, keepdims, negative axes, all axes.
    EXPECT_TRUE(
        all_close(call_op("reduce_sum", {x, i64({1}, {-2})}, {}, b)[0], f32({1, 3}, {-3, 7, 9})));
    EXPECT_TRUE(all_close(call_op("reduce_sum", {x}, {}, b)[0], f32({1, 1}, {13})));
    EXPECT_TRUE(all_close(
        call_op("reduce_sum", {x, i64({0}, {})}, {{"keepdims", int64_t{0}}}, b)[0], f32({}, {13})));
    // noop_with_empty_axes: no reduction.
    EXPECT_TRUE(all_close(
        call_op("reduce_sum", {x, i64({0}, {})}, {{"noop_with_empty_axes", int64_t{1}}}, b)[0], x));
  }
}

TEST(ReduceTest, EmptySetGivesIdentity) {
  const Tensor e = Tensor::empty({2, 0, 3});
  const Attributes a{{"axes", std::vector<int64_t>{1}}};
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(
      all_close(call_op("reduce_sum", {e}, a)[0], f32({2, 1, 3}, std::vector<float>(6, 0))));
  EXPECT_TRUE(
      all_close(call_op("reduce_prod", {e}, a)[0], f32({2, 1, 3}, std::vector<float>(6, 1))));
  // all_close cannot compare infinities (inf - inf is NaN): check the values directly.
  auto all_equal = [](const Tensor &t, float want) {
    EXPECT_EQ(t.shape(), (Shape{2, 1, 3}));
    for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.data<float>()[i], want);
  };
  all_equal(call_op("reduce_max", {e}, a)[0], -inf);
  all_equal(call_op("reduce_min", {e}, a)[0], inf);
  all_equal(call_op("reduce_log_sum_exp", {e}, a)[0], -inf);
  all_equal(call_op("reduce_log_sum", {e}, a)[0], -inf);
  all_equal(call_op("reduce_l2", {e}, a)[0], 0);
  const Tensor ei = Tensor::empty({0}, DType::Int32);
  EXPECT_EQ(call_op("reduce_max", {ei})[0].data<int32_t>()[0],
            std::numeric_limits<int32_t>::lowest());
}

TEST(ReduceTest, IntegerReductions) {
  const Tensor x = Tensor::from_vector<int32_t>({2, 2}, {1, 7, -3, 4});
  const Tensor s = call_op("reduce_sum", {x}, {{"axes", std::vector<int64_t>{0}}})[0];
  EXPECT_EQ(s.data<int32_t>()[0], -2);
  EXPECT_EQ(s.data<int32_t>()[1], 11);
}

// The CPU kernels against the reference, on leading, middle, trailing, scattered (permuted first)
// and all axes, and on one row long enough to be split over threads. Positive inputs (log_sum),
// and large ones for log_sum_exp's shift.
TEST(ReduceTest, ReduceCpuMatchesReference) {
  const Tensor long_row = random_tensor({1, 70000}, 8, 0.5, 2);
  for (const std::string op :
       {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_sum_square", "reduce_l1",
        "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp"}) {
    for (const auto &axes : std::vector<std::vector<int64_t>>{{-1}, {0}, {1}, {0, 2}, {}})
      for (int64_t keep : {0, 1})
        EXPECT_TRUE(testing::cpu_matches_reference(op, {random_tensor({3, 5, 67}, 7, 0.5, 2)},
                                                   {{"axes", axes}, {"keepdims", keep}}, 1e-5,
                                                   1e-5))
            << op;
    for (const auto &axes : std::vector<std::vector<int64_t>>{{0, 2, 4}, {1, 3}, {-1, 1}})
      EXPECT_TRUE(testing::cpu_matches_reference(op, {random_tensor({2, 3, 4, 5, 6}, 11, 0.5, 2)},
                                                 {{"axes", axes}}, 1e-5, 1e-5))
          << op << " over scattered axes";
    EXPECT_TRUE(
        testing::cpu_matches_reference(op, {long_row}, {{"keepdims", int64_t{0}}}, 1e-4, 1e-5))
        << op << " over one long row";
    // Short rows kept (a channel-blocked image pooled over H and W), more and fewer rows than
    // the kernel's four partial results.
    EXPECT_TRUE(testing::cpu_matches_reference(op, {random_tensor({2, 3, 7, 5, 8}, 9)},
                                               {{"axes", std::vector<int64_t>{2, 3}}}, 1e-5, 1e-5))
        << op << " over H, W of a blocked image";
    EXPECT_TRUE(testing::cpu_matches_reference(op, {random_tensor({2, 3, 8}, 10)},
                                               {{"axes", std::vector<int64_t>{1}}}, 1e-5, 1e-5))
        << op << " over 3 short rows";
  }
}

// Integer reductions through log: a sum of 0 gives -inf, saturated to the type's lowest value.
TEST(ReduceTest, IntegerLogSumSaturates) {
  const Tensor zeros = Tensor::zeros({2, 3}, DType::Int64);
  const Tensor y = call_op("reduce_log_sum", {zeros}, {{"keepdims", int64_t{0}}}, "reference")[0];
  EXPECT_EQ(y.data<int64_t>()[0], INT64_MIN);
}

TEST(ReduceTest, LogSumExpLargeAndInfinite) {
  Tensor x = random_tensor({4, 300}, 12, 80, 100);  // exp overflows float without the shift
  x.data<float>()[300] = INFINITY;
  x.data<float>()[600] = NAN;
  for (const auto &axes : std::vector<std::vector<int64_t>>{{1}, {0}})
    EXPECT_TRUE(
        testing::cpu_matches_reference("reduce_log_sum_exp", {x}, {{"axes", axes}}, 1e-5, 1e-5));
}

// Max and min propagate NaN on the CPU as the reference does, whichever lane or thread sees it.
TEST(ReduceTest, CpuMaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t at : {int64_t{0}, int64_t{17}, int64_t{69999}}) {
    Tensor x = random_tensor({2, 70000}, 9);
    x.data<float>()[at] = nan;
    for (const std::string op : {"reduce_max", "reduce_min"}) {
      const Tensor rows = call_op(op, {x}, {{"axes", std::vector<int64_t>{1}}}, "")[0];
      EXPECT_TRUE(std::isnan(rows.data<float>()[0])) << op << " NaN at " << at;
      EXPECT_FALSE(std::isnan(rows.data<float>()[1])) << op;
      const Tensor all = call_op(op, {x}, {{"keepdims", int64_t{0}}}, "")[0];
      EXPECT_TRUE(std::isnan(all.data<float>()[0])) << op << " over all, NaN at " << at;
      const Tensor cols = call_op(op, {x}, {{"axes", std::vector<int64_t>{0}}}, "")[0];
      EXPECT_TRUE(std::isnan(cols.data<float>()[at])) << op << " down columns, NaN at " << at;
    }
  }
}

TEST(ReduceTest, ArgMaxArgMin) {
  const Tensor x = f32({2, 3}, {1, 5, 5, 7, 2, 7});
  for (const auto &b : kBackends) {
    auto run = [&](const std::string &op, Attributes a) { return call_op(op, {x}, a, b)[0]; };
    Tensor y = run("argmax", {{"axis", int64_t{1}}});
    EXPECT_EQ(y.shape(), (Shape{2, 1}));
    EXPECT_EQ(y.data<int64_t>()[0], 1);
    EXPECT_EQ(y.data<int64_t>()[1], 0);
    y = run("argmax",
            {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}, {"keepdims", int64_t{0}}});
    EXPECT_EQ(y.shape(), (Shape{2}));
    EXPECT_EQ(y.data<int64_t>()[0], 2);
    EXPECT_EQ(y.data<int64_t>()[1], 2);
    y = run("argmin", {{"axis", int64_t{0}}});
    EXPECT_EQ(y.shape(), (Shape{1, 3}));
    EXPECT_EQ(y.data<int64_t>()[0], 0);
    EXPECT_EQ(y.data<int64_t>()[1], 1);
    EXPECT_EQ(y.data<int64_t>()[2], 0);
  }
  expect_error([&] { call_op("argmax", {x}, {{"axis", int64_t{2}}}); }, {"argmax", "axis 2"});
}

TEST(ReduceTest, TopK) {
  const Tensor x = f32({2, 4}, {1, 4, 4, 2, 0, -1, 3, 3});
  const auto out = call_op("top_k", {x, i64({1}, {2})});
  EXPECT_TRUE(all_close(out[0], f32({2, 2}, {4, 4, 3, 3})));
  EXPECT_TRUE(all_close(out[1], i64({2, 2}, {1, 2, 2, 3})));
  const auto small = call_op("top_k", {x, i64({1}, {3})}, {{"largest", int64_t{0}}});
  EXPECT_TRUE(all_close(small[0], f32({2, 3}, {1, 2, 4, -1, 0, 3})));
  EXPECT_TRUE(all_close(small[1], i64({2, 3}, {0, 3, 1, 1, 0, 2})));
  expect_error([&] { call_op("top_k", {x, i64({1}, {5})}); }, {"top_k", "k = 5"});
}

TEST(ReduceTest, CumSumCumProd) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor ax = i64({}, {1});
  EXPECT_TRUE(all_close(call_op("cumsum", {x, ax})[0], f32({2, 3}, {1, 3, 6, 4, 9, 15})));
  EXPECT_TRUE(all_close(call_op("cumsum", {x, ax}, {{"exclusive", int64_t{1}}})[0],
                        f32({2, 3}, {0, 1, 3, 0, 4, 9})));
  EXPECT_TRUE(all_close(call_op("cumsum", {x, ax}, {{"reverse", int64_t{1}}})[0],
                        f32({2, 3}, {6, 5, 3, 15, 11, 6})));
  EXPECT_TRUE(
      all_close(call_op("cumprod", {x, i64({}, {0})})[0], f32({2, 3}, {1, 2, 3, 4, 10, 18})));
  expect_error([&] { call_op("cumsum", {x, i64({}, {3})}); }, {"cumsum", "axis 3"});
}

TEST(ReduceTest, Hardmax) {
  const Tensor x = f32({2, 3}, {1, 3, 3, 0, -1, -2});
  EXPECT_TRUE(all_close(call_op("hardmax", {x})[0], f32({2, 3}, {0, 1, 0, 1, 0, 0})));
  EXPECT_TRUE(
      all_close(call_op("hardmax", {x}, {{"axis", int64_t{0}}, {"coerce_2d", int64_t{1}}})[0],
                f32({2, 3}, {0, 1, 0, 0, 0, 0})));
}

TEST(ReduceTest, Einsum) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  auto es = [](const std::string &eq) { return Attributes{{"equation", eq}}; };
  EXPECT_TRUE(
      all_close(call_op("einsum", {a, b}, es("ij,jk->ik"))[0], f32({2, 2}, {4, 5, 10, 11})));
  EXPECT_TRUE(all_close(call_op("einsum", {a}, es("ij->ji"))[0], f32({3, 2}, {1, 4, 2, 5, 3, 6})));
  EXPECT_TRUE(all_close(call_op("einsum", {a}, es("ij"))[0], a));
  EXPECT_TRUE(all_close(call_op("einsum", {a}, es("ij->"))[0], f32({}, {21})));
  const Tensor sq = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(all_close(call_op("einsum", {sq}, es("ii->i"))[0], f32({2}, {1, 4})));
  EXPECT_TRUE(all_close(call_op("einsum", {sq}, es("ii"))[0], f32({}, {5})));
  const Tensor batch = random_tensor({2, 3, 4}, 3);
  EXPECT_EQ(
      call_op("einsum", {batch, random_tensor({2, 4, 5}, 4)}, es("...ij,...jk->...ik"))[0].shape(),
      (Shape{2, 3, 5}));
  expect_error([&] { call_op("einsum", {a, a}, es("ij,jk->ik")); }, {"einsum", "size"});
  expect_error([&] { call_op("einsum", {a}, es("ijk->i")); }, {"einsum", "does not match"});
}

TEST(ReduceTest, Errors) {
  const Tensor x = random_tensor({2, 3}, 1);
  expect_error(
      [&] {
        call_op("reduce_sum", {x}, {{"axes", std::vector<int64_t>{2}}});
      },
      {"reduce_sum", "axis 2", "[2, 3]"});
  expect_error(
      [&] {
        call_op("reduce_sum", {x}, {{"axes", std::vector<int64_t>{1, -1}}});
      },
      {"reduce_sum", "repeated"});
}

}  // namespace
}  // namespace lumen
