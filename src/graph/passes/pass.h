// A graph pass: a named rewrite that reports whether it changed the graph. Passes live one per
// file; pipeline.cc lists them by optimization level.
//
// Contract: a pass is idempotent (a second run changes nothing), matches without modifying the
// graph and applies each rewrite in one step, keeps the numerics of every graph output (up to
// floating-point reassociation in fusions), and keeps graph input and output names. It records
// one line per rewrite in the PassContext, naming the nodes involved, for `lumen inspect`.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lumen/error.h"
#include "lumen/graph.h"

namespace lumen {

class PassContext {
 public:
  template <class... Args>
  void note(const Args &...args) {
    changes_.push_back(str(args...));
  }
  const std::vector<std::string> &changes() const { return changes_; }

 private:
  std::vector<std::string> changes_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Rewrites `graph` in place; returns true when anything changed.
  virtual bool run(Graph &graph, PassContext &ctx) = 0;
};

// Level 1: semantics-preserving clean-up.
std::unique_ptr<Pass> make_dead_code_elimination();
std::unique_ptr<Pass> make_constant_folding();
std::unique_ptr<Pass> make_fold_symbolic_shapes();
std::unique_ptr<Pass> make_eliminate_no_ops();
std::unique_ptr<Pass> make_common_subexpression_elimination();
std::unique_ptr<Pass> make_cancel_transposes();
std::unique_ptr<Pass> make_inline_constant_if();
std::unique_ptr<Pass> make_conv_nd_to_conv2d();
// Level 2: fusions and pattern recognition.
std::unique_ptr<Pass> make_fold_conv_batch_norm();
std::unique_ptr<Pass> make_trim_conv_taps();
std::unique_ptr<Pass> make_matmul_add_to_gemm();
std::unique_ptr<Pass> make_merge_qkv_projections();
std::unique_ptr<Pass> make_recognize_gelu();
std::unique_ptr<Pass> make_recognize_swish();
std::unique_ptr<Pass> make_recognize_layer_norm();
std::unique_ptr<Pass> make_recognize_rotary();
std::unique_ptr<Pass> make_recognize_attention();
std::unique_ptr<Pass> make_attention_heads_in_place();
std::unique_ptr<Pass> make_fuse_bias_activation();
std::unique_ptr<Pass> make_fuse_residual_add();
std::unique_ptr<Pass> make_fuse_elementwise_chain();
// min_bytes: the smallest conv output per image worth fusing; < 0 for the default (1 MiB).
std::unique_ptr<Pass> make_fuse_conv_max_pool(int64_t min_bytes = -1);
std::unique_ptr<Pass> make_nchwc_layout();
std::unique_ptr<Pass> make_fuse_pointwise_depthwise();

// The passes run at `opt_level` (0: none, 1: basic clean-up, 2: all), in order.
std::vector<std::unique_ptr<Pass>> passes_for_level(int opt_level);

}  // namespace lumen
