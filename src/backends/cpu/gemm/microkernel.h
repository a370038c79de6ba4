// The GEMM micro-kernels compiled into Lumen and the choice among them by CPU features.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "backends/cpu/ukernels/f32_gemm.h"
#include "core/cpu_isa.h"

namespace lumen::cpu {

struct F32GemmMicrokernel {
  std::string_view name;  // "f32_gemm_12x32__avx512"
  int mr, nr;             // tile rows and columns
  int edge_cols;          // a tile's last columns cost this many lanes each, rounded up
  void (*run)(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int m, int n,
              ukernels::TileStore store, const ukernels::TileEpilogue *epilogue,
              const ukernels::GridColumns *grid, ukernels::L2PrefetchShare next);
  vec::Isa isa;  // the instruction set it needs
  bool supported() const { return isa <= vec::hardware_isa(); }
};

// Every compiled micro-kernel, fastest first (supported or not).
std::span<const F32GemmMicrokernel> f32_gemm_microkernels();

// The fastest one for vec::cpu_isa() (the CPU's features, capped by LUMEN_CPU_ISA), chosen once.
const F32GemmMicrokernel &default_f32_gemm_microkernel();

}  // namespace lumen::cpu
