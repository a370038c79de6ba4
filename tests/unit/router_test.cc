// The router (src/compile/place.h, cost_model.h) and copy insertion (insert_copies.h), on the
// simulated device (src/backends/simulated): the CPU's kernels in a memory space of its own, with
// a declared speed and link. The host CPU's profile is written into a fresh cache directory per
// test, so every decision is deterministic: big GEMM chains go to a fast device with a good link;
// nothing crosses a slow link; small steps between steps on the device stay there instead of
// bouncing to the CPU; a graph split over both devices computes what the CPU alone computes, bit
// for bit; the plan follows the cache when it says the device is slow; calibration runs once per
// device and a corrupt cache line is ignored with a warning.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "backends/simulated/simulated_device.h"
#include "compile/cost_model.h"
#include "compile/insert_copies.h"
#include "core/thread_pool.h"
#include "graph/op_work.h"
#include "lumen/lumen.h"

namespace lumen {
namespace {

namespace fs = std::filesystem;

class Router : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char *old = std::getenv("LUMEN_CACHE_DIR")) old_cache_ = old;
    dir_ = fs::temp_directory_path() /
           ("lumen_router_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("LUMEN_CACHE_DIR", dir_.c_str(), 1);
    CostModel::instance().reset();
  }
  void TearDown() override {
    routed_.reset();
    unregister_simulated_device();
    CostModel::instance().reset();
    if (old_cache_.empty())
      unsetenv("LUMEN_CACHE_DIR");
    else
      setenv("LUMEN_CACHE_DIR", old_cache_.c_str(), 1);
    fs::remove_all(dir_);
  }

  fs::path cache_file() const { return dir_ / "device_costs.tsv"; }
  // A profile line for `backend` as the cost model keys it for 2 threads.
  void write_profile(std::string_view backend, double gflops, double gbytes_per_s,
                     double launch_us) {
    std::ofstream out(cache_file(), std::ios::app);
    out << CostModel::instance().key(get_backend(backend), host_.thread_pool()) << "\tprofile\t"
        << gflops << '\t' << gbytes_per_s << '\t' << launch_us << '\n';
  }
  // The host CPU: 100 GFLOP/s, 10 GB/s, 5 us per step.
  void write_cpu_profile() { write_profile("cpu", 100, 10, 5); }

  // Placement between the CPU and the simulated device only (a real GPU backend built in, Vulkan,
  // stays out of it); made once the test registered the simulated device.
  Runtime &routed() {
    if (!routed_)
      routed_ = std::make_unique<Runtime>(RuntimeOptions{.num_threads = 2, .backend = "cpu,sim"});
    return *routed_;
  }
  Runtime host_{RuntimeOptions{.num_threads = 2}};  // the same thread count, for cache keys
  std::unique_ptr<Runtime> routed_;
  fs::path dir_;
  std::string old_cache_;
};

// x [rows, 512] -> (matmul 512x512, add bias, relu) x layers; weights non-trivial. Without
// `bias`, one small step (relu) between the matmuls.
Graph mlp(int64_t rows, int layers, bool symbolic_rows = false, bool bias = true) {
  Graph g;
  Value *x = symbolic_rows ? g.add_input("x", {kUnknownDim, 512}) : g.add_input("x", {rows, 512});
  for (int l = 0; l < layers; ++l) {
    const std::string n = std::to_string(l);
    Value *w = g.add_constant("w" + n, Tensor::randn({512, 512}, 10 + l));
    Value *b = g.add_constant("b" + n, Tensor::randn({512}, 50 + l));
    x = g.add_op("matmul", {x, w}, {}, "mm" + n);
    if (bias) x = g.add_op("add", {x, b}, {}, "bias" + n);
    x = g.add_op("relu", {x}, {}, "relu" + n);
  }
  g.mark_output(x);
  return g;
}

std::map<std::string, int> steps_by_backend(const Executable &exe) {
  std::map<std::string, int> counts;
  for (const StepInfo &s : exe.steps()) ++counts[s.op == "copy" ? "copy" : s.backend];
  return counts;
}

const StepInfo &step_named(const Executable &exe, const std::string &node) {
  for (const StepInfo &s : exe.steps())
    if (s.node == node) return s;
  throw Error("no step " + node);
}

void expect_same(const Tensor &a, const Tensor &b) {
  ASSERT_EQ(a.shape(), b.shape());
  const float *x = a.data<float>(), *y = b.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(x[i], y[i]) << "element " << i;
}

TEST_F(Router, BigMatmulChainsGoToAFastDevice) {
  write_cpu_profile();
  register_simulated_device({.speed = 8, .gbytes_per_s = 8, .latency_us = 20});
  const Graph g = mlp(256, 4);
  Executable *exe = g.compile(&routed());
  const auto counts = steps_by_backend(*exe);
  EXPECT_EQ(counts.at("sim"), 12);
  EXPECT_EQ(counts.count("cpu"), 0u);
  EXPECT_EQ(counts.at("copy"), 2) << "x in, the result out, nothing between";
  EXPECT_EQ(exe->steps().front().op, "copy");
  EXPECT_EQ(exe->steps().back().op, "copy");
  const StepInfo &mm = step_named(*exe, "mm1");
  ASSERT_EQ(mm.estimates_us.size(), 2u);
  // 2*256*512*512 flops: 1342 us at 100 GFLOP/s + 5 us, 168 us on the simulated device.
  std::map<std::string, double> est(mm.estimates_us.begin(), mm.estimates_us.end());
  EXPECT_NEAR(est.at("cpu"), 1347.2, 1);
  EXPECT_NEAR(est.at("sim"), 172.8, 1);
  EXPECT_EQ(mm.placement, "sim: 172.8 us vs cpu 1.35 ms + copy 85.5 us") << mm.placement;
  ASSERT_EQ(exe->memory().spaces.size(), 1u) << exe->memory().to_string();
  EXPECT_EQ(exe->memory().spaces[0].space, "sim:0") << "every intermediate on the device";

  Runtime cpu_only{RuntimeOptions{.num_threads = 2, .backend = "cpu"}};
  Executable *reference = g.compile(&cpu_only);
  const Tensor x = Tensor::randn({256, 512}, 3);
  expect_same(exe->execute({x})[0], reference->execute({x})[0]);
  EXPECT_TRUE(exe->execute({x})[0].device().is_host());
}

TEST_F(Router, NothingCrossesASlowLink) {
  write_cpu_profile();
  register_simulated_device({.speed = 8, .gbytes_per_s = 0.01, .latency_us = 1000});
  Executable *exe = mlp(16, 3).compile(&routed());
  const auto counts = steps_by_backend(*exe);
  EXPECT_EQ(counts.at("cpu"), 9);
  EXPECT_EQ(counts.count("copy"), 0u);
  const std::string &reason = step_named(*exe, "relu1").placement;
  EXPECT_EQ(reason.rfind("cpu: ", 0), 0u) << reason;
  EXPECT_NE(reason.find("vs sim "), std::string::npos) << reason;
  EXPECT_NE(reason.find(" + copy "), std::string::npos) << reason;
}

TEST_F(Router, SmallStepsStayWithTheirDataInsteadOfBouncing) {
  write_cpu_profile();
  // A relu between matmuls is cheaper on the CPU even with one copy (110 us + 146 us against
  // 313 us at 300 us per device step), but not with the copy back to the next matmul: the
  // whole-graph estimate keeps it on the device; a step-by-step choice would bounce every one.
  register_simulated_device({.speed = 8, .gbytes_per_s = 8, .latency_us = 80, .launch_us = 300});
  Executable *exe = mlp(256, 4, false, /*bias=*/false).compile(&routed());
  const auto counts = steps_by_backend(*exe);
  EXPECT_EQ(counts.at("sim"), 7);
  EXPECT_EQ(counts.at("cpu"), 1) << "the last relu: its input goes to the host anyway";
  EXPECT_EQ(counts.at("copy"), 2);
  EXPECT_EQ(step_named(*exe, "relu3").backend, "cpu");
  const std::string &reason = step_named(*exe, "relu1").placement;
  EXPECT_EQ(reason,
            "sim: 313.1 us vs cpu 109.9 us + copy 145.5 us (keeps its data where the next steps "
            "run)");
}

TEST_F(Router, AGraphSplitOverTwoDevicesComputesWhatTheCpuDoes) {
  write_cpu_profile();
  register_simulated_device({.speed = 8, .gbytes_per_s = 8, .latency_us = 20});
  // Two branches: a big MLP (to the device) and small element-wise work on a second input (a copy
  // would cost more than the step: it stays on the CPU); the sum of both at the end.
  Graph g;
  Value *x = g.add_input("x", {256, 512});
  Value *s = g.add_input("s", {1, 512});
  for (int l = 0; l < 2; ++l) {
    x = g.add_op("matmul",
                 {x, g.add_constant("w" + std::to_string(l), Tensor::randn({512, 512}, 7 + l))});
    x = g.add_op("relu", {x});
  }
  Value *t =
      g.add_op("sigmoid", {g.add_op("mul", {s, g.add_constant("k", Tensor::randn({512}, 9))})});
  g.mark_output(t);
  g.mark_output(g.add_op("add", {x, t}, {}, "join"));
  Executable *exe = g.compile(&routed());
  const auto counts = steps_by_backend(*exe);
  EXPECT_EQ(counts.at("sim"), 5) << "the MLP and the join";
  EXPECT_EQ(counts.at("cpu"), 2) << "the small branch";
  EXPECT_EQ(counts.at("copy"), 3) << "x in, t to the join, the MLP's result out";

  Runtime cpu_only{RuntimeOptions{.num_threads = 2, .backend = "cpu"}};
  Executable *reference = g.compile(&cpu_only);
  const Tensor xv = Tensor::randn({256, 512}, 1), sv = Tensor::randn({1, 512}, 2);
  const std::vector<Tensor> inputs{xv, sv};
  const std::vector<Tensor> got = exe->execute(inputs), want = reference->execute(inputs);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].device().is_host());
    expect_same(got[i], want[i]);
  }
}

TEST_F(Router, DynamicShapesPlacePerShapeAndMatchTheCpu) {
  write_cpu_profile();
  register_simulated_device({.speed = 8, .gbytes_per_s = 8, .latency_us = 20});
  const Graph g = mlp(0, 2, /*symbolic_rows=*/true);
  Executable *exe = g.compile(&routed());
  Runtime cpu_only{RuntimeOptions{.num_threads = 2, .backend = "cpu"}};
  Executable *reference = g.compile(&cpu_only);
  for (int64_t rows : {1, 256}) {
    const Tensor x = Tensor::randn({rows, 512}, rows);
    RunProfile profile;
    const Tensor got = exe->execute({x}, &profile)[0];
    expect_same(got, reference->execute({x})[0]);
    int on_sim = 0;
    for (const StepInfo &s : profile.plan_steps) on_sim += s.backend == "sim" && s.op != "copy";
    if (rows == 256) {
      EXPECT_EQ(on_sim, 6) << "big batches go to the device";
    }
  }
}

TEST_F(Router, ThePlanFollowsTheCacheWhenItSaysTheDeviceIsSlow) {
  write_cpu_profile();
  register_simulated_device({.speed = 8, .gbytes_per_s = 8, .latency_us = 20});
  EXPECT_EQ(steps_by_backend(*mlp(256, 2).compile(&routed())).count("cpu"), 0u);
  write_profile("sim", 1, 0.5, 50);  // measured slow: the cache overrides the declaration
  CostModel::instance().reset();
  const auto counts = steps_by_backend(*mlp(256, 2).compile(&routed()));
  EXPECT_EQ(counts.at("cpu"), 6);
  EXPECT_EQ(counts.count("sim"), 0u);
}

// Timings of profiled runs blend into the estimates; measured times far off the estimates move the
// plan when the graph is compiled again.
TEST_F(Router, RealTimingsBlendIntoTheEstimatesAndMoveThePlan) {
  write_cpu_profile();
  register_simulated_device({.speed = 8, .gbytes_per_s = 8, .latency_us = 20});
  const Graph g = mlp(256, 2);
  const auto sim_estimate = [&](Executable &exe) {
    for (const auto &[backend, us] : step_named(exe, "mm0").estimates_us)
      if (backend == "sim") return us;
    return -1.0;
  };
  Executable *exe = g.compile(&routed());
  EXPECT_NEAR(sim_estimate(*exe), 172.8, 0.1) << "the declared roofline before any run";
  const Tensor x = Tensor::randn({256, 512}, 4);
  RunProfile profile;
  for (int run = 0; run < 3; ++run) exe->execute({x}, &profile);
  // The simulated device runs the CPU's kernels: measured, its matmul is far slower than 8x.
  const double blended = sim_estimate(*g.compile(&routed()));
  EXPECT_GT(blended, 172.8 * 1.5) << "profiled runs were not recorded";
  // Measured much slower still: the next compile puts the matmuls on the CPU.
  const TensorType in{DType::Float32, Shape{256, 512}}, w{DType::Float32, Shape{512, 512}};
  const OpWork work = estimate_work("matmul", {}, {&in, &w}, {in});
  for (int i = 0; i < 20; ++i)
    CostModel::instance().record(get_backend("sim"), "matmul", DType::Float32, work, 20000,
                                 routed().thread_pool());
  Executable *moved = g.compile(&routed());
  EXPECT_EQ(step_named(*moved, "mm0").backend, "cpu") << step_named(*moved, "mm0").placement;
  EXPECT_EQ(step_named(*moved, "mm1").backend, "cpu");
}

// compile(adaptive): the simulated device declares 8x the CPU's speed but runs 20x slower than
// the CPU, so the matmul placed there takes ~160x its estimate. The timed second run shows it,
// and the executable places the graph again: the matmul moves to the CPU, and the results stay
// the CPU's. Without adaptive the plan stays as compiled.
TEST_F(Router, AnAdaptivePlanMovesAStepSlowerThanItsEstimate) {
  write_cpu_profile();
  register_simulated_device({.speed = 8, .gbytes_per_s = 8, .latency_us = 20, .slowdown = 20});
  const Graph g = mlp(256, 1);
  const Tensor x = Tensor::randn({256, 512}, 4);
  Runtime cpu{RuntimeOptions{.num_threads = 2, .backend = "cpu"}};
  const Tensor want = g.compile(&cpu)->execute({x})[0];

  // Not adaptive: the plan stays as compiled (these runs are untimed: the model learns nothing).
  Executable *fixed = g.compile(&routed());
  for (int run = 0; run < 3; ++run) fixed->execute({x});
  EXPECT_EQ(step_named(*fixed, "mm0").backend, "sim");
  EXPECT_TRUE(fixed->replans().empty());

  Executable *exe = g.compile(&routed(), CompileOptions{.adaptive = true});
  EXPECT_EQ(step_named(*exe, "mm0").backend, "sim") << step_named(*exe, "mm0").placement;
  for (int run = 0; run < 6; ++run) expect_same(exe->execute({x})[0], want);
  const std::vector<std::string> replans = exe->replans();
  ASSERT_GE(replans.size(), 1u);
  EXPECT_LE(replans.size(), size_t{3});
  EXPECT_NE(replans[0].find("mm0 on sim: "), std::string::npos) << replans[0];
  EXPECT_NE(replans[0].find("moved"), std::string::npos) << replans[0];
  EXPECT_EQ(step_named(*exe, "mm0").backend, "cpu") << step_named(*exe, "mm0").placement;
  EXPECT_EQ(steps_by_backend(*exe).count("copy"), 0u);
}

TEST_F(Router, CalibratesOncePerDeviceAndIgnoresACorruptCache) {
  Backend &cpu = get_backend("cpu");
  const auto start = std::chrono::steady_clock::now();
  const DeviceProfile measured = CostModel::instance().profile(cpu, host_.thread_pool());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10) << "calibration must stay short";
  EXPECT_GT(measured.gflops, 0.5);
  EXPECT_GT(measured.gbytes_per_s, 0.1);
  ASSERT_TRUE(fs::exists(cache_file()));
  const auto size = fs::file_size(cache_file());

  CostModel::instance().reset();  // a new process: the cache answers, nothing is measured
  const DeviceProfile cached = CostModel::instance().profile(cpu, host_.thread_pool());
  EXPECT_EQ(fs::file_size(cache_file()), size);
  EXPECT_NEAR(cached.gflops, measured.gflops, measured.gflops * 1e-5);

  {
    std::ofstream out(cache_file(), std::ios::app);
    out << "garbage\n"
        << CostModel::instance().key(cpu, host_.thread_pool()) << "\tprofile\tfast\t1\t1\n";
  }
  CostModel::instance().reset();
  ::testing::internal::CaptureStderr();
  const DeviceProfile again = CostModel::instance().profile(cpu, host_.thread_pool());
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("ignoring 2 malformed lines"), std::string::npos) << warning;
  EXPECT_NEAR(again.gflops, measured.gflops, measured.gflops * 1e-5);
}

TEST_F(Router, APinnedBackendListsEveryNodeItCannotRun) {
  Graph g;
  Value *x = g.add_input("x", {1, 2, 5, 5}, DType::Float64);
  Value *w = g.add_constant("w", Tensor::zeros({2, 2, 3, 3}, DType::Float64));
  Value *y = g.add_op("conv2d", {x, w}, {}, "c1");
  g.mark_output(g.add_op("conv2d", {y, w}, {}, "c2"));
  Runtime pinned{RuntimeOptions{.backend = "cpu"}};
  Runtime listed{RuntimeOptions{.backend = "reference,cpu"}};
  EXPECT_NO_THROW(g.compile(&listed)) << "the reference runs float64 convs";
  try {
    g.compile(&pinned);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "backend 'cpu' has no kernel for 2 nodes: 'c1' (conv2d, float64), 'c2' "
                  "(conv2d, float64)"),
              std::string::npos)
        << e.what();
  }
}

TEST(InsertCopies, CopiesEachValueOncePerSpaceAtTheBoundaries) {
  register_simulated_device({});  // before the runtime: "cpu,sim" must name registered backends
  Backend *cpu = &get_backend("cpu"), *sim = &get_backend("sim");
  // v0 (input) -> s0 on sim -> v1; s1 on sim reads v0 and v1; s2 on cpu reads v1; v2 is out.
  const std::vector<PlacementStep> steps{
      {.op = "relu", .node = "s0", .inputs = {0}, .outputs = {1}},
      {.op = "add", .node = "s1", .inputs = {0, 1}, .outputs = {2}},
      {.op = "relu", .node = "s2", .inputs = {1, 3}, .outputs = {4}}};
  std::vector<PlacementValue> values(5);
  values[2].graph_output = values[4].graph_output = true;
  values[3].constant = true;
  const std::vector<Placement> placements{{sim, ""}, {sim, ""}, {cpu, ""}};
  const CopyPlan plan = insert_copies(steps, values, placements);
  unregister_simulated_device();
  ASSERT_EQ(plan.before[0].size(), 1u);
  EXPECT_EQ(plan.before[0][0].value, 0);
  EXPECT_EQ(plan.before[0][0].to, sim);
  EXPECT_TRUE(plan.before[1].empty()) << "v0 is on sim already, v1 made there";
  ASSERT_EQ(plan.before[2].size(), 1u) << "v1 back to the cpu; the constant needs no copy";
  EXPECT_EQ(plan.before[2][0].from, sim);
  EXPECT_EQ(plan.before[2][0].to, cpu);
  ASSERT_EQ(plan.after.size(), 1u) << "v2 made on sim; v4 already on the host";
  EXPECT_EQ(plan.after[0].value, 2);
}

}  // namespace
}  // namespace lumen
