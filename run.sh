#!/usr/bin/env bash
# Lumen's one entry point. Installs what is missing, builds, and runs.
#   ./run.sh demo    set up, build, run the quickstarts and the main job (ResNet-50 from ONNX)
#   ./run.sh test    set up, build, run all tests (C++ via ctest, Python via pytest; the C++
#                    tests again built with clang under ASan + UBSan, and under TSan; a fuzz
#                    smoke run, tools/fuzz.sh)
#   ./run.sh build   set up and build only
#   ./run.sh         same as `./run.sh test`
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
ROOT=$PWD
BUILD_DIR=${LUMEN_BUILD_DIR:-$ROOT/build}
VENV=$ROOT/.venv
PY=$VENV/bin/python

log() { printf '\033[1m[lumen %s]\033[0m %s\n' "$(date +%T)" "$*"; }  # timed: CI's budget

# --- System packages (Debian/Ubuntu) ------------------------------------------------------------
ensure_system_packages() {
  [[ "$(uname)" == "Darwin" ]] && return 0  # macOS: Xcode CLT + cmake; BLAS is Accelerate
  local missing=()
  command -v cmake >/dev/null || missing+=(cmake)
  command -v c++ >/dev/null || missing+=(g++)
  command -v clang++ >/dev/null || missing+=(clang)  # the second compiler ./run.sh test builds with
  command -v ninja >/dev/null || missing+=(ninja-build)
  command -v pkg-config >/dev/null || missing+=(pkg-config)
  command -v python3 >/dev/null || missing+=(python3)
  command -v protoc >/dev/null || missing+=(protobuf-compiler)
  # Vulkan: the loader and headers, glslc for the shaders, spirv-cross for their MSL check, and
  # Mesa's drivers, lavapipe among them (the Vulkan device CI runs the Vulkan tests on).
  for pkg in libopenblas-dev libgtest-dev libprotobuf-dev libre2-dev libvulkan-dev \
             mesa-vulkan-drivers glslc spirv-cross; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if command -v python3 >/dev/null; then
    python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
    python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
      || missing+=(python3-dev)
  fi
  ((${#missing[@]})) || return 0
  local line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    log "installing system packages: ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    log "missing system packages; run as root:  sudo sh -c '$line'"
    exit 1
  fi
}

# --- Python packages in .venv -------------------------------------------------------------------
ensure_venv() {
  [[ -x $PY ]] || { log "creating $VENV"; python3 -m venv "$VENV"; }
  local stamp=$VENV/.lumen-requirements
  if ! cmp -s requirements-dev.txt "$stamp"; then
    log "installing Python packages into .venv"
    "$PY" -m pip install -q --upgrade pip
    "$PY" -m pip install -q -r requirements-dev.txt
    cp requirements-dev.txt "$stamp"
  fi
}

build() {
  ensure_system_packages
  ensure_venv
  log "building in $BUILD_DIR"
  mkdir -p "$BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$PY" >"$BUILD_DIR/configure.log" 2>&1 \
    || { cat "$BUILD_DIR/configure.log"; exit 1; }
  cmake --build "$BUILD_DIR" --parallel
  install_cli
}

# The `lumen` command without `pip install .`: .venv's Python finds the built package (a .pth
# file), .venv/bin/lumen runs its CLI, and /usr/local/bin/lumen points there when we may write it.
install_cli() {
  local site
  site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$BUILD_DIR/python" >"$site/lumen-build.pth"
  printf '#!/bin/sh\nexec "%s" -m lumen "$@"\n' "$PY" >"$VENV/bin/lumen"
  chmod +x "$VENV/bin/lumen"
  local global=/usr/local/bin/lumen
  if [[ -w /usr/local/bin && ( ! -e $global || -L $global ) ]]; then
    ln -sf "$VENV/bin/lumen" "$global"
  elif ! command -v lumen >/dev/null; then
    log "the lumen command is $VENV/bin/lumen (source .venv/bin/activate to put it on PATH)"
  fi
}

# The C++ tests again, built with clang (the code must build with it as well as with GCC,
# warning-free: -Werror) under sanitizers, any report failing the run: one build tree of the
# library and its tests per set, $1 = address,undefined (leaks included) or thread (the thread
# pool and the concurrent-run tests among them).
sanitized_clang_tests() {
  local sanitizers=$1 dir=$BUILD_DIR-clang-${1//,/-} fuzz=OFF
  [[ $sanitizers == address,undefined ]] && fuzz=ON  # the tree tools/fuzz.sh builds its targets in
  log "clang build of the library and C++ tests with -fsanitize=$sanitizers and -Werror in $dir"
  mkdir -p "$dir"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DLUMEN_SANITIZE="$sanitizers" -DLUMEN_WERROR=ON -DLUMEN_FUZZ=$fuzz \
    -DPython_EXECUTABLE="$PY" -DLUMEN_BUILD_PYTHON=OFF -DLUMEN_BUILD_EXAMPLES=OFF -DLUMEN_WITH_CUDA=OFF \
    >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
  cmake --build "$dir" --parallel --target lumen_tests
  log "C++ tests, clang build with -fsanitize=$sanitizers"
  LUMEN_CACHE_DIR="$dir/kernel_choices" ASAN_OPTIONS=detect_leaks=1 \
    LSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1 TSAN_OPTIONS=halt_on_error=1 \
    "$dir/tests/lumen_tests" --gtest_brief=1
}

# The fuzz targets (tests/fuzz) replay their past findings; the model target runs its corpus
# (every ONNX node-test model, load to execute under ASan + UBSan: mutants of it may run long,
# so CI does not mutate them), the others fuzz for 10 s each.
fuzz_smoke() {
  log "fuzz smoke run: tools/fuzz.sh (past findings replayed, the model corpus run, 10 s of fuzzing)"
  export LUMEN_FUZZ_BUILD=$BUILD_DIR-clang-address-undefined
  "$ROOT/tools/fuzz.sh" 0 fuzz_model
  "$ROOT/tools/fuzz.sh" 10 fuzz_memory_planner fuzz_shape_inference fuzz_external_data
}

run_tests() {
  # Kernel choices measured by the tests' compiles stay in the build tree (kernel_choice.h).
  export LUMEN_CACHE_DIR="$BUILD_DIR/kernel_choices"
  log "C++ tests"
  ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$(nproc 2>/dev/null || echo 2)"
  # Conformance counts known-unsupported tests as failed/skipped by design; what gates CI is that
  # no test listed in tests/onnx/expected_pass.txt regresses (exit status 1 if one does).
  log "ONNX conformance at opt_level 2 and 0 (fails on a regression against tests/onnx/expected_pass.txt or a test whose status differs between the levels)"
  PYTHONPATH="$BUILD_DIR/python" "$PY" -m lumen.conformance \
    --expect "$ROOT/tests/onnx/expected_pass.txt" --json "$BUILD_DIR/conformance.json" \
    --also-opt-level 0
  # The same suite pinned to the Vulkan backend (lavapipe here: Mesa's software Vulkan): what it
  # has kernels for must keep passing (tests/onnx/expected_pass_vulkan.txt); the rest is skipped.
  if PYTHONPATH="$BUILD_DIR/python" "$PY" -c 'import lumen, sys; sys.exit(not any(d["backend"] == "vulkan" and d["available"] for d in lumen.devices()))'; then
    log "ONNX conformance on Vulkan (fails on a regression against tests/onnx/expected_pass_vulkan.txt)"
    PYTHONPATH="$BUILD_DIR/python" "$PY" -m lumen.conformance --backend vulkan \
      --expect "$ROOT/tests/onnx/expected_pass_vulkan.txt" --json "$BUILD_DIR/conformance_vulkan.json"
  else
    log "no Vulkan device here: Vulkan conformance skipped ($(PYTHONPATH="$BUILD_DIR/python" "$PY" -c 'import lumen; print(*[d["why_not"] for d in lumen.devices() if d["backend"] == "vulkan"] or ["built without Vulkan"])'))"
  fi
  log "Python tests"
  PYTHONPATH="$BUILD_DIR/python" "$PY" -m pytest "$ROOT/tests/python" -q
  log "Benchmark smoke run: lumen bench on SqueezeNet against onnxruntime (fails only on an error or disagreeing outputs, never on speed)"
  PYTHONPATH="$BUILD_DIR/python" "$PY" -m lumen bench "$("$PY" -c 'import onnx, os; print(os.path.dirname(onnx.__file__))')/backend/test/data/light/light_squeezenet.onnx" --compare onnxruntime --runs 5 --no-progress
}

run_demo() {
  log "C++ quickstart (examples/cpp/quickstart.cpp)"
  "$BUILD_DIR/quickstart"
  log "Python quickstart (examples/python/quickstart.py)"
  PYTHONPATH="$BUILD_DIR/python" "$PY" "$ROOT/examples/python/quickstart.py"
  log "Main job: ResNet-50 from ONNX (examples/python/onnx_demo.py)"
  PYTHONPATH="$BUILD_DIR/python" "$PY" "$ROOT/examples/python/onnx_demo.py"
}

case "${1:-test}" in
  build) build ;;
  test)
    build && run_tests && sanitized_clang_tests address,undefined && fuzz_smoke &&
      sanitized_clang_tests thread
    ;;
  demo) build && run_demo ;;
  *) echo "usage: $0 [demo|test|build]" >&2; exit 2 ;;
esac
