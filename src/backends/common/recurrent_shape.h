// The shapes of ONNX RNN, GRU and LSTM as every backend's kernel reads them: gates per op, the
// directions, the layout, sizes checked against W and R, and the per-sequence lengths.
#pragma once

#include <string>
#include <vector>

#include "core/kernel.h"

namespace lumen {

struct RecurrentShape {
  int64_t gates, dirs, seq, batch, input, hidden;
  bool layout1;  // X is [batch, seq, input] instead of [seq, batch, input]
  bool reverse;  // direction "reverse": the only direction runs backwards
  // The activations each direction uses unless the node names others (ONNX's defaults).
  std::vector<std::string> default_activations;
  // Whether direction d runs over the sequence backwards.
  bool backwards(int64_t d) const { return reverse || d == 1; }
};

inline RecurrentShape recurrent_shape(const KernelContext &ctx) {
  const Tensor &tx = ctx.input(0), &tw = ctx.input(1), &tr = ctx.input(2);
  RecurrentShape s;
  s.gates = ctx.op == "lstm" ? 4 : ctx.op == "gru" ? 3 : 1;
  s.default_activations = s.gates == 4   ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                          : s.gates == 3 ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                         : std::vector<std::string>{"Tanh"};
  const std::string direction = ctx.attrs.get_string("direction", "forward");
  s.dirs = direction == "bidirectional" ? 2 : 1;
  s.reverse = direction == "reverse";
  s.layout1 = ctx.attrs.get_int("layout", 0) == 1;
  s.seq = s.layout1 ? tx.shape()[1] : tx.shape()[0];
  s.batch = s.layout1 ? tx.shape()[0] : tx.shape()[1];
  s.input = tx.shape()[2];
  s.hidden = tr.shape()[2];
  const int64_t gh = s.gates * s.hidden;
  if (tw.shape()[0] != s.dirs || tr.shape()[0] != s.dirs || tw.shape()[1] != gh ||
      tr.shape()[1] != gh || tw.shape()[2] != s.input)
    ctx.fail("W ", tw.shape().to_string(), " / R ", tr.shape().to_string(),
             " do not match hidden size ", s.hidden, " and ", s.dirs, " direction(s)");
  return s;
}

// Each sequence's length: input 4 (sequence_lens) when given, checked against seq; else seq.
inline std::vector<int64_t> sequence_lengths(const KernelContext &ctx, const RecurrentShape &s) {
  std::vector<int64_t> lens(static_cast<size_t>(s.batch), s.seq);
  if (!ctx.has_input(4)) return lens;
  const Tensor &sl = ctx.input(4);
  for (int64_t i = 0; i < s.batch; ++i) {
    const int64_t v = sl.dtype() == DType::Int32 ? sl.data<int32_t>()[i] : sl.data<int64_t>()[i];
    if (v < 0 || v > s.seq)
      ctx.fail("sequence_lens[", i, "] = ", v, " is outside [0, ", s.seq, "]");
    lens[static_cast<size_t>(i)] = v;
  }
  return lens;
}

}  // namespace lumen
