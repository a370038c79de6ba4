// CPU fused_elementwise: the output is cut into blocks that fit a small stack buffer (L1-resident);
// each step runs over the whole block before the next, so every step is a flat loop the compiler
// vectorizes (compiled for the best ISA at run time), and intermediates never leave the buffer.
// Blocks run in parallel on the pool. Input 0 and the output may be the same memory: a block is
// read before it is written. The steps are decoded from the attributes once, at compile time.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include "backends/common/fused_elementwise_fns.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"

namespace lumen {
namespace {

constexpr int64_t kBlock = 512;         // elements per block: 2-4 KiB, a few L1 lines of work
constexpr int64_t kBlocksPerTask = 32;  // blocks per parallel chunk, so scheduling stays cheap

template <class T>
struct CompiledStep {
  const fused::StepFn<T> *fn = nullptr;  // owned by the decoded steps
  const T *operand = nullptr;            // binary steps only
  bool operand_is_scalar = false;
  bool running_right = false;
};

// v[i] = f(v[i]) or f(v[i], b[i]) over one block, with the operand walking or repeated.
template <class T, class F>
LUMEN_VEC_INLINE inline void apply_step(const F &f, const CompiledStep<T> &s, T *v, int64_t offset,
                                        int64_t len) {
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

// Runs the step's functor without std::visit, so the loop is inlined into (and vectorized for)
// the ISA-specific caller.
template <class T, size_t... I>
LUMEN_VEC_INLINE inline void apply_any(const CompiledStep<T> &s, T *v, int64_t offset, int64_t len,
                                       std::index_sequence<I...>) {
  (void)((s.fn->index() == I ? (apply_step(std::get<I>(*s.fn), s, v, offset, len), true) : false) ||
         ...);
}

// What decoding the node's attributes gives, built once per compiled step (or per eager call).
template <class T>
struct Decoded {
  std::vector<fused::Step> steps;
  std::vector<fused::StepFn<T>> fns;
};

template <class T>
std::shared_ptr<Decoded<T>> decode(const Attributes &attrs, size_t num_inputs) {
  auto d = std::make_shared<Decoded<T>>();
  d->steps = fused::decode_steps(attrs, num_inputs);
  for (const fused::Step &s : d->steps) d->fns.push_back(fused::make_step_fn<T>(s));
  return d;
}

template <class T>
std::shared_ptr<const void> prepare_fused_elementwise(const PrepareContext &ctx) {
  try {
    return decode<T>(ctx.attrs, ctx.constants.size());
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
}

template <class T>
void fused_elementwise_typed(KernelContext &ctx) {
  std::shared_ptr<Decoded<T>> own;
  const Decoded<T> *d = static_cast<const Decoded<T> *>(ctx.prepared);
  if (!d) {
    try {
      own = decode<T>(ctx.attrs, ctx.inputs.size());
    } catch (const Error &e) {
      ctx.fail(e.what());
    }
    d = own.get();
  }
  const int64_t n = ctx.output(0).numel();
  // Most chains are short: their steps live on the stack.
  constexpr size_t kInline = 16;
  std::array<CompiledStep<T>, kInline> inline_steps;
  std::vector<CompiledStep<T>> heap_steps;
  const size_t count = d->steps.size();
  if (count > kInline) heap_steps.resize(count);
  CompiledStep<T> *compiled = count > kInline ? heap_steps.data() : inline_steps.data();
  for (size_t i = 0; i < count; ++i) {
    const fused::Step &s = d->steps[i];
    CompiledStep<T> &c = compiled[i];
    c.fn = &d->fns[i];
    c.running_right = s.running_right;
    if (s.info->binary) {
      if (!ctx.has_input(size_t(s.operand))) ctx.fail("input ", s.operand, " is missing");
      const Tensor &other = ctx.input(size_t(s.operand));
      if (other.numel() != 1 && other.numel() != n)
        ctx.fail("input ", s.operand, " has ", other.numel(), " elements; expected 1 or ", n,
                 " (input 0's count)");
      c.operand = other.data<T>();
      c.operand_is_scalar = other.numel() == 1;
    }
  }
  const T *x = ctx.input(0).data<T>();
  T *y = ctx.output(0).data<T>();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  constexpr auto kAll = std::make_index_sequence<std::variant_size_v<fused::StepFn<T>>>();
  ctx.pool.parallel_for(blocks, kBlocksPerTask, [&](int64_t first, int64_t last) {
    vec::run_best([&]() LUMEN_VEC_INLINE {
      alignas(64) T buf[kBlock];
      for (int64_t blk = first; blk < last; ++blk) {
        const int64_t offset = blk * kBlock, len = std::min(kBlock, n - offset);
        std::memcpy(buf, x + offset, size_t(len) * sizeof(T));
        for (size_t i = 0; i < count; ++i) apply_any(compiled[i], buf, offset, len, kAll);
        std::memcpy(y + offset, buf, size_t(len) * sizeof(T));
      }
    });
  });
}

LUMEN_REGISTER_KERNEL("cpu", "fused_elementwise", fused_elementwise_typed<float>, DType::Float32);
LUMEN_REGISTER_KERNEL("cpu", "fused_elementwise", fused_elementwise_typed<double>, DType::Float64);
LUMEN_REGISTER_PREPARE("cpu", "fused_elementwise", prepare_fused_elementwise<float>,
                       DType::Float32);
LUMEN_REGISTER_PREPARE("cpu", "fused_elementwise", prepare_fused_elementwise<double>,
                       DType::Float64);

}  // namespace
}  // namespace lumen
