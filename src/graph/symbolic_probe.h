// Probing a graph whose input dims are symbols: shape inference run with every symbol given
// sizes, evaluating small shape-arithmetic tensors on the way (symbolic_shapes.cc). Graph code
// reads the probes to find what a dim or a shape tensor is for every size (names of dims, shape
// arithmetic that folds for all sizes).
#pragma once

#include <unordered_map>
#include <vector>

#include "lumen/graph.h"
#include "lumen/tensor.h"

namespace lumen {

struct ProbedValue {
  Shape shape;
  Tensor value;  // defined when known (constants, evaluated shape arithmetic)
};

// Everything one probe reached; a value it did not reach (inference failed on the way: a size the
// model does not accept) is absent.
using Probe = std::unordered_map<const Value *, ProbedValue>;

// Nine probes, three at each of three scales: symbols at multiples of 32 below 512, at 2 to 14, and
// at multiples of 1024 up to 14336 (a threshold on a size in the model's own shape arithmetic, such
// as min(seq, 4096), shows up between them). Symbols vary independently: no two take sizes that
// are an affine function of each other's. Empty when the graph has no symbolic input dim.
std::vector<Probe> probe_symbolic_dims(const Graph &graph);

}  // namespace lumen
