// CPU fused_elementwise: the output is cut into blocks that fit a small stack buffer (L1-resident);
// each step runs over the whole block before the next, so every step is a flat loop the compiler
// vectorizes, and intermediates never leave the buffer. Blocks run in parallel on the pool. Input
// 0 and the output may be the same memory: a block is read before it is written.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/common/fused_elementwise_steps.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kBlock = 512;         // elements per block: 2-4 KiB, a few L1 lines of work
constexpr int64_t kBlocksPerTask = 32;  // blocks per parallel chunk, so scheduling stays cheap

template <class T>
struct CompiledStep {
  fused::StepFn<T> fn;
  const T *operand = nullptr;  // binary steps only
  bool operand_is_scalar = false;
  bool running_right = false;
};

// v[i] = f(v[i]) or f(v[i], b[i]) over one block, with the operand walking or repeated.
template <class T, class F>
void apply_step(const F &f, const CompiledStep<T> &s, T *v, int64_t offset, int64_t len) {
  if constexpr (std::is_invocable_v<const F &, T>) {
    for (int64_t i = 0; i < len; ++i) v[i] = f(v[i]);
  } else if (s.operand_is_scalar) {
    const T b = *s.operand;
    if (s.running_right)
      for (int64_t i = 0; i < len; ++i) v[i] = f(b, v[i]);
    else
      for (int64_t i = 0; i < len; ++i) v[i] = f(v[i], b);
  } else {
    const T *b = s.operand + offset;
    if (s.running_right)
      for (int64_t i = 0; i < len; ++i) v[i] = f(b[i], v[i]);
    else
      for (int64_t i = 0; i < len; ++i) v[i] = f(v[i], b[i]);
  }
}

template <class T>
void fused_elementwise_typed(KernelContext &ctx) {
  std::vector<fused::Step> steps;
  try {
    steps = fused::decode_steps(ctx.attrs, ctx.inputs.size());
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  const int64_t n = ctx.output(0).numel();
  std::vector<CompiledStep<T>> compiled;
  for (const fused::Step &s : steps) {
    CompiledStep<T> c{.fn = fused::make_step_fn<T>(s), .running_right = s.running_right};
    if (s.info->binary) {
      const Tensor &other = ctx.input(size_t(s.operand));
      if (other.numel() != 1 && other.numel() != n)
        ctx.fail("input ", s.operand, " has ", other.numel(), " elements; expected 1 or ", n,
                 " (input 0's count)");
      c.operand = other.data<T>();
      c.operand_is_scalar = other.numel() == 1;
    }
    compiled.push_back(std::move(c));
  }
  const T *x = ctx.input(0).data<T>();
  T *y = ctx.output(0).data<T>();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  ctx.pool.parallel_for(blocks, kBlocksPerTask, [&](int64_t first, int64_t last) {
    alignas(64) T buf[kBlock];
    for (int64_t blk = first; blk < last; ++blk) {
      const int64_t offset = blk * kBlock, len = std::min(kBlock, n - offset);
      std::memcpy(buf, x + offset, size_t(len) * sizeof(T));
      for (const CompiledStep<T> &s : compiled)
        std::visit([&](const auto &f) { apply_step(f, s, buf, offset, len); }, s.fn);
      std::memcpy(y + offset, buf, size_t(len) * sizeof(T));
    }
  });
}

LUMEN_REGISTER_KERNEL("cpu", "fused_elementwise", fused_elementwise_typed<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "fused_elementwise", fused_elementwise_typed<double>, DType::Float64);

}  // namespace
}  // namespace lumen
