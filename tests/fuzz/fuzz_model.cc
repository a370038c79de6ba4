// libFuzzer target: ONNX model bytes -> load -> optimize -> compile -> execute on zero inputs.
// lumen::Error is the expected answer to a bad model; anything else (a crash, a sanitizer report,
// another exception, a leak, a timeout or the RSS limit) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lumen/lumen.h"
#include "lumen/onnx.h"

namespace {

// Inputs are fed only up to this many elements each: the target looks for defects in the
// runtime, not for models that are merely large.
constexpr int64_t kMaxInputElements = int64_t{1} << 16;

lumen::Runtime &runtime() {
  static lumen::Runtime rt(lumen::RuntimeOptions{.num_threads = 1});
  return rt;
}

// Releases the executable however the run ends.
struct Release {
  lumen::Executable *exe;
  ~Release() { runtime().release(exe); }
};

// Zeros for every input (unknown dims 1); false when an input is not a tensor or is too large.
bool zero_inputs(const lumen::Executable &exe, std::vector<lumen::Tensor> &inputs) {
  for (const lumen::ValueInfo &info : exe.inputs()) {
    if (!info.element.empty()) return false;  // a sequence or optional input
    std::vector<int64_t> dims;
    int64_t elements = 1;
    for (int64_t d : info.shape) {
      dims.push_back(d < 0 ? 1 : d);
      if (dims.back() > kMaxInputElements) return false;
      elements *= dims.back();
      if (elements > kMaxInputElements) return false;
    }
    inputs.push_back(lumen::Tensor::zeros(lumen::Shape(dims), info.dtype));
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    lumen::Graph graph =
        lumen::load_onnx_from_bytes(std::string(reinterpret_cast<const char *>(data), size));
    graph.optimize();
    const Release compiled{graph.compile(&runtime())};
    std::vector<lumen::Tensor> inputs;
    if (zero_inputs(*compiled.exe, inputs)) compiled.exe->execute(inputs);
  } catch (const lumen::Error &) {
    // A clear error: what bad input should get.
  }
  return 0;
}
