// Kernel choice by measurement. Where a CPU kernel has several algorithms for one step (a conv as
// Winograd, GEMM over a padded grid or over im2col panels, ...), its prepare function (compile
// time, real shapes and weights) runs each candidate on this machine and keeps the fastest. The
// fixed thresholds in the kernels were measured on one or two machines; a machine with other
// caches or vector units moves the crossovers, and a shape one step away from the measured ones
// may cross them.
//
// A candidate is timed as it runs in a model, where its weights were last read a whole run ago
// and come from memory: `before` flushes them from the caches, untimed, before each timed run.
// (Timed with warm weights, a 3x3 Winograd conv on a 7x7 map with 512 channels measured as fast
// as the direct conv, 850 against 830 us at 2 threads; in ResNet-50 it took 1.5 ms against 1.2:
// its weights are 1.8 times the direct conv's 9.4 MB, each used for only 16 tiles.)
//
// Choices are cached on disk per machine (CPU model, ISA, L2 size) and thread count, keyed by op
// and shapes, so a model is measured the first time it is compiled on a machine only:
// $LUMEN_CACHE_DIR/kernel_choices.tsv (default $XDG_CACHE_HOME/lumen, else ~/.cache/lumen), one
// line per choice, appended with single writes so concurrent compilers can share it; a process
// reads it once, at its first choice. An unwritable cache only costs measuring again.
// LUMEN_CALIBRATE=0 turns measuring off (the rules decide); LUMEN_FORCE_ALGORITHM=name[,name...]
// takes the first of those names that is a candidate (tests run every algorithm this way; also a
// way to try one on a model).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace lumen::cpu {

struct AlgorithmCandidate {
  std::string name;
  // One call of the kernel with this algorithm, on scratch tensors; empty where the step cannot be
  // timed (the rule decides).
  std::function<void()> run;
  // Untimed, before each timed run (or empty): puts the candidate's data where a model run finds
  // it, e.g. flush_from_caches on its weights.
  std::function<void()> before = {};
};

// Writes back and evicts [data, data + bytes) from every cache level (x86-64; elsewhere nothing).
void flush_from_caches(const void *data, size_t bytes);

// The index of the candidate to use and, in `report`, which and why: "winograd (measured:
// winograd 120 us, gemm_grid 150 us)", "(measured before: ...)", "(only algorithm)", or "(rule)"
// when measuring is off or not possible. `rule` is the candidate the kernel's thresholds pick: it
// is kept unless another is over 3% faster, so timer noise does not flip near-ties. `key` names the
// step's op, shapes and attributes; the thread count and machine are added here.
size_t choose_algorithm(const std::string &key, const std::vector<AlgorithmCandidate> &candidates,
                        size_t rule, int threads, std::string &report);

// What CPU timings depend on besides the step and the build (core/cache_files.h): the CPU model,
// the ISA the kernels use, the L2 size.
std::string machine_id();

// Whether choose_algorithm measures (LUMEN_CALIBRATE is not "0").
bool calibration_enabled();

}  // namespace lumen::cpu
