// MatMul and Gemm on CUDA through cuBLASLt, and their fused forms: the bias is broadcast into the
// output first and accumulated onto (beta), ReLU runs in cuBLASLt's epilogue, other activations
// in one element-wise pass after it. FP32 by default; LUMEN_CUDA_PRECISION=tf32, fp16 or bf16
// lets cuBLASLt compute on tensor cores (the device description, and so `lumen inspect` and the
// cost cache, name it).
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "backends/common/activation_code.h"
#include "backends/common/matmul_plan.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/kernels/gemm.h"
#include "backends/cuda/kernels/walk.h"

namespace lumen::cuda {
namespace {

constexpr size_t kWorkspace = size_t{32} << 20;

// One cuBLASLt object, destroyed when it goes out of scope.
template <class T, cublasStatus_t (*Destroy)(T)>
struct Owned {
  T value = nullptr;
  ~Owned() {
    if (value) Destroy(value);
  }
};

cublasLtMatrixLayout_t layout(Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> &owned,
                              int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                              int64_t stride) {
  LUMEN_CUDA(cublasLtMatrixLayoutCreate(&owned.value, CUDA_R_32F, static_cast<uint64_t>(rows),
                                        static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    LUMEN_CUDA(cublasLtMatrixLayoutSetAttribute(owned.value, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                &count, sizeof(count)));
    LUMEN_CUDA(cublasLtMatrixLayoutSetAttribute(
        owned.value, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return owned.value;
}

cublasComputeType_t compute_type(const std::string &precision) {
  if (precision == "tf32") return CUBLAS_COMPUTE_32F_FAST_TF32;
  if (precision == "fp16") return CUBLAS_COMPUTE_32F_FAST_16F;
  if (precision == "bf16") return CUBLAS_COMPUTE_32F_FAST_16BF;
  return CUBLAS_COMPUTE_32F;
}

// The largest power of two (up to 256) dividing an address: what cuBLASLt's kernels may assume.
uint32_t alignment(const void *p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 4 && a % align) align /= 2;
  return align;
}

// cuBLASLt's choice of algorithm for a problem, asked once per problem (an implicit query on
// every call costs tens of microseconds): by shape, strides, flags and operand alignments.
class AlgoCache {
 public:
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int,
                         uint32_t, uint32_t, uint32_t>;
  // nullptr where cuBLASLt offers none (the call then lets it choose itself).
  const cublasLtMatmulAlgo_t *find(const Key &key, cublasLtHandle_t blas, cublasLtMatmulDesc_t desc,
                                   cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                   cublasLtMatrixLayout_t c, size_t workspace) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = algos_.find(key);
    if (it == algos_.end()) {
      Owned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
      LUMEN_CUDA(cublasLtMatmulPreferenceCreate(&pref.value));
      LUMEN_CUDA(cublasLtMatmulPreferenceSetAttribute(
          pref.value, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
      const uint32_t aligns[3] = {std::get<8>(key), std::get<9>(key), std::get<10>(key)};
      const cublasLtMatmulPreferenceAttributes_t which[3] = {
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES};
      for (int i = 0; i < 3; ++i)
        LUMEN_CUDA(cublasLtMatmulPreferenceSetAttribute(pref.value, which[i], &aligns[i],
                                                        sizeof(aligns[i])));
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      const cublasStatus_t status =
          cublasLtMatmulAlgoGetHeuristic(blas, desc, a, b, c, c, pref.value, 1, &result, &found);
      it = algos_.emplace(key, std::optional<cublasLtMatmulAlgo_t>()).first;
      if (status == CUBLAS_STATUS_SUCCESS && found > 0) it->second = result.algo;
    }
    return it->second ? &*it->second : nullptr;
  }

 private:
  std::mutex mutex_;
  std::map<Key, std::optional<cublasLtMatmulAlgo_t>> algos_;
};

}  // namespace

// cuBLASLt is column-major: row-major C [M, N] is column-major C^T [N, M], so it computes
// C^T = op(B)^T op(A)^T with B's buffer as its first operand.
void run_product(KernelContext &ctx, const Product &p) {
  if (p.M == 0 || p.N == 0 || p.batch == 0) return;
  if (p.K == 0) {  // sums nothing: C is beta * C (the bias term alone), as ONNX says
    if (p.beta == 0)
      LUMEN_CUDA(cudaMemsetAsync(p.c, 0, static_cast<size_t>(p.batch * p.M * p.N) * sizeof(float),
                                 stream_of(ctx)));
    else if (p.beta != 1)
      ctx.fail("K = 0 with beta ", p.beta, " (the CUDA kernel scales no bias term alone)");
    if (p.relu) {  // the epilogue cuBLASLt would have applied
      Walk w;
      w.rank = 1, w.count = w.shape[0] = p.batch * p.M * p.N, w.stride[0][0] = 1;
      check_launch(ctx, launch_unary(kRelu, 0, 0, p.c, p.c, w, stream_of(ctx)));
    }
    return;
  }
  if (p.batch > INT32_MAX) ctx.fail("a batch of ", p.batch, " products is over 2^31");
  CudaDevice &device = active_device();
  CudaStream *own = cuda_stream(ctx.stream);
  const cudaStream_t stream = stream_of(ctx);
  Owned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> desc;
  LUMEN_CUDA(cublasLtMatmulDescCreate(&desc.value, compute_type(device.precision()), CUDA_R_32F));
  const cublasOperation_t op_b = p.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                          op_a = p.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  LUMEN_CUDA(
      cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)));
  LUMEN_CUDA(
      cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)));
  if (p.relu) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU;
    LUMEN_CUDA(cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof(epilogue)));
  }
  // Stored column-major shapes: B is [N, K] (ld N) or, transposed, [K, N] (ld K); A is [K, M]
  // (ld K) or [M, K] (ld M); C is [N, M] (ld N).
  Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> lb, la, lc;
  layout(lb, p.tb ? p.K : p.N, p.tb ? p.N : p.K, p.tb ? p.K : p.N, p.batch, p.b_stride);
  layout(la, p.ta ? p.M : p.K, p.ta ? p.K : p.M, p.ta ? p.M : p.K, p.batch, p.a_stride);
  layout(lc, p.N, p.M, p.N, p.batch, p.c_stride ? p.c_stride : p.M * p.N);
  void *workspace = own ? own->workspace(kWorkspace) : nullptr;
  const size_t workspace_bytes = workspace ? kWorkspace : 0;
  static auto *algos = new AlgoCache;  // never destroyed: runs may outlive static destruction
  const int flags = (p.ta ? 1 : 0) | (p.tb ? 2 : 0) | (p.relu ? 4 : 0) | (p.beta != 0 ? 8 : 0) |
                    (workspace ? 16 : 0);
  // cuBLASLt's first operand is B's buffer, its second A's.
  const AlgoCache::Key key{p.M,           p.N,        p.K,   p.batch,        p.a_stride,
                           p.b_stride,    p.c_stride, flags, alignment(p.b), alignment(p.a),
                           alignment(p.c)};
  const cublasLtMatmulAlgo_t *algo =
      algos->find(key, device.blas(), desc.value, lb.value, la.value, lc.value, workspace_bytes);
  LUMEN_CUDA(cublasLtMatmul(device.blas(), desc.value, &p.alpha, p.b, lb.value, p.a, la.value,
                            &p.beta, p.c, lc.value, p.c, lc.value, algo, workspace, workspace_bytes,
                            stream));
}

namespace {

// Writes `bias` broadcast to c's shape into c (the term beta scales).
void broadcast_into(KernelContext &ctx, const Tensor &bias, Tensor &c) {
  const Walk w = make_walk(ctx, c.shape(), broadcast_strides(bias.shape(), c.shape()),
                           contiguous_strides(c.shape()));
  check_launch(ctx, launch_strided_copy(4, bias.raw_data(), c.raw_data(), w, stream_of(ctx)));
}

// The fused ops' activation: ReLU in cuBLASLt's epilogue (sets p.relu), any other after it.
Activation plan_activation(KernelContext &ctx, Product &p) {
  const Activation act = epilogue_activation(ctx.attrs);
  if (act.code == kRelu) {
    p.relu = true;
    return {};
  }
  return act;
}

void finish(KernelContext &ctx, const Activation &act, Tensor &c) {
  if (act.code == kNoActivation || c.numel() == 0) return;
  const std::vector<int64_t> own = contiguous_strides(c.shape());
  check_launch(ctx, launch_unary(act.code, act.alpha, act.beta, device_data(c), device_data(c),
                                 make_walk(ctx, c.shape(), own, own), stream_of(ctx)));
}

void matmul(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &c = ctx.output(0);
  const MatmulPlan plan = plan_matmul(ctx, a.shape(), b.shape());
  Product p;
  p.M = plan.m, p.K = plan.k, p.N = plan.n;
  p.batch = static_cast<int64_t>(plan.a.size());
  if (ctx.has_input(2)) {  // fused_matmul's bias [N], on every row
    broadcast_into(ctx, ctx.input(2), c);
    p.beta = 1;
  }
  const Activation act = plan_activation(ctx, p);
  p.c = device_data(c);
  p.a = device_data(a), p.b = device_data(b);
  const auto every = [&](const std::vector<int64_t> &v, bool dense) {
    for (size_t t = 0; t < v.size(); ++t)
      if (v[t] != (dense ? static_cast<int64_t>(t) : 0)) return false;
    return true;
  };
  if (plan.b_constant && plan.a_dense) {
    // One B for every A (activations x weights): one GEMM of batch x M rows.
    p.M *= p.batch;
    p.batch = 1;
    run_product(ctx, p);
  } else if ((plan.a_dense || every(plan.a, false)) && (every(plan.b, true) || plan.b_constant)) {
    p.a_stride = plan.a_dense ? p.M * p.K : 0;
    p.b_stride = plan.b_constant ? 0 : p.K * p.N;
    run_product(ctx, p);
  } else {  // batches broadcast dim by dim ([2, 1] x [1, 3]): one product per output matrix
    Product one = p;
    one.batch = 1;
    for (size_t t = 0; t < plan.a.size(); ++t) {
      one.a = p.a + plan.a[t] * p.M * p.K;
      one.b = p.b + plan.b[t] * p.K * p.N;
      one.c = p.c + static_cast<int64_t>(t) * p.M * p.N;
      run_product(ctx, one);
    }
  }
  finish(ctx, act, c);
}

void gemm(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor &c = ctx.output(0);
  Product p;
  p.ta = ctx.attrs.get_int("transA", 0) != 0, p.tb = ctx.attrs.get_int("transB", 0) != 0;
  p.M = p.ta ? a.shape()[1] : a.shape()[0], p.K = p.ta ? a.shape()[0] : a.shape()[1];
  p.N = p.tb ? b.shape()[0] : b.shape()[1];
  p.alpha = static_cast<float>(ctx.attrs.get_float("alpha", 1.0));
  if (ctx.has_input(2)) {
    broadcast_into(ctx, ctx.input(2), c);
    p.beta = static_cast<float>(ctx.attrs.get_float("beta", 1.0));
  }
  const Activation act = plan_activation(ctx, p);
  p.a = device_data(a), p.b = device_data(b), p.c = device_data(c);
  run_product(ctx, p);
  finish(ctx, act, c);
}

}  // namespace

LUMEN_REGISTER_KERNEL("cuda", "matmul", matmul, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "gemm", gemm, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "fused_matmul", matmul, DType::Float32);
LUMEN_REGISTER_KERNEL("cuda", "fused_gemm", gemm, DType::Float32);

}  // namespace lumen::cuda
