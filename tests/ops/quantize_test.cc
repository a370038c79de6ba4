// Quantization ops on the reference backend: hand-computed values (round half to even,
// saturation, per-tensor / per-axis / blocked parameters) and errors; the CPU Q/DQ kernels against
// the reference, byte for byte.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/common/narrow_types.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;

template <class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

template <class T>
Tensor t(const Shape &shape, const std::vector<T> &values) {
  return Tensor::from_vector(shape, values);
}

Tensor run1(const std::string &op, const std::vector<Tensor> &inputs,
            const Attributes &attrs = {}) {
  auto out = call_op(op, inputs, attrs, "reference");
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

TEST(QuantizeOp, PerTensorSaturatesAndRoundsHalfToEven) {
  const Tensor y = run1("quantize_linear", {t<float>({6}, {0, 2, 3, 1000, -254, -1000}),
                                            t<float>({}, {2}), t<uint8_t>({}, {128})});
  EXPECT_TRUE(all_close(y, t<uint8_t>({6}, {128, 129, 130, 255, 1, 0})));
  const Tensor z = run1("quantize_linear",
                        {t<float>({5}, {1, 3, 5, -1, -3}), t<float>({}, {2}), t<int8_t>({}, {0})});
  EXPECT_TRUE(all_close(z, t<int8_t>({5}, {0, 2, 2, 0, -2})));
}

TEST(QuantizeOp, DefaultsToUint8AndDtypeAttribute) {
  EXPECT_TRUE(all_close(run1("quantize_linear", {t<float>({3}, {-5, 3, 600}), t<float>({}, {1})}),
                        t<uint8_t>({3}, {0, 3, 255})));
  // int16 (compared by hand: the test helpers do not read int16).
  const Tensor y = run1("quantize_linear", {t<float>({2}, {-70000, 7}), t<float>({}, {1})},
                        {{"dtype", std::string("int16")}});
  ASSERT_EQ(y.dtype(), DType::Int16);
  EXPECT_EQ(y.data<int16_t>()[0], -32768);
  EXPECT_EQ(y.data<int16_t>()[1], 7);
}

TEST(QuantizeOp, PerAxisAndBlocked) {
  const Tensor x = t<float>({1, 3, 2}, {4, 8, 4, 8, 4, 8});
  EXPECT_TRUE(
      all_close(run1("quantize_linear", {x, t<float>({3}, {1, 2, 4}), t<uint8_t>({3}, {0, 1, 2})}),
                t<uint8_t>({1, 3, 2}, {4, 8, 3, 5, 3, 4})));
  const Tensor xb = t<float>({2, 4}, {1, 2, 4, 8, 8, 16, 16, 32});
  EXPECT_TRUE(all_close(
      run1("quantize_linear", {xb, t<float>({2, 2}, {1, 2, 4, 8})},
           {{"axis", int64_t{1}}, {"block_size", int64_t{2}}, {"dtype", std::string("int8")}}),
      t<int8_t>({2, 4}, {1, 2, 2, 4, 2, 4, 2, 4})));
}

TEST(QuantizeOp, Dequantize) {
  EXPECT_TRUE(all_close(run1("dequantize_linear", {t<uint8_t>({4}, {0, 3, 128, 255}),
                                                   t<float>({}, {2}), t<uint8_t>({}, {128})}),
                        t<float>({4}, {-256, -250, 0, 254})));
  EXPECT_TRUE(all_close(
      run1("dequantize_linear",
           {t<int8_t>({2, 2}, {1, 2, 4, 6}), t<float>({2}, {1, 0.5f}), t<int8_t>({2}, {0, 2})},
           {{"axis", int64_t{0}}}),
      t<float>({2, 2}, {1, 2, 1, 2})));
  // Blocked along axis 1, blocks of 2 (the last block is partial).
  EXPECT_TRUE(all_close(
      run1("dequantize_linear", {t<int32_t>({1, 3}, {2, 4, 6}), t<float>({1, 2}, {0.5f, 2})},
           {{"block_size", int64_t{2}}}),
      t<float>({1, 3}, {1, 2, 12})));
}

TEST(QuantizeOp, DynamicQuantize) {
  const auto out = call_op("dynamic_quantize_linear",
                           {t<float>({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f})}, {}, "reference");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(all_close(out[0], t<uint8_t>({6}, {153, 255, 0, 26, 221, 179})));
  EXPECT_TRUE(all_close(out[1], t<float>({}, {5.0f / 255.0f})));
  EXPECT_TRUE(all_close(out[2], t<uint8_t>({}, {153})));
}

TEST(QuantizeOp, MatMulInteger) {
  const Tensor a = t<uint8_t>({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  const Tensor b = t<uint8_t>({3, 2}, {1, 4, 2, 5, 3, 6});
  EXPECT_TRUE(all_close(run1("matmul_integer", {a, b, t<uint8_t>({}, {12}), t<uint8_t>({}, {0})}),
                        t<int32_t>({4, 2}, {-38, -83, -44, -98, -50, -113, -56, -128})));
  // Per-row / per-column zero points, int8, no zero points at all.
  EXPECT_TRUE(
      all_close(run1("matmul_integer", {t<int8_t>({2, 1}, {3, -3}), t<int8_t>({1, 2}, {5, 6}),
                                        t<int8_t>({2}, {1, -1}), t<int8_t>({2}, {0, 1})}),
                t<int32_t>({2, 2}, {10, 10, -10, -10})));
  EXPECT_TRUE(all_close(
      run1("matmul_integer", {t<int8_t>({1, 2}, {-128, -128}), t<int8_t>({2, 1}, {-128, 127})}),
      t<int32_t>({1, 1}, {16384 - 16256})));
}

TEST(QuantizeOp, ConvInteger) {
  const Tensor x = t<uint8_t>({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Tensor w = t<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1});
  EXPECT_TRUE(all_close(run1("conv_integer", {x, w, t<uint8_t>({}, {1})}),
                        t<int32_t>({1, 1, 2, 2}, {12, 16, 24, 28})));
  // Padding 1 on every side with stride 2: corners of the padded 5x5 input.
  EXPECT_TRUE(all_close(
      run1("conv_integer", {x, w, t<uint8_t>({}, {1})},
           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}}),
      t<int32_t>({1, 1, 2, 2}, {1, 5, 11, 28})));
}

TEST(QuantizeOp, QLinearMatMulAndConv) {
  // a' = [0, 10], b' = [2, 4]: 40 * (0.5 * 0.25 / 1) + 5 = 10.
  EXPECT_TRUE(all_close(run1("qlinear_matmul", {t<uint8_t>({1, 2}, {10, 20}), t<float>({}, {0.5f}),
                                                t<uint8_t>({}, {10}), t<uint8_t>({2, 1}, {3, 5}),
                                                t<float>({}, {0.25f}), t<uint8_t>({}, {1}),
                                                t<float>({}, {1}), t<uint8_t>({}, {5})}),
                        t<uint8_t>({1, 1}, {10})));
  // acc = x * 2 (+ bias 1) -> times 0.25: [0.75, 1.25, 1.75, 2.25] rounds half to even...
  // with bias: acc = [3, 5, 7, 9] * 0.25 = [0.75, 1.25, 1.75, 2.25] -> [1, 1, 2, 2].
  const std::vector<Tensor> in{t<int8_t>({1, 1, 2, 2}, {1, 2, 3, 4}),
                               t<float>({}, {1}),
                               t<int8_t>({}, {0}),
                               t<int8_t>({1, 1, 1, 1}, {3}),
                               t<float>({1}, {0.5f}),
                               t<int8_t>({1}, {1}),
                               t<float>({}, {2}),
                               t<int8_t>({}, {0}),
                               t<int32_t>({1}, {1})};
  EXPECT_TRUE(all_close(run1("qlinear_conv", in), t<int8_t>({1, 1, 2, 2}, {1, 1, 2, 2})));
  // Without bias: acc = [2, 4, 6, 8] * 0.25 = [0.5, 1, 1.5, 2] -> [0, 1, 2, 2] (half to even).
  std::vector<Tensor> no_bias(in.begin(), in.end() - 1);
  EXPECT_TRUE(all_close(run1("qlinear_conv", no_bias), t<int8_t>({1, 1, 2, 2}, {0, 1, 2, 2})));
}

TEST(QuantizeOp, Errors) {
  EXPECT_NE(
      error_of([] {
        run1("quantize_linear", {t<float>({2, 3}, {1, 2, 3, 4, 5, 6}), t<float>({2}, {1, 2})});
      }).find("scale of shape [2]"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              run1("quantize_linear", {t<int32_t>({2}, {1, 2}), t<float>({}, {1})});
            }).find("floating point"),
            std::string::npos);
  EXPECT_NE(
      error_of([] {
        run1("dequantize_linear", {t<uint8_t>({2}, {1, 2}), t<float>({}, {1}), t<int8_t>({}, {0})});
      }).find("zero point dtype"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              run1("matmul_integer",
                   {t<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6}), t<uint8_t>({2, 1}, {1, 2})});
            }).find("inner dimensions"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run1("conv_integer", {t<uint8_t>({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                    t<uint8_t>({1, 1, 1, 1}, {1})});
            }).find("input channels"),
            std::string::npos);
}

std::vector<uint8_t> narrow_bytes(const Tensor &x) {
  const auto *p = static_cast<const uint8_t *>(x.raw_data());
  return std::vector<uint8_t>(p, p + x.numel());
}

TEST(QuantizeOp, NarrowTypes) {
  // int4: round half to even, saturate to [-8, 7]; stored as the low 4 bits.
  const Tensor y = run1("quantize_linear", {t<float>({4}, {-20, 0.5, 3.6, 10}), t<float>({}, {1}),
                                            t<Int4>({}, {Int4{0x1}})});
  EXPECT_EQ(y.dtype(), DType::Int4);
  EXPECT_EQ(narrow_bytes(y), (std::vector<uint8_t>{0x8, 0x1, 0x5, 0x7}));
  const Tensor d = run1("dequantize_linear", {y, t<float>({}, {2}), t<Int4>({}, {Int4{0xF}})});
  EXPECT_TRUE(all_close(d, t<float>({4}, {-14, 4, 12, 16})));
  // float8: x / scale cast, saturating unless saturate=0; the zero point is ignored.
  const std::vector<Tensor> in{t<float>({2}, {1000, 3}), t<float>({}, {1}),
                               t<Float8E4M3FN>({}, {Float8E4M3FN{0}})};
  EXPECT_EQ(narrow_bytes(run1("quantize_linear", in)), (std::vector<uint8_t>{0x7E, 0x44}));
  EXPECT_EQ(narrow_bytes(run1("quantize_linear", in, {{"saturate", int64_t{0}}})),
            (std::vector<uint8_t>{0x7F, 0x44}));
  const Tensor f = run1("dequantize_linear", {run1("quantize_linear", in), t<float>({}, {2})});
  EXPECT_TRUE(all_close(f, t<float>({2}, {896, 6})));
  // float8e8m0 is not a quantized type.
  EXPECT_THROW(run1("quantize_linear", {t<float>({1}, {1}), t<float>({}, {1})},
                    {{"dtype", std::string("float8_e8m0fnu")}}),
               Error);
}

// Q then DQ on the CPU and the reference: every 8/16-bit type (by the zero point's dtype), per
// tensor, per axis and per block, without a zero point, a float64 scale, float16 and bfloat16
// scales (and outputs); NaN, infinities, halves
// (ties to even) and values far out of range.
TEST(QuantizeOp, CpuMatchesReference) {
  const Shape shape{3, 5, 70};
  Tensor x = testing::random_tensor(shape, 7, -300, 300);
  float *v = x.data<float>();
  for (int64_t i = 0; i < x.numel(); i += 9) v[i] = std::round(v[i]) + 0.5f;  // ties
  v[1] = NAN;
  v[2] = INFINITY;
  v[3] = -INFINITY;
  v[4] = 1e30f;
  const auto same = [](const std::string &op, const std::vector<Tensor> &inputs,
                       const Attributes &attrs) {
    const Tensor want = call_op(op, inputs, attrs, "reference").at(0);
    const Tensor got = call_op(op, inputs, attrs, "cpu").at(0);
    EXPECT_EQ(got.shape(), want.shape()) << op;
    EXPECT_EQ(got.dtype(), want.dtype()) << op;
    return want.nbytes() == got.nbytes() &&
           std::memcmp(want.raw_data(), got.raw_data(), want.nbytes()) == 0;
  };
  struct Params {
    Shape scale;
    Attributes attrs;
  };
  const std::vector<Params> params = {
      {{}, {}},
      {{5}, {{"axis", int64_t{1}}}},
      {{70}, {{"axis", int64_t{-1}}}},
      {{3, 2, 70}, {{"axis", int64_t{1}}, {"block_size", int64_t{3}}}},
  };
  for (const Params &p : params) {
    const Tensor scale = testing::random_tensor(p.scale, 8, 0.05, 3);
    for (DType q : {DType::UInt8, DType::Int8, DType::UInt16, DType::Int16}) {
      Tensor zero = Tensor::zeros(p.scale, q);
      for (int64_t i = 0; i < zero.numel(); ++i)  // a few small zero points of either sign
        static_cast<uint8_t *>(zero.raw_data())[i * dtype_size(q)] = uint8_t(i * 7 % 60);
      const Tensor qx = call_op("quantize_linear", {x, scale, zero}, p.attrs, "reference").at(0);
      EXPECT_TRUE(same("quantize_linear", {x, scale, zero}, p.attrs)) << dtype_name(q);
      EXPECT_TRUE(same("dequantize_linear", {qx, scale, zero}, p.attrs)) << dtype_name(q);
      EXPECT_TRUE(same("dequantize_linear", {qx, scale}, p.attrs)) << dtype_name(q);
      for (const char *half : {"float16", "bfloat16"}) {  // the scale's dtype is the output's
        const Tensor scale_half =
            call_op("cast", {scale}, {{"to", std::string(half)}}, "reference").at(0);
        EXPECT_TRUE(same("dequantize_linear", {qx, scale_half, zero}, p.attrs))
            << dtype_name(q) << " to " << half;
      }
    }
    EXPECT_TRUE(same("quantize_linear", {x, scale}, p.attrs));  // uint8, no zero point
    const Tensor scale64 = testing::random_tensor(p.scale, 9, 0.05, 3, DType::Float64);
    EXPECT_TRUE(same("quantize_linear", {x, scale64}, p.attrs));
  }
  for (float s : {1.0f, 0.5f})  // x / scale exactly halfway between integers: ties to even
    for (DType q : {DType::UInt8, DType::Int8, DType::Int16})
      EXPECT_TRUE(same("quantize_linear", {x, t<float>({}, {s}), Tensor::zeros({}, q)}, {}));
  const Tensor i32 = testing::random_tensor({4, 300}, 10, -1e6, 1e6, DType::Int32);
  EXPECT_TRUE(same("dequantize_linear", {i32, t<float>({}, {0.001f})}, {}));
  EXPECT_TRUE(same("dequantize_linear", {i32, t<double>({}, {0.001})}, {}));
}

// The same for the narrow types (int4, uint4, int2, uint2, the float8s and float4e2m1) both ways,
// with integer zero points of either sign and saturate=0 for the float8s, and for float16 and
// bfloat16 inputs (scales of their own dtype, whose quotient rounds to it, and float32 scales):
// the CPU's bytes equal the reference's.
TEST(QuantizeOp, NarrowTypesAndHalfInputsCpuMatchesReference) {
  const Shape shape{3, 4, 50};
  Tensor x = testing::random_tensor(shape, 11, -40, 40);
  x.data<float>()[1] = NAN;
  x.data<float>()[2] = 1e30f;
  const auto same = [](const std::string &op, const std::vector<Tensor> &inputs,
                       const Attributes &attrs) {
    const Tensor want = call_op(op, inputs, attrs, "reference").at(0);
    const Tensor got = call_op(op, inputs, attrs, "cpu").at(0);
    return got.dtype() == want.dtype() && want.nbytes() == got.nbytes() &&
           std::memcmp(want.raw_data(), got.raw_data(), want.nbytes()) == 0;
  };
  const std::vector<std::pair<Shape, Attributes>> params = {
      {{}, {}},
      {{4}, {{"axis", int64_t{1}}}},
      {{3, 2, 50}, {{"axis", int64_t{1}}, {"block_size", int64_t{3}}}},
  };
  for (const auto &[pshape, attrs] : params) {
    const Tensor scale = testing::random_tensor(pshape, 12, 0.5, 4);
    for (DType q :
         {DType::Int4, DType::UInt4, DType::Int2, DType::UInt2, DType::Float8E4M3FN,
          DType::Float8E4M3FNUZ, DType::Float8E5M2, DType::Float8E5M2FNUZ, DType::Float4E2M1}) {
      Tensor zero = Tensor::zeros(pshape, q);
      if (narrow::int_format(q))  // 0, 1 and the bits of 15, 3, -1 or -1
        for (int64_t i = 0; i < zero.numel(); ++i)
          static_cast<uint8_t *>(zero.raw_data())[i] =
              uint8_t(i % 3 == 2 ? (q == DType::Int4 || q == DType::UInt4 ? 0xF : 0x3) : i % 3);
      const Tensor qx = call_op("quantize_linear", {x, scale, zero}, attrs, "reference").at(0);
      EXPECT_TRUE(same("quantize_linear", {x, scale, zero}, attrs)) << dtype_name(q);
      EXPECT_TRUE(same("dequantize_linear", {qx, scale, zero}, attrs)) << dtype_name(q);
      const Tensor scale_half =
          call_op("cast", {scale}, {{"to", std::string("float16")}}, "reference").at(0);
      EXPECT_TRUE(same("dequantize_linear", {qx, scale_half, zero}, attrs)) << dtype_name(q);
      if (narrow::float_format(q) && q != DType::Float4E2M1) {
        Attributes no_saturation = attrs;
        no_saturation.set("saturate", int64_t{0});
        EXPECT_TRUE(same("quantize_linear", {x, scale, zero}, no_saturation)) << dtype_name(q);
      }
    }
    for (const char *half : {"float16", "bfloat16"}) {
      const Tensor xh = call_op("cast", {x}, {{"to", std::string(half)}}, "reference").at(0);
      const Tensor sh = call_op("cast", {scale}, {{"to", std::string(half)}}, "reference").at(0);
      for (DType q : {DType::Int8, DType::UInt16, DType::Int4, DType::Float8E4M3FN}) {
        const Tensor zero = Tensor::zeros(pshape, q);
        EXPECT_TRUE(same("quantize_linear", {xh, sh, zero}, attrs)) << half << dtype_name(q);
        EXPECT_TRUE(same("quantize_linear", {xh, scale, zero}, attrs)) << half << dtype_name(q);
      }
    }
  }
}

// 8-bit tensor of the given dtype: values spread over the whole range, extremes included, so that
// a depth of 700 sums past 2^24 (the float GEMM is only exact in blocks).
Tensor bytes8(const Shape &shape, DType dtype, uint32_t seed) {
  Tensor x = Tensor::empty(shape, dtype);
  auto *p = static_cast<uint8_t *>(x.raw_data());
  for (int64_t i = 0; i < x.numel(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = i % 5 == 0 ? (dtype == DType::Int8 ? 0x80 : 0xff) : uint8_t(seed >> 24);
  }
  return x;
}

// MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv and DynamicQuantizeLinear on the CPU
// against the reference: both 8-bit types, zero points per tensor/row/column, broadcast batches,
// depths past one exact block, grouped/strided/dilated/padded convolutions with bias and
// per-channel scales.
TEST(QuantizeOp, IntegerOpsCpuMatchesReference) {
  const auto same = [](const std::string &op, const std::vector<Tensor> &inputs,
                       const Attributes &attrs = {}) {
    const std::vector<Tensor> want = call_op(op, inputs, attrs, "reference");
    const std::vector<Tensor> got = call_op(op, inputs, attrs, "cpu");
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].shape(), want[i].shape()) << op;
      if (std::memcmp(got[i].raw_data(), want[i].raw_data(), want[i].nbytes()) != 0) return false;
    }
    return true;
  };
  for (DType dtype : {DType::UInt8, DType::Int8}) {
    const Tensor a = bytes8({2, 5, 700}, dtype, 1), b = bytes8({700, 9}, dtype, 2);
    const Tensor a_zp = bytes8({}, dtype, 3), b_zp = bytes8({9}, dtype, 4);
    const Tensor a_rows = bytes8({5}, dtype, 5);
    EXPECT_TRUE(same("matmul_integer", {a, b}));
    EXPECT_TRUE(same("matmul_integer", {a, b, a_zp, b_zp}));
    EXPECT_TRUE(same("matmul_integer", {a, b, a_rows, bytes8({}, dtype, 6)}));
    EXPECT_TRUE(same("matmul_integer", {bytes8({3, 1, 4, 30}, dtype, 7),
                                        bytes8({2, 30, 6}, dtype, 8)}));  // broadcast batches
    // QLinearMatMul, per-tensor and per-column weight scales.
    const Tensor as = t<float>({}, {0.02f}), ys = t<float>({}, {3.5f});
    const Tensor y_zp = bytes8({}, dtype, 9);
    EXPECT_TRUE(same("qlinear_matmul",
                     {a, as, a_zp, b, t<float>({}, {0.03f}), bytes8({}, dtype, 10), ys, y_zp}));
    EXPECT_TRUE(
        same("qlinear_matmul",
             {a, as, a_zp, b, testing::random_tensor({9}, 11, 0.001, 0.05), b_zp, ys, y_zp}));
    // Scales in float16 and float64: the multiplier is formed in their precision.
    for (const char *scale_type : {"float16", "float64"}) {
      const auto in = [&](const Tensor &t) {
        return call_op("cast", {t}, {{"to", std::string(scale_type)}}, "reference").at(0);
      };
      EXPECT_TRUE(same("qlinear_matmul",
                       {a, in(as), a_zp, b, in(testing::random_tensor({9}, 11, 0.001, 0.05)), b_zp,
                        in(ys), y_zp}))
          << scale_type;
      EXPECT_TRUE(
          same("qlinear_conv",
               {bytes8({1, 8, 9, 11}, dtype, 20), in(t<float>({}, {0.05f})), bytes8({}, dtype, 21),
                bytes8({6, 8, 3, 3}, dtype, 22), in(testing::random_tensor({6}, 23, 0.001, 0.02)),
                bytes8({6}, dtype, 24), in(t<float>({}, {2.0f})), bytes8({}, dtype, 25)}))
          << scale_type;
    }
    // Convolutions.
    struct Conv {
      Shape x, w;
      Attributes attrs;
    };
    const std::vector<Conv> convs = {
        {{1, 8, 9, 11}, {6, 8, 3, 3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
        {{2, 6, 10, 7},
         {4, 3, 2, 3},
         {{"group", int64_t{2}},
          {"strides", std::vector<int64_t>{2, 1}},
          {"dilations", std::vector<int64_t>{1, 2}},
          {"pads", std::vector<int64_t>{0, 2, 1, 0}}}},
        {{1, 80, 5, 5}, {3, 80, 3, 3}, {}},  // depth 720: three exact blocks
    };
    for (const Conv &c : convs) {
      const Tensor x = bytes8(c.x, dtype, 12), w = bytes8(c.w, dtype, 13);
      const Tensor x_zp = bytes8({}, dtype, 14), w_zp = bytes8({c.w[0]}, dtype, 15);
      EXPECT_TRUE(same("conv_integer", {x, w}, c.attrs));
      EXPECT_TRUE(same("conv_integer", {x, w, x_zp, w_zp}, c.attrs));
      Tensor bias = Tensor::empty({c.w[0]}, DType::Int32);
      for (int64_t i = 0; i < c.w[0]; ++i) bias.data<int32_t>()[i] = int32_t(i * 977 - 2000);
      const Tensor ws = testing::random_tensor({c.w[0]}, 16, 0.001, 0.02);
      EXPECT_TRUE(same("qlinear_conv",
                       {x, t<float>({}, {0.05f}), x_zp, w, ws, w_zp, t<float>({}, {2.0f}),
                        bytes8({}, dtype, 17), bias},
                       c.attrs));
    }
  }
  Tensor f = testing::random_tensor({3, 50000}, 18, -4, 7);
  EXPECT_TRUE(same("dynamic_quantize_linear", {f}));
  EXPECT_TRUE(same("dynamic_quantize_linear", {testing::random_tensor({7}, 19, 1, 2)}));
}

}  // namespace
}  // namespace lumen
