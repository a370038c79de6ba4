// Moving a tensor between memory spaces outside a plan: the caller's inputs given in other memory
// than a plan reads them in, and lumen::to_device.
#include "core/backend.h"
#include "lumen/lumen.h"

namespace lumen {
namespace {

// The backend whose memory `device` is.
Backend &owner_of(const Device &device) {
  for (Backend *b : backends())
    if (b->device() == device) return *b;
  fail("a tensor in ", device.to_string(), " memory, of no backend");
}

}  // namespace

Tensor transfer(const Tensor &t, Backend &to) {
  if (!t.defined() || t.device() == to.device()) return t;
  if (!t.device().is_host() && !to.device().is_host())  // device to device: through the host
    return transfer(transfer(t, host_backend()), to);
  Tensor out = Tensor::empty(t.shape(), t.dtype(), &to.allocator());
  // The side that is not host memory copies; it fails, naming it, for a tensor it cannot read.
  Backend &engine = to.device().is_host() ? owner_of(t.device()) : to;
  engine.copy(out, t, nullptr);
  return out;
}

Tensor to_device(const Tensor &t, std::string_view backend) {
  Backend &to = get_backend(backend);
  std::string why_not;
  if (!to.available(&why_not)) fail("to_device: backend '", backend, "' is unavailable: ", why_not);
  return transfer(t, to);
}

}  // namespace lumen
