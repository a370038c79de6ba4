// The Vulkan backend's kernels against the reference backend, on the GPU op cases
// (gpu_op_cases.h, which state the tolerances) that must cover every (op, dtype) the backend
// registers; a pinned graph, a mixed graph (the router splits it between Vulkan and the CPU when
// the cost cache says Vulkan is fast) and a 2048 x 2048 MatMul. Every test skips with the reason
// where no Vulkan device exists (LUMEN_VULKAN=0, no driver). In CI they run on Mesa's lavapipe.
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "compile/cost_model.h"
#include "core/backend.h"
#include "core/thread_pool.h"
#include "gpu_op_cases.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::as_ints;
using testing::Case;
using testing::ints;
using testing::random_tensor;
using testing::scalar;

bool vulkan_here(std::string &why_not) {
  Backend *b = find_backend("vulkan");
  if (!b) {
    why_not =
        "Lumen was built without the Vulkan backend (LUMEN_WITH_VULKAN, libvulkan-dev, glslc)";
    return false;
  }
  return b->available(&why_not);
}

#define SKIP_WITHOUT_VULKAN()                                                   \
  do {                                                                          \
    std::string why_not;                                                        \
    if (!vulkan_here(why_not)) GTEST_SKIP() << "no Vulkan device: " << why_not; \
  } while (0)

std::vector<std::string> step_placements(const Executable &exe) {
  std::vector<std::string> order;
  for (const StepInfo &s : exe.steps()) order.push_back(s.op + "@" + s.backend);
  return order;
}

// Runs `exe` (compiled from `g`) `runs` times on new random inputs of `shape`, each result
// against the CPU's (the run state and its recorded commands are reused across runs).
void expect_runs_match_cpu(const Graph &g, const Executable &exe, const Shape &shape, int runs,
                           double rtol = 1e-4, double atol = 1e-2) {
  Runtime cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *want = g.compile(&cpu);
  for (int run = 0; run < runs; ++run) {
    const Tensor in = random_tensor(shape, 100 + run);
    EXPECT_TRUE(all_close(exe.execute({in})[0], want->execute({in})[0], rtol, atol)) << run;
  }
}

TEST(Vulkan, EveryKernelMatchesTheReferenceAndHasACase) {
  SKIP_WITHOUT_VULKAN();
  // Movement ops copy 32-bit words: their float32 cases run again on int32 data.
  testing::expect_kernels_match_reference("vulkan", {DType::Int32});
}

// NaN and infinities go through the element-wise kernels as on the reference (GLSL's max, clamp
// and pow leave NaN undefined): every element-wise case again with specials in input 0.
TEST(Vulkan, SpecialValuesPropagateAsOnTheReference) {
  SKIP_WITHOUT_VULKAN();
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (Case c : testing::gpu_op_cases()) {
    static const std::set<std::string> kElementwise = {
        "add",     "sub",      "mul",        "div",          "pow",
        "maximum", "minimum",  "relu",       "sigmoid",      "tanh",
        "silu",    "softplus", "hard_swish", "exp",          "neg",
        "abs",     "log",      "sqrt",       "gelu",         "leaky_relu",
        "elu",     "erf",      "clip",       "hard_sigmoid", "fused_elementwise"};
    if (!kElementwise.count(c.op) || c.inputs[0].numel() < 3) continue;
    SCOPED_TRACE(c.op + " " + c.attrs.to_string());
    Tensor x = c.inputs[0].contiguous();
    x.data<float>()[0] = nan;
    x.data<float>()[1] = inf;
    x.data<float>()[2] = -inf;
    c.inputs[0] = x;
    EXPECT_TRUE(all_close(call_op(c.op, c.inputs, c.attrs, "vulkan")[0],
                          call_op(c.op, c.inputs, c.attrs, "reference")[0], c.rtol, c.atol));
  }
}

// The reductions (softmax, layer_norm, reduce_*) have a variant with subgroup operations, run
// where the device has them: both variants against the reference (LUMEN_VULKAN_SUBGROUPS=0 forces
// the shared-memory one), with NaN among the inputs of the max/min reductions.
TEST(Vulkan, ReductionsAgreeWithAndWithoutSubgroups) {
  SKIP_WITHOUT_VULKAN();
  std::string old;
  if (const char *v = std::getenv("LUMEN_VULKAN_SUBGROUPS")) old = v;
  for (const char *subgroups : {"0", "1"}) {
    setenv("LUMEN_VULKAN_SUBGROUPS", subgroups, 1);
    for (Case c : testing::gpu_op_cases()) {
      const bool reduction = c.op == "softmax" || c.op == "log_softmax" || c.op == "layer_norm" ||
                             c.op.rfind("reduce_", 0) == 0;
      if (!reduction) continue;
      SCOPED_TRACE(std::string("subgroups=") + subgroups + " " + c.op + " " + c.attrs.to_string());
      EXPECT_TRUE(all_close(call_op(c.op, c.inputs, c.attrs, "vulkan")[0],
                            call_op(c.op, c.inputs, c.attrs, "reference")[0], c.rtol, c.atol));
      if (c.op != "reduce_max" && c.op != "reduce_min") continue;
      Tensor x = c.inputs[0].contiguous();
      x.data<float>()[x.numel() - 1] = std::numeric_limits<float>::quiet_NaN();
      c.inputs[0] = x;
      EXPECT_TRUE(all_close(call_op(c.op, c.inputs, c.attrs, "vulkan")[0],
                            call_op(c.op, c.inputs, c.attrs, "reference")[0], c.rtol, c.atol))
          << "with a NaN";
    }
  }
  if (old.empty())
    unsetenv("LUMEN_VULKAN_SUBGROUPS");
  else
    setenv("LUMEN_VULKAN_SUBGROUPS", old.c_str(), 1);
}

TEST(Vulkan, GatherChecksItsIndicesOnTheHost) {
  SKIP_WITHOUT_VULKAN();
  testing::expect_error(
      [] {
        call_op("gather", {random_tensor({4, 3}, 1), ints({2}, {1, 4})}, {}, "vulkan");
      },
      "index 4 is out of range for dim 0 of size 4");
}

TEST(Vulkan, APinnedGraphListsWhatVulkanCannotRun) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {4, 4});
  g.mark_output(g.add_op("cumsum", {x, g.add_constant("axis", ints({}, {0}))}, {}, "running"));
  Runtime rt{RuntimeOptions{.backend = "vulkan"}};
  testing::expect_error([&] { g.compile(&rt); },
                        "backend 'vulkan' has no kernel for 1 node: 'running' (cumsum, float32)");
}

// A graph pinned to Vulkan: copies in and out only, the result the CPU's.
TEST(Vulkan, PinnedGraphRunsWithCopiesAtTheEdges) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  testing::add_small_mlp(g);
  Runtime vk{RuntimeOptions{.backend = "vulkan"}}, cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *on_vulkan = g.compile(&vk);
  std::map<std::string, int> ops;
  for (const StepInfo &s : on_vulkan->steps()) ++ops[s.op == "copy" ? "copy" : s.backend];
  EXPECT_EQ(ops["vulkan"], 4);
  EXPECT_EQ(ops["copy"], 2);
  EXPECT_EQ(on_vulkan->memory().spaces.size(), 1u) << "every intermediate on vulkan:0";
  EXPECT_EQ(on_vulkan->memory().spaces[0].space, "vulkan:0");
  const Tensor in = random_tensor({8, 32}, 4);
  for (int run = 0; run < 3; ++run)  // the run state (arena, stream) is reused
    EXPECT_TRUE(
        all_close(on_vulkan->execute({in})[0], g.compile(&cpu)->execute({in})[0], 1e-4, 1e-5));
}

// Command buffers are recorded once and resubmitted (vulkan_stream.h): after the first run of a
// planned graph, runs record nothing and submit the recorded batch again, with the same results;
// new input values go through (the copy in is not part of the recording's identity).
TEST(Vulkan, PlannedRunsResubmitTheirRecordedCommands) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {16, 64});
  Value *h = g.add_op("matmul", {x, g.add_constant("w", random_tensor({64, 64}, 1))});
  h = g.add_op("add", {h, g.add_constant("b", random_tensor({64}, 2))});
  g.mark_output(g.add_op("softmax", {g.add_op("tanh", {h})}, Attributes{{"axis", int64_t{-1}}}));
  Runtime vk{RuntimeOptions{.backend = "vulkan"}};
  Executable *exe = g.compile(&vk);
  const auto counters = [] { return get_backend("vulkan").counters(); };
  exe->execute({random_tensor({16, 64}, 3)});  // records
  const auto before = counters();
  expect_runs_match_cpu(g, *exe, {16, 64}, 4, 1e-4, 1e-5);
  const auto after = counters();
  EXPECT_EQ(after.at("batches_recorded"), before.at("batches_recorded"));
  EXPECT_GE(after.at("batches_replayed") - before.at("batches_replayed"), 4u);
}

// An input already in Vulkan memory: a plan that reads it on the CPU and one that reads it on
// Vulkan both get its values (it is copied to the host first).
TEST(Vulkan, ExecuteTakesInputsInVulkanMemory) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {4, 8});
  g.mark_output(g.add_op("matmul", {x, g.add_constant("w", random_tensor({8, 3}, 1))}));
  const Tensor host = random_tensor({4, 8}, 2);
  Backend &vulkan = get_backend("vulkan");
  Tensor on_device = Tensor::empty({4, 8}, DType::Float32, &vulkan.allocator());
  vulkan.copy(on_device, host, nullptr);
  for (const char *backend : {"cpu", "vulkan"}) {
    Runtime rt{RuntimeOptions{.backend = backend}};
    Executable *exe = g.compile(&rt);
    EXPECT_TRUE(all_close(exe->execute({on_device})[0], exe->execute({host})[0], 0, 0)) << backend;
  }
}

TEST(Vulkan, LargeMatmul2048) {
  SKIP_WITHOUT_VULKAN();
  // Seconds on lavapipe: once per CI run, in the default-ISA pass of the plain build (the ISA
  // passes and the sanitized builds, where lavapipe is not instrumented anyway, skip it).
  if (std::getenv("LUMEN_CPU_ISA")) GTEST_SKIP() << "runs in the default-ISA pass";
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "runs in the unsanitized build";
#endif
#endif
  const Tensor a = random_tensor({2048, 2048}, 5), b = random_tensor({2048, 2048}, 6);
  const Tensor got = call_op("matmul", {a, b}, {}, "vulkan")[0];
  const Tensor want = call_op("matmul", {a, b}, {}, "cpu")[0];
  EXPECT_TRUE(all_close(got, want, 1e-3, 2e-3));
}

// A cost cache (in a directory of its own) that says Vulkan is 1000x the CPU, with a fast link,
// for as long as it lives: the router then puts whatever Vulkan can run on it.
class FastVulkanCache {
 public:
  explicit FastVulkanCache(Runtime &rt)
      : dir_(std::filesystem::temp_directory_path() /
             ("lumen_vulkan_fast_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir_);
    if (const char *v = std::getenv("LUMEN_CACHE_DIR")) old_ = v;
    setenv("LUMEN_CACHE_DIR", dir_.c_str(), 1);
    CostModel::instance().reset();
    std::ofstream out(dir_ / "device_costs.tsv");
    CostModel &m = CostModel::instance();
    out << m.key(get_backend("cpu"), rt.thread_pool()) << "\tprofile\t10\t5\t5\n"
        << m.key(get_backend("vulkan"), rt.thread_pool()) << "\tprofile\t10000\t500\t5\n"
        << m.key(get_backend("vulkan"), rt.thread_pool()) << "\tlink\t50\t5\n";
  }
  ~FastVulkanCache() {
    if (old_.empty())
      unsetenv("LUMEN_CACHE_DIR");
    else
      setenv("LUMEN_CACHE_DIR", old_.c_str(), 1);
    CostModel::instance().reset();
    std::filesystem::remove_all(dir_);
  }

 private:
  std::filesystem::path dir_;
  std::string old_;
};

// The router puts the GEMMs on Vulkan when the cost cache says it is fast, and cumsum (no Vulkan
// kernel) on the CPU, with copies exactly where values cross.
TEST(Vulkan, MixedGraphSplitsWithCopiesWhereValuesCross) {
  SKIP_WITHOUT_VULKAN();
  Runtime rt{RuntimeOptions{.num_threads = 2}};
  const FastVulkanCache fast(rt);
  Graph g;
  Value *x = g.add_input("x", {256, 256});
  Value *h = g.add_op("matmul", {x, g.add_constant("w1", random_tensor({256, 256}, 1))}, {}, "mm1");
  h = g.add_op("cumsum", {h, g.add_constant("axis", ints({}, {1}))}, {}, "running");
  h = g.add_op("matmul", {h, g.add_constant("w2", random_tensor({256, 256}, 2))}, {}, "mm2");
  g.mark_output(h);
  Executable *exe = g.compile(&rt);
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"copy@vulkan", "matmul@vulkan", "copy@vulkan", "cumsum@cpu",
                                      "copy@vulkan", "matmul@vulkan", "copy@vulkan"}));
  expect_runs_match_cpu(g, *exe, {256, 256}, 1);
}

// A copy to Vulkan while Vulkan work is pending goes through a staging block, ordered on the
// stream after that work, without the host waiting for it: the CPU's cumsum of x is uploaded while
// the matmul of x is still recorded, not run; the add reads both.
TEST(Vulkan, AnUploadWhileWorkIsPendingIsOrderedOnTheStream) {
  SKIP_WITHOUT_VULKAN();
  Runtime rt{RuntimeOptions{.num_threads = 2}};
  const FastVulkanCache fast(rt);
  Graph g;
  Value *x = g.add_input("x", {256, 256});
  Value *mm = g.add_op("matmul", {x, g.add_constant("w", random_tensor({256, 256}, 1))}, {}, "mm");
  Value *cs = g.add_op("cumsum", {x, g.add_constant("axis", ints({}, {1}))}, {}, "running");
  g.mark_output(g.add_op("add", {mm, cs}, {}, "sum"));
  Executable *exe = g.compile(&rt);
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"copy@vulkan", "matmul@vulkan", "cumsum@cpu", "copy@vulkan",
                                      "add@vulkan", "copy@vulkan"}));
  expect_runs_match_cpu(g, *exe, {256, 256}, 3);
}

// A plan compiled with input_device and output_device "vulkan" reads its inputs where the caller
// keeps them and leaves its outputs there: pinned to Vulkan, no copy step at all; the results
// (read back with to_device) are the CPU's. An input given in host memory is moved there first.
TEST(Vulkan, InputsAndOutputsStayInVulkanMemory) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {16, 32});
  Value *h = g.add_op("matmul", {x, g.add_constant("w", random_tensor({32, 8}, 1))});
  g.mark_output(
      g.add_op("tanh", {g.add_op("add", {h, g.add_constant("b", random_tensor({8}, 2))})}));
  Runtime vk{RuntimeOptions{.backend = "vulkan"}}, cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *exe =
      g.compile(&vk, CompileOptions{.input_device = "vulkan", .output_device = "vulkan"});
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"matmul@vulkan", "add@vulkan", "tanh@vulkan"}));
  Executable *want = g.compile(&cpu);
  for (int run = 0; run < 3; ++run) {
    const Tensor host = random_tensor({16, 32}, 10 + run);
    const Tensor on_device = to_device(host, "vulkan");
    EXPECT_EQ(on_device.device(), get_backend("vulkan").device());
    const Tensor out = exe->execute({on_device})[0];
    EXPECT_EQ(out.device(), get_backend("vulkan").device());
    const Tensor expected = want->execute({host})[0];
    EXPECT_TRUE(all_close(to_device(out, "cpu"), expected, 1e-4, 1e-5)) << run;
    EXPECT_TRUE(all_close(to_device(exe->execute({host})[0], "cpu"), expected, 1e-4, 1e-5));
  }
  testing::expect_error([&] { g.compile(&vk, CompileOptions{.output_device = "nowhere"}); },
                        "nowhere");
}

// Inputs and outputs in Vulkan memory while the router splits the graph: the matmul reads the
// input where it is, its result crosses to the CPU (cumsum) and back with one copy each way, and
// the cumsum, an output too, is returned from the copy made for the second matmul (no copy after
// the last step).
TEST(Vulkan, DeviceInputsAndOutputsInAMixedPlan) {
  SKIP_WITHOUT_VULKAN();
  Runtime rt{RuntimeOptions{.num_threads = 2}};
  const FastVulkanCache fast(rt);
  Graph g;
  Value *x = g.add_input("x", {128, 128});
  Value *h = g.add_op("matmul", {x, g.add_constant("w1", random_tensor({128, 128}, 1))}, {}, "mm1");
  Value *c = g.add_op("cumsum", {h, g.add_constant("axis", ints({}, {1}))}, {}, "running");
  g.mark_output(
      g.add_op("matmul", {c, g.add_constant("w2", random_tensor({128, 128}, 2))}, {}, "mm2"));
  g.mark_output(c);
  Executable *exe =
      g.compile(&rt, CompileOptions{.input_device = "vulkan", .output_device = "vulkan"});
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"matmul@vulkan", "copy@vulkan", "cumsum@cpu", "copy@vulkan",
                                      "matmul@vulkan"}));
  Runtime cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *want = g.compile(&cpu);
  for (int run = 0; run < 3; ++run) {
    const Tensor host = random_tensor({128, 128}, 20 + run);
    const auto got = exe->execute({to_device(host, "vulkan")});
    const auto expected = want->execute({host});
    for (size_t o = 0; o < 2; ++o) {
      EXPECT_EQ(got[o].device(), get_backend("vulkan").device()) << o;
      EXPECT_TRUE(all_close(to_device(got[o], "cpu"), expected[o], 1e-4, 1e-2)) << run << " " << o;
    }
  }
}

// A copy to the host that the executor leaves under way (Backend::copy_async: an Event) holds
// the data once waited for, though the device work before it was only recorded when it began.
TEST(Vulkan, AnAsyncCopyToTheHostHasTheDataOnceWaitedFor) {
  SKIP_WITHOUT_VULKAN();
  Backend &vulkan = get_backend("vulkan");
  const Tensor a = random_tensor({256, 256}, 1), b = random_tensor({256, 256}, 2);
  const Tensor da = to_device(a, "vulkan"), db = to_device(b, "vulkan");
  Tensor product = Tensor::empty({256, 256}, DType::Float32, &vulkan.allocator());
  std::unique_ptr<Stream> stream = vulkan.new_stream();
  Runtime rt;
  const Attributes none;
  KernelContext ctx{.inputs = {&da, &db},
                    .outputs = {&product},
                    .attrs = none,
                    .pool = rt.thread_pool(),
                    .stream = stream.get(),
                    .op = "matmul",
                    .node = "mm"};
  vulkan.find_kernel("matmul", DType::Float32)(ctx);
  Tensor host = Tensor::zeros({256, 256});
  std::unique_ptr<Event> arriving = vulkan.copy_async(host, product, stream.get());
  ASSERT_NE(arriving, nullptr);
  arriving->wait();
  arriving->wait();  // harmless
  EXPECT_TRUE(all_close(host, call_op("matmul", {a, b}, {}, "cpu")[0], 1e-4, 1e-3));
  stream->synchronize();
}

// A kernel's own limits (SupportsFn) beyond its (op, dtype): the Vulkan fill writes 32-bit
// words, so a bool constant_of_shape goes to the CPU however fast Vulkan is (the matmul beside it
// to Vulkan), and a compile pinned to Vulkan says why it cannot run it.
TEST(Vulkan, KernelLimitsKeepANodeOffADevice) {
  SKIP_WITHOUT_VULKAN();
  Runtime rt{RuntimeOptions{.num_threads = 2}};
  const FastVulkanCache fast(rt);
  Graph g;
  Value *x = g.add_input("x", {256, 256});
  g.mark_output(g.add_op("matmul", {x, g.add_constant("w", random_tensor({256, 256}, 1))}));
  g.mark_output(g.add_op("constant_of_shape", {g.add_constant("shape", ints({2}, {4, 6}))},
                         Attributes{{"value", Tensor::from_vector<bool>({1}, {true})}}, "mask"));
  Executable *exe = g.compile(&rt);
  EXPECT_EQ(step_placements(*exe),
            (std::vector<std::string>{"copy@vulkan", "matmul@vulkan", "constant_of_shape@cpu",
                                      "copy@vulkan"}));
  const auto got = exe->execute({random_tensor({256, 256}, 2)});
  EXPECT_EQ(got[1].dtype(), DType::Bool);
  for (int64_t i = 0; i < got[1].numel(); ++i) EXPECT_TRUE(got[1].data<bool>()[i]);
  Runtime vk{RuntimeOptions{.backend = "vulkan"}};
  testing::expect_error([&] { g.compile(&vk); },
                        "'mask' (constant_of_shape, int64: vulkan: a bool value (the Vulkan fill "
                        "writes 32-bit words))");
}

// What the fusion passes make runs on Vulkan: a conv with its residual add and activation
// (fused_conv), a matmul with bias and activation (fused_gemm), and an element-wise chain
// (fused_elementwise),
// pinned to Vulkan and optimized, against the CPU.
TEST(Vulkan, FusedGraphRunsOnVulkan) {
  SKIP_WITHOUT_VULKAN();
  Graph g;
  Value *x = g.add_input("x", {1, 8, 10, 10});
  Value *c = g.add_op("conv2d",
                      {x, g.add_constant("w", random_tensor({8, 8, 3, 3}, 1)),
                       g.add_constant("b", random_tensor({8}, 2))},
                      Attributes{{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  c = g.add_op("relu", {g.add_op("add", {c, x})});
  Value *f = g.add_op("reshape", {c, g.add_constant("s", ints({2}, {1, 800}))});
  f = g.add_op("matmul", {f, g.add_constant("w2", random_tensor({800, 16}, 3))});
  f = g.add_op("add", {f, g.add_constant("b2", random_tensor({16}, 4))});
  f = g.add_op("tanh", {f});
  f = g.add_op("mul", {g.add_op("sigmoid", {f}), g.add_constant("k", scalar(1.7f))});
  g.mark_output(g.add_op("sub", {f, g.add_constant("k2", scalar(0.3f))}));
  g.optimize(2, OptimizeOptions{.target_supports = ops_supported_by("vulkan")});
  Runtime vk{RuntimeOptions{.backend = "vulkan"}}, cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *exe = g.compile(&vk);
  std::set<std::string> ops;
  for (const StepInfo &s : exe->steps()) {
    EXPECT_TRUE(s.op == "copy" || s.backend == "vulkan") << s.op << " on " << s.backend;
    ops.insert(s.op);
  }
  for (const char *fused : {"fused_conv", "fused_gemm", "fused_elementwise"})
    EXPECT_TRUE(ops.count(fused)) << fused << " not made";
  const Tensor in = random_tensor({1, 8, 10, 10}, 5);
  EXPECT_TRUE(all_close(exe->execute({in})[0], g.compile(&cpu)->execute({in})[0], 1e-4, 1e-4));
}

}  // namespace
}  // namespace lumen
