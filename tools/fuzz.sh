#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets of tests/fuzz with clang under ASan + UBSan (in the build
# tree ./run.sh test makes for its sanitized C++ tests), replays every input that once failed
# (tests/fuzz/findings/TARGET/), then fuzzes each target for SECONDS on its corpus (the model
# target's: every ONNX node-test model, the onnx package's small test models and reproducers of
# past defects; see tests/fuzz/make_corpus.py).
#   tools/fuzz.sh [SECONDS] [TARGET...]      default: 60 seconds, every target; 0: run the corpus
#                                            once, no fuzzing
# Targets run side by side, LUMEN_FUZZ_JOBS at a time (default: one per core).
# A crash, sanitizer report, leak, uncaught exception, input slower than 10 s or RSS over 2 GiB
# (the targets run with LUMEN_MAX_MEMORY=256M: a mutant asking for more in one allocation must get
# an error; libFuzzer's corpus and ASan's quarantine already hold ~1 GiB, so a 1 GiB budget let
# one legitimate 807 MB Tile output cross the RSS limit) saves
# the input as tests/fuzz/findings/TARGET/crash-* (commit it with the fix: it is replayed
# from then on) and fails the script. The grown corpora stay in the build tree.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
SECONDS_EACH=${1:-60}
(($# > 0)) && shift
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(fuzz_model fuzz_memory_planner fuzz_shape_inference fuzz_external_data)
BUILD=${LUMEN_FUZZ_BUILD:-$ROOT/build-clang-address-undefined}
PY=$ROOT/.venv/bin/python

log() { printf '\033[1m[lumen fuzz]\033[0m %s\n' "$*"; }

if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  mkdir -p "$BUILD"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DLUMEN_SANITIZE=address,undefined -DLUMEN_WERROR=ON -DLUMEN_FUZZ=ON \
    -DPython_EXECUTABLE="$PY" -DLUMEN_BUILD_PYTHON=OFF -DLUMEN_BUILD_EXAMPLES=OFF \
    >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 1; }
else
  cmake -B "$BUILD" -DLUMEN_FUZZ=ON >"$BUILD/configure.log" 2>&1 \
    || { cat "$BUILD/configure.log"; exit 1; }
fi
log "building ${TARGETS[*]} in $BUILD"
cmake --build "$BUILD" --parallel --target "${TARGETS[@]}"
"$PY" "$ROOT/tests/fuzz/make_corpus.py" "$BUILD/fuzz"

# allocator_may_return_null: an allocation the system cannot serve returns null, as it does
# without ASan, so the runtime's own error for it is what gets tested.
export LUMEN_CACHE_DIR=$BUILD/kernel_choices ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export LUMEN_MAX_MEMORY=${LUMEN_MAX_MEMORY:-256M}
export UBSAN_OPTIONS=print_stacktrace=1
# The targets fuzz the importer, shape inference, the planner and the CPU path: no GPU device is
# weighed (a Vulkan driver would be opened and calibrated by every mutant's compile).
export LUMEN_VULKAN=0

# One target: replay its past findings, then fuzz. Prints its summary (or its failure) when done.
fuzz_target() {
  local target=$1 exe=$BUILD/tests/fuzz/$1 findings=$ROOT/tests/fuzz/findings/$1 failed=0
  mkdir -p "$findings"
  mapfile -t past < <(find "$findings" -type f ! -name '.*' | sort)
  if ((${#past[@]})); then
    "$exe" "${past[@]}" >"$BUILD/fuzz/$target.replay.log" 2>&1 \
      || { log "$target: a past finding fails again"; tail -40 "$BUILD/fuzz/$target.replay.log"; failed=1; }
  fi
  local dict=() seeds=() limit=(-max_total_time="$SECONDS_EACH")
  [[ $target == fuzz_model ]] && dict=(-dict="$BUILD/fuzz/onnx.dict") seeds=("$BUILD/fuzz/seeds/$target")
  ((SECONDS_EACH > 0)) || limit=(-runs=0)
  "$exe" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="$findings/" "$BUILD/fuzz/corpus/$target" "${seeds[@]}" \
    >"$BUILD/fuzz/$target.log" 2>&1 || { log "$target: FINDING"; tail -60 "$BUILD/fuzz/$target.log"; failed=1; }
  log "$target: ${#past[@]} past findings replayed, ${limit[*]}; $(grep -E '^#[0-9]+' \
    "$BUILD/fuzz/$target.log" | tail -1 | cut -c1-100); $(grep -E '^stat::number_of_executed_units' \
    "$BUILD/fuzz/$target.log")"
  return $failed
}

jobs_max=${LUMEN_FUZZ_JOBS:-$(nproc)}
status=0 running=0
for target in "${TARGETS[@]}"; do
  if ((running >= jobs_max)); then
    wait -n || status=1
    running=$((running - 1))
  fi
  log "$target: started (log: $BUILD/fuzz/$target.log)"
  fuzz_target "$target" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
