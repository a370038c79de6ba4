// Sequences and optionals (ONNX seq(T) and optional(T)) travel through graphs and executables as
// Tensors of dtype Sequence or Optional: a scalar whose one element is a handle to an immutable
// Container. Ops never change a container; they make new ones sharing the items.
#pragma once

#include <vector>

#include "lumen/tensor.h"

namespace lumen {

struct Container {
  DType kind = DType::Sequence;  // Sequence or Optional
  // The items' type, outermost first and ending in a tensor dtype: {Float32} for seq(float) or
  // optional(float), {Sequence, Int64} for optional(seq(int64)).
  std::vector<DType> element;
  std::vector<Tensor> items;  // an optional holds zero (none) or one item
};

// Checks every item against `element` (throws lumen::Error naming `what` otherwise).
Tensor make_sequence(std::vector<Tensor> items, std::vector<DType> element,
                     const char *what = "sequence");
// `item` undefined: an empty optional.
Tensor make_optional(Tensor item, std::vector<DType> element, const char *what = "optional");
// The container behind a Sequence or Optional tensor; throws for other tensors.
const Container &container_of(const Tensor &t);
// The element type of a tensor as a container item: {dtype} for a plain tensor, the container's
// kind followed by its element type otherwise.
std::vector<DType> item_type(const Tensor &t);
// The same for a value of `dtype` whose items (when a container) are of type `element`.
std::vector<DType> item_type(DType dtype, const std::vector<DType> &element);
// The items' type as the sequence ops' "element" attribute ("float32", "sequence,int64") and
// back (throws lumen::Error for an unknown name or a type not ending in a tensor dtype).
std::string element_to_text(const std::vector<DType> &element);
std::vector<DType> element_from_text(const std::string &text);
// "seq(float32)", "optional(seq(int64))", "float32" for a tensor dtype.
std::string type_name(DType dtype, const std::vector<DType> &element);

}  // namespace lumen
