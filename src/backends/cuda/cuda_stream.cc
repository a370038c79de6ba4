#include "backends/cuda/cuda_stream.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_memory.h"

namespace lumen::cuda {

CudaStream::CudaStream() {
  active_device();
  // A blocking stream: ordered with the legacy default stream, where PyTorch and CuPy work by
  // default, so tensors exchanged through DLPack are complete when either side reads them.
  LUMEN_CUDA(cudaStreamCreate(&stream_));
}

CudaStream::~CudaStream() {
  cudaStreamSynchronize(stream_);  // nothing queued may outlive what it reads
  for (auto &[event, buffer] : retained_) cudaEventDestroy(event);
  cudaStreamDestroy(stream_);
}

Device CudaStream::device() const {
  return kCudaDevice;
}

void CudaStream::synchronize() {
  active_device();
  LUMEN_CUDA(cudaStreamSynchronize(stream_));
  for (auto &[event, buffer] : retained_) cudaEventDestroy(event);
  retained_.clear();
}

void CudaStream::retain(std::shared_ptr<Buffer> buffer) {
  release_passed();
  cudaEvent_t event = nullptr;
  LUMEN_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  LUMEN_CUDA(cudaEventRecord(event, stream_));
  retained_.emplace_back(event, std::move(buffer));
}

void CudaStream::release_passed() {
  while (!retained_.empty() && cudaEventQuery(retained_.front().first) == cudaSuccess) {
    cudaEventDestroy(retained_.front().first);
    retained_.pop_front();
  }
}

void *CudaStream::workspace(size_t bytes) {
  if (!workspace_ || workspace_->size() < bytes) {
    if (workspace_) retain(std::move(workspace_));  // queued work may still use the old one
    workspace_ = device_allocator().allocate(bytes);
  }
  return workspace_->data();
}

CudaStream *cuda_stream(Stream *stream) {
  return dynamic_cast<CudaStream *>(stream);
}

cudaStream_t stream_of(const KernelContext &ctx) {
  active_device();
  CudaStream *s = cuda_stream(ctx.stream);
  return s ? s->get() : cudaStreamPerThread;
}

}  // namespace lumen::cuda
