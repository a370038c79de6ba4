// The CUDA backend (the lumen_cuda plugin): its kernels against the reference backend on the GPU
// op cases (gpu_op_cases.h, which state the tolerances), a graph pinned to CUDA, a mixed graph,
// inputs and outputs in device memory and a 4096 x 4096 MatMul against the CPU. Every test skips
// with the reason where Lumen was built without CUDA or no GPU is here (CI: nvcc, no GPU); they
// run on a GPU machine through tools/gpu_check.sh.
#include <algorithm>
#include <map>

#include "core/backend.h"
#include "core/backend_plugins.h"
#include "core/kernel.h"
#include "gpu_op_cases.h"
#include "op_test_util.h"

namespace lumen {
namespace {

using testing::all_close;
using testing::random_tensor;

bool cuda_here(std::string &why_not) {
  Backend *b = find_backend("cuda");
  if (!b) {
    const std::string plugin = backend_plugin_error("cuda");
    why_not = plugin.empty()
                  ? "Lumen was built without the CUDA backend (LUMEN_WITH_CUDA, the CUDA toolkit)"
                  : "its plugin did not load: " + plugin;
    return false;
  }
  return b->available(&why_not);
}

#define SKIP_WITHOUT_CUDA()                                                 \
  do {                                                                      \
    std::string why_not;                                                    \
    if (!cuda_here(why_not)) GTEST_SKIP() << "no CUDA device: " << why_not; \
  } while (0)

// The CUDA element-wise kernels take float32 only: an integer exponent of pow stays on the CPU.
bool integer_exponent(const testing::Case &c) {
  return c.op == "pow" && c.inputs.at(1).dtype() != DType::Float32;
}

TEST(Cuda, EveryKernelMatchesTheReferenceAndHasACase) {
  SKIP_WITHOUT_CUDA();
  testing::expect_kernels_match_reference("cuda", {DType::Int32, DType::Int64}, integer_exponent);
}

// The case table itself, where no GPU checks it: every case is valid input that the CPU
// answers as the reference does (a broken case would otherwise surface only on a GPU machine).
TEST(GpuOpCases, EveryCaseRunsOnTheCpuAsOnTheReference) {
  for (const testing::Case &c : testing::gpu_op_cases()) {
    if (!kernel_registry("cpu").find(c.op, c.inputs[0].dtype())) continue;
    SCOPED_TRACE(c.op + " " + c.attrs.to_string());
    const auto want = call_op(c.op, c.inputs, c.attrs, "reference");
    const auto got = call_op(c.op, c.inputs, c.attrs, "cpu");
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(all_close(got[i], want[i], std::max(c.rtol, 1e-4), std::max(c.atol, 1e-4)));
  }
}

// Built with CUDA: the backend is registered even where it cannot run, and says why.
TEST(Cuda, AnUnavailableDeviceSaysWhy) {
  Backend *b = find_backend("cuda");
  if (!b) GTEST_SKIP() << "built without the CUDA backend";
  std::string why_not;
  if (b->available(&why_not)) GTEST_SKIP() << "a CUDA device is here";
  EXPECT_FALSE(why_not.empty());
  Graph g;
  Value *x = g.add_input("x", {2, 2});
  g.mark_output(g.add_op("relu", {x}));
  testing::expect_error(
      [&] {
        Runtime rt{RuntimeOptions{.backend = "cuda"}};
        g.compile(&rt);
      },
      {"backend 'cuda' is not available here", why_not});
}

// A graph pinned to CUDA: copies in and out only, the result the CPU's; the run state (arena,
// stream, cuBLASLt workspace) is reused across runs.
TEST(Cuda, PinnedGraphRunsWithCopiesAtTheEdges) {
  SKIP_WITHOUT_CUDA();
  Graph g;
  testing::add_small_mlp(g);
  Runtime gpu{RuntimeOptions{.backend = "cuda"}}, cpu{RuntimeOptions{.backend = "cpu"}};
  Executable *on_gpu = g.compile(&gpu);
  std::map<std::string, int> ops;
  for (const StepInfo &s : on_gpu->steps()) ++ops[s.op == "copy" ? "copy" : s.backend];
  EXPECT_EQ(ops["copy"], 2);
  EXPECT_EQ(on_gpu->memory().spaces.size(), 1u) << "every intermediate on cuda:0";
  for (int run = 0; run < 3; ++run) {
    const Tensor in = random_tensor({8, 32}, 4 + run);
    EXPECT_TRUE(all_close(on_gpu->execute({in})[0], g.compile(&cpu)->execute({in})[0], 1e-4, 1e-5));
  }
}

// Inputs given in CUDA memory and outputs left there: no copy step at all.
TEST(Cuda, InputsAndOutputsStayInDeviceMemory) {
  SKIP_WITHOUT_CUDA();
  Graph g;
  Value *x = g.add_input("x", {16, 64});
  Value *h = g.add_op("matmul", {x, g.add_constant("w", random_tensor({64, 64}, 1))});
  g.mark_output(
      g.add_op("tanh", {g.add_op("add", {h, g.add_constant("b", random_tensor({64}, 2))})}));
  Runtime rt{RuntimeOptions{.backend = "cuda"}}, cpu{RuntimeOptions{.backend = "cpu"}};
  CompileOptions options;
  options.input_device = options.output_device = "cuda";
  Executable *exe = g.compile(&rt, options);
  for (const StepInfo &s : exe->steps()) EXPECT_NE(s.op, "copy");
  const Tensor host = random_tensor({16, 64}, 3);
  const Tensor out = exe->execute({to_device(host, "cuda")})[0];
  EXPECT_FALSE(out.device().is_host());
  EXPECT_TRUE(all_close(to_device(out, "cpu"), g.compile(&cpu)->execute({host})[0], 1e-4, 1e-5));
}

// Batched MatMul with every broadcast form: one strided cuBLASLt call where operands step evenly,
// one product per matrix otherwise.
TEST(Cuda, BatchedMatmulBroadcastsLikeTheCpu) {
  SKIP_WITHOUT_CUDA();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5, 7}, {3, 7, 4}},       {{3, 5, 7}, {7, 4}}, {{5, 7}, {2, 3, 7, 4}},
      {{2, 1, 5, 7}, {1, 3, 7, 4}}, {{7}, {3, 7, 4}},    {{3, 5, 7}, {7}}};
  for (const auto &[a, b] : shapes) {
    const Tensor x = random_tensor(a, 1), y = random_tensor(b, 2);
    EXPECT_TRUE(all_close(call_op("matmul", {x, y}, {}, "cuda")[0],
                          call_op("matmul", {x, y}, {}, "cpu")[0], 1e-4, 1e-4))
        << a.to_string() << " x " << b.to_string();
  }
}

TEST(Cuda, LargeMatmul4096) {
  SKIP_WITHOUT_CUDA();
  const Tensor a = random_tensor({4096, 4096}, 5), b = random_tensor({4096, 4096}, 6);
  EXPECT_TRUE(all_close(call_op("matmul", {a, b}, {}, "cuda")[0],
                        call_op("matmul", {a, b}, {}, "cpu")[0], 1e-3, 2e-3));
}

}  // namespace
}  // namespace lumen
