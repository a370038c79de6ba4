// Resource limits of a run. The memory budget (lumen/memory_budget.h): sizes parsed as documented,
// scopes nest, and a tensor, a memory plan's arena or a run's tensor over the budget is a
// lumen::Error naming what and the size, before anything is allocated; the Executable stays usable
// after such a run.
#include <gtest/gtest.h>

#include <string>

#include "lumen/lumen.h"

namespace lumen {
namespace {

std::string error_of(const auto &fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(MemoryBudget, ParsesSizes) {
  EXPECT_EQ(parse_memory_size("4096", "x"), 4096u);
  EXPECT_EQ(parse_memory_size("512M", "x"), size_t{512} << 20);
  EXPECT_EQ(parse_memory_size("1.5G", "x"), size_t{3} << 29);
  EXPECT_EQ(parse_memory_size("2tb", "x"), size_t{2} << 40);
  for (const char *bad : {"", "x", "-1", "0", "12Q", "1e30", "nan", "3 G"})
    EXPECT_NE(
        error_of([&] { parse_memory_size(bad, "LUMEN_MAX_MEMORY"); }).find("LUMEN_MAX_MEMORY"),
        std::string::npos)
        << bad;
}

TEST(MemoryBudget, ScopesNestAndBoundTensors) {
  const size_t outer = memory_budget();
  {
    const MemoryBudgetScope a(1 << 20);
    EXPECT_EQ(memory_budget(), size_t{1} << 20);
    {
      const MemoryBudgetScope b(0);  // keeps the current one
      EXPECT_EQ(memory_budget(), size_t{1} << 20);
    }
    EXPECT_NO_THROW(Tensor::empty({256, 1024}));  // exactly 1 MiB
    const std::string e = error_of([] { Tensor::empty({257, 1024}); });
    EXPECT_NE(e.find("float32 tensor of shape [257, 1024] needs 1052672 bytes, over the memory "
                     "budget of 1048576"),
              std::string::npos)
        << e;
  }
  EXPECT_EQ(memory_budget(), outer);
}

// x [N, 64] -> relu -> * 2 -> relu: the intermediates live in the arena (a plan per shape for N).
Graph chain(int64_t n) {
  Graph g;
  Value *x = g.add_input("x", {n, 64});
  Value *y = g.add_op("relu", {x}, {}, "first");
  Value *z = g.add_op("mul", {y, g.add_constant("two", Tensor::from_vector<float>({}, {2.0f}))}, {},
                      "double");
  g.mark_output(g.add_op("relu", {z}, {}, "last"));
  return g;
}

TEST(MemoryBudget, RefusesAnArenaOverItAtCompileTime) {
  Runtime rt(RuntimeOptions{.num_threads = 1});
  const Graph g = chain(4096);  // 1 MiB per intermediate
  const std::string e = error_of([&] { g.compile(&rt, {.opt_level = 0, .max_memory = 1 << 19}); });
  EXPECT_NE(e.find("the memory plan's arena"), std::string::npos) << e;
  EXPECT_NE(e.find("over the memory budget of 524288 bytes"), std::string::npos) << e;
  EXPECT_NO_THROW(g.compile(&rt, {.opt_level = 0, .max_memory = 8 << 20}));
}

TEST(MemoryBudget, ARunOverItNamesTheNodeAndLeavesTheExecutableUsable) {
  Runtime rt(RuntimeOptions{.num_threads = 1});
  const Graph g = chain(kUnknownDim);  // sized per run
  Executable *exe = g.compile(&rt, {.opt_level = 0, .max_memory = 1 << 20});
  const std::string e = error_of([&] { exe->execute({Tensor::zeros({8192, 64})}); });
  EXPECT_NE(e.find("node '"), std::string::npos) << e;
  EXPECT_NE(e.find("over the memory budget of 1048576 bytes"), std::string::npos) << e;
  for (int run = 0; run < 3; ++run) {  // small runs after the failed one
    Tensor x = Tensor::from_vector<float>({2, 64}, std::vector<float>(128, -1.5f));
    x.data<float>()[5] = 3.0f;
    const Tensor y = exe->execute({x}).at(0);
    ASSERT_EQ(y.shape(), Shape({2, 64}));
    EXPECT_EQ(y.data<float>()[5], 6.0f);
    EXPECT_EQ(y.data<float>()[0], 0.0f);
  }
}

// A run that fails in its second step (an index out of range, known only from the data) leaves
// the Executable usable, and failing and succeeding runs alternating take no new memory from the
// system: the failed run's arena went back to the pool, its outputs were freed.
TEST(FailedRuns, LeaveTheExecutableUsableAndLeakNothing) {
  Runtime rt(RuntimeOptions{.num_threads = 1});
  Graph g;
  Value *x = g.add_input("x", {1024});
  Value *idx = g.add_input("idx", {2}, DType::Int64);
  Value *r = g.add_op("relu", {x}, {}, "first");
  g.mark_output(g.add_op("gather", {r, idx}, {{"axis", int64_t{0}}}, "pick"));
  Executable *exe = g.compile(&rt, {.opt_level = 0});
  Tensor xs = Tensor::zeros({1024});
  xs.data<float>()[7] = 3.5f;
  const Tensor good = Tensor::from_vector<int64_t>({2}, {7, 1}),
               bad = Tensor::from_vector<int64_t>({2}, {7, 5000});
  const auto run = [&](const Tensor &i) { return exe->execute(std::vector<Tensor>{xs, i}); };
  EXPECT_EQ(run(good).at(0).data<float>()[0], 3.5f);  // warm: arena and outputs cached
  EXPECT_NE(error_of([&] { run(bad); }).find("node 'pick'"), std::string::npos);
  const AllocatorStats before = host_allocator().stats();
  for (int i = 0; i < 20; ++i) {
    EXPECT_NE(error_of([&] { run(bad); }).find("5000"), std::string::npos);
    const Tensor y = run(good).at(0);
    EXPECT_EQ(y.data<float>()[0], 3.5f);
    EXPECT_EQ(y.data<float>()[1], 0.0f);
  }
  EXPECT_EQ(host_allocator().stats().system_allocations, before.system_allocations);
}

// The run timeout (RunTimeoutScope) stops a run before its next step, naming it; runs after the
// scope are not limited.
TEST(RunTimeout, StopsBetweenStepsNamingTheNode) {
  Runtime rt(RuntimeOptions{.num_threads = 1});
  Executable *exe = chain(16).compile(&rt, {.opt_level = 0});
  const Tensor x = Tensor::zeros({16, 64});
  {
    const RunTimeoutScope timeout(1e-9);  // over before the first step
    const std::string e = error_of([&] { exe->execute({x}); });
    EXPECT_NE(e.find("run timed out (timeout 1e-09 s"), std::string::npos) << e;
    EXPECT_NE(e.find("before op 'relu' (node 'first')"), std::string::npos) << e;
  }
  {
    const RunTimeoutScope generous(60);
    EXPECT_NO_THROW(exe->execute({x}));
  }
  EXPECT_NO_THROW(exe->execute({x}));
}

}  // namespace
}  // namespace lumen
