#include "runtime/op_runner.h"

#include <set>

#include "compile/place.h"
#include "core/backend_plugins.h"

#include "lumen/ops.h"

namespace lumen {

DType kernel_dtype(const std::vector<const TensorType *> &inputs) {
  return !inputs.empty() && inputs[0] ? inputs[0]->dtype : DType::Float32;
}

void check_inputs(const OpSchema &schema, InferContext ctx) {
  ctx.values.clear();
  try {
    infer_types(schema, ctx);
  } catch (const DeferredInference &) {  // reached the values: every check before them passed
  }
}

std::vector<Tensor> run_kernel(KernelFn kernel, Backend &backend,
                               const std::vector<const Tensor *> &inputs,
                               const std::vector<TensorType> *types, size_t num_outputs,
                               const Attributes &attrs, ThreadPool &pool, std::string_view op,
                               std::string_view node, const void *prepared,
                               const std::vector<bool> &unused, Stream *stream,
                               std::vector<const Tensor *> host_inputs) {
  const auto made = [&](size_t i) { return i >= unused.size() || !unused[i]; };
  std::vector<Tensor> copies;  // reserved: pointers into it stay valid
  copies.reserve(inputs.size());
  std::vector<Tensor> outputs(types ? types->size() : num_outputs);
  if (types)
    for (size_t i = 0; i < types->size(); ++i)
      if (made(i))
        outputs[i] = Tensor::empty((*types)[i].shape, (*types)[i].dtype, &backend.allocator());

  KernelContext ctx{.attrs = attrs,
                    .pool = pool,
                    .stream = stream,
                    .op = op,
                    .node = node,
                    .prepared = prepared,
                    .host_inputs = std::move(host_inputs)};
  for (const Tensor *t : inputs) {
    if (!t || !t->defined()) {
      ctx.inputs.push_back(nullptr);
    } else if (t->is_contiguous() || !t->device().is_host()) {
      ctx.inputs.push_back(t);
    } else {
      copies.push_back(t->contiguous());
      ctx.inputs.push_back(&copies.back());
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    ctx.outputs.push_back(made(i) ? &outputs[i] : nullptr);
  kernel(ctx);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined() && made(i))
      fail("op '", op, "' (node '", node, "'): output ", i, " not made");
  return outputs;
}

std::vector<Tensor> call_op(const std::string &op, const std::vector<Tensor> &inputs,
                            const Attributes &attrs, const std::string &backend_name) {
  const OpSchema &schema = get_op(op);
  std::vector<TensorType> types;
  types.reserve(inputs.size());
  for (const Tensor &t : inputs) types.push_back({t.dtype(), t.defined() ? t.shape() : Shape{}});
  InferContext ictx{.attrs = attrs, .op = op, .node = op};
  for (size_t i = 0; i < inputs.size(); ++i) {
    ictx.inputs.push_back(inputs[i].defined() ? &types[i] : nullptr);
    ictx.values.push_back(inputs[i].defined() ? &inputs[i] : nullptr);
  }
  // Ops whose kernels size their outputs are not inferred (their work twice), only checked.
  const bool by_kernel = schema.kernel_sizes_outputs && schema.num_outputs != kVariadicOutputs;
  std::vector<TensorType> out_types;
  if (by_kernel)
    check_inputs(schema, ictx);
  else
    out_types = infer_types(schema, ictx);
  const DType dtype = kernel_dtype(ictx.inputs);
  Backend &backend = *place_node(op, dtype, backend_name, op).backend;
  // A device whose memory is not the host's gets copies of the inputs and gives the outputs back
  // (the eager API takes and returns host tensors).
  const bool device = !backend.device().is_host();
  std::unique_ptr<Stream> stream = device ? backend.new_stream() : nullptr;
  std::vector<Tensor> on_device;
  on_device.reserve(inputs.size());
  std::vector<const Tensor *> input_ptrs, host_pointers;
  for (const Tensor &t : inputs) {
    host_pointers.push_back(t.defined() && t.device().is_host() ? &t : nullptr);
    if (!device || !t.defined() || t.device() == backend.device()) {
      input_ptrs.push_back(&t);
      continue;
    }
    on_device.push_back(Tensor::empty(t.shape(), t.dtype(), &backend.allocator()));
    backend.copy(on_device.back(), t, stream.get());
    input_ptrs.push_back(&on_device.back());
  }
  std::vector<Tensor> outputs = run_kernel(
      backend.find_kernel(op, dtype), backend, input_ptrs, by_kernel ? nullptr : &out_types,
      by_kernel ? size_t(schema.num_outputs) : 0, attrs, default_thread_pool(), op, op, nullptr, {},
      stream.get(), device ? host_pointers : std::vector<const Tensor *>{});
  if (device)
    for (Tensor &out : outputs) {
      if (!out.defined()) continue;
      Tensor host = Tensor::empty(out.shape(), out.dtype());
      backend.copy(host, out, stream.get());
      out = std::move(host);
    }
  return outputs;
}

std::function<bool(const std::string &)> ops_supported_by(const std::string &names) {
  if (names.empty() || names == "auto") return nullptr;
  std::set<std::string, std::less<>> ops;
  for (size_t start = 0; start <= names.size();) {
    const size_t comma = std::min(names.find(',', start), names.size());
    for (const auto &[op, dtype] :
         get_backend(names.substr(start, comma - start)).kernels().entries())
      ops.insert(op);
    start = comma + 1;
  }
  return [ops = std::move(ops)](const std::string &op) { return ops.count(op) > 0; };
}

std::vector<std::string> list_ops() {
  return registered_ops();
}

std::vector<BackendInfo> describe_backends() {
  std::vector<BackendInfo> out;
  for (Backend *b : backends()) {
    BackendInfo info{.name = std::string(b->name()), .device = b->device().to_string()};
    info.available = b->available(&info.why_not);
    if (info.available) info.description = b->driver_id();
    info.placed_automatically = b->placed_automatically();
    info.counters = b->counters();
    out.push_back(std::move(info));
  }
  // Backends built as plugins that could not be loaded here (no CUDA libraries, say).
  for (const auto &[name, why] : failed_backend_plugins())
    out.push_back({.name = name, .why_not = "its plugin did not load: " + why});
  return out;
}

std::vector<std::string> list_backends() {
  std::vector<std::string> names;
  for (Backend *b : backends()) names.emplace_back(b->name());
  return names;
}

}  // namespace lumen
