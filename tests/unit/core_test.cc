// Core types: DType, Shape, Tensor, allocator, attributes.
#include <gtest/gtest.h>

#include <cstring>

#include "lumen/lumen.h"

namespace lumen {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::Float32), 4u);
  EXPECT_EQ(dtype_size(DType::BFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::Int64), 8u);
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  for (DType d : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8,
                  DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::Bool})
    EXPECT_EQ(dtype_from_name(dtype_name(d)), d);
  EXPECT_THROW(dtype_from_name("float128"), Error);
}

TEST(Shape, NumelAndChecks) {
  EXPECT_EQ(Shape({2, 3, 4}).numel(), 24);
  EXPECT_EQ(Shape({}).numel(), 1);
  EXPECT_EQ(Shape({3, 0}).numel(), 0);
  EXPECT_THROW(Shape({-1, 3}).numel(), Error);
  EXPECT_THROW(Shape({int64_t(1) << 40, int64_t(1) << 40}).numel(), Error);  // overflow
  EXPECT_EQ(Shape({2, 3}).normalize_axis(-1), 1u);
  EXPECT_THROW(Shape({2, 3}).normalize_axis(2), Error);
  EXPECT_EQ(Shape({1, kUnknownDim}).to_string(), "[1, ?]");
  EXPECT_EQ(contiguous_strides(Shape({2, 3, 4})), (std::vector<int64_t>{12, 4, 1}));
}

TEST(Tensor, EmptyIsAligned) {
  for (int64_t n : {1, 3, 17, 1000, 100000}) {
    Tensor t = Tensor::empty({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % Allocator::kAlignment, 0u);
  }
}

TEST(Tensor, CachingAllocatorReusesBlocks) {
  void *first;
  {
    Tensor t = Tensor::empty({1234});
    first = t.raw_data();
  }
  Tensor again = Tensor::empty({1234});
  EXPECT_EQ(again.raw_data(), first);
}

TEST(Tensor, TypedAccessChecksDType) {
  Tensor t = Tensor::zeros({2}, DType::Int32);
  EXPECT_NO_THROW(t.data<int32_t>());
  EXPECT_THROW(t.data<float>(), Error);
}

TEST(Tensor, WrapSharesForeignMemoryAndReleasesOwner) {
  std::vector<float> storage = {1, 2, 3, 4, 5, 6};
  bool released = false;
  {
    Tensor t = Tensor::wrap(storage.data(), DType::Float32, {2, 3}, {}, [&] { released = true; });
    EXPECT_EQ(t.raw_data(), storage.data());
    storage[4] = 50;
    EXPECT_EQ(t.data<float>()[4], 50);
    Tensor copy = t;  // shares the buffer
    EXPECT_FALSE(released);
  }
  EXPECT_TRUE(released);
}

TEST(Tensor, StridedWrapAndContiguousCopy) {
  // A transposed view of a 2x3 row-major matrix: shape [3, 2], strides [1, 3].
  std::vector<float> storage = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::wrap(storage.data(), DType::Float32, {3, 2}, {1, 3}, nullptr);
  EXPECT_FALSE(t.is_contiguous());
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.raw_data(), t.raw_data());
  const std::vector<float> expected = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data<float>()[i], expected[i]);
  EXPECT_THROW(Tensor::wrap(storage.data(), DType::Float32, {3, 2}, {1}, nullptr), Error);
}

TEST(Tensor, ReshapeAndClone) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor r = t.reshape({3, 2});
  EXPECT_EQ(r.raw_data(), t.raw_data());  // a view
  EXPECT_THROW(t.reshape({4, 2}), Error);
  Tensor c = t.clone();
  c.data<float>()[0] = 42;
  EXPECT_EQ(t.data<float>()[0], 0);
}

TEST(Tensor, RandnIsDeterministicAndNormal) {
  Tensor a = Tensor::randn({10000}, 7), b = Tensor::randn({10000}, 7),
         c = Tensor::randn({10000}, 8);
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
  EXPECT_NE(std::memcmp(a.raw_data(), c.raw_data(), a.nbytes()), 0);
  double mean = 0, var = 0;
  for (int i = 0; i < 10000; ++i) mean += a.data<float>()[i];
  mean /= 10000;
  for (int i = 0; i < 10000; ++i) var += (a.data<float>()[i] - mean) * (a.data<float>()[i] - mean);
  var /= 10000;
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.05);
}

TEST(Attributes, TypedGetters) {
  Attributes a{{"axis", int64_t{1}}, {"alpha", 0.5}, {"perm", std::vector<int64_t>{1, 0}}};
  EXPECT_EQ(a.get_int("axis", 0), 1);
  EXPECT_EQ(a.get_int("missing", 7), 7);
  EXPECT_DOUBLE_EQ(a.get_float("alpha", 0), 0.5);
  EXPECT_DOUBLE_EQ(a.get_float("axis", 0), 1.0);  // ints are accepted as floats
  EXPECT_EQ(a.get_ints("perm", {}), (std::vector<int64_t>{1, 0}));
  try {
    a.get_int("alpha", 0);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("alpha"), std::string::npos);
  }
}

TEST(CheckedArithmetic, Overflows) {
  EXPECT_EQ(checked_mul(1 << 20, 1 << 20), int64_t(1) << 40);
  EXPECT_THROW(checked_mul(INT64_MAX, 2), Error);
  EXPECT_THROW(checked_add(INT64_MAX, 1), Error);
}

}  // namespace
}  // namespace lumen
