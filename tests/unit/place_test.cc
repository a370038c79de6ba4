// The place stage (src/compile/place.h): a pinned backend runs what it has a kernel for and names
// itself in the reason; automatic placement takes the highest-priority backend placed
// automatically, never the reference backend, and says so; an (op, dtype) no backend may run
// fails naming the op, node and dtype, and points at the reference where it has a kernel.
#include <gtest/gtest.h>

#include <string>

#include "compile/place.h"

namespace lumen {
namespace {

void expect_error_with(const std::function<void()> &fn, const std::vector<std::string> &needles) {
  try {
    fn();
    ADD_FAILURE() << "expected lumen::Error";
  } catch (const Error &e) {
    for (const std::string &needle : needles)
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(PlaceStage, AutomaticPlacementTakesTheCpuAndSaysWhy) {
  const Placement p = place_node("relu", DType::Float32, "", "r1");
  ASSERT_NE(p.backend, nullptr);
  EXPECT_EQ(p.backend->name(), "cpu");
  // Where a GPU backend is built and usable, it is a candidate too ("also: vulkan").
  const std::string &r = p.reason;
  EXPECT_TRUE(r == "cpu: the only device placed automatically with a float32 kernel; not placed "
                   "automatically: reference" ||
              r == "cpu: the highest priority of the devices with a float32 kernel (also: "
                   "vulkan); not placed automatically: reference")
      << r;
}

TEST(PlaceStage, PinnedBackendRunsWhatItHas) {
  const Placement p = place_node("conv2d", DType::Float64, "reference", "c1");
  EXPECT_EQ(p.backend->name(), "reference");
  EXPECT_EQ(p.reason, "reference: pinned (backend='reference')");
  expect_error_with([] { place_node("conv2d", DType::Float64, "cpu", "c2"); },
                    {"op 'conv2d' (node 'c2')", "backend 'cpu' has no kernel for float64"});
  expect_error_with([] { place_node("relu", DType::Float32, "nowhere", "r2"); },
                    {"unknown backend 'nowhere'"});
}

TEST(PlaceStage, NeverTheReferenceAutomatically) {
  expect_error_with([] { place_node("conv2d", DType::Float64, "", "c3"); },
                    {"op 'conv2d' (node 'c3'): no backend has a kernel for float64 inputs",
                     "('reference' has one, a test oracle run only when named"});
  expect_error_with([] { place_node("no_such_op", DType::Float32, "", "n1"); },
                    {"no backend has a kernel for float32 inputs"});
}

}  // namespace
}  // namespace lumen
