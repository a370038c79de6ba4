// The C++ quickstart from the README, unchanged, wrapped in main().
#include <iostream>

#include "lumen/lumen.h"

int main() try {
  lumen::Runtime rt;
  lumen::Graph graph;
  auto *in = graph.add_input("input", {1, 10});
  auto *w = graph.add_weight("weight", {10, 5});
  auto *out = graph.add_op("matmul", {in, w});
  graph.mark_output(out);
  graph.optimize();
  auto *executable = graph.compile(&rt);
  auto input_buf = rt.alloc({1, 10});
  auto outputs = executable->execute({input_buf});

  const lumen::Tensor &y = outputs.at(0);
  std::cout << "output shape: " << y.shape().to_string() << "\noutput values:";
  for (int64_t i = 0; i < y.numel(); ++i) std::cout << ' ' << y.data<float>()[i];
  std::cout << '\n';

  // The same executable on a non-zero input: y = x @ weight.
  for (int64_t i = 0; i < input_buf.numel(); ++i) input_buf.data<float>()[i] = float(i + 1);
  const lumen::Tensor y2 = executable->execute({input_buf}).at(0);
  std::cout << "output for x = [1..10]:";
  for (int64_t i = 0; i < y2.numel(); ++i) std::cout << ' ' << y2.data<float>()[i];
  std::cout << '\n';
  return 0;
} catch (const lumen::Error &e) {
  std::cerr << "lumen error: " << e.what() << '\n';
  return 1;
}
