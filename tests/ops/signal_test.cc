// dft, stft, the window ops and mel_weight_matrix on the reference kernels: hand-computed values
// and errors naming the op.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::element_as_double;

Tensor f32(const Shape &shape, const std::vector<float> &v) {
  return Tensor::from_vector<float>(shape, v);
}

Tensor i64(int64_t v) {
  return Tensor::from_vector<int64_t>(Shape{}, {v});
}

std::vector<Tensor> run(const std::string &op, const std::vector<Tensor> &inputs,
                        const Attributes &attrs = {}) {
  return call_op(op, inputs, attrs, "reference");
}

template <class Fn>
void expect_error(Fn &&fn, const std::string &needle) {
  try {
    fn();
    ADD_FAILURE() << "expected lumen::Error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(DftOp, ForwardRealSignal) {
  // x = [1, 2, 3, 4] along axis 0: X = [10, -2+2i, -2, -2-2i].
  const Tensor x = f32({4, 1}, {1, 2, 3, 4});
  auto y = run("dft", {x}, {{"axis", int64_t(0)}});
  EXPECT_TRUE(all_close(y[0], f32({4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}), 1e-5, 1e-5));
  // onesided keeps n/2+1 bins; dft_length 2 truncates to [1, 2]: X = [3, -1].
  y = run("dft", {x}, {{"axis", int64_t(0)}, {"onesided", int64_t(1)}});
  EXPECT_TRUE(all_close(y[0], f32({3, 2}, {10, 0, -2, 2, -2, 0}), 1e-5, 1e-5));
  y = run("dft", {x, i64(2)}, {{"axis", int64_t(0)}});
  EXPECT_TRUE(all_close(y[0], f32({2, 2}, {3, 0, -1, 0}), 1e-5, 1e-5));
}

TEST(DftOp, InverseAndIrfftWithAxisInput) {
  const Tensor spec = f32({4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  auto y = run("dft", {spec, Tensor(), i64(-2)}, {{"inverse", int64_t(1)}});
  EXPECT_TRUE(all_close(y[0], f32({4, 2}, {1, 0, 2, 0, 3, 0, 4, 0}), 1e-5, 1e-5));
  const Tensor half = f32({3, 2}, {10, 0, -2, 2, -2, 0});
  y = run("dft", {half}, {{"axis", int64_t(0)}, {"inverse", int64_t(1)}, {"onesided", int64_t(1)}});
  EXPECT_TRUE(all_close(y[0], f32({4, 1}, {1, 2, 3, 4}), 1e-5, 1e-5));
}

TEST(DftOp, Errors) {
  expect_error([&] { run("dft", {f32({4, 3}, std::vector<float>(12, 0))}); }, "dft");
  expect_error(
      [&] {
        run("dft", {f32({4, 1}, {1, 2, 3, 4})}, {{"axis", int64_t(1)}});
      },
      "out of range");
}

TEST(StftOp, FramesWithWindow) {
  // Signal [1, 2, 3, 4, 5], frames of 2 every 2 -> 2 frames; window [1, 0.5].
  const Tensor x = f32({1, 5, 1}, {1, 2, 3, 4, 5});
  const auto y = run("stft", {x, i64(2), f32({2}, {1, 0.5f})});
  // Frame 0: [1, 1] -> bins [2, 0]; frame 1: [3, 2] -> [5, 1].
  EXPECT_TRUE(all_close(y[0], f32({1, 2, 2, 2}, {2, 0, 0, 0, 5, 0, 1, 0}), 1e-5, 1e-5));
  expect_error([&] { run("stft", {x, i64(0), f32({2}, {1, 1})}); }, "frame_step");
}

// The CPU DFT and STFT (GEMMs over twiddle matrices, or the twiddle table for long transforms)
// against the reference: real and complex input, every axis, one-sided, padded and truncated
// lengths, inverse and one-sided inverse, a transform past the matrix size; STFT with a window, a
// frame length, a complex signal.
TEST(DftOp, CpuMatchesReference) {
  const auto same = [](const std::string &op, const std::vector<Tensor> &inputs,
                       const Attributes &attrs, double tol) {
    const Tensor want = call_op(op, inputs, attrs, "reference").at(0);
    const Tensor got = call_op(op, inputs, attrs, "cpu").at(0);
    EXPECT_TRUE(all_close(got, want, tol, tol)) << op;
  };
  const Tensor real = testing::random_tensor({3, 24, 5, 1}, 1);
  const Tensor complex = testing::random_tensor({3, 24, 5, 2}, 2);
  for (const Tensor &x : {real, complex})
    for (int64_t axis : {0, 1, 2, -2}) {
      same("dft", {x}, {{"axis", axis}}, 1e-4);
      if (x.shape()[3] == 1) same("dft", {x}, {{"axis", axis}, {"onesided", int64_t(1)}}, 1e-4);
      same("dft", {x, i64(7)}, {{"axis", axis}}, 1e-4);   // truncated or padded
      same("dft", {x, i64(30)}, {{"axis", axis}}, 1e-4);  // padded
      same("dft", {x}, {{"axis", axis}, {"inverse", int64_t(1)}}, 1e-4);
    }
  same("dft", {complex}, {{"axis", int64_t(1)}, {"inverse", int64_t(1)}, {"onesided", int64_t(1)}},
       1e-4);
  same("dft", {testing::random_tensor({2, 2100, 1}, 3)}, {{"axis", int64_t(1)}}, 2e-3);
  const Tensor signal = testing::random_tensor({2, 100, 1}, 4);
  same("stft", {signal, i64(10), testing::random_tensor({16}, 5)}, {}, 1e-4);
  same("stft", {signal, i64(7), Tensor(), i64(12)}, {{"onesided", int64_t(0)}}, 1e-4);
  same("stft", {testing::random_tensor({1, 50, 2}, 6), i64(5), testing::random_tensor({8}, 7)},
       {{"onesided", int64_t(0)}}, 1e-4);
}

TEST(WindowOps, PeriodicAndSymmetric) {
  auto y = run("hann_window", {i64(4)});
  EXPECT_TRUE(all_close(y[0], f32({4}, {0, 0.5f, 1, 0.5f}), 1e-5, 1e-6));
  y = run("hann_window", {i64(3)}, {{"periodic", int64_t(0)}});
  EXPECT_TRUE(all_close(y[0], f32({3}, {0, 1, 0}), 1e-5, 1e-6));
  y = run("hamming_window", {i64(2)}, {{"output_datatype", std::string("float64")}});
  EXPECT_TRUE(all_close(y[0], Tensor::from_vector<double>({2}, {4.0 / 46.0, 1.0}), 1e-9, 1e-12));
  y = run("blackman_window", {i64(2)});
  EXPECT_TRUE(all_close(y[0], f32({2}, {0, 1}), 1e-5, 1e-6));
  expect_error([&] { run("hann_window", {i64(-1)}); }, "size");
}

TEST(MelWeightMatrixOp, ShapeAndTriangles) {
  const auto y =
      run("mel_weight_matrix", {i64(2), i64(8), i64(8000), f32({}, {0}), f32({}, {4000})});
  ASSERT_EQ(y[0].shape(), Shape({5, 2}));
  // Every mel bin has a peak of 1.
  for (int64_t b = 0; b < 2; ++b) {
    double peak = 0;
    for (int64_t j = 0; j < 5; ++j) peak = std::max(peak, element_as_double(y[0], j * 2 + b));
    EXPECT_DOUBLE_EQ(peak, 1.0);
  }
  expect_error(
      [&] {
        run("mel_weight_matrix", {i64(0), i64(8), i64(8000), f32({}, {0}), f32({}, {1})});
      },
      "must be positive");
}

}  // namespace
}  // namespace lumen
