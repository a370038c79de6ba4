// Data-movement ops (expand, tile, slice, split, pad, range, trilu, depth_to_space,
// space_to_depth, eye_like, reverse_sequence, center_crop_pad): hand-computed results on the
// reference backend, every element size, and errors naming the op.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::expect_error;

template <class T>
std::vector<T> values(const Tensor &t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

Tensor i64(std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

Tensor iota_f(const Shape &shape) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

Tensor run(const std::string &op, const std::vector<Tensor> &inputs, const Attributes &attrs = {}) {
  return call_op(op, inputs, attrs, "reference").at(0);
}

TEST(MovementTest, ExpandAndTile) {
  const Tensor x = Tensor::from_vector<float>({3, 1}, {1, 2, 3});
  const Tensor e = run("expand", {x, i64({2, 1, 2})});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values<float>(e), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(run("expand", {x, i64({1})}).shape(), (Shape{3, 1}));  // bidirectional
  const Tensor t = run("tile", {Tensor::from_vector<float>({1, 2}, {1, 2}), i64({2, 2})});
  EXPECT_EQ(t.shape(), (Shape{2, 4}));
  EXPECT_EQ(values<float>(t), (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  expect_error([&] { run("expand", {x, i64({2, 2})}); }, {"expand", "[3, 1]"});
  expect_error([&] { run("tile", {x, i64({2})}); }, {"tile", "repeats"});
}

TEST(MovementTest, Slice) {
  const Tensor x = iota_f({3, 4});
  EXPECT_EQ(values<float>(run("slice", {x, i64({1, 1}), i64({3, 3})})),
            (std::vector<float>{5, 6, 9, 10}));
  // Negative steps, clamped ends, negative axes.
  EXPECT_EQ(values<float>(run("slice", {x, i64({-1}), i64({-1000}), i64({-1}), i64({-2})})),
            (std::vector<float>{3, 1, 7, 5, 11, 9}));
  EXPECT_EQ(values<float>(run("slice", {x, i64({0}), i64({INT64_MAX}), i64({0}), i64({2})})),
            (std::vector<float>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(run("slice", {x, i64({10}), i64({20}), i64({1})}).shape(), (Shape{3, 0}));
  // Extreme steps and empty dims.
  EXPECT_EQ(
      values<float>(run("slice", {x, i64({-1}), i64({INT64_MIN}), i64({1}), i64({INT64_MIN})})),
      (std::vector<float>{3, 7, 11}));
  EXPECT_EQ(
      values<float>(run("slice", {x, i64({1}), i64({INT64_MAX}), i64({0}), i64({INT64_MAX})})),
      (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(run("slice", {iota_f({0, 2}), i64({-1}), i64({-10}), i64({0}), i64({-1})}).shape(),
            (Shape{0, 2}));
  expect_error(
      [&] {
        run("slice", {x, i64({0}), i64({1}), i64({0}), i64({0})});
      },
      {"slice", "steps"});
  expect_error([&] { run("slice", {x, i64({0}), i64({1}), i64({2})}); }, {"slice", "axis 2"});
}

TEST(MovementTest, Split) {
  const Tensor x = iota_f({2, 5});
  Attributes a{{"axis", int64_t{1}}, {"num_outputs", int64_t{2}}, {"index", int64_t{1}}};
  EXPECT_EQ(values<float>(run("split", {x}, a)), (std::vector<float>{3, 4, 8, 9}));
  a.set("index", int64_t{0});
  EXPECT_EQ(values<float>(run("split", {x}, a)), (std::vector<float>{0, 1, 2, 5, 6, 7}));
  const Attributes b{{"axis", int64_t{-1}}, {"index", int64_t{1}}};
  EXPECT_EQ(values<float>(run("split", {x, i64({1, 4})}, b)),
            (std::vector<float>{1, 2, 3, 4, 6, 7, 8, 9}));
  expect_error([&] { run("split", {x, i64({1, 1})}, b); }, {"split", "sum"});
}

TEST(MovementTest, PadModes) {
  const Tensor x = Tensor::from_vector<float>({3}, {1, 2, 3});
  auto pad = [&](const std::string &mode, std::vector<int64_t> pads) {
    return values<float>(run("pad", {x, i64(pads)}, {{"mode", mode}}));
  };
  EXPECT_EQ(pad("constant", {2, 1}), (std::vector<float>{0, 0, 1, 2, 3, 0}));
  EXPECT_EQ(pad("reflect", {2, 2}), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(pad("edge", {2, 1}), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(pad("wrap", {2, 2}), (std::vector<float>{2, 3, 1, 2, 3, 1, 2}));
  EXPECT_EQ(pad("constant", {-1, 0}), (std::vector<float>{2, 3}));
  const Tensor v = Tensor::from_vector<float>({}, {9});
  EXPECT_EQ(values<float>(run("pad", {x, i64({1, 1}), v})), (std::vector<float>{9, 1, 2, 3, 9}));
  // axes input: pad only the last dim of a 2-D input.
  const Tensor m = iota_f({2, 2});
  EXPECT_EQ(values<float>(run("pad", {m, i64({1, 0}), Tensor(), i64({-1})})),
            (std::vector<float>{0, 0, 1, 0, 2, 3}));
  expect_error([&] { run("pad", {x, i64({1})}); }, {"pad", "pads"});
  expect_error([&] { run("pad", {x, i64({-2, -2})}); }, {"pad", "invalid size"});
  expect_error(
      [&] {
        run("pad", {x, i64({1, 1})}, {{"mode", std::string("mirror")}});
      },
      {"pad", "mirror"});
}

// The legacy `value` attribute (a float) converted to an integer tensor's type saturates: the
// fuzzer's int8 pad with value -131072 (UBSan: out of range for signed char).
TEST(MovementTest, PadValueAttributeSaturates) {
  const Tensor x = Tensor::from_vector<int8_t>({2}, {1, 2});
  for (const char *backend : {"reference", "cpu"}) {
    const auto pad = [&](double value) {
      return values<int8_t>(call_op("pad", {x, i64({1, 1})}, {{"value", value}}, backend).at(0));
    };
    EXPECT_EQ(pad(-131072.0), (std::vector<int8_t>{-128, 1, 2, -128})) << backend;
    EXPECT_EQ(pad(1e300), (std::vector<int8_t>{127, 1, 2, 127})) << backend;
    EXPECT_EQ(pad(NAN), (std::vector<int8_t>{0, 1, 2, 0})) << backend;
    EXPECT_EQ(pad(-3.0), (std::vector<int8_t>{-3, 1, 2, -3})) << backend;
  }
}

TEST(MovementTest, Range) {
  auto scalar = [](auto v) { return Tensor::from_vector<decltype(v)>({}, {v}); };
  EXPECT_EQ(values<int32_t>(run("range", {scalar(10), scalar(4), scalar(-3)})),
            (std::vector<int32_t>{10, 7}));
  EXPECT_EQ(values<float>(run("range", {scalar(1.f), scalar(2.f), scalar(0.25f)})),
            (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  EXPECT_EQ(run("range", {scalar(int64_t{5}), scalar(int64_t{1}), scalar(int64_t{1})}).numel(), 0);
  expect_error([&] { run("range", {scalar(1), scalar(2), scalar(0)}); }, {"range", "delta"});
  expect_error([&] { run("range", {scalar(1), scalar(2.f), scalar(1)}); }, {"range", "dtype"});
}

TEST(MovementTest, Trilu) {
  const Tensor x = iota_f({3, 3});
  EXPECT_EQ(values<float>(run("trilu", {x})), (std::vector<float>{0, 1, 2, 0, 4, 5, 0, 0, 8}));
  EXPECT_EQ(values<float>(run("trilu", {x, i64({-1})}, {{"upper", int64_t{0}}})),
            (std::vector<float>{0, 0, 0, 3, 0, 0, 6, 7, 0}));
  EXPECT_EQ(values<float>(run("trilu", {x, i64({1})})),
            (std::vector<float>{0, 1, 2, 0, 0, 5, 0, 0, 0}));
  expect_error([&] { run("trilu", {iota_f({3})}); }, {"trilu", "rank"});
}

TEST(MovementTest, DepthSpace) {
  const Tensor x = iota_f({1, 4, 1, 1});
  const Attributes dcr{{"blocksize", int64_t{2}}};
  EXPECT_EQ(values<float>(run("depth_to_space", {x}, dcr)), (std::vector<float>{0, 1, 2, 3}));
  const Tensor y = iota_f({1, 8, 1, 1});
  // DCR: channel (i*b + j)*C' + c; CRD: c*b*b + i*b + j.
  EXPECT_EQ(values<float>(run("depth_to_space", {y}, dcr)),
            (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  const Attributes crd{{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}};
  EXPECT_EQ(values<float>(run("depth_to_space", {y}, crd)),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  // space_to_depth inverts depth_to_space (DCR).
  const Tensor z = iota_f({2, 3, 4, 6});
  const Tensor s = run("space_to_depth", {z}, dcr);
  EXPECT_EQ(s.shape(), (Shape{2, 12, 2, 3}));
  EXPECT_EQ(values<float>(run("depth_to_space", {s}, dcr)), values<float>(z));
  expect_error(
      [&] {
        run("depth_to_space", {iota_f({1, 3, 1, 1})}, dcr);
      },
      {"depth_to_space", "divisible"});
  expect_error(
      [&] {
        run("space_to_depth", {iota_f({1, 1, 3, 2})}, dcr);
      },
      {"space_to_depth", "divisible"});
}

// The CPU pad (by rows, with a column map) against the reference, byte for byte: every mode,
// pads on leading and last dims, negative pads, an axes input, a constant value input, element
// sizes of 1, 2, 4 and 8 bytes, and an empty input dim in constant mode.
TEST(MovementTest, PadCpuMatchesReference) {
  struct Case {
    Shape x;
    std::vector<int64_t> pads, axes;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5, 7}, {0, 0, 1, 2, 0, 0, 2, 1}, {}},
      {{2, 3, 5, 7}, {0, 1, -1, 3, 1, 0, 2, -2}, {}},
      {{4, 6}, {2, 3}, {-1}},
      {{4, 6}, {1, 0, 1, 0}, {0, 1}},
      {{3, 9}, {3, 4, 2, 5}, {}},
  };
  for (const std::string mode : {"constant", "edge", "reflect", "wrap"})
    for (DType dtype : {DType::Float32, DType::Int64, DType::UInt8, DType::Float16})
      for (const Case &c : cases) {
        Tensor x = Tensor::empty(c.x, dtype);
        auto *bytes = static_cast<unsigned char *>(x.raw_data());
        for (size_t i = 0; i < x.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 11);
        std::vector<Tensor> inputs{x, i64(c.pads)};
        if (mode == "constant") {
          Tensor v = Tensor::empty({}, dtype);
          std::memset(v.raw_data(), 0x3c, v.nbytes());
          inputs.push_back(v);
        } else {
          inputs.push_back(Tensor());
        }
        if (!c.axes.empty()) inputs.push_back(i64(c.axes));
        const Attributes attrs{{"mode", mode}};
        const Tensor got = call_op("pad", inputs, attrs, "cpu").at(0);
        const Tensor want = call_op("pad", inputs, attrs, "reference").at(0);
        ASSERT_EQ(got.shape(), want.shape()) << mode;
        EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0)
            << mode << " " << dtype_name(dtype) << " " << c.x.to_string();
      }
  const Tensor empty = Tensor::empty({2, 0, 3});
  const Tensor got = call_op("pad", {empty, i64({0, 1, 1, 0, 1, 0})}, {}, "cpu").at(0);
  EXPECT_EQ(got.shape(), (Shape{2, 2, 4}));
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], 0.0f);
}

TEST(MovementTest, EyeLikeReverseSequenceCenterCropPad) {
  const Tensor e =
      run("eye_like", {iota_f({2, 3})}, {{"k", int64_t{1}}, {"dtype", std::string("int32")}});
  EXPECT_EQ(values<int32_t>(e), (std::vector<int32_t>{0, 1, 0, 0, 0, 1}));
  // time_axis 0, batch_axis 1: column b reversed over its first lens[b] rows.
  const Tensor x = iota_f({3, 2});
  EXPECT_EQ(values<float>(run("reverse_sequence", {x, i64({3, 2})})),
            (std::vector<float>{4, 3, 2, 1, 0, 5}));
  expect_error(
      [&] {
        run("reverse_sequence", {x, i64({4, 1})});
      },
      {"reverse_sequence", "out of range"});
  const Tensor c = iota_f({3, 4});
  const Tensor cp = run("center_crop_pad", {c, i64({1, 6})});
  EXPECT_EQ(cp.shape(), (Shape{1, 6}));
  EXPECT_EQ(values<float>(cp), (std::vector<float>{0, 4, 5, 6, 7, 0}));
}

TEST(MovementTest, Col2Im) {
  // 1-D image of 3 pixels, blocks of 2, stride 1: 2 block positions; overlaps are summed.
  const Tensor x = Tensor::from_vector<float>({1, 2, 2}, {1, 2, 3, 4});
  const Tensor y = run("col2im", {x, i64({3}), i64({2})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 5, 4}));
  // Padding 1 on both sides: 4 block positions, the padded pixels are dropped.
  const Tensor p = Tensor::from_vector<float>({1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Attributes pads{{"pads", std::vector<int64_t>{1, 1}}};
  EXPECT_EQ(values<float>(run("col2im", {p, i64({3}), i64({2})}, pads)),
            (std::vector<float>{2 + 5, 3 + 6, 4 + 7}));
  expect_error([&] { run("col2im", {x, i64({4}), i64({2})}); }, {"col2im", "blocks"});
}

TEST(MovementTest, EveryElementSize) {
  for (DType dtype : {DType::Int8, DType::Float16, DType::Int32, DType::Float64, DType::Bool}) {
    Tensor x = Tensor::zeros({2, 3}, dtype);
    for (int64_t i = 0; i < 6; ++i)
      static_cast<char *>(x.raw_data())[i * dtype_size(dtype)] = static_cast<char>(i % 2);
    const Tensor y = run("slice", {x, i64({1}), i64({2}), i64({1})});
    EXPECT_EQ(y.shape(), (Shape{2, 1}));
    EXPECT_EQ(static_cast<const char *>(y.raw_data())[0], 1);
    EXPECT_EQ(static_cast<const char *>(y.raw_data())[dtype_size(dtype)], 0);
    EXPECT_EQ(run("pad", {x, i64({0, 1, 0, 1})}, {{"mode", std::string("edge")}}).shape(),
              (Shape{2, 5}));
  }
}

// Random bytes (0/1 for bool) of any dtype.
Tensor random_any(const Shape &shape, DType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(shape, dtype);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto *p = static_cast<unsigned char *>(t.raw_data());
  for (size_t i = 0; i < t.nbytes(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<unsigned char>(dtype == DType::Bool ? (state >> 33) & 1 : state >> 33);
  }
  return t;
}

::testing::AssertionResult cpu_same_bytes(const std::string &op, const std::vector<Tensor> &inputs,
                                          const Attributes &attrs = {}) {
  const Tensor want = call_op(op, inputs, attrs, "reference").at(0);
  const Tensor got = call_op(op, inputs, attrs, "cpu").at(0);
  if (want.dtype() != got.dtype() || want.shape() != got.shape())
    return ::testing::AssertionFailure()
           << op << ": " << got.to_string() << " vs " << want.to_string();
  if (want.nbytes() && std::memcmp(want.raw_data(), got.raw_data(), want.nbytes()) != 0)
    return ::testing::AssertionFailure() << op << ": bytes differ for " << want.to_string();
  return ::testing::AssertionSuccess();
}

TEST(MovementTest, CpuMatchesReference) {
  uint64_t seed = 1;
  for (DType dtype : {DType::Float32, DType::Float16, DType::Float64, DType::Int8, DType::Bool,
                      DType::Int64, DType::UInt16}) {
    const Tensor x = random_any({3, 5, 7}, dtype, seed++);
    EXPECT_TRUE(
        cpu_same_bytes("slice", {x, i64({1, -1}), i64({3, -8}), i64({0, 2}), i64({1, -2})}));
    EXPECT_TRUE(
        cpu_same_bytes("slice", {x, i64({0}), i64({INT64_MAX}), i64({1}), i64({INT64_MAX})}));
    EXPECT_TRUE(
        cpu_same_bytes("slice", {x, i64({2, 0}), i64({0, 7}), i64({-2, -1}), i64({-1, 3})}));
    EXPECT_TRUE(cpu_same_bytes("slice", {x, i64({9}), i64({10}), i64({0})}));
    for (int64_t index = 0; index < 3; ++index) {
      EXPECT_TRUE(cpu_same_bytes(
          "split", {x}, {{"axis", int64_t{-1}}, {"num_outputs", int64_t{3}}, {"index", index}}));
      EXPECT_TRUE(
          cpu_same_bytes("split", {x, i64({1, 0, 4})}, {{"axis", int64_t{1}}, {"index", index}}));
    }
    EXPECT_TRUE(cpu_same_bytes("expand", {random_any({5, 1}, dtype, seed++), i64({2, 3, 5, 4})}));
    EXPECT_TRUE(cpu_same_bytes("expand", {random_any({1, 7}, dtype, seed++), i64({6, 1})}));
    EXPECT_TRUE(cpu_same_bytes("expand", {random_any({}, dtype, seed++), i64({3, 2})}));
    // Tile: repeats on inner and outer dims, ones, a zero, dims of one, a scalar.
    for (const auto &repeats :
         std::vector<std::vector<int64_t>>{{1, 1, 1}, {2, 1, 3}, {1, 4, 1}, {3, 2, 2}, {2, 0, 1}})
      EXPECT_TRUE(cpu_same_bytes("tile", {x, i64(repeats)}));
    EXPECT_TRUE(cpu_same_bytes("tile", {random_any({4, 1}, dtype, seed++), i64({2, 33})}));
    EXPECT_TRUE(cpu_same_bytes("tile", {random_any({1, 1, 6}, dtype, seed++), i64({5, 1, 2})}));
    EXPECT_TRUE(cpu_same_bytes("tile", {random_any({}, dtype, seed++), i64({})}));
    // Trilu: both halves, diagonals inside and far outside the matrix (no k input: 0).
    for (int64_t upper : {0, 1}) {
      const Attributes attrs{{"upper", upper}};
      EXPECT_TRUE(cpu_same_bytes("trilu", {x}, attrs));
      for (int64_t k : std::vector<int64_t>{-9, -3, -1, 1, 4, 6, 8, INT64_MAX, INT64_MIN})
        EXPECT_TRUE(cpu_same_bytes("trilu", {x, Tensor::from_vector<int64_t>({}, {k})}, attrs));
    }
    // CenterCropPad (crop and pad on different axes), ReverseSequence (time and batch axes either
    // way round), EyeLike, BitCast to a type of the same size.
    EXPECT_TRUE(cpu_same_bytes("center_crop_pad", {x, i64({2, 9, 4})}));
    EXPECT_TRUE(cpu_same_bytes("center_crop_pad", {x, i64({5, 2, 7})}));
    for (int64_t time : {0, 1}) {
      const Tensor lens = time == 0 ? i64({1, 0, 3, 2, 3}) : i64({4, 5, 0});
      EXPECT_TRUE(cpu_same_bytes("reverse_sequence", {x, lens},
                                 {{"time_axis", time}, {"batch_axis", 1 - time}}));
    }
    for (int64_t k : {-2, 0, 3, 9})
      EXPECT_TRUE(cpu_same_bytes("eye_like", {random_any({4, 6}, dtype, seed++)}, {{"k", k}}));
    // DepthToSpace / SpaceToDepth, both channel orders.
    for (const std::string mode : {"DCR", "CRD"})
      for (int64_t b : {2, 3}) {
        const Attributes attrs{{"blocksize", b}, {"mode", mode}};
        EXPECT_TRUE(cpu_same_bytes("depth_to_space",
                                   {random_any({2, 2 * b * b, 3, 5}, dtype, seed++)}, attrs));
        EXPECT_TRUE(cpu_same_bytes("space_to_depth",
                                   {random_any({2, 3, 2 * b, 5 * b}, dtype, seed++)}, attrs));
      }
  }
  EXPECT_TRUE(
      cpu_same_bytes("tile", {random_any({2, 300, 70}, DType::Float32, 8), i64({3, 2, 5})}));
  EXPECT_TRUE(cpu_same_bytes("slice", {random_any({300, 257}, DType::Float32, 7), i64({1, 3}),
                                       i64({299, 250}), i64({0, 1}), i64({2, 1})}));
}

}  // namespace
}  // namespace lumen
