// The epilogue of the fused ops (fused_conv, fused_gemm, fused_matmul): y = act(y + bias +
// residual) over a contiguous block of outputs, applied by a kernel right after it computed that
// block, so the block is still in cache. Shared by the reference and CPU kernels so both apply the
// same formula. The list of fusable activations: graph/ops/epilogue_activations.h.
//
// The activation is chosen once per kernel call (a variant of the functors in
// activation_functors.h, built from the node's "activation_*" attributes); each block dispatches
// on it once and then runs a loop specialized for that functor.
#pragma once

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "backends/common/activation_functors.h"
#include "core/cpu_isa.h"
#include "core/kernel.h"
#include "graph/ops/epilogue_activations.h"

namespace lumen {

namespace act {
template <class T>
struct Identity {
  T operator()(T x) const { return x; }
};
}  // namespace act

template <class T>
class Epilogue {
 public:
  // Reads "activation" and its "activation_*" attributes; the node's inference has validated
  // them, so an unknown name here is an internal error, still reported with op and node.
  explicit Epilogue(const KernelContext &ctx) : fn_(make(ctx.attrs, ctx.op, ctx.node)) {}
  // The same from a fused node's attributes (a prepare function timing its kernel).
  Epilogue(const Attributes &attrs, std::string_view op, std::string_view node)
      : fn_(make(attrs, op, node)) {}
  // No activation: for the unfused ops sharing a fused op's kernel.
  Epilogue() = default;

  bool has_activation() const { return fn_.index() != 0; }

  // The activation as clamp bounds: none (-inf, inf), relu [0, inf) or clip [min, max], which a
  // kernel can apply while the values are in registers (x < lo ? lo : x, then x > hi ? hi : x,
  // as the functors do: NaN stays NaN). False for the other activations.
  bool as_clamp(T &lo, T &hi) const {
    return std::visit(
        [&](const auto &f) {
          using F = std::decay_t<decltype(f)>;
          if constexpr (std::is_same_v<F, act::Identity<T>>) {
            lo = -std::numeric_limits<T>::infinity(), hi = std::numeric_limits<T>::infinity();
          } else if constexpr (std::is_same_v<F, act::Relu<T>>) {
            lo = T(0), hi = std::numeric_limits<T>::infinity();
          } else if constexpr (std::is_same_v<F, act::Clip<T>>) {
            lo = f.lo, hi = f.hi;
          } else {
            return false;
          }
          return true;
        },
        fn_);
  }

  // y[i] = act(y[i] + bias[i] + residual[i]) for i in [0, count); bias and residual may be
  // nullptr. The additions happen in the order the unfused ops would do them.
  // The loops are compiled for the widest ISA the CPU has (core/cpu_isa.h): GELU's erf or a
  // sigmoid per output element costs as much as a GEMM step when it is not vectorized.
  void apply(T *y, int64_t count, const T *bias, const T *residual) const {
    std::visit(
        [&](const auto &f) {
          vec::run_best([&]() LUMEN_VEC_INLINE { apply_block(f, y, count, bias, residual); });
        },
        fn_);
  }

  // y[i] = act(y[i] + bias + residual[i]): one bias for the whole block (a conv's output
  // channel); residual may be nullptr.
  void apply_scalar_bias(T *y, int64_t count, T bias, const T *residual) const {
    std::visit(
        [&](const auto &f) {
          vec::run_best([&]() LUMEN_VEC_INLINE {
            if (residual)
              for (int64_t i = 0; i < count; ++i) y[i] = f(y[i] + bias + residual[i]);
            else
              for (int64_t i = 0; i < count; ++i) y[i] = f(y[i] + bias);
          });
        },
        fn_);
  }

 private:
  using Fn = std::variant<act::Identity<T>, act::Relu<T>, act::LeakyRelu<T>, act::Clip<T>,
                          act::Sigmoid<T>, act::Silu<T>, act::Tanh<T>, act::GeluErf<T>,
                          act::GeluTanh<T>, act::HardSwish<T>, act::HardSigmoid<T>>;

  static Fn make(const Attributes &attrs, std::string_view op, std::string_view node) {
    const std::string name = attrs.get_string("activation", "");
    if (name.empty()) return act::Identity<T>{};
    const Attributes a = activation_attributes(attrs);
    if (name == "relu") return act::Relu<T>(a);
    if (name == "leaky_relu") return act::LeakyRelu<T>(a);
    if (name == "clip") return act::Clip<T>(a);
    if (name == "sigmoid") return act::Sigmoid<T>(a);
    if (name == "silu") return act::Silu<T>(a);
    if (name == "tanh") return act::Tanh<T>(a);
    if (name == "gelu") {
      if (act::Gelu<T>(a).tanh_approx) return act::GeluTanh<T>{};
      return act::GeluErf<T>{};
    }
    if (name == "hard_swish") return act::HardSwish<T>(a);
    if (name == "hard_sigmoid") return act::HardSigmoid<T>(a);
    fail("op '", op, "' (node '", node, "'): unknown activation '", name, "'; expected one of ",
         epilogue_activation_names());
  }

  // One loop per (functor, operands present): the branches stay outside the element loop.
  template <class F>
  LUMEN_VEC_INLINE static void apply_block(const F &f, T *y, int64_t count, const T *bias,
                                           const T *residual) {
    if (bias && residual) {
      for (int64_t i = 0; i < count; ++i) y[i] = f(y[i] + bias[i] + residual[i]);
    } else if (bias) {
      for (int64_t i = 0; i < count; ++i) y[i] = f(y[i] + bias[i]);
    } else if (residual) {
      for (int64_t i = 0; i < count; ++i) y[i] = f(y[i] + residual[i]);
    } else if constexpr (!std::is_same_v<F, act::Identity<T>>) {
      for (int64_t i = 0; i < count; ++i) y[i] = f(y[i]);
    }
  }

  Fn fn_;
};

}  // namespace lumen
