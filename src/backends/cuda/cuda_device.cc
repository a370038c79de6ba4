#include "backends/cuda/cuda_device.h"

#include <cstdlib>
#include <mutex>

#include "backends/cuda/cuda_check.h"
#include "lumen/error.h"

namespace lumen::cuda {

void check(cudaError_t result, const char *call) {
  if (result != cudaSuccess) {
    cudaGetLastError();  // clears a sticky launch error so the next call reports its own
    fail("CUDA: ", call, " failed: ", cudaGetErrorName(result), " (", cudaGetErrorString(result),
         ")");
  }
}

void check(cublasStatus_t result, const char *call) {
  if (result != CUBLAS_STATUS_SUCCESS)
    fail("cuBLAS: ", call, " failed: ", cublasLtGetStatusName(result), " (",
         cublasLtGetStatusString(result), ")");
}

bool CudaDevice::open(int index, std::string &why_not) {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();
    const char *what = e == cudaErrorInsufficientDriver
                           ? "no NVIDIA driver, or one older than this "
                             "build's CUDA runtime"
                       : e == cudaErrorNoDevice ? "no NVIDIA GPU"
                                                : "the CUDA driver failed";
    why_not = str(what, " (cudaGetDeviceCount: ", cudaGetErrorName(e), ")");
    return false;
  }
  if (count == 0) {
    why_not = "the CUDA driver sees no GPU";
    return false;
  }
  if (index < 0 || index >= count) {
    why_not = str("LUMEN_CUDA_DEVICE=", index, " but there are ", count, " GPUs");
    return false;
  }
  index_ = index;
  try {
    LUMEN_CUDA(cudaSetDevice(index_));
    LUMEN_CUDA(cudaGetDeviceProperties(&properties_, index_));
    LUMEN_CUDA(cudaDriverGetVersion(&driver_));
    LUMEN_CUDA(cudaRuntimeGetVersion(&runtime_));
    LUMEN_CUDA(cublasLtCreate(&blas_));
  } catch (const Error &e) {
    why_not = e.what();
    return false;
  }
  if (properties_.major < 7) {
    why_not = str(properties_.name, " has compute capability ", properties_.major, ".",
                  properties_.minor, "; Lumen's CUDA kernels need 7.0 or newer");
    return false;
  }
  if (const char *precision = std::getenv("LUMEN_CUDA_PRECISION"); precision && *precision) {
    precision_ = precision;
    if (precision_ != "fp32" && precision_ != "tf32" && precision_ != "fp16" &&
        precision_ != "bf16") {
      why_not = str("LUMEN_CUDA_PRECISION=", precision_, ": expected fp32, tf32, fp16 or bf16");
      return false;
    }
  }
  return true;
}

CudaDevice::~CudaDevice() {
  if (blas_) cublasLtDestroy(blas_);
}

void CudaDevice::activate() const {
  LUMEN_CUDA(cudaSetDevice(index_));
}

std::string CudaDevice::description() const {
  const auto version = [](int v) { return str(v / 1000, ".", (v % 1000) / 10); };
  return str(properties_.name, " / sm_", properties_.major, properties_.minor, " / ",
             static_cast<double>(properties_.totalGlobalMem) / (1ull << 30), " GiB / driver ",
             version(driver_), " / runtime ", version(runtime_), " / ", precision_);
}

namespace {

struct Opened {
  CudaDevice device;
  bool ok = false;
  std::string why_not;
};

Opened &opened() {
  static auto *o = [] {
    auto *result = new Opened;  // never destroyed: kernels may run during static destruction
    const char *hide = std::getenv("LUMEN_CUDA");
    if (hide && std::string(hide) == "0") {
      result->why_not = "LUMEN_CUDA=0";
      return result;
    }
    const char *pick = std::getenv("LUMEN_CUDA_DEVICE");
    result->ok = result->device.open(pick ? std::atoi(pick) : 0, result->why_not);
    return result;
  }();
  return *o;
}

}  // namespace

CudaDevice *cuda_device() {
  Opened &o = opened();
  return o.ok ? &o.device : nullptr;
}

std::string cuda_unavailable_reason() {
  return opened().why_not;
}

CudaDevice &active_device() {
  CudaDevice *d = cuda_device();
  if (!d) fail("no CUDA device: ", cuda_unavailable_reason());
  d->activate();
  return *d;
}

}  // namespace lumen::cuda
