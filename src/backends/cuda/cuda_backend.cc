// The CUDA backend: NVIDIA GPUs through the CUDA runtime, cuBLASLt for MatMul and Gemm, own
// kernels (kernels/*.cu) for the rest. Built as the plugin lumen_cuda (core/backend_plugins.h),
// so liblumen itself runs on machines without the CUDA libraries. Its memory is its own space
// (cuda:0): the router weighs it against the CPU with copies counted, and the compiler inserts
// copies where values cross.
#include <cstring>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/cuda_stream.h"
#include "core/backend.h"

namespace lumen::cuda {
namespace {

// A copy to the host under way: the data is in page-locked staging once the event has passed,
// and in dst once waited for.
class Download final : public Event {
 public:
  Download(cudaEvent_t done, std::shared_ptr<Buffer> staging, Tensor dst)
      : done_(done), staging_(std::move(staging)), dst_(std::move(dst)) {}
  ~Download() override {
    if (done_) cudaEventDestroy(done_);
  }
  void wait() override {
    if (!staging_) return;
    LUMEN_CUDA(cudaEventSynchronize(done_));
    std::memcpy(dst_.raw_data(), staging_->data(), dst_.nbytes());
    staging_.reset();
  }

 private:
  cudaEvent_t done_;
  std::shared_ptr<Buffer> staging_;
  Tensor dst_;
};

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  Device device() const override { return kCudaDevice; }
  int priority() const override { return 90; }
  bool available(std::string *why_not) const override {
    if (cuda_device()) return true;
    if (why_not) *why_not = cuda_unavailable_reason();
    return false;
  }
  std::string driver_id() const override {
    CudaDevice *dev = cuda_device();
    return dev ? dev->description() : "no device";
  }
  Allocator &allocator() override { return device_allocator(); }
  std::unique_ptr<Stream> new_stream() override { return std::make_unique<CudaStream>(); }

  // Ordered on the stream: a copy to the device goes through page-locked staging (kept until it
  // has run), so the host goes on; a copy to the host waits for the work that makes its source.
  void copy(Tensor &dst, const Tensor &src, Stream *stream) override {
    check_copy(dst, src);
    if (src.nbytes() == 0) return;
    const bool to_device = !dst.device().is_host(), from_device = !src.device().is_host();
    if (!to_device && !from_device) return dst.copy_from(src);
    active_device();
    CudaStream *own = cuda_stream(stream);
    const cudaStream_t s = own ? own->get() : cudaStreamPerThread;
    const size_t bytes = src.nbytes();
    if (to_device && from_device) {
      LUMEN_CUDA(
          cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes, cudaMemcpyDeviceToDevice, s));
    } else if (to_device) {
      const Tensor host = src.contiguous();
      std::shared_ptr<Buffer> staging = allocate_pinned(bytes);
      std::memcpy(staging->data(), host.raw_data(), bytes);
      LUMEN_CUDA(
          cudaMemcpyAsync(dst.raw_data(), staging->data(), bytes, cudaMemcpyHostToDevice, s));
      if (own) {
        own->retain(std::move(staging));
        return;
      }
    } else {
      return copy_async(dst, src, stream)->wait();
    }
    if (!own) LUMEN_CUDA(cudaStreamSynchronize(s));  // nothing would keep the staging alive
  }

  // A copy to the host, recorded on the stream into page-locked staging; the host reads it
  // when it waits.
  std::unique_ptr<Event> copy_async(Tensor &dst, const Tensor &src, Stream *stream) override {
    check_copy(dst, src);
    if (src.device().is_host() || !dst.device().is_host() || src.nbytes() == 0) {
      copy(dst, src, stream);
      return nullptr;
    }
    active_device();
    CudaStream *own = cuda_stream(stream);
    const cudaStream_t s = own ? own->get() : cudaStreamPerThread;
    std::shared_ptr<Buffer> staging = allocate_pinned(src.nbytes());
    LUMEN_CUDA(
        cudaMemcpyAsync(staging->data(), src.raw_data(), src.nbytes(), cudaMemcpyDeviceToHost, s));
    cudaEvent_t done = nullptr;
    LUMEN_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    LUMEN_CUDA(cudaEventRecord(done, s));
    return std::make_unique<Download>(done, std::move(staging), dst);
  }

 private:
  static void check_copy(const Tensor &dst, const Tensor &src) {
    if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
      fail("cuda copy: ", src.to_string(), " into ", dst.to_string());
    if (!dst.is_contiguous() || (!src.device().is_host() && !src.is_contiguous()))
      fail("cuda copy: device tensors and the destination must be contiguous");
  }
};

LUMEN_REGISTER_BACKEND(CudaBackend);

}  // namespace
}  // namespace lumen::cuda
