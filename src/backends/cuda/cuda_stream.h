// The executor's stream on the CUDA device (a cudaStream_t). Work starts when it is
// launched (flush has nothing to do); buffers dropped while work that reads them is queued are
// kept until an event recorded after that work has passed (retain).
#pragma once

#include <cuda_runtime.h>

#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "core/kernel.h"
#include "lumen/device.h"

namespace lumen::cuda {

class CudaStream final : public Stream {
 public:
  CudaStream();
  ~CudaStream() override;
  CudaStream(const CudaStream &) = delete;
  CudaStream &operator=(const CudaStream &) = delete;

  Device device() const override;
  void synchronize() override;
  void retain(std::shared_ptr<Buffer> buffer) override;

  cudaStream_t get() const { return stream_; }
  // Scratch device memory for cuBLASLt, kept with the stream (its calls on the stream are
  // ordered, so one workspace serves them all).
  void *workspace(size_t bytes);

 private:
  void release_passed();

  cudaStream_t stream_ = nullptr;
  std::shared_ptr<Buffer> workspace_;
  // Buffers kept alive, each until its event has passed.
  std::deque<std::pair<cudaEvent_t, std::shared_ptr<Buffer>>> retained_;
};

// The stream a kernel queues on: the executor's, else (a call without one) the calling thread's
// default stream. The device is made current on this thread.
cudaStream_t stream_of(const KernelContext &ctx);
CudaStream *cuda_stream(Stream *stream);  // nullptr when `stream` is not a CUDA stream

}  // namespace lumen::cuda
