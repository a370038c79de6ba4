// Kernels: a function per (backend, op, dtype of input 0). They register themselves from their own
// file with LUMEN_REGISTER_KERNEL; the backend only looks them up.
//
// Contract: inputs are contiguous tensors in the backend's memory, outputs are already allocated
// (contiguous) with the shapes the op's inference gave. A kernel must not allocate outputs or
// keep pointers to them after returning; it may use ctx.pool for parallel loops.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "lumen/attributes.h"
#include "lumen/buffer.h"
#include "lumen/device.h"
#include "lumen/error.h"
#include "lumen/shape.h"

namespace lumen {

struct KernelContext {
  std::vector<const Tensor *> inputs;  // nullptr for omitted optional inputs
  std::vector<Tensor *> outputs;
  const Attributes &attrs;
  ThreadPool &pool;
  Stream *stream = nullptr;
  std::string_view op;
  std::string_view node;
  // What the kernel's prepare function built from this step's constant inputs at compile time
  // (packed weights), or nullptr: eager calls, or no prepare function. The kernel knows its type.
  const void *prepared = nullptr;
  // For a kernel on a device: per input, the same value in host memory where one exists
  // (constants, values made on the host), for parameters it reads on the host (slice's starts);
  // nullptr where the value exists only on the device. Empty for host backends.
  std::vector<const Tensor *> host_inputs = {};

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  // Input i in host memory: the input itself on a host backend, else its host copy; nullptr when
  // there is none.
  const Tensor *host_input(size_t i) const {
    if (host_inputs.empty()) return has_input(i) ? inputs[i] : nullptr;
    return i < host_inputs.size() ? host_inputs[i] : nullptr;
  }
  const Tensor &input(size_t i) const { return *inputs.at(i); }
  Tensor &output(size_t i) const { return *outputs.at(i); }
  // The values of input i (an int32 or int64 tensor: axes, shapes, k...) as int64.
  std::vector<int64_t> input_ints(size_t i, const char *what = "input") const {
    return ints_of(input(i), i, what);
  }
  // The same, read from input i's host copy (host_input): what a device kernel reads its
  // parameters from. Fails where the value exists only on the device.
  std::vector<int64_t> host_input_ints(size_t i, const char *what = "input") const {
    const Tensor *t = host_input(i);
    if (!t) fail(what, " (input ", i, ") must be computed on the host, not the device");
    return ints_of(*t, i, what);
  }
  template <class... Args>
  [[noreturn]] void fail(const Args &...args) const {
    ::lumen::fail("op '", op, "' (node '", node, "'): ", args...);
  }

 private:
  std::vector<int64_t> ints_of(const Tensor &t, size_t i, const char *what) const {
    std::vector<int64_t> out(static_cast<size_t>(t.numel()));
    if (t.dtype() == DType::Int64) {
      for (size_t k = 0; k < out.size(); ++k) out[k] = t.data<int64_t>()[k];
    } else if (t.dtype() == DType::Int32) {
      for (size_t k = 0; k < out.size(); ++k) out[k] = t.data<int32_t>()[k];
    } else {
      fail(what, " (input ", i, ") must be int32 or int64, got ", dtype_name(t.dtype()));
    }
    return out;
  }
};

using KernelFn = void (*)(KernelContext &);

// What a prepare function sees when a step is compiled: the node's attributes, the compile-time
// shape of each input and, for inputs that are constants, their values.
struct PrepareContext {
  std::vector<const Tensor *> constants;  // per input: the constant, nullptr for other inputs
  std::vector<Shape> input_shapes;        // per input (dims may be unknown)
  std::vector<Shape> output_shapes;       // per output, as inference left them
  const Attributes &attrs;
  std::string_view op;
  std::string_view node;
  // Set by a prepare function whose result was chosen for input_shapes of non-constant inputs
  // (an algorithm picked for the image size, say). Otherwise the result is valid for any shape of
  // those inputs, and the plans made for other input shapes of a dynamic graph share it.
  mutable bool shape_specific = false;
  // The compile-time pool, for a prepare function that measures its candidate algorithms on this
  // machine (backends/cpu/kernel_choice.h); nullptr where none is at hand.
  ThreadPool *pool = nullptr;
  // The step's device: its allocator, for weights a device kernel uploads once here, and a stream
  // to queue that work on (synchronized before the compile goes on).
  Allocator *allocator = nullptr;
  Stream *stream = nullptr;
  // Set by a prepare function that chose among algorithms: which one, and why ("winograd:
  // measured 120 us, gemm 150 us"). Shown by `lumen inspect` and profiles (StepInfo::algorithm).
  mutable std::string algorithm;

  const Tensor *constant(size_t i) const { return i < constants.size() ? constants[i] : nullptr; }
  template <class... Args>
  [[noreturn]] void fail(const Args &...args) const {
    ::lumen::fail("op '", op, "' (node '", node, "'): ", args...);
  }
};

// Work done once per compiled step instead of once per run, typically packing constant weights
// into the layout the kernel's inner loops read. Returns nullptr when there is nothing to do (a
// weight that is not constant, say); the kernel then works from its inputs as usual.
using PrepareFn = std::shared_ptr<const void> (*)(const PrepareContext &);

// A node as placement shows it to a backend before choosing it (compile/place.h): what a kernel
// needs to say whether it runs the node, beyond the (op, dtype of input 0) it is registered for.
struct NodeQuery {
  struct Input {
    bool present = false;  // false for an omitted optional input
    DType dtype = DType::Float32;
    Shape shape;  // dims may be unknown (kUnknownDim)
  };
  std::string_view op;
  const Attributes *attrs = nullptr;  // nullptr: none
  std::vector<Input> inputs;
  std::vector<bool> outputs_used;  // per output: whether anything reads it
  const Attributes &attributes() const {
    static const Attributes none;
    return attrs ? *attrs : none;
  }
};

// A kernel's own limits, registered beside it (LUMEN_REGISTER_SUPPORTS): "" when it runs the
// node, else what it does not run ("a bool value"), so placement picks another device
// (or a pinned compile fails saying so) instead of the kernel failing at run time.
using SupportsFn = std::string (*)(const NodeQuery &);

class KernelRegistry {
 public:
  void add(std::string op, const std::vector<DType> &dtypes, KernelFn fn);
  KernelFn find(std::string_view op, DType dtype) const;  // nullptr when none
  void add_prepare(std::string op, const std::vector<DType> &dtypes, PrepareFn fn);
  PrepareFn find_prepare(std::string_view op, DType dtype) const;  // nullptr when none
  void add_supports(std::string op, const std::vector<DType> &dtypes, SupportsFn fn);
  SupportsFn find_supports(std::string_view op, DType dtype) const;  // nullptr: no limits
  // Every (op, dtype) this registry has, sorted.
  std::vector<std::pair<std::string, DType>> entries() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, DType>, KernelFn, std::less<>> kernels_;
  std::map<std::pair<std::string, DType>, PrepareFn, std::less<>> prepares_;
  std::map<std::pair<std::string, DType>, SupportsFn, std::less<>> supports_;
};

// The kernel registry of the backend named `backend`, created on first use (static-init safe).
KernelRegistry &kernel_registry(std::string_view backend);

}  // namespace lumen

// LUMEN_REGISTER_KERNEL("cpu", "relu", relu_kernel, DType::Float32, DType::Float64);
#define LUMEN_REGISTER_KERNEL(backend, op, fn, ...)                                \
  static const bool LUMEN_KERNEL_CONCAT(lumen_kernel_registered_, __LINE__) = [] { \
    ::lumen::kernel_registry(backend).add(op, {__VA_ARGS__}, fn);                  \
    return true;                                                                   \
  }()
// LUMEN_REGISTER_PREPARE("cpu", "conv2d", pack_conv_weights, DType::Float32);
#define LUMEN_REGISTER_PREPARE(backend, op, fn, ...)                                \
  static const bool LUMEN_KERNEL_CONCAT(lumen_prepare_registered_, __LINE__) = [] { \
    ::lumen::kernel_registry(backend).add_prepare(op, {__VA_ARGS__}, fn);           \
    return true;                                                                    \
  }()
// LUMEN_REGISTER_SUPPORTS("vulkan", "constant_of_shape", fill_limits, DType::Int64);
#define LUMEN_REGISTER_SUPPORTS(backend, op, fn, ...)                                \
  static const bool LUMEN_KERNEL_CONCAT(lumen_supports_registered_, __LINE__) = [] { \
    ::lumen::kernel_registry(backend).add_supports(op, {__VA_ARGS__}, fn);           \
    return true;                                                                     \
  }()
#define LUMEN_KERNEL_CONCAT_INNER(a, b) a##b
#define LUMEN_KERNEL_CONCAT(a, b) LUMEN_KERNEL_CONCAT_INNER(a, b)
