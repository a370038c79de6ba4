// The compiled Executable: memory planning on a 20-layer MLP (the product's "planned <= 50% of
// naive" claim), planned runs matching unplanned ones, in-place element-wise steps, outputs that
// survive later runs, and concurrent execution from several threads.
#include <gtest/gtest.h>

#include <thread>

#include "../ops/op_test_util.h"
#include "lumen/lumen.h"

namespace lumen {
namespace {

using testing::all_close;

// x [batch, width] -> `layers` x (matmul, add bias, relu); weights scaled by 1/sqrt(width) so the
// activations stay O(1). `batch` may be kUnknownDim (then no static memory plan is possible).
Graph mlp(int64_t batch, int64_t width, int layers) {
  Graph g;
  Value *h = g.add_input("x", {batch, width});
  for (int l = 0; l < layers; ++l) {
    Tensor w = Tensor::randn({width, width}, 100 + l);
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] /= std::sqrt(float(width));
    Value *mm = g.add_op("matmul", {h, g.add_constant(str("w", l), w)});
    Value *b = g.add_constant(str("b", l), Tensor::randn({width}, 200 + l));
    h = g.add_op("relu", {g.add_op("add", {mm, b})});
  }
  g.mark_output(h);
  return g;
}

// The graph's single output for one input, through a fresh runtime.
Tensor call_graph(const Graph &g, const Tensor &x) {
  Runtime rt(RuntimeOptions{.num_threads = 1});
  return g.compile(&rt)->execute({x})[0];
}

TEST(Executable, MlpMemoryPlanMeetsTheClaim) {
  Runtime rt(RuntimeOptions{.num_threads = 2});
  for (int opt_level : {0, 2}) {
    Graph g = mlp(64, 1024, 20);
    g.optimize(opt_level);
    const Executable *exe = g.compile(&rt);
    const MemoryReport &m = exe->memory();
    ASSERT_TRUE(m.planned);
    ASSERT_EQ(m.spaces.size(), 1u);
    const MemorySpaceReport &s = m.spaces[0];
    const size_t activation = 64 * 1024 * sizeof(float);
    EXPECT_LE(s.planned_bytes * 2, s.naive_bytes) << "opt_level " << opt_level;
    EXPECT_LE(static_cast<double>(s.planned_bytes), 1.05 * s.lower_bound_bytes);
    EXPECT_GE(s.lower_bound_bytes, activation);  // at least one activation is alive
    std::printf("[ mlp opt %d ] naive %zu planned %zu bound %zu in-place %zu\n", opt_level,
                s.naive_bytes, s.planned_bytes, s.lower_bound_bytes, s.in_place);
  }
}

TEST(Executable, PlannedRunMatchesUnplannedRun) {
  Runtime rt(RuntimeOptions{.num_threads = 2});
  const Executable *planned = mlp(8, 64, 4).compile(&rt);
  const Executable *dynamic = mlp(kUnknownDim, 64, 4).compile(&rt);
  EXPECT_TRUE(planned->memory().planned);
  EXPECT_FALSE(dynamic->memory().planned);
  const Tensor x = Tensor::randn({8, 64}, 1);
  EXPECT_TRUE(all_close(planned->execute({x})[0], dynamic->execute({x})[0], 1e-6, 1e-6));
}

TEST(Executable, ElementwiseStepsRunInPlace) {
  Graph g;
  Value *x = g.add_input("x", {16, 32});
  Value *h = g.add_op("matmul", {x, g.add_weight("w", {32, 32})});
  h = g.add_op("sigmoid", {g.add_op("relu", {h})});
  g.mark_output(g.add_op("matmul", {h, g.add_weight("w2", {32, 8})}));
  Runtime rt;
  const Executable *exe = g.compile(&rt);
  ASSERT_TRUE(exe->memory().planned);
  EXPECT_EQ(exe->memory().spaces[0].in_place, 2u);  // relu over matmul, sigmoid over relu
  // One 16x32 block serves all three intermediates.
  EXPECT_EQ(exe->memory().spaces[0].planned_bytes, 16u * 32 * 4);
  const Tensor in = Tensor::randn({16, 32}, 3);
  const Tensor want = call_op(
      "matmul",
      {call_op(
           "sigmoid",
           {call_op("relu", {call_op("matmul", {in, g.find_value("w")->constant()})[0]})[0]})[0],
       g.find_value("w2")->constant()})[0];
  EXPECT_TRUE(all_close(exe->execute({in})[0], want, 1e-5, 1e-6));
}

TEST(Executable, ReshapesAreViewsOfTheirInput) {
  Graph g;
  Value *x = g.add_input("x", {4, 6});
  Value *h = g.add_op("matmul", {x, g.add_weight("w", {6, 6})});
  Value *shape = g.add_constant("shape", Tensor::from_vector<int64_t>({3}, {2, 2, 6}));
  h = g.add_op("relu", {g.add_op("reshape", {h, shape})});
  g.mark_output(g.add_op("flatten", {h}, {{"axis", int64_t(2)}}));
  Runtime rt;
  const Executable *exe = g.compile(&rt);
  ASSERT_TRUE(exe->memory().planned);
  EXPECT_EQ(exe->memory().spaces[0].views, 1u);  // the final flatten is a graph output: a copy
  const Tensor in = Tensor::randn({4, 6}, 5);
  Runtime reference_rt(RuntimeOptions{.backend = "reference"});
  EXPECT_TRUE(
      all_close(exe->execute({in})[0], g.compile(&reference_rt)->execute({in})[0], 1e-5, 1e-6));
}

// DenseNet-style channel concats of batch-1 tensors: every input is written straight into the
// concat's output (nested: the first concat into the second), the concats copy nothing, and the
// result matches the reference backend. An input read again after its concat stays intact.
TEST(Executable, ConcatInputsAreWrittenIntoTheConcat) {
  Graph g;
  Value *x = g.add_input("x", {1, 16, 6, 6});
  const Attributes pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const Attributes channels{{"axis", int64_t(1)}};
  Attributes fused = pad1;
  fused.set("activation", std::string("relu"));
  Value *a = g.add_op("fused_conv", {x, g.add_weight("w1", {16, 16, 3, 3})}, fused);
  Value *b = g.add_op("conv2d", {a, g.add_weight("w2", {16, 16, 3, 3})}, pad1);
  Value *ab = g.add_op("concat", {a, b}, channels);
  Value *c = g.add_op("conv2d", {ab, g.add_weight("w3", {16, 32, 1, 1})});
  Value *abc = g.add_op("concat", {ab, c}, channels);
  Value *head = g.add_op("conv2d", {abc, g.add_weight("w4", {8, 48, 1, 1})});
  g.mark_output(
      g.add_op("add", {head, g.add_op("conv2d", {a, g.add_weight("w5", {8, 16, 1, 1})})}));
  Runtime rt(RuntimeOptions{.num_threads = 2});
  const Executable *exe = g.compile(&rt);
  ASSERT_TRUE(exe->memory().planned);
  EXPECT_EQ(exe->memory().spaces[0].concat_parts, 4u);
  const Tensor in = Tensor::randn({1, 16, 6, 6}, 9);
  Runtime reference_rt(RuntimeOptions{.backend = "reference"});
  const Tensor want = g.compile(&reference_rt)->execute({in})[0].clone();
  for (int run = 0; run < 2; ++run)
    EXPECT_TRUE(all_close(exe->execute({in})[0], want, 1e-4, 1e-4)) << "run " << run;
}

TEST(Executable, SteadyStateRunAllocatesOnlyItsOutput) {
  Runtime rt(RuntimeOptions{.num_threads = 1});
  Graph g = mlp(8, 64, 6);
  g.optimize(2);
  const Executable *exe = g.compile(&rt);
  ASSERT_TRUE(exe->memory().planned);
  const Tensor x = Tensor::randn({8, 64}, 1);
  exe->execute({x});  // the first run creates the arena
  const AllocatorStats before = host_allocator().stats();
  const Tensor y = exe->execute({x})[0];
  const AllocatorStats after = host_allocator().stats();
  EXPECT_EQ(after.allocations - before.allocations, 1u);  // the returned output
  EXPECT_EQ(after.system_allocations, before.system_allocations);
}

TEST(Executable, OutputsSurviveLaterRuns) {
  Runtime rt;
  const Executable *exe = mlp(4, 16, 3).compile(&rt);
  const Tensor first = exe->execute({Tensor::randn({4, 16}, 1)})[0];
  const Tensor copy = first.clone();
  exe->execute({Tensor::randn({4, 16}, 2)});
  EXPECT_TRUE(all_close(first, copy, 0, 0));
}

TEST(Executable, ConcurrentRunsFromSeveralThreads) {
  Runtime rt(RuntimeOptions{.num_threads = 2});
  const Executable *exe = mlp(16, 128, 6).compile(&rt);
  constexpr int kThreads = 4, kRuns = 10;
  std::vector<Tensor> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(Tensor::randn({16, 128}, 10 + t));
    expected.push_back(exe->execute({inputs.back()})[0]);
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r)
        if (!all_close(exe->execute({inputs[t]})[0], expected[t], 0, 0)) ++mismatches[t];
    });
  for (auto &th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// A dynamic batch: each shape runs its own planned, fully resolved plan, the same numbers as
// the graph compiled for that shape, with at most `shape_cache_capacity` plans kept.
TEST(Executable, DynamicGraphRunsAPlanPerInputShape) {
  Runtime rt(RuntimeOptions{.num_threads = 2});
  const Executable *dynamic =
      mlp(kUnknownDim, 64, 4).compile(&rt, CompileOptions{.shape_cache_capacity = 2});
  for (int64_t batch : {3, 5, 1, 3, 7, 5}) {
    const Tensor x = Tensor::randn({batch, 64}, 40 + batch);
    RunProfile profile;
    const Tensor first = dynamic->execute({x}, &profile)[0];  // new shapes: the generic plan
    const Tensor got = dynamic->execute({x}, &profile)[0];
    EXPECT_TRUE(all_close(first, got, 1e-6, 1e-6)) << "batch " << batch;
    Graph fixed_graph = mlp(batch, 64, 4);
    fixed_graph.optimize(2);  // what the plan for this shape is made with (CompileOptions)
    const Executable *fixed = fixed_graph.compile(&rt);
    EXPECT_TRUE(all_close(got, fixed->execute({x})[0], 1e-6, 1e-6)) << "batch " << batch;
    ASSERT_FALSE(profile.plan_steps.empty());
    EXPECT_EQ(profile.plan_steps.front().input_shapes.at(0), (Shape{batch, 64}));
    EXPECT_EQ(profile.plan_steps.size(), fixed->steps().size());
    rt.release(fixed);
  }
}

TEST(Executable, DynamicGraphFromSeveralThreadsAtDifferentShapes) {
  Runtime rt(RuntimeOptions{.num_threads = 2});
  const Executable *exe =
      mlp(kUnknownDim, 32, 3).compile(&rt, CompileOptions{.shape_cache_capacity = 2});
  constexpr int kThreads = 4, kRuns = 6;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const int64_t batch = 1 + (t + r) % 5;  // more shapes than the cache holds
        const Tensor x = Tensor::randn({batch, 32}, 7 * t + r);
        Graph g = mlp(batch, 32, 3);
        const Tensor want = call_graph(g, x);
        if (!all_close(exe->execute({x})[0], want, 1e-6, 1e-6)) ++mismatches[t];
      }
    });
  for (auto &th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// if(cond, x, w): then x @ w + 1, else relu(x); the branches are Graphs taking the captures.
TEST(Executable, IfRunsTheBranchItsConditionPicks) {
  auto branch = [](bool then_side) {
    auto g = std::make_shared<Graph>();
    Value *x = g->add_input("x", {kUnknownDim, 4});
    Value *w = g->add_input("w", {4, 4});
    Value *y =
        then_side
            ? g->add_op("add", {g->add_op("matmul", {x, w}),
                                g->add_constant("one", Tensor::from_vector<float>({}, {1.f}))})
            : g->add_op("relu", {x});
    g->mark_output(y);
    return g;
  };
  Graph g;
  Value *cond = g.add_input("cond", {}, DType::Bool);
  Value *x = g.add_input("x", {kUnknownDim, 4});
  Value *w = g.add_constant("w", Tensor::randn({4, 4}, 3));
  Node *n =
      g.add_node("if", {cond, x, w},
                 {{"then_branch", branch(true)}, {"else_branch", branch(false)}}, "the_if", {"y"});
  g.mark_output(n->output(0));
  Graph copy = g.clone();  // the copy owns its own branches
  copy.optimize(2);
  Runtime rt(RuntimeOptions{.num_threads = 1});
  const Executable *exe = copy.compile(&rt);
  const Tensor xv = Tensor::randn({3, 4}, 9);
  for (bool c : {true, false}) {
    Tensor cv = Tensor::empty({}, DType::Bool);
    cv.data<bool>()[0] = c;
    const Tensor got = exe->execute(std::vector<Tensor>{cv, xv})[0];
    const Tensor want = c ? call_op("add", {call_op("matmul", {xv, w->constant()})[0],
                                            Tensor::from_vector<float>({}, {1.f})})[0]
                          : call_op("relu", {xv})[0];
    EXPECT_TRUE(all_close(got, want, 1e-6, 1e-6)) << "cond " << c;
  }
}

}  // namespace
}  // namespace lumen
