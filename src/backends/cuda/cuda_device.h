// The CUDA device the backend runs on, chosen on first use (never at library load):
// LUMEN_CUDA=0 hides every device, LUMEN_CUDA_DEVICE=<index> picks one (default 0). The runtime
// keeps a current device per host thread: every entry point that talks to the device makes it
// current first (activate()).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

namespace lumen::cuda {

class CudaDevice {
 public:
  // Opens device `index`; false (with the reason) where it cannot be used.
  bool open(int index, std::string &why_not);
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;
  CudaDevice() = default;
  ~CudaDevice();

  void activate() const;
  int index() const { return index_; }
  const cudaDeviceProp &properties() const { return properties_; }
  // One cuBLASLt handle for the process (it holds no stream: each call names its own).
  cublasLtHandle_t blas() const { return blas_; }
  // How MatMul, Gemm and convolution GEMMs compute on float32 data: "fp32" (the default), or,
  // opted into with LUMEN_CUDA_PRECISION, "tf32", "fp16" or "bf16" (cuBLASLt converts the
  // operands down and accumulates in FP32 on tensor cores: faster, fewer digits).
  const std::string &precision() const { return precision_; }
  // "NVIDIA H200 / sm_90 / 139.8 GiB / driver 13.0 / runtime 13.0 / fp32": what measurements
  // are keyed by.
  std::string description() const;

 private:
  int index_ = -1;
  cudaDeviceProp properties_{};
  cublasLtHandle_t blas_ = nullptr;
  std::string precision_ = "fp32";
  int driver_ = 0, runtime_ = 0;
};

// The process's CUDA device, opened on first call; nullptr where none is usable (no driver, no
// GPU, LUMEN_CUDA=0), with the reason in cuda_unavailable_reason().
CudaDevice *cuda_device();
std::string cuda_unavailable_reason();
// The device, made current on this thread; throws where there is none.
CudaDevice &active_device();

}  // namespace lumen::cuda
