// The CPU kernels of the ops exported models need around their main layers (masks, positions,
// detection post-processing, 1-D/3-D convs): each against the reference on varied shapes and
// attributes, with exact equality where the op only moves or compares values.
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::expect_error;
using testing::random_tensor;

// Both backends' outputs, compared exactly (rtol = atol = 0) unless a tolerance is given.
void expect_same(const std::string &op, const std::vector<Tensor> &inputs,
                 const Attributes &attrs = {}, double tol = 0) {
  const std::vector<Tensor> want = call_op(op, inputs, attrs, "reference");
  const std::vector<Tensor> got = call_op(op, inputs, attrs, "cpu");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(all_close(got[i], want[i], tol, tol)) << op << " output " << i;
}

Tensor bools(const Shape &shape, uint64_t seed) {
  const Tensor r = random_tensor(shape, seed);
  Tensor b = Tensor::empty(shape, DType::Bool);
  for (int64_t i = 0; i < b.numel(); ++i) b.data<bool>()[i] = r.data<float>()[i] > 0;
  return b;
}

Tensor ints(const Shape &shape, uint64_t seed, double lo, double hi) {
  return random_tensor(shape, seed, lo, hi, DType::Int64);
}

// Every (op, dtype) with a reference kernel has a CPU kernel, but for the ones listed here
// (float64 convolutions, recurrences, attention, signal and sampling ops: no exporter writes them;
// a few integer element-wise ops; and the storage-only float8 bit casts). float16/bfloat16 nodes
// the CPU has no kernel for run in float32 (widen_half_precision), so those are not listed. Since
// automatic placement never picks the reference, a new reference-only (op, dtype) fails this test:
// give it a CPU kernel, or list it here knowing that models using it fail to compile on "auto";
// so does a listed one that gained a CPU kernel (take it off the list).
TEST(CpuCoverage, EveryReferenceKernelHasACpuKernel) {
  const std::set<std::pair<std::string, DType>> reference_only = [] {
    std::set<std::pair<std::string, DType>> out;
    for (const char *op : {"attention", "conv2d", "conv_nd", "conv_transpose", "deform_conv", "dft",
                           "fused_conv", "fused_conv_max_pool", "grid_sample", "gru", "lstm", "rnn",
                           "roi_align", "rotary_embedding", "rotate_half_mix", "stft"})
      out.insert({op, DType::Float64});
    for (const char *op : {"abs", "neg", "shrink", "sign"})
      for (DType d : {DType::Int8, DType::Int16}) out.insert({op, d});
    for (const char *op : {"shrink", "sign"})
      for (DType d : {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64})
        out.insert({op, d});
    out.insert({"range", DType::Int16});
    for (DType d : {DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2,
                    DType::Float8E5M2FNUZ, DType::Float8E8M0})
      out.insert({"bit_cast", d});
    return out;
  }();
  std::set<std::pair<std::string, DType>> cpu;
  for (const auto &entry : kernel_registry("cpu").entries()) cpu.insert(entry);
  for (const auto &[op, dtype] : kernel_registry("reference").entries()) {
    if (dtype == DType::Float16 || dtype == DType::BFloat16) continue;
    EXPECT_TRUE(cpu.count({op, dtype}) || reference_only.count({op, dtype}))
        << op << " has no CPU kernel for " << dtype_name(dtype);
  }
  for (const auto &[op, dtype] : reference_only)
    EXPECT_FALSE(cpu.count({op, dtype}))
        << op << " " << dtype_name(dtype) << " has a CPU kernel now: take it off the list";
}

// Automatic placement never picks the reference backend: an op and dtype only it runs (a float64
// conv) is an error naming the op and pointing at backend="reference", which still runs it.
TEST(CpuCoverage, AutomaticPlacementNeverPicksTheReference) {
  const Tensor x = random_tensor({1, 2, 5, 5}, 61, -1, 1, DType::Float64);
  const Tensor w = random_tensor({3, 2, 3, 3}, 62, -1, 1, DType::Float64);
  expect_error(
      [&] {
        call_op("conv2d", {x, w}, {});
      },
      {"op 'conv2d'", "no backend has a kernel for float64 inputs",
       "'reference' has one, a test oracle run only when named"});
  EXPECT_EQ(call_op("conv2d", {x, w}, {}, "reference").at(0).shape(), Shape({1, 3, 3, 3}));
}

// Reductions over an empty set: sum-like ops give 0 (log_sum log(0) = -inf), max -inf, min inf,
// mean NaN (0 / 0), log_sum_exp -inf; the kept dims keep their extent, and nothing is reduced
// where a kept dim is 0.
TEST(CpuCoverage, ReductionsOfEmptyInputs) {
  for (const char *op :
       {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_sum_square", "reduce_l1",
        "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp"}) {
    const Tensor empty_middle = Tensor::zeros({3, 0, 4});
    const Tensor middle = Tensor::from_vector<int64_t>({1}, {1});
    expect_same(op, {empty_middle, middle});
    expect_same(op, {empty_middle, middle}, {{"keepdims", int64_t{0}}});
    expect_same(op, {Tensor::zeros({0, 5}), Tensor::from_vector<int64_t>({1}, {1})});
    expect_same(op, {Tensor::zeros({2, 0})});  // every dim reduced: one value
    const std::vector<Tensor> got = call_op(op, {empty_middle, middle}, {}, "cpu");
    ASSERT_EQ(got[0].shape(), Shape({3, 1, 4})) << op;
  }
}

// Pad of a scalar (nothing to pad), and the `value` attribute of Pad before opset 11 in the
// output's dtype.
TEST(CpuCoverage, PadScalarsAndTheValueAttribute) {
  expect_same("pad",
              {Tensor::from_vector<float>({}, {2.5f}), Tensor::from_vector<int64_t>({0}, {})});
  const Tensor pads = Tensor::from_vector<int64_t>({4}, {1, 0, 2, 3});
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Int64})
    for (double value : {2.5, -7.0})
      expect_same("pad", {random_tensor({2, 3}, 51, -4, 4, dtype), pads}, {{"value", value}});
}

TEST(CpuCoverage, LogicalOpsBroadcast) {
  for (const char *op : {"logical_and", "logical_or", "logical_xor"}) {
    expect_same(op, {bools({3, 1, 5}, 1), bools({4, 5}, 2)});
    expect_same(op, {bools({70000}, 3), bools({1}, 4)});
  }
  expect_same("logical_not", {bools({2, 3, 7}, 5)});
}

TEST(CpuCoverage, NanAndInfTests) {
  Tensor x = random_tensor({6, 50}, 6);
  x.data<float>()[3] = NAN;
  x.data<float>()[7] = INFINITY;
  x.data<float>()[9] = -INFINITY;
  expect_same("is_nan", {x});
  for (int64_t pos : {0, 1})
    for (int64_t neg : {0, 1})
      expect_same("is_inf", {x}, {{"detect_positive", pos}, {"detect_negative", neg}});
}

TEST(CpuCoverage, ModBothSignRules) {
  const Tensor a = ints({4, 9}, 7, -50, 50), b = ints({9}, 8, 1, 7);
  Tensor nb = b.clone();
  for (int64_t i = 0; i < nb.numel(); i += 2) nb.data<int64_t>()[i] *= -1;
  const Tensor fa = random_tensor({4, 9}, 9, -10, 10), fb = random_tensor({9}, 10, 0.5, 3);
  for (int64_t fmod : {0, 1}) {
    expect_same("mod", {a, nb}, {{"fmod", fmod}});
    expect_same("mod", {fa, fb}, {{"fmod", 1}});
  }
  expect_same("mod", {fa, fb}, {{"fmod", 0}});
  expect_error(
      [&] {
        call_op("mod", {a, Tensor::zeros({9}, DType::Int64)}, {}, "cpu");
      },
      "modulo by zero");
}

TEST(CpuCoverage, Range) {
  auto scalar = [](auto v) {
    using T = decltype(v);
    return Tensor::from_vector<T>({}, {v});
  };
  expect_same("range", {scalar(int64_t{3}), scalar(int64_t{40}), scalar(int64_t{4})});
  expect_same("range", {scalar(int32_t{10}), scalar(int32_t{-3}), scalar(int32_t{-2})});
  expect_same("range", {scalar(0.5f), scalar(7.3f), scalar(0.25f)});
  expect_same("range", {scalar(-1.0), scalar(1.0), scalar(0.1)});
}

TEST(CpuCoverage, GatherElementsOnEveryAxis) {
  const Tensor data = random_tensor({4, 5, 6}, 11);
  for (int64_t axis : {0, 1, 2, -1}) {
    const int64_t n = data.shape()[size_t(axis < 0 ? axis + 3 : axis)];
    Shape idx_shape{3, 4, 5};  // smaller than data on the other dims
    expect_same("gather_elements", {data, ints(idx_shape, 12 + axis, -n, n)}, {{"axis", axis}});
  }
  expect_error(
      [&] {
        call_op("gather_elements", {data, Tensor::from_vector<int64_t>({1, 1, 1}, {9})}, {}, "cpu");
      },
      "out of range");
}

TEST(CpuCoverage, GatherNdAndScatterNd) {
  const Tensor data = random_tensor({3, 4, 5}, 13);
  expect_same("gather_nd", {data, ints({6, 2}, 14, -3, 3)});
  expect_same("gather_nd", {data, ints({3, 2, 1}, 15, 0, 4)}, {{"batch_dims", int64_t{1}}});
  const Tensor idx = Tensor::from_vector<int64_t>({4, 2}, {0, 1, 2, 3, 0, 1, -1, 0});
  const Tensor upd = random_tensor({4, 5}, 16);
  for (const char *red : {"none", "add", "mul", "max", "min"})
    expect_same("scatter_nd", {data, idx, upd}, {{"reduction", std::string(red)}});
  expect_error(
      [&] {
        call_op("scatter_nd",
                {data, Tensor::from_vector<int64_t>({1, 2}, {3, 0}), random_tensor({1, 5}, 1)}, {},
                "cpu");
      },
      "out of range");
}

TEST(CpuCoverage, ScatterElements) {
  const Tensor data = random_tensor({4, 5, 6}, 34);
  for (int64_t axis : {0, 1, 2})
    for (const char *red : {"none", "add", "mul", "max", "min"}) {
      const int64_t n = data.shape()[size_t(axis)];
      expect_same("scatter_elements",
                  {data, ints({3, 4, 5}, 35 + axis, -n, n), random_tensor({3, 4, 5}, 36)},
                  {{"axis", axis}, {"reduction", std::string(red)}});
    }
}

TEST(CpuCoverage, NonZero) {
  Tensor x = random_tensor({3, 4, 5}, 17);
  for (int64_t i = 0; i < x.numel(); i += 3) x.data<float>()[i] = 0;
  expect_same("non_zero", {x});
  expect_same("non_zero", {bools({7, 3}, 18)});
  expect_same("non_zero", {Tensor::zeros({4}, DType::Int64)});
}

TEST(CpuCoverage, TopKWithTies) {
  Tensor x = random_tensor({3, 40, 2}, 19);
  for (int64_t i = 0; i < x.numel(); i += 5) x.data<float>()[i] = 0.25f;  // ties
  for (int64_t axis : {1, -1, 0})
    for (int64_t k : {int64_t{1}, int64_t{2}})
      for (int64_t largest : {0, 1})
        expect_same("top_k", {x, Tensor::from_vector<int64_t>({1}, {k})},
                    {{"axis", axis}, {"largest", largest}});
  expect_same("top_k", {ints({5, 30}, 20, -4, 4), Tensor::from_vector<int64_t>({1}, {30})},
              {{"axis", int64_t{1}}});
}

TEST(CpuCoverage, IntegerAndDoubleReductions) {
  const Tensor i = ints({3, 4, 5}, 21, -3, 4);
  const Tensor d = random_tensor({3, 4, 5}, 22, -1, 1, DType::Float64);
  for (const char *op : {"reduce_sum", "reduce_prod", "reduce_min", "reduce_max"})
    for (const std::vector<int64_t> &axes : std::vector<std::vector<int64_t>>{{1}, {0, 2}, {}})
      for (int64_t keep : {0, 1}) {
        const Attributes attrs{{"axes", axes}, {"keepdims", keep}};
        expect_same(op, {i}, attrs);
        expect_same(op, {d}, attrs);
      }
  expect_same("reduce_prod", {random_tensor({6, 7}, 23)}, {{"axes", std::vector<int64_t>{1}}});
  expect_same("reduce_mean", {d}, {{"axes", std::vector<int64_t>{0, 1}}}, 1e-12);
}

// Every reduction over float64, each integer width and (min/max) bool, and mod, top_k and einsum
// over the widths beyond int32/int64/float32, against the reference. Where the reference has no
// reduction kernel for a width (int16, uint16, uint32, uint64), the oracle is its int32 result
// on the same values, cast: the values are small enough that no width overflows.
TEST(CpuCoverage, EveryIntegerWidthAndFloat64) {
  const auto as = [](const Tensor &t, DType dtype) {
    return call_op("cast", {t}, {{"to", std::string(dtype_name(dtype))}}, "reference").at(0);
  };
  const Tensor signed_values = ints({3, 4, 5}, 31, -5, 6),
               unsigned_values = ints({3, 4, 5}, 32, 0, 6);
  const Tensor d = random_tensor({3, 4, 5}, 33, -2, 2, DType::Float64);
  const std::vector<std::string> reductions = {
      "reduce_sum", "reduce_prod", "reduce_min",     "reduce_max",         "reduce_mean",
      "reduce_l1",  "reduce_l2",   "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square"};
  for (const std::string &op : reductions)
    for (const std::vector<int64_t> &axes : std::vector<std::vector<int64_t>>{{2}, {0, 2}})
      for (int64_t keep : {0, 1}) {
        if (op == "reduce_prod" && axes.size() > 1) continue;  // 5^15 overflows the narrow widths
        const Attributes attrs{{"axes", axes}, {"keepdims", keep}};
        SCOPED_TRACE(op + " over " + std::to_string(axes.size()) + " axes");
        expect_same(op, {d}, attrs, 1e-12);
        for (DType dtype : {DType::Int8, DType::UInt8})
          expect_same(op, {as(dtype == DType::Int8 ? signed_values : unsigned_values, dtype)},
                      attrs);
        for (DType dtype : {DType::Int16, DType::UInt16, DType::UInt32, DType::UInt64}) {
          const bool is_signed = dtype == DType::Int16;
          const Tensor x32 = as(is_signed ? signed_values : unsigned_values, DType::Int32);
          const Tensor want = as(call_op(op, {x32}, attrs, "reference").at(0), dtype);
          EXPECT_TRUE(all_close(call_op(op, {as(x32, dtype)}, attrs, "cpu").at(0), want, 0, 0))
              << dtype_name(dtype);
        }
      }
  for (const char *op : {"reduce_min", "reduce_max"})
    expect_same(op, {bools({3, 4, 5}, 34)}, {{"axes", std::vector<int64_t>{1}}});
  Tensor divisors = ints({5}, 35, 1, 7);
  for (DType dtype :
       {DType::Int8, DType::Int16, DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64}) {
    const bool is_signed = dtype == DType::Int8 || dtype == DType::Int16;
    const Tensor x = as(is_signed ? signed_values : unsigned_values, dtype);
    Tensor b = divisors.clone();
    if (is_signed)
      for (int64_t i = 0; i < b.numel(); i += 2) b.data<int64_t>()[i] *= -1;
    for (int64_t fmod : {0, 1}) expect_same("mod", {x, as(b, dtype)}, {{"fmod", fmod}});
    for (int64_t largest : {0, 1})
      expect_same("top_k", {x, Tensor::from_vector<int64_t>({1}, {3})},
                  {{"axis", int64_t{1}}, {"largest", largest}});
  }
  for (DType dtype : {DType::Float64, DType::Int32, DType::Int64})
    for (const char *equation : {"bij,bjk->bik", "ii->i", "ij->"}) {
      const bool square = std::string(equation) != "bij,bjk->bik";
      const std::vector<Tensor> operands =
          square ? std::vector<Tensor>{as(ints({4, 4}, 36, -3, 4), dtype)}
                 : std::vector<Tensor>{as(signed_values, dtype),
                                       as(ints({3, 5, 2}, 37, -3, 4), dtype)};
      expect_same("einsum", operands, {{"equation", std::string(equation)}},
                  dtype == DType::Float64 ? 1e-12 : 0);
    }
}

// 1-D and 3-D convolutions: groups, strides, pads, dilations, bias; float32 GEMM against the
// reference's double loops.
TEST(CpuCoverage, ConvNd) {
  struct Case {
    Shape x, w;
    int64_t group;
    std::vector<int64_t> strides, pads, dilations;
  };
  const std::vector<Case> cases = {
      {{2, 4, 50}, {6, 4, 5}, 1, {1}, {2, 2}, {1}},
      {{1, 1, 400}, {8, 1, 10}, 1, {5}, {0, 0}, {1}},  // a wav2vec2-style first layer
      {{2, 6, 33}, {6, 2, 3}, 3, {2}, {1, 0}, {2}},
      {{1, 8, 20}, {8, 1, 7}, 8, {1}, {3, 3}, {1}},  // depthwise 1-D
      {{1, 3, 6, 10, 10}, {5, 3, 3, 3, 3}, 1, {1, 2, 2}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}},
      {{2, 4, 4, 7, 5}, {4, 2, 1, 3, 2}, 2, {2, 1, 1}, {0, 1, 0, 0, 1, 1}, {1, 2, 1}},
      // Columns taken a tile at a time (depth 1728: ~1200 positions per tile, tiles ending
      // inside rows), an R3D-style layer; pads wider than the kernel; stride 3 in the last dim.
      {{1, 64, 16, 16, 16}, {8, 64, 3, 3, 3}, 1, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}},
      {{1, 2, 5, 6, 9}, {3, 2, 2, 2, 3}, 1, {2, 1, 3}, {3, 0, 4, 1, 2, 5}, {2, 1, 2}},
      {{2, 3, 41}, {4, 3, 4}, 1, {3}, {5, 6}, {2}},
  };
  for (const Case &c : cases) {
    const Tensor x = random_tensor(c.x, 24), w = random_tensor(c.w, 25);
    const Tensor b = random_tensor({c.w[0]}, 26);
    const Attributes attrs{
        {"group", c.group}, {"strides", c.strides}, {"pads", c.pads}, {"dilations", c.dilations}};
    expect_same("conv_nd", {x, w, b}, attrs, 1e-4);
    expect_same("conv_nd", {x, w}, attrs, 1e-4);
  }
}

// The N-D pools: 1-D, 2-D and 3-D, strides, dilations, pads (and ceil mode's partial windows),
// both average divisors, Lp norms, max indices in both storage orders, int8/uint8 max.
TEST(CpuCoverage, PoolNd) {
  struct Case {
    Shape x;
    std::vector<int64_t> kernel, strides, pads, dilations;
    int64_t ceil;
  };
  const std::vector<Case> cases = {
      {{2, 3, 50}, {3}, {2}, {1, 1}, {1}, 0},
      {{1, 4, 37}, {4}, {3}, {0, 2}, {2}, 1},
      {{2, 2, 9, 11}, {3, 2}, {2, 1}, {1, 0, 1, 1}, {1, 2}, 1},
      {{1, 2, 5, 7, 6}, {2, 3, 2}, {2, 2, 1}, {0, 1, 1, 1, 1, 0}, {1, 1, 2}, 0},
      {{1, 3, 4, 6, 8}, {3, 3, 3}, {1, 2, 3}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1},
  };
  for (const Case &c : cases) {
    Tensor x = random_tensor(c.x, 47, -3, 3);
    for (int64_t i = 0; i < x.numel(); i += 5) x.data<float>()[i] = std::round(x.data<float>()[i]);
    const Attributes geometry{{"kernel_shape", c.kernel},
                              {"strides", c.strides},
                              {"pads", c.pads},
                              {"ceil_mode", c.ceil}};
    Attributes dilated = geometry;
    dilated.set("dilations", c.dilations);
    for (int64_t order : {0, 1}) {
      Attributes max = dilated;
      max.set("storage_order", order);
      expect_same("max_pool_nd", {x}, max);
    }
    for (int64_t include : {0, 1}) {
      Attributes avg = dilated;
      avg.set("count_include_pad", include);
      expect_same("avg_pool_nd", {x}, avg, 1e-6);
    }
    for (double p : {1.0, 2.0, 3.0}) {
      Attributes lp = geometry;
      lp.set("p", p);
      expect_same("lp_pool", {x}, lp, 1e-5);
    }
    for (DType dtype : {DType::Int8, DType::UInt8}) {
      Tensor q = Tensor::empty(c.x, dtype);
      for (int64_t i = 0; i < q.numel(); ++i)
        static_cast<uint8_t *>(q.raw_data())[i] = static_cast<uint8_t>(i * 37 % 251);
      expect_same("max_pool_nd", {q}, dilated);
    }
  }
}

TEST(CpuCoverage, MeanVarianceNorm) {
  const Tensor x = random_tensor({2, 3, 4, 5}, 49, -2, 5);
  expect_same("mean_variance_norm", {x}, {}, 1e-5);
  expect_same("mean_variance_norm", {x}, {{"axes", std::vector<int64_t>{1, 3}}}, 1e-5);
  expect_same("mean_variance_norm", {x}, {{"axes", std::vector<int64_t>{-1}}}, 1e-5);
}

// MaxUnpool of a max pool's indices: the default output size, a larger one, repeated indices.
TEST(CpuCoverage, MaxUnpool) {
  const Tensor x = random_tensor({2, 3, 4, 5}, 48);
  Tensor idx = Tensor::empty({2, 3, 4, 5}, DType::Int64);
  for (int64_t i = 0; i < idx.numel(); ++i) idx.data<int64_t>()[i] = (i * 7) % (2 * 3 * 8 * 10);
  const Attributes attrs{{"kernel_shape", std::vector<int64_t>{2, 2}},
                         {"strides", std::vector<int64_t>{2, 2}}};
  expect_same("max_unpool", {x, idx}, attrs);
  expect_same("max_unpool", {x, idx, Tensor::from_vector<int64_t>({4}, {2, 3, 9, 11})}, attrs);
}

TEST(CpuCoverage, ElementwiseMath) {
  const Tensor x = random_tensor({7, 300}, 27, -0.95, 0.95);  // inside every op's domain
  const Tensor big = random_tensor({7, 300}, 28, 1.05, 30);   // acosh
  const Tensor d = random_tensor({5, 30}, 29, -0.95, 0.95, DType::Float64);
  for (const char *op : {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                         "atanh", "reciprocal", "floor", "ceil", "round", "softsign", "mish"}) {
    expect_same(op, {x});
    expect_same(op, {d});
  }
  expect_same("acosh", {big});
  const Tensor halves = Tensor::from_vector<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 3.7f});
  expect_same("round", {halves});  // half to even
  const Tensor i = ints({4, 9}, 30, -100, 100);
  expect_same("abs", {i});
  expect_same("neg", {i});
}

// The activations with attributes (defaults and set), and sign/shrink of integers too.
TEST(CpuCoverage, ActivationsWithAttributes) {
  Tensor x = random_tensor({5, 3000}, 31, -4, 4);
  x.data<float>()[11] = NAN;
  const Tensor d = random_tensor({3, 40}, 32, -4, 4, DType::Float64);
  const Tensor i32 = random_tensor({4, 50}, 33, -9, 9, DType::Int32);
  const Tensor i64 = ints({4, 50}, 34, -9, 9);
  for (const Attributes &attrs : {Attributes{}, Attributes{{"alpha", 0.7}, {"gamma", 1.3}}}) {
    expect_same("selu", {x}, attrs, 1e-6);
    expect_same("selu", {d}, attrs);
  }
  for (const Attributes &attrs : {Attributes{}, Attributes{{"alpha", 2.5}}}) {
    expect_same("celu", {x}, attrs, 1e-6);
    expect_same("thresholded_relu", {x}, attrs);
    expect_same("thresholded_relu", {d}, attrs);
  }
  for (const Tensor &t : {x, d, i32, i64}) {
    expect_same("sign", {t});
    expect_same("shrink", {t});
    expect_same("shrink", {t}, {{"bias", 1.5}, {"lambd", 2.0}});
  }
}

// Argmax/argmin/hardmax along every axis (innermost rows of 1..70 values, more columns than one
// task takes), with ties and NaN (leading and inside); cumsum/cumprod with every flag.
TEST(CpuCoverage, AxisScans) {
  Tensor x = random_tensor({3, 37, 300}, 39, -3, 3);
  for (int64_t i = 0; i < x.numel(); i += 7) x.data<float>()[i] = std::round(x.data<float>()[i]);
  x.data<float>()[0] = NAN;    // a leading NaN wins its row and column
  x.data<float>()[905] = NAN;  // a NaN inside never does
  const Tensor i32 = random_tensor({5, 70}, 40, -4, 4, DType::Int32);
  const Tensor i64 = ints({70, 5}, 41, -4, 4);
  const Tensor d = random_tensor({4, 33}, 42, -1, 1, DType::Float64);
  for (const char *op : {"argmax", "argmin"})
    for (int64_t last : {0, 1})
      for (int64_t keep : {0, 1}) {
        for (int64_t axis : {0, 1, 2, -1})
          expect_same(op, {x}, {{"axis", axis}, {"select_last_index", last}, {"keepdims", keep}});
        for (const Tensor &t : {i32, i64, d})
          for (int64_t axis : {0, 1})
            expect_same(op, {t}, {{"axis", axis}, {"select_last_index", last}});
      }
  for (int64_t n : {1, 15, 16, 17, 70})
    expect_same("argmax", {random_tensor({3, n}, 43 + n, -2, 2)}, {{"axis", int64_t{-1}}});
  for (int64_t axis : {0, 1, 2}) {
    expect_same("hardmax", {x}, {{"axis", axis}});
    expect_same("hardmax", {x}, {{"axis", axis}, {"coerce_2d", int64_t{1}}});
  }
  const Tensor small = random_tensor({3, 37, 300}, 44, 0.9, 1.1);  // products stay finite
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1}) {
      const Attributes attrs{{"exclusive", exclusive}, {"reverse", reverse}};
      for (int64_t axis : {0, 1, 2, -1}) {
        const Tensor a = Tensor::from_vector<int64_t>({}, {axis});
        expect_same("cumsum", {x, a}, attrs);
        expect_same("cumprod", {small, a}, attrs);
        expect_same("cumsum", {i32, Tensor::from_vector<int64_t>({}, {axis % 2})}, attrs);
        expect_same("cumsum", {i64, Tensor::from_vector<int64_t>({}, {axis % 2})}, attrs);
      }
    }
}

// OneHot on every axis, negative and out-of-range indices (int64 and float), int32 output values.
TEST(CpuCoverage, OneHot) {
  Tensor idx = ints({4, 5, 3}, 45, -9, 9);
  Tensor fidx = random_tensor({4, 5, 3}, 46, -9, 9);
  fidx.data<float>()[0] = NAN;
  fidx.data<float>()[1] = 1e30f;
  const Tensor values = Tensor::from_vector<float>({2}, {-0.5f, 3.25f});
  const Tensor ivalues = Tensor::from_vector<int32_t>({2}, {0, 7});
  const Tensor depth = Tensor::from_vector<int64_t>({}, {7});
  for (int64_t axis : {-1, 0, 1, 2, 3}) {
    expect_same("one_hot", {idx, depth, values}, {{"axis", axis}});
    expect_same("one_hot", {idx, depth, ivalues}, {{"axis", axis}});
    expect_same("one_hot", {fidx, Tensor::from_vector<float>({1}, {7.f}), values},
                {{"axis", axis}});
  }
}

// Einsum through the GEMM: matrix and batched products with either operand transposed, attention's
// two products, outer products, transposes, sums, three operands, ellipses; diagonals and
// broadcast ellipsis dims (the reference kernel's cases) still right.
TEST(CpuCoverage, Einsum) {
  struct Case {
    std::string equation;
    std::vector<Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{7, 9}, {9, 5}}},
      {"ij,kj->ik", {{7, 9}, {5, 9}}},
      {"ji,jk->ik", {{9, 7}, {9, 5}}},
      {"bij,bjk->bik", {{3, 4, 6}, {3, 6, 5}}},
      {"bhqd,bhkd->bhqk", {{2, 3, 5, 8}, {2, 3, 7, 8}}},
      {"bhqk,bhkd->bhqd", {{2, 3, 5, 7}, {2, 3, 7, 8}}},
      {"bhqk,bkhd->bqhd", {{2, 3, 5, 7}, {2, 7, 3, 8}}},
      {"i,j->ij", {{6}, {4}}},
      {"i,i->", {{300}, {300}}},
      {"ij,ij->ij", {{3, 5}, {3, 5}}},
      {"ij->ji", {{4, 6}}},
      {"ijk->ki", {{4, 5, 6}}},
      {"ij->", {{4, 6}}},
      {"ijk,ikl->jl", {{3, 4, 5}, {3, 5, 6}}},
      {"abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 6}}},
      {"abc,ad->bd", {{3, 4, 5}, {3, 2}}},  // c summed away first
      {"...ij,...jk->...ik", {{2, 3, 4, 5}, {2, 3, 5, 6}}},
      {"ii->i", {{5, 5}}},
      {"bij,jk->bik", {{64, 48, 32}, {32, 80}}},  // larger: threads inside one GEMM
      // Diagonals and broadcasts, copied to distinct labels at full extent first:
      {"...ij,...jk->...ik", {{1, 4, 5}, {3, 5, 2}}},
      {"ii->", {{6, 6}}},                           // trace
      {"iij,jk->ik", {{3, 3, 4}, {4, 2}}},          // diagonal, then a product
      {"bii,bij->bj", {{2, 4, 4}, {2, 4, 3}}},      // batched diagonal times a matrix
      {"i...,i...->i...", {{3, 1, 4}, {3, 5, 1}}},  // dims of 1 against 5 and 4
      {"...i,...i->...", {{2, 1, 6}, {1, 3, 6}}},   // both operands broadcast
  };
  uint64_t seed = 50;
  for (const Case &c : cases) {
    std::vector<Tensor> inputs;
    for (const Shape &shape : c.shapes) inputs.push_back(random_tensor(shape, seed++));
    SCOPED_TRACE(c.equation);
    expect_same("einsum", inputs, {{"equation", c.equation}}, 1e-5);
  }
}

// Mean of 1 to 3 inputs broadcasting against each other; LpNormalization along every axis, p 1
// and 2, with an all-zero row.
TEST(CpuCoverage, MeanAndLpNorm) {
  const Tensor a = random_tensor({2, 3, 70}, 60), b = random_tensor({3, 1}, 61);
  const Tensor c = random_tensor({70}, 62), d = random_tensor({4, 5}, 63, -1, 1, DType::Float64);
  expect_same("mean", {a}, {}, 1e-6);
  expect_same("mean", {a, b}, {}, 1e-6);
  expect_same("mean", {b, a, c}, {}, 1e-6);
  expect_same("mean", {d, d}, {}, 1e-12);
  Tensor x = random_tensor({3, 4, 300}, 64);
  for (int64_t i = 0; i < 300; ++i) x.data<float>()[i] = 0;  // a zero norm along the last axis
  for (int64_t p : {1, 2})
    for (int64_t axis : {0, 1, 2, -1})
      expect_same("lp_norm", {x}, {{"axis", axis}, {"p", p}}, 1e-6);
}

// Bitwise and/or/xor and both shifts (amounts in and out of range, negative values) over every
// integer width, broadcast.
TEST(CpuCoverage, BitwiseOps) {
  for (DType dtype : {DType::Int8, DType::UInt8, DType::Int16, DType::UInt32, DType::Int64}) {
    Tensor a = Tensor::empty({3, 70}, dtype), b = Tensor::empty({70}, dtype);
    auto *pa = static_cast<uint8_t *>(a.raw_data()), *pb = static_cast<uint8_t *>(b.raw_data());
    for (size_t i = 0; i < a.nbytes(); ++i) pa[i] = uint8_t(i * 151 + 7);
    for (int64_t i = 0; i < b.numel(); ++i) {  // shift amounts -3 .. 66, little-endian
      std::memset(pb + i * dtype_size(dtype), i < 3 ? 0xff : 0, dtype_size(dtype));
      pb[i * dtype_size(dtype)] = uint8_t(i - 3);
    }
    for (const char *op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) expect_same(op, {a, b});
    expect_same("bitwise_not", {a});
    for (const char *direction : {"LEFT", "RIGHT"})
      expect_same("bit_shift", {a, b}, {{"direction", std::string(direction)}});
  }
}

// DeformConv: groups and offset groups, stride, dilation, pads, with and without mask and bias,
// offsets moving taps outside the image.
TEST(CpuCoverage, DeformConv) {
  const Tensor x = random_tensor({2, 4, 7, 8}, 78), w = random_tensor({6, 2, 3, 3}, 79);
  const Tensor offset = random_tensor({2, 2 * 2 * 9, 4, 4}, 80, -3, 3);
  const Tensor mask = random_tensor({2, 2 * 9, 4, 4}, 81, 0, 1), bias = random_tensor({6}, 82);
  const Attributes attrs{{"group", int64_t{2}},
                         {"offset_group", int64_t{2}},
                         {"strides", std::vector<int64_t>{2, 2}},
                         {"dilations", std::vector<int64_t>{1, 2}},
                         {"pads", std::vector<int64_t>{1, 2, 1, 1}}};
  expect_same("deform_conv", {x, w, offset}, attrs, 1e-5);
  expect_same("deform_conv", {x, w, offset, bias, mask}, attrs, 1e-5);
}

TEST(CpuCoverage, Col2Im) {
  const auto i64s = [](std::vector<int64_t> v) {
    return Tensor::from_vector<int64_t>({int64_t(v.size())}, v);
  };
  // 2-D: 3x3 blocks of a 6x7 image, stride 1, pad 1 (the image's own size); 1-D dilated, strided.
  expect_same("col2im", {random_tensor({2, 3 * 9, 42}, 76), i64s({6, 7}), i64s({3, 3})},
              {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, 1e-6);
  expect_same("col2im", {random_tensor({1, 2 * 3, 5}, 77), i64s({13}), i64s({3})},
              {{"strides", std::vector<int64_t>{2}},
               {"dilations", std::vector<int64_t>{2}},
               {"pads", std::vector<int64_t>{0, 1}}},
              1e-6);
}

TEST(CpuCoverage, Unique) {
  const Tensor x = ints({6, 4}, 75, -2, 2);
  for (int64_t sorted : {0, 1}) {
    expect_same("unique", {x}, {{"sorted", sorted}});
    for (int64_t axis : {0, 1, -1})
      expect_same("unique", {x}, {{"sorted", sorted}, {"axis", axis}});
  }
}

// Compress along an axis and flattened; a KV cache's tensor_scatter (linear and circular, with and
// without write indices, int32 indices); swiglu.
TEST(CpuCoverage, CompressTensorScatterSwiGlu) {
  const Tensor x = random_tensor({4, 6, 5}, 70);
  Tensor cond = Tensor::empty({4}, DType::Bool);  // shorter than some axes: the rest is dropped
  for (int64_t i = 0; i < 4; ++i) cond.data<bool>()[i] = i % 3 != 1;
  for (int64_t axis : {0, 1, -1}) expect_same("compress", {x, cond}, {{"axis", axis}});
  expect_same("compress", {x, cond});
  const Tensor cache = random_tensor({2, 3, 8, 4}, 71), update = random_tensor({2, 3, 3, 4}, 72);
  const Tensor starts = Tensor::from_vector<int64_t>({2}, {1, 5});
  const Tensor starts32 = Tensor::from_vector<int32_t>({2}, {0, 4});
  expect_same("tensor_scatter", {cache, update});
  expect_same("tensor_scatter", {cache, update, starts});
  expect_same("tensor_scatter", {cache, update, starts32});
  expect_same("tensor_scatter", {cache, update, Tensor::from_vector<int64_t>({2}, {6, 7})},
              {{"mode", std::string("circular")}});
  expect_error(
      [&] {
        call_op("tensor_scatter", {cache, update, Tensor::from_vector<int64_t>({2}, {6, 7})}, {},
                "cpu");
      },
      "out of range");
  const Tensor a = random_tensor({3, 700}, 73, -6, 6), b = random_tensor({3, 700}, 74);
  expect_same("swiglu", {a, b}, {}, 1e-6);
  expect_same("swiglu", {a, b}, {{"alpha", 1.702}}, 1e-6);
}

// Relu and clip of signed integers (clamped indices, quantized values), bounds past the type's
// range.
TEST(CpuCoverage, IntegerReluAndClip) {
  for (DType dtype : {DType::Int8, DType::Int16, DType::Int32, DType::Int64}) {
    Tensor x = Tensor::empty({3, 700}, dtype);
    auto *p = static_cast<uint8_t *>(x.raw_data());
    for (size_t i = 0; i < x.nbytes(); ++i) p[i] = uint8_t(i * 97 + 13);
    expect_same("relu", {x});
    expect_same("clip", {x}, {{"min", -5.0}, {"max", 90.0}});
    expect_same("clip", {x}, {{"min", -1e30}});
    expect_same("clip", {x}, {{"max", 9.3e18}});
  }
}

// PRelu: a slope per channel, a scalar, a full tensor and a broadcast row; floats and integers.
TEST(CpuCoverage, PRelu) {
  const Tensor x = random_tensor({2, 6, 9, 11}, 35, -3, 3);
  for (const Shape &slope : {Shape{6, 1, 1}, Shape{1}, Shape{2, 6, 9, 11}, Shape{11}})
    expect_same("prelu", {x, random_tensor(slope, 36, 0.05, 0.9)});
  const Tensor i = ints({3, 70000}, 37, -50, 50);
  expect_same("prelu", {i, ints({70000}, 38, 0, 5)});
}

TEST(CpuCoverage, NonMaxSuppression) {
  // Boxes on a jittered grid so that neighbours overlap; spread scores, two classes.
  const int64_t n = 60;
  Tensor boxes = Tensor::empty({1, n, 4});
  const Tensor jitter = random_tensor({n, 4}, 31, 0, 0.4);
  for (int64_t b = 0; b < n; ++b) {
    const float x = float(b % 10), y = float(b / 10);
    const float *j = jitter.data<float>() + b * 4;
    float *box = boxes.data<float>() + b * 4;
    box[0] = y + j[0], box[1] = x + j[1], box[2] = y + 1.5f + j[2], box[3] = x + 1.5f + j[3];
  }
  const Tensor scores = random_tensor({1, 2, n}, 32, 0, 1);
  const Tensor max_out = Tensor::from_vector<int64_t>({1}, {12});
  const Tensor iou = Tensor::from_vector<float>({1}, {0.3f});
  const Tensor score_thr = Tensor::from_vector<float>({1}, {0.2f});
  expect_same("non_max_suppression", {boxes, scores, max_out, iou, score_thr});
  expect_same("non_max_suppression", {boxes, scores, max_out, iou},
              {{"center_point_box", int64_t{1}}});
  // "No limit" as exporters write it (INT64_MAX): every box that survives, not none.
  const Tensor no_limit = Tensor::from_vector<int64_t>({1}, {INT64_MAX});
  const Tensor all = call_op("non_max_suppression", {boxes, scores, no_limit, iou}, {}, "cpu")[0];
  EXPECT_GT(all.shape()[0], 24);
  expect_same("non_max_suppression", {boxes, scores, no_limit, iou, score_thr});
}

TEST(CpuCoverage, RoiAlign) {
  const Tensor x = random_tensor({2, 3, 12, 10}, 33);
  const Tensor rois = Tensor::from_vector<float>(
      {4, 4}, {0, 0, 9, 11, 1.5f, 2.25f, 4, 7.5f, -2, -1, 3, 4, 6, 6, 30, 40});  // one past the map
  const Tensor batch = Tensor::from_vector<int64_t>({4}, {0, 1, 1, 0});
  for (const char *mode : {"avg", "max"})
    for (const char *ctm : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {0, 2})
        expect_same("roi_align", {x, rois, batch},
                    {{"mode", std::string(mode)},
                     {"coordinate_transformation_mode", std::string(ctm)},
                     {"sampling_ratio", ratio},
                     {"spatial_scale", 0.5},
                     {"output_height", int64_t{3}},
                     {"output_width", int64_t{4}}},
                    1e-5);
}

// rnn, gru and lstm: directions, layouts, biases, initial states, ragged sequence_lens,
// peepholes, linear_before_reset; float32 GEMMs against the reference's double loops.
TEST(CpuCoverage, RecurrentLayers) {
  const int64_t seq = 7, batch = 3, in = 5, h = 4;
  for (const std::string op : {"rnn", "gru", "lstm"}) {
    const int64_t g = op == "lstm" ? 4 : op == "gru" ? 3 : 1;
    for (const std::string direction : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1})
        for (int variant = 0; variant < 3; ++variant) {
          const int64_t dirs = direction == "bidirectional" ? 2 : 1;
          const Shape xs = layout ? Shape{batch, seq, in} : Shape{seq, batch, in};
          const Shape state = layout ? Shape{batch, dirs, h} : Shape{dirs, batch, h};
          std::vector<Tensor> inputs{random_tensor(xs, 40), random_tensor({dirs, g * h, in}, 41),
                                     random_tensor({dirs, g * h, h}, 42)};
          Attributes attrs{{"hidden_size", h}, {"direction", direction}, {"layout", layout}};
          if (variant >= 1) {  // biases, ragged lengths, initial states
            inputs.push_back(random_tensor({dirs, 2 * g * h}, 43));
            inputs.push_back(Tensor::from_vector<int32_t>({batch}, {7, 3, 5}));
            inputs.push_back(random_tensor(state, 44));
            if (op == "lstm") inputs.push_back(random_tensor(state, 45));
          }
          if (variant == 2 && op == "lstm") inputs.push_back(random_tensor({dirs, 3 * h}, 46));
          if (variant == 2 && op == "gru") attrs.set("linear_before_reset", int64_t{1});
          SCOPED_TRACE(op + " " + direction + " layout " + std::to_string(layout) + " variant " +
                       std::to_string(variant));
          expect_same(op, inputs, attrs, 1e-5);
        }
  }
}

// The node's own activations (with alpha / beta taken in order), clip, and LSTM's input_forget
// (f = 1 - i), on both directions; float32 loops against the reference's double ones.
TEST(CpuCoverage, RecurrentActivationsClipAndInputForget) {
  using V = std::vector<std::string>;
  const int64_t seq = 6, batch = 2, in = 3, h = 5, dirs = 2;
  struct Case {
    std::string op;
    Attributes attrs;
  };
  const std::vector<Case> cases = {
      {"rnn",
       {{"activations", V{"Relu", "LeakyRelu"}}, {"activation_alpha", std::vector<double>{0.3}}}},
      {"rnn", {{"clip", 0.7}}},
      {"gru",
       {{"activations", V{"HardSigmoid", "Softsign", "Sigmoid", "ScaledTanh"}},
        {"activation_alpha", std::vector<double>{0.25, 1.5}},
        {"activation_beta", std::vector<double>{0.4, 0.8}}}},
      {"gru", {{"clip", 0.5}, {"linear_before_reset", int64_t{1}}}},
      {"lstm",
       {{"activations", V{"Sigmoid", "Elu", "Softplus", "Affine", "Tanh", "ThresholdedRelu"}},
        {"activation_alpha", std::vector<double>{0.9, 0.5, 0.1}},
        {"activation_beta", std::vector<double>{0.2}}}},
      {"lstm", {{"input_forget", int64_t{1}}}},
      {"lstm", {{"input_forget", int64_t{1}}, {"clip", 0.6}}},
  };
  for (const Case &c : cases) {
    const int64_t g = c.op == "lstm" ? 4 : c.op == "gru" ? 3 : 1;
    std::vector<Tensor> inputs{
        random_tensor({seq, batch, in}, 60, -2, 2), random_tensor({dirs, g * h, in}, 61),
        random_tensor({dirs, g * h, h}, 62), random_tensor({dirs, 2 * g * h}, 63)};
    Attributes attrs = c.attrs;
    attrs.set("hidden_size", h);
    attrs.set("direction", std::string("bidirectional"));
    SCOPED_TRACE(c.op + " " + c.attrs.to_string());
    expect_same(c.op, inputs, attrs, 1e-5);
  }
}

}  // namespace
}  // namespace lumen
