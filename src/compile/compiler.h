// Graph -> the plan of an Executable (Executable::Impl). Graph::compile wraps it; the plans a
// dynamic graph makes per input-shape signature at run time come from it too.
#pragma once

#include <memory>

#include "compile/prepared_cache.h"
#include "runtime/executable_impl.h"

namespace lumen {

// Places every node, prepares kernels (through `prepared`, shared by the plans of one graph),
// compiles control-flow subgraphs and, when every shape is static, plans memory. The graph must
// be verified.
std::unique_ptr<Executable::Impl> compile_plan(const Graph &graph, Runtime &runtime,
                                               const CompileOptions &options,
                                               const std::shared_ptr<PreparedCache> &prepared);

// compile_plan, plus the cache of plans per input-shape signature when the graph's input shapes
// are known only at run time (what Graph::compile returns, and how subgraphs are compiled).
std::unique_ptr<Executable::Impl> compile_graph(const Graph &graph, Runtime &runtime,
                                                const CompileOptions &options,
                                                const std::shared_ptr<PreparedCache> &prepared);

}  // namespace lumen
