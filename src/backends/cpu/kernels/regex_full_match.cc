// regex_full_match on the CPU with RE2, whose syntax the ONNX op specifies (built only when CMake
// finds RE2; see CMakeLists.txt). The pattern compiles once per step, at compile time.
#ifdef LUMEN_WITH_RE2
#include <re2/re2.h>

#include "core/kernel.h"

namespace lumen {
namespace {

std::shared_ptr<const void> compile_pattern(const PrepareContext &ctx) {
  auto re = std::make_shared<const RE2>(ctx.attrs.get_string("pattern", ""), RE2::Quiet);
  if (!re->ok()) ctx.fail("invalid pattern '", re->pattern(), "': ", re->error());
  return re;
}

void regex_full_match(KernelContext &ctx) {
  std::shared_ptr<const void> compiled;
  const auto *re = static_cast<const RE2 *>(ctx.prepared);
  if (!re) {  // eager calls have no prepared step
    compiled = compile_pattern(PrepareContext{.attrs = ctx.attrs, .op = ctx.op, .node = ctx.node});
    re = static_cast<const RE2 *>(compiled.get());
  }
  const std::string *x = ctx.input(0).data<std::string>();
  bool *y = ctx.output(0).data<bool>();
  for (int64_t i = 0, n = ctx.input(0).numel(); i < n; ++i) y[i] = RE2::FullMatch(x[i], *re);
}

LUMEN_REGISTER_KERNEL("cpu", "regex_full_match", regex_full_match, DType::String);
LUMEN_REGISTER_PREPARE("cpu", "regex_full_match", compile_pattern, DType::String);

}  // namespace
}  // namespace lumen
#endif
