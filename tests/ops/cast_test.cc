// cast: the CPU backend against the reference for every pair of standard dtypes; rounding to
// float16/bfloat16 (nearest, ties to even), special values, float -> integer truncation and
// saturation, bool, unsigned types.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

Tensor cast(const Tensor &x, const char *to) {
  return call_op("cast", {x}, {{"to", std::string(to)}})[0];
}

template <class T>
std::vector<T> vals(const Tensor &t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

TEST(CastTest, FloatToHalfRoundsToNearestEven) {
  const float inf = std::numeric_limits<float>::infinity();
  // 1 + 2^-11 ties to even (1.0); 1 + 3*2^-11 ties up; 65520 overflows; 2^-25 rounds to 0,
  // 3*2^-26 rounds to the smallest subnormal.
  const Tensor x =
      Tensor::from_vector<float>({9}, {1.0f + 0x1p-11f, 1.0f + 0x1.8p-10f, 65504.0f, 65520.0f, -inf,
                                       0x1p-25f, 0x1.8p-25f, -0.0f, 0.1f});
  const Tensor h = cast(x, "float16");
  std::vector<uint16_t> bits;
  for (int i = 0; i < 9; ++i) bits.push_back(h.data<Float16>()[i].bits);
  EXPECT_EQ(bits, (std::vector<uint16_t>{0x3C00, 0x3C02, 0x7BFF, 0x7C00, 0xFC00, 0x0000, 0x0001,
                                         0x8000, 0x2E66}));
  const Tensor back = cast(h, "float32");
  EXPECT_EQ(back.data<float>()[2], 65504.0f);
  EXPECT_EQ(back.data<float>()[6], 0x1p-24f);
  EXPECT_TRUE(std::isnan(
      cast(cast(Tensor::from_vector<float>({1}, {NAN}), "float16"), "float64").data<double>()[0]));
  // double -> float16 rounds once: 1 + 2^-11 + 2^-40 is above the tie, so it rounds up.
  const Tensor d = Tensor::from_vector<double>({1}, {1.0 + 0x1p-11 + 0x1p-40});
  EXPECT_EQ(cast(d, "float16").data<Float16>()[0].bits, 0x3C01);
}

TEST(CastTest, BFloat16) {
  const Tensor x = Tensor::from_vector<float>({3}, {1.0f, 0.47892547f, -3.0f});
  const Tensor b = cast(x, "bfloat16");
  EXPECT_EQ(b.data<BFloat16>()[0].bits, 0x3F80);
  EXPECT_EQ(b.data<BFloat16>()[1].bits, 0x3EF5);  // 0x3EF535B8 rounds down
  EXPECT_EQ(b.data<BFloat16>()[2].bits, 0xC040);
  EXPECT_EQ(vals<float>(cast(b, "float32"))[2], -3.0f);
}

TEST(CastTest, IntegersAndBool) {
  const Tensor x = Tensor::from_vector<float>({5}, {-1.7f, 2.9f, 1e10f, NAN, 0.0f});
  EXPECT_EQ(vals<int32_t>(cast(x, "int32")),
            (std::vector<int32_t>{-1, 2, std::numeric_limits<int32_t>::max(), 0, 0}));
  const Tensor b = cast(x, "bool");
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(std::vector<bool>(b.data<bool>(), b.data<bool>() + 5),
            (std::vector<bool>{true, true, true, true, false}));
  const Tensor i = Tensor::from_vector<int64_t>({2}, {-1, 300});
  EXPECT_EQ(vals<uint8_t>(cast(i, "uint8")), (std::vector<uint8_t>{255, 44}));
  EXPECT_EQ(vals<uint64_t>(cast(i, "uint64")),
            (std::vector<uint64_t>{18446744073709551615ull, 300}));
  EXPECT_EQ(vals<double>(cast(Tensor::from_vector<uint16_t>({1}, {65535}), "float64")),
            (std::vector<double>{65535}));
}

// The bytes of a narrow (one byte per element) tensor.
std::vector<uint8_t> bytes(const Tensor &t) {
  const auto *p = static_cast<const uint8_t *>(t.raw_data());
  return std::vector<uint8_t>(p, p + t.numel());
}

Tensor cast_attrs(const Tensor &x, const char *to, int64_t saturate,
                  const std::string &round_mode = "up") {
  return call_op("cast", {x},
                 {{"to", std::string(to)}, {"saturate", saturate}, {"round_mode", round_mode}})[0];
}

TEST(CastTest, Float8SaturateAndSpecials) {
  const float inf = std::numeric_limits<float>::infinity();
  // 3, 0.3 (-> 0.3125), -0, NaN, inf, -1e9, 464 (ties to even: 448), 470 (overflows).
  const Tensor x =
      Tensor::from_vector<float>({8}, {3.0f, 0.3f, -0.0f, NAN, inf, -1e9f, 464.0f, 470.0f});
  EXPECT_EQ(bytes(cast_attrs(x, "float8_e4m3fn", 1)),
            (std::vector<uint8_t>{0x44, 0x2A, 0x80, 0x7F, 0x7E, 0xFE, 0x7E, 0x7E}));
  EXPECT_EQ(bytes(cast_attrs(x, "float8_e4m3fn", 0)),
            (std::vector<uint8_t>{0x44, 0x2A, 0x80, 0x7F, 0x7F, 0xFF, 0x7E, 0x7F}));
  // FNUZ: no negative zero, NaN is 0x80 (also for overflow without saturation).
  EXPECT_EQ(bytes(cast_attrs(x, "float8_e4m3fnuz", 0)),
            (std::vector<uint8_t>{0x4C, 0x32, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80}));
  EXPECT_EQ(bytes(cast_attrs(x, "float8_e4m3fnuz", 1))[4], 0x7F);
  // e5m2 has infinities.
  const std::vector<uint8_t> e5 = bytes(cast_attrs(x, "float8_e5m2", 0));
  EXPECT_EQ(e5[0], 0x42);
  EXPECT_EQ(e5[4], 0x7C);
  EXPECT_EQ(e5[5], 0xFC);
  EXPECT_EQ(bytes(cast_attrs(x, "float8_e5m2", 1))[5], 0xFB);
  EXPECT_EQ(bytes(cast_attrs(x, "float8_e5m2fnuz", 1))[0], 0x46);
  // Back to float: exact.
  const Tensor back = cast(cast_attrs(x, "float8_e4m3fn", 1), "float32");
  EXPECT_EQ(vals<float>(back)[1], 0.3125f);
  EXPECT_EQ(vals<float>(back)[5], -448.0f);
  EXPECT_TRUE(std::isnan(vals<float>(back)[3]));
  EXPECT_EQ(vals<float>(cast(cast_attrs(x, "float8_e5m2", 0), "float32"))[4], inf);
}

TEST(CastTest, Float4AndE8M0) {
  const Tensor x = Tensor::from_vector<float>({4}, {3.0f, 0.3f, 1e9f, -1e9f});
  EXPECT_EQ(bytes(cast(x, "float4_e2m1fn")), (std::vector<uint8_t>{0x5, 0x1, 0x7, 0xF}));
  EXPECT_EQ(vals<float>(cast(cast(x, "float4_e2m1fn"), "float32")),
            (std::vector<float>{3.0f, 0.5f, 6.0f, -6.0f}));
  const Tensor y = Tensor::from_vector<float>({2}, {3.0f, 0.3f});
  EXPECT_EQ(bytes(cast_attrs(y, "float8_e8m0fnu", 1, "up")), (std::vector<uint8_t>{129, 126}));
  EXPECT_EQ(bytes(cast_attrs(y, "float8_e8m0fnu", 1, "down")), (std::vector<uint8_t>{128, 125}));
  EXPECT_EQ(bytes(cast_attrs(y, "float8_e8m0fnu", 1, "nearest")), (std::vector<uint8_t>{129, 125}));
  EXPECT_EQ(vals<float>(cast(cast_attrs(y, "float8_e8m0fnu", 1), "float32")),
            (std::vector<float>{4.0f, 0.5f}));
  EXPECT_THROW(cast_attrs(y, "float8_e8m0fnu", 1, "sideways"), Error);
}

TEST(CastTest, Int4AndInt2) {
  // Floats truncate; out-of-range values give 0 (as ml_dtypes does); stored as the low bits.
  const Tensor x = Tensor::from_vector<float>({5}, {-9.0f, -8.5f, -1.0f, 7.5f, 8.0f});
  EXPECT_EQ(bytes(cast(x, "int4")), (std::vector<uint8_t>{0x0, 0x8, 0xF, 0x7, 0x0}));
  EXPECT_EQ(vals<int8_t>(cast(cast(x, "int4"), "int8")), (std::vector<int8_t>{0, -8, -1, 7, 0}));
  EXPECT_EQ(bytes(cast(x, "uint4")), (std::vector<uint8_t>{0, 0, 0, 7, 8}));
  // Integers wrap around.
  const Tensor i = Tensor::from_vector<int32_t>({3}, {-20, 17, -1});
  EXPECT_EQ(bytes(cast(i, "int4")), (std::vector<uint8_t>{0xC, 0x1, 0xF}));
  EXPECT_EQ(bytes(cast(i, "uint2")), (std::vector<uint8_t>{0x0, 0x1, 0x3}));
  EXPECT_EQ(vals<float>(cast(cast(i, "int2"), "float32")), (std::vector<float>{0.0f, 1.0f, -1.0f}));
}

TEST(CastTest, Errors) {
  const Tensor x = Tensor::zeros({2}, DType::Float32);
  EXPECT_THROW(call_op("cast", {x}), Error);
  EXPECT_THROW(call_op("cast", {x}, {{"to", std::string("float8")}}), Error);
}

// Every pair of dtypes, standard and narrow, over values that exercise each rule (fractions,
// negatives, out-of-range, NaN, infinities, zero), large enough to be split over threads: the CPU
// backend's bytes equal the reference's.
TEST(CastTest, CpuMatchesReferenceForEveryDtypePair) {
  // The standard dtypes, then the narrow ones (one byte per element; float8 targets saturate by
  // default, and without saturation below; float8e8m0 rounds up by default, down and to nearest
  // below).
  const std::vector<std::string> dtypes = {
      "float32",        "float64",         "float16", "bfloat16",      "int8",
      "int16",          "int32",           "int64",   "uint8",         "uint16",
      "uint32",         "uint64",          "bool",    "float8_e4m3fn", "float8_e4m3fnuz",
      "float8_e5m2",    "float8_e5m2fnuz", "uint4",   "int4",          "float4_e2m1fn",
      "float8_e8m0fnu", "uint2",           "int2"};
  const std::vector<double> seeds = {0.0, -0.0, 0.4, -0.6, 1.5,  -2.5, 127.9,    -129.0,   300.0,
                                     7e4, -7e4, 3e9, -5e9, 1e19, NAN,  INFINITY, -INFINITY};
  const int64_t n = 40000;  // several parallel chunks
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = seeds[i % seeds.size()] * (1 + (i / 97) % 3);
  const Tensor source = Tensor::from_vector<double>({n}, values);
  for (const std::string &from : dtypes) {
    const Tensor x = call_op("cast", {source}, {{"to", from}}, "reference")[0];
    for (const std::string &to : dtypes) {
      for (const Attributes &attrs :
           {Attributes{{"to", to}}, Attributes{{"to", to}, {"saturate", int64_t{0}}},
            Attributes{{"to", to}, {"round_mode", std::string("down")}},
            Attributes{{"to", to}, {"round_mode", std::string("nearest")}}}) {
        const Tensor want = call_op("cast", {x}, attrs, "reference")[0];
        const Tensor got = call_op("cast", {x}, attrs, "cpu")[0];
        ASSERT_EQ(got.dtype(), want.dtype());
        EXPECT_EQ(0, std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()))
            << from << " -> " << attrs.to_string();
      }
    }
  }
}

}  // namespace
}  // namespace lumen
