// The optimization pipeline by level. Adding a pass: its file, a unit test, and a line here.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <optional>
#include <sstream>
#include <variant>

#include "graph/passes/pass.h"
#include "lumen/error.h"

namespace lumen {
namespace {

std::vector<std::unique_ptr<Pass>> basic_passes() {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_eliminate_no_ops());
  passes.push_back(make_constant_folding());
  passes.push_back(make_fold_symbolic_shapes());
  passes.push_back(make_inline_constant_if());
  passes.push_back(make_conv_nd_to_conv2d());
  passes.push_back(make_cancel_transposes());
  passes.push_back(make_common_subexpression_elimination());
  passes.push_back(make_dead_code_elimination());
  return passes;
}

// Order matters: BatchNorm folds into the conv before activations fuse into it, patterns are
// recognized before their pieces could be fused elsewhere, and element-wise chains fuse last.
std::vector<std::unique_ptr<Pass>> fusion_passes() {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_fold_conv_batch_norm());
  passes.push_back(make_trim_conv_taps());
  passes.push_back(make_recognize_gelu());
  passes.push_back(make_recognize_swish());
  passes.push_back(make_recognize_layer_norm());
  passes.push_back(make_recognize_rotary());
  passes.push_back(make_recognize_attention());
  passes.push_back(make_attention_heads_in_place());
  passes.push_back(make_matmul_add_to_gemm());
  passes.push_back(make_merge_qkv_projections());
  passes.push_back(make_fuse_residual_add());
  passes.push_back(make_fuse_bias_activation());
  passes.push_back(make_fuse_elementwise_chain());
  passes.push_back(make_nchwc_layout());
  // After the layout: a conv and max pool in a blocked chain stay two blocked steps.
  passes.push_back(make_fuse_conv_max_pool());
  passes.push_back(make_fuse_pointwise_depthwise());
  passes.push_back(make_dead_code_elimination());
  return passes;
}

size_t unsupported_nodes(const Graph &graph,
                         const std::function<bool(const std::string &)> &supports) {
  size_t n = 0;
  for (const Node *node : graph.nodes()) n += !supports(node->op());
  return n;
}

std::map<std::string, int> op_counts(const Graph &graph) {
  std::map<std::string, int> counts;
  for (const Node *n : graph.nodes()) ++counts[n->op()];
  return counts;
}

class GraphDumper {
 public:
  explicit GraphDumper(const OptimizeOptions &options) : target_(options.dump) {
    if (target_.empty() && options.dump_from_env) {
      const char *env = std::getenv("LUMEN_DUMP_GRAPH");
      if (env) target_ = env;
    }
  }
  void dump(const Graph &graph, std::string_view stage) {
    if (target_.empty()) return;
    std::ostringstream name;
    name << std::setw(2) << std::setfill('0') << count_++ << "_" << stage;
    if (target_ == "-") {
      std::fprintf(stderr, "=== after %s ===\n%s", name.str().c_str(), graph.to_string().c_str());
      return;
    }
    const std::string path = target_ + "/" + name.str() + ".txt";
    std::ofstream out(path);
    if (!out) fail("LUMEN_DUMP_GRAPH: cannot write '", path, "'");
    out << graph.to_string();
  }

 private:
  std::string target_;
  int count_ = 0;
};

}  // namespace

std::vector<std::unique_ptr<Pass>> passes_for_level(int opt_level) {
  if (opt_level < 0 || opt_level > 2) fail("opt_level must be 0, 1 or 2, got ", opt_level);
  std::vector<std::unique_ptr<Pass>> passes;
  if (opt_level >= 1) passes = basic_passes();
  if (opt_level >= 2)
    for (auto &pass : fusion_passes()) passes.push_back(std::move(pass));
  return passes;
}

OptimizeReport Graph::optimize(int opt_level, const OptimizeOptions &options) {
  auto passes = passes_for_level(opt_level);
  verify();
  // Subgraphs (control-flow branches and bodies) get the same pipeline, before the graph that
  // holds them: a branch that gets inlined arrives optimized.
  for (Node *node : nodes())
    for (const auto &[name, value] : node->attrs().items())
      if (const auto *sub = std::get_if<std::shared_ptr<Graph>>(&value))
        (*sub)->optimize(opt_level, OptimizeOptions{.dump_from_env = false,
                                                    .target_supports = options.target_supports});
  OptimizeReport report;
  report.opt_level = opt_level;
  report.ops_before = op_counts(*this);
  GraphDumper dumper(options);
  dumper.dump(*this, "input");
  // Clean-up passes enable each other (folding exposes dead code and new constants), so the
  // list runs until nothing changes; the bound only guards against a pass that is not idempotent.
  constexpr int kMaxRounds = 8;
  bool symbolic_current = false;  // symbolic shapes recomputed since the last change
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed = false;
    for (auto &pass : passes) {
      PassContext ctx;
      PassRecord record{.pass = std::string(pass->name()), .nodes_before = num_nodes()};
      const auto start = std::chrono::steady_clock::now();
      // Pinned to backends without some ops: a pass that makes more nodes of such ops is undone.
      std::optional<Graph> before;
      if (options.target_supports) before = clone();
      bool pass_changed = pass->run(*this, ctx);
      if (pass_changed && before &&
          unsupported_nodes(*this, options.target_supports) >
              unsupported_nodes(*before, options.target_supports)) {
        *this = std::move(*before);
        pass_changed = false;
      }
      if (pass_changed) remove_unused_constants();
      record.milliseconds =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      record.nodes_after = num_nodes();
      record.changes = ctx.changes();
      // Verification re-infers every node: cheap next to compiling, and a broken rewrite is
      // caught here, naming the pass, instead of as a wrong answer later.
      if (pass_changed) {
        try {
          verify();
        } catch (const Error &e) {
          fail("optimization pass '", pass->name(), "' left an invalid graph: ", e.what());
        }
        changed = true;
        // Passes match on symbolic shapes too (same_shape): keep them current.
        infer_symbolic_shapes();
        symbolic_current = true;
        dumper.dump(*this, pass->name());
      }
      if (round == 0 || pass_changed) report.passes.push_back(std::move(record));
    }
    if (!changed) break;
  }
  verify();
  if (!symbolic_current) infer_symbolic_shapes();
  report.ops_after = op_counts(*this);
  return report;
}

std::string OptimizeReport::to_string() const {
  auto total = [](const std::map<std::string, int> &m) {
    int n = 0;
    for (const auto &[op, count] : m) n += count;
    return n;
  };
  std::ostringstream out;
  out << "optimize (opt_level " << opt_level << "): " << total(ops_before) << " -> "
      << total(ops_after) << " nodes\n";
  for (const PassRecord &p : passes) {
    out << "  " << p.pass << ": " << p.nodes_before << " -> " << p.nodes_after << " nodes, "
        << p.changes.size() << " rewrites\n";
    for (const std::string &c : p.changes) out << "    " << c << "\n";
  }
  return out.str();
}

}  // namespace lumen
