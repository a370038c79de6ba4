// gather, gather_elements, gather_nd, scatter_elements, scatter_nd, one_hot, non_zero, compress:
// hand-computed results, negative indices, and out-of-range indices rejected with a lumen::Error.
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
Attributes axis(int64_t a) {
  return {{"axis", a}};
}

// "" picks the preferred backend (cpu, falling back to reference where cpu has no kernel).
const std::vector<std::string> kBackends = {"reference", ""};

TEST(IndexingTest, Gather) {
  const Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  for (const auto &b : kBackends) {
    EXPECT_TRUE(all_close(call_op("gather", {x, i64({2, 2}, {0, 1, -1, 0})}, {}, b)[0],
                          f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 1, 2})));
    EXPECT_TRUE(
        all_close(call_op("gather", {x, i64({}, {1})}, axis(1), b)[0], f32({3}, {2, 4, 6})));
    EXPECT_TRUE(
        all_close(call_op("gather", {x, Tensor::from_vector<int32_t>({2}, {-2, 1})}, axis(1), b)[0],
                  f32({3, 2}, {1, 2, 3, 4, 5, 6})));
    expect_error([&] { call_op("gather", {x, i64({1}, {3})}, {}, b); }, {"gather", "index 3"});
    expect_error([&] { call_op("gather", {x, i64({1}, {-4})}, {}, b); }, {"gather", "index -4"});
  }
  const Tensor big = random_tensor({50, 64}, 3);
  EXPECT_TRUE(testing::cpu_matches_reference("gather", {big, i64({3, 2}, {0, 49, -1, 7, 7, 3})}));
}

TEST(IndexingTest, GatherElements) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(all_close(call_op("gather_elements", {x, i64({2, 2}, {0, 0, 1, 0})}, axis(1))[0],
                        f32({2, 2}, {1, 1, 4, 3})));
  EXPECT_TRUE(
      all_close(call_op("gather_elements", {x, i64({1, 2}, {-1, 0})})[0], f32({1, 2}, {3, 2})));
  expect_error(
      [&] {
        call_op("gather_elements", {x, i64({2, 2}, {0, 2, 0, 0})}, axis(1));
      },
      {"gather_elements", "index 2"});
}

TEST(IndexingTest, GatherND) {
  const Tensor x = f32({2, 2}, {0, 1, 2, 3});
  EXPECT_TRUE(all_close(call_op("gather_nd", {x, i64({2, 2}, {0, 0, 1, 1})})[0], f32({2}, {0, 3})));
  EXPECT_TRUE(
      all_close(call_op("gather_nd", {x, i64({2, 1}, {1, 0})})[0], f32({2, 2}, {2, 3, 0, 1})));
  const Tensor x3 = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_TRUE(
      all_close(call_op("gather_nd", {x3, i64({2, 1}, {1, 0})}, {{"batch_dims", int64_t{1}}})[0],
                f32({2, 2}, {2, 3, 4, 5})));
  expect_error([&] { call_op("gather_nd", {x, i64({1, 2}, {0, 2})}); }, {"gather_nd", "index 2"});
}

TEST(IndexingTest, ScatterElements) {
  const Tensor x = f32({1, 5}, {1, 2, 3, 4, 5});
  const Tensor idx = i64({1, 2}, {1, -2});
  const Tensor upd = f32({1, 2}, {10, 20});
  EXPECT_TRUE(all_close(call_op("scatter_elements", {x, idx, upd}, axis(1))[0],
                        f32({1, 5}, {1, 10, 3, 20, 5})));
  const Tensor dup = i64({1, 2}, {1, 1});
  Attributes add = axis(1);
  add.set("reduction", std::string("add"));
  EXPECT_TRUE(
      all_close(call_op("scatter_elements", {x, dup, upd}, add)[0], f32({1, 5}, {1, 32, 3, 4, 5})));
  Attributes mx = axis(1);
  mx.set("reduction", std::string("max"));
  EXPECT_TRUE(
      all_close(call_op("scatter_elements", {x, dup, upd}, mx)[0], f32({1, 5}, {1, 20, 3, 4, 5})));
  expect_error(
      [&] {
        call_op("scatter_elements", {x, i64({1, 2}, {5, 0}), upd}, axis(1));
      },
      {"scatter_elements", "index 5"});
}

TEST(IndexingTest, ScatterND) {
  const Tensor x = f32({4}, {1, 2, 3, 4});
  EXPECT_TRUE(all_close(call_op("scatter_nd", {x, i64({2, 1}, {3, -4}), f32({2}, {9, 8})})[0],
                        f32({4}, {8, 2, 3, 9})));
  const Tensor m = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(all_close(call_op("scatter_nd", {m, i64({1, 1}, {1}), f32({1, 2}, {7, 7})},
                                {{"reduction", std::string("mul")}})[0],
                        f32({2, 2}, {1, 2, 21, 28})));
  expect_error(
      [&] {
        call_op("scatter_nd", {x, i64({1, 1}, {4}), f32({1}, {0})});
      },
      {"scatter_nd", "index 4"});
}

TEST(IndexingTest, OneHot) {
  const Tensor idx = i64({3}, {0, -1, 7});
  const Tensor depth = i64({}, {3});
  const Tensor values = f32({2}, {0, 5});
  EXPECT_TRUE(all_close(call_op("one_hot", {idx, depth, values})[0],
                        f32({3, 3}, {5, 0, 0, 0, 0, 5, 0, 0, 0})));
  EXPECT_TRUE(all_close(call_op("one_hot", {idx, depth, values}, axis(0))[0],
                        f32({3, 3}, {5, 0, 0, 0, 0, 0, 0, 5, 0})));
}

TEST(IndexingTest, NonZeroAndCompress) {
  const Tensor x = f32({2, 2}, {1, 0, 0, 3});
  EXPECT_TRUE(all_close(call_op("non_zero", {x})[0], i64({2, 2}, {0, 1, 0, 1})));
  const Tensor cond = Tensor::from_vector<bool>({2}, {false, true});
  EXPECT_TRUE(all_close(call_op("compress", {x, cond}, axis(0))[0], f32({1, 2}, {0, 3})));
  EXPECT_TRUE(all_close(call_op("compress", {x, cond})[0], f32({1}, {0})));
  expect_error([&] { call_op("compress", {f32({1}, {1}), cond}); }, {"compress", "longer"});
}

TEST(IndexingTest, Unique) {
  const Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  auto out = call_op("unique", {x});
  EXPECT_TRUE(all_close(out[0], f32({4}, {1, 2, 3, 4})));
  EXPECT_TRUE(all_close(out[1], i64({4}, {1, 0, 3, 4})));
  EXPECT_TRUE(all_close(out[2], i64({6}, {1, 0, 0, 2, 3, 2})));
  EXPECT_TRUE(all_close(out[3], i64({4}, {2, 1, 2, 1})));
  out = call_op("unique", {x}, {{"sorted", int64_t{0}}});
  EXPECT_TRUE(all_close(out[0], f32({4}, {2, 1, 3, 4})));
  EXPECT_TRUE(all_close(out[2], i64({6}, {0, 1, 1, 2, 3, 2})));
  // Unique rows.
  const Tensor m = f32({3, 2}, {1, 0, 0, 1, 1, 0});
  out = call_op("unique", {m}, axis(0));
  EXPECT_TRUE(all_close(out[0], f32({2, 2}, {0, 1, 1, 0})));
  EXPECT_TRUE(all_close(out[2], i64({3}, {1, 0, 1})));
  EXPECT_TRUE(all_close(out[3], i64({2}, {1, 2})));
}

TEST(IndexingTest, TensorScatter) {
  const Tensor cache = Tensor::zeros({2, 3, 1});
  const Tensor upd = f32({2, 2, 1}, {1, 2, 3, 4});
  Attributes a{{"axis", int64_t{1}}};
  EXPECT_TRUE(all_close(call_op("tensor_scatter", {cache, upd, i64({2}, {1, 0})}, a)[0],
                        f32({2, 3, 1}, {0, 1, 2, 3, 4, 0})));
  a.set("mode", std::string("circular"));
  EXPECT_TRUE(all_close(call_op("tensor_scatter", {cache, upd, i64({2}, {2, 0})}, a)[0],
                        f32({2, 3, 1}, {2, 0, 1, 3, 4, 0})));
  expect_error(
      [&] {
        call_op("tensor_scatter", {cache, upd, i64({2}, {2, 0})}, {{"axis", int64_t{1}}});
      },
      {"tensor_scatter", "out of range"});
}

}  // namespace
}  // namespace lumen
