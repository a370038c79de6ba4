// Reference fused_elementwise: per output element, every step in order on one scalar, with the
// same functors as the standalone ops, so it matches the unfused chain exactly.
#include <type_traits>

#include "backends/common/fused_elementwise_fns.h"
#include "core/kernel.h"

namespace lumen {
namespace {

template <class T>
void fused_elementwise_typed(KernelContext &ctx) {
  std::vector<fused::Step> steps;
  try {
    steps = fused::decode_steps(ctx.attrs, ctx.inputs.size());
  } catch (const Error &e) {
    ctx.fail(e.what());
  }
  std::vector<fused::StepFn<T>> fns;
  for (const fused::Step &s : steps) fns.push_back(fused::make_step_fn<T>(s));

  const int64_t n = ctx.output(0).numel();
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    const int64_t m = ctx.input(i).numel();
    if (m != 1 && m != n)
      ctx.fail("input ", i, " has ", m, " elements; expected 1 or ", n, " (input 0's count)");
  }
  const T *x = ctx.input(0).data<T>();
  T *y = ctx.output(0).data<T>();
  for (int64_t i = 0; i < n; ++i) {
    T v = x[i];
    for (size_t k = 0; k < steps.size(); ++k) {
      std::visit(
          [&](const auto &f) {
            using F = std::decay_t<decltype(f)>;
            if constexpr (std::is_invocable_v<const F &, T>) {
              v = f(v);
            } else {
              const Tensor &other = ctx.input(size_t(steps[k].operand));
              const T b = other.data<T>()[other.numel() == 1 ? 0 : i];
              v = steps[k].running_right ? f(b, v) : f(v, b);
            }
          },
          fns[k]);
    }
    y[i] = v;
  }
}

LUMEN_REGISTER_KERNEL("reference", "fused_elementwise", fused_elementwise_typed<float>,
                      DType::Float32);
LUMEN_REGISTER_KERNEL("reference", "fused_elementwise", fused_elementwise_typed<double>,
                      DType::Float64);

}  // namespace
}  // namespace lumen
