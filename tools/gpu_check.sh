#!/usr/bin/env bash
# The CUDA backend's checks on a GPU machine, in one run (issue 26): build (or reuse build-gpu/),
# the CUDA unit tests, the Python CUDA tests, the ONNX conformance suite on CUDA and on the CPU,
# and the GPU benchmark (bench/gpu_bench.py). Results go under $OUT (default ./gpu_check_out).
#
# The GPU machine has the CUDA toolkit, cmake and Python with numpy/onnx/onnxruntime/torch/
# nanobind, but no network and no -dev packages: run tools/gpu_deps.sh here first and carry
# gpu-deps/ (OpenBLAS, Protobuf, GoogleTest). Budget: about 8 minutes on an H100/H200 (the build
# is about 4 of them with 16 cores).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu_check_out}
BUILD=${LUMEN_GPU_BUILD:-$ROOT/build-gpu}
DEPS=${LUMEN_GPU_DEPS:-$ROOT/gpu-deps}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
step() { echo "== $* ($(date +%T))" | tee -a "$OUT/summary.txt"; }

nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >>"$OUT/summary.txt"
export LD_LIBRARY_PATH="$DEPS/lib:${LD_LIBRARY_PATH:-}"
[[ -d $DEPS ]] || echo "no $DEPS: run tools/gpu_deps.sh where apt works and carry it" | tee -a "$OUT/summary.txt"
"$DEPS/bin/protoc" --version >/dev/null 2>&1 ||
  echo "the carried protoc does not run here (glibc 2.34 / libstdc++ 3.4.29 needed)" | tee -a "$OUT/summary.txt"
if [[ ! -x $BUILD/tests/lumen_tests ]]; then
  step "configure and build in $BUILD"
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
  generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$DEPS" -DLUMEN_WITH_VULKAN=OFF -DPython_EXECUTABLE="$(command -v "$PY")" \
    -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}" >"$OUT/configure.log" 2>&1 || {
    tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build "$BUILD" --parallel "$(nproc)" >"$OUT/build.log" 2>&1 || {
    grep -E "error|Error" "$OUT/build.log" | head -30; exit 1; }
fi
grep -E "Lumen:" "$OUT/configure.log" 2>/dev/null | tee -a "$OUT/summary.txt"
export PYTHONPATH="$BUILD/python" LUMEN_CACHE_DIR="$OUT/cache"

step "CUDA unit tests"
"$BUILD/tests/lumen_tests" --gtest_filter='Cuda.*' --gtest_brief=1 \
  --gtest_output="xml:$OUT/cuda_tests.xml" 2>&1 | tee "$OUT/cuda_tests.txt" | tail -5 | tee -a "$OUT/summary.txt"

step "Python CUDA tests"
"$PY" -m pytest -q -rs tests/python/test_cuda.py 2>&1 | tail -5 | tee -a "$OUT/summary.txt"

for backend in cuda cpu; do
  step "ONNX conformance, backend $backend"
  "$PY" -m lumen.conformance --backend "$backend" --json "$OUT/conformance_$backend.json" 2>&1 |
    tail -4 | tee -a "$OUT/summary.txt"
done

step "GPU benchmark"
"$PY" bench/gpu_bench.py --out "$OUT/gpu_bench.json" 2>&1 | tee "$OUT/gpu_bench.txt" | tee -a "$OUT/summary.txt"
step "done"
