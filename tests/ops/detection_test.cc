// non_max_suppression and det on the reference kernel: hand-computed selections and
// determinants, and errors naming the op.
#include <string>
#include <vector>

#include "op_test_util.h"

namespace lumen {
namespace {

Tensor f32(const Shape &shape, const std::vector<float> &v) {
  return Tensor::from_vector<float>(shape, v);
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

std::vector<int64_t> values(const Tensor &t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

// Box 1 overlaps box 0 with IoU 0.9 / 1.1; box 2 is far away.
const Tensor kBoxes = f32({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11});
const Tensor kScores = f32({1, 1, 3}, {0.9f, 0.8f, 0.7f});

TEST(NonMaxSuppressionTest, SuppressesOverlaps) {
  const Tensor max_out = Tensor::from_vector<int64_t>({1}, {3});
  const Tensor iou = f32({1}, {0.5f});
  const Tensor y =
      call_op("non_max_suppression", {kBoxes, kScores, max_out, iou}, {}, "reference").at(0);
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(y), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
  // A score threshold of 0.75 leaves box 0 only; max_output_boxes_per_class 1 likewise.
  const Tensor thr = f32({1}, {0.75f});
  EXPECT_EQ(
      values(call_op("non_max_suppression", {kBoxes, kScores, max_out, iou, thr}, {}, "reference")
                 .at(0)),
      (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(values(call_op("non_max_suppression",
                           {kBoxes, kScores, Tensor::from_vector<int64_t>({1}, {1}), iou}, {},
                           "reference")
                       .at(0)),
            (std::vector<int64_t>{0, 0, 0}));
  // No max_output_boxes_per_class: nothing is selected.
  EXPECT_EQ(call_op("non_max_suppression", {kBoxes, kScores}, {}, "reference").at(0).shape(),
            (Shape{0, 3}));
}

TEST(NonMaxSuppressionTest, CenterPointBoxes) {
  // Centres 0.5 apart with size 1: IoU 0.5 / 1.5 = 1/3 > 0.3 -> suppressed.
  const Tensor boxes = f32({1, 2, 4}, {0, 0, 1, 1, 0.5f, 0, 1, 1});
  const Tensor scores = f32({1, 1, 2}, {0.5f, 0.6f});
  const Tensor y =
      call_op("non_max_suppression",
              {boxes, scores, Tensor::from_vector<int64_t>({1}, {5}), f32({1}, {0.3f})},
              {{"center_point_box", int64_t(1)}}, "reference")
          .at(0);
  EXPECT_EQ(values(y), (std::vector<int64_t>{0, 0, 1}));
}

TEST(NonMaxSuppressionTest, Errors) {
  expect_error(
      [&] {
        call_op("non_max_suppression", {f32({1, 1, 3}, {0, 0, 1}), f32({1, 1, 1}, {1})}, {},
                "reference");
      },
      "boxes must have shape");
  expect_error(
      [&] {
        call_op("non_max_suppression", {kBoxes, f32({1, 1, 2}, {1, 2})}, {}, "reference");
      },
      "do not match");
}

TEST(DetTest, Values) {
  const Tensor y =
      call_op("det", {f32({2, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 3})}, {}, "reference").at(0);
  ASSERT_EQ(y.shape(), (Shape{2}));
  EXPECT_NEAR(y.data<float>()[0], -2, 1e-5);
  EXPECT_NEAR(y.data<float>()[1], 6, 1e-5);
  // Needs a row swap; singular gives 0.
  const Tensor z =
      call_op("det", {f32({3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 4})}, {}, "reference").at(0);
  EXPECT_NEAR(z.data<float>()[0], -4, 1e-5);
  const Tensor s = call_op("det", {f32({2, 2}, {1, 2, 2, 4})}, {}, "reference").at(0);
  EXPECT_NEAR(s.data<float>()[0], 0, 1e-6);
}

TEST(DetTest, Errors) {
  expect_error(
      [&] {
        call_op("det", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {}, "reference");
      },
      "must be square");
}

}  // namespace
}  // namespace lumen
