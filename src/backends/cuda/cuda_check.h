// Errors of the CUDA runtime and cuBLAS as lumen::Error, naming the call. Only files of the CUDA
// backend (the lumen_cuda plugin) include this.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "lumen/device.h"

namespace lumen::cuda {

inline constexpr Device kCudaDevice{DeviceType::CUDA, 0};

void check(cudaError_t result, const char *call);
void check(cublasStatus_t result, const char *call);
#define LUMEN_CUDA(call) ::lumen::cuda::check((call), #call)

}  // namespace lumen::cuda
