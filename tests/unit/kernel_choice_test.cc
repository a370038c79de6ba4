// choose_algorithm (backends/cpu/kernel_choice.h): the fastest candidate wins, near-ties keep the
// rule's, a measured choice is reused without running anything, and the switches work.
#include "backends/cpu/kernel_choice.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace lumen::cpu {
namespace {

void busy_for(std::chrono::microseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
  }
}

AlgorithmCandidate busy(const char *name, int micros) {
  return {name, [micros] { busy_for(std::chrono::microseconds(micros)); }};
}

// Keys no earlier run of this test (whose choices stay in the on-disk cache) can have used.
std::string unique_key(const char *what) {
  return std::string("kernel_choice_test ") + what + ' ' +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

TEST(KernelChoice, OneCandidateIsNotTimed) {
  std::string report;
  const std::vector<AlgorithmCandidate> only = {{"gemm", [] { throw std::logic_error("ran"); }}};
  EXPECT_EQ(choose_algorithm(unique_key("one"), only, 0, 2, report), 0u);
  EXPECT_EQ(report, "gemm (only algorithm)");
}

TEST(KernelChoice, TheFastestWinsAndIsRemembered) {
  const std::string key = unique_key("fastest");
  std::string report;
  EXPECT_EQ(choose_algorithm(key, {busy("slow", 3000), busy("fast", 300)}, 0, 2, report), 1u);
  EXPECT_EQ(report.rfind("fast (measured: slow ", 0), 0u) << report;
  EXPECT_NE(report.find("; the rule said slow)"), std::string::npos) << report;
  // The same key again: the recorded choice, without running either candidate.
  const std::vector<AlgorithmCandidate> throwing = {
      {"slow", [] { throw std::logic_error("ran"); }},
      {"fast", [] { throw std::logic_error("ran"); }}};
  std::string again;
  EXPECT_EQ(choose_algorithm(key, throwing, 0, 2, again), 1u);
  EXPECT_EQ(again.rfind("fast (measured before: slow ", 0), 0u) << again;
  // The thread count is part of the key.
  EXPECT_THROW(choose_algorithm(key, throwing, 0, 3, again), std::logic_error);
}

TEST(KernelChoice, NearTiesKeepTheRule) {
  std::string report;
  EXPECT_EQ(choose_algorithm(unique_key("tie"), {busy("a", 1000), busy("b", 1000)}, 1, 2, report),
            1u);
  EXPECT_EQ(report.rfind("b (measured: a ", 0), 0u) << report;
}

TEST(KernelChoice, SwitchesAndUntimeableSteps) {
  std::string report;
  const std::vector<AlgorithmCandidate> candidates = {busy("a", 10), busy("b", 2000)};
  ASSERT_EQ(setenv("LUMEN_CALIBRATE", "0", 1), 0);
  EXPECT_EQ(choose_algorithm(unique_key("off"), candidates, 1, 2, report), 1u);
  EXPECT_EQ(report, "b (rule)");
  unsetenv("LUMEN_CALIBRATE");
  ASSERT_EQ(setenv("LUMEN_FORCE_ALGORITHM", "c,b", 1), 0);
  EXPECT_EQ(choose_algorithm(unique_key("forced"), candidates, 0, 2, report), 1u);
  EXPECT_EQ(report, "b (forced by LUMEN_FORCE_ALGORITHM)");
  unsetenv("LUMEN_FORCE_ALGORITHM");
  // A step that cannot be timed (no run function) goes by the rule.
  EXPECT_EQ(choose_algorithm(unique_key("untimed"), {{"a", nullptr}, {"b", nullptr}}, 0, 2, report),
            0u);
  EXPECT_EQ(report, "a (rule)");
}

}  // namespace
}  // namespace lumen::cpu
