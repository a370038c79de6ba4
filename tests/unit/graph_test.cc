// Graph IR: building, inference errors, verifier, printer, rewriting, dead-code elimination.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <tuple>

#include "graph/op_schema.h"
#include "graph/passes/pass.h"
#include "lumen/lumen.h"

namespace lumen {
namespace {

std::string error_of(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected lumen::Error";
  return "";
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

TEST(Graph, BuildInfersTypesAndPrints) {
  Graph g;
  Value *x = g.add_input("x", {2, 3});
  Value *y = g.add_op("relu", {x}, {}, "act");
  g.mark_output(y);
  EXPECT_EQ(y->name(), "act");
  EXPECT_EQ(y->shape(), Shape({2, 3}));
  EXPECT_EQ(y->dtype(), DType::Float32);
  EXPECT_EQ(y->producer()->op(), "relu");
  ASSERT_EQ(x->users().size(), 1u);
  EXPECT_NO_THROW(g.verify());
  const std::string text = g.to_string();
  EXPECT_TRUE(contains(text, "%act:float32[2, 3] = relu(%x)")) << text;
}

// Found by tools/fuzz.sh (fuzz_shape_inference): flatten multiplied an unknown dim (-1) into
// its products and inferred -3.
TEST(Graph, FlattenOfUnknownDimsIsUnknown) {
  const TensorType x{DType::Float32, Shape{kUnknownDim, 3, 4}};
  const TensorType empty{DType::Float32, Shape{kUnknownDim, 0, 4}};
  for (const auto &[input, axis, expected] :
       {std::tuple{x, 1, Shape{kUnknownDim, 12}}, std::tuple{x, 2, Shape{kUnknownDim, 4}},
        std::tuple{x, 0, Shape{1, kUnknownDim}}, std::tuple{empty, 2, Shape{0, 4}}}) {
    const Attributes attrs{{"axis", int64_t{axis}}};
    const InferContext ctx{.inputs = {&input}, .attrs = attrs, .op = "flatten", .node = "f"};
    EXPECT_EQ(infer_types(get_op("flatten"), ctx).at(0).shape, expected) << axis;
  }
}

TEST(Graph, ErrorsNameOpNodeAndTypes) {
  Graph g;
  Value *x = g.add_input("x", {2, 3}, DType::Bool);
  const std::string msg = error_of([&] { g.add_op("relu", {x}, {}, "r1"); });
  EXPECT_TRUE(contains(msg, "relu") && contains(msg, "r1") && contains(msg, "bool")) << msg;
  EXPECT_TRUE(contains(error_of([&] { g.add_op("no_such_op", {x}); }), "unknown op 'no_such_op'"));
  EXPECT_TRUE(contains(error_of([&] { g.add_op("relu", {x, x}); }), "expected 1 inputs, got 2"));
  // A failed add_op leaves the graph unchanged.
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_EQ(x->users().size(), 0u);
  Graph other;
  Value *foreign = other.add_input("f", {1});
  EXPECT_TRUE(contains(error_of([&] { g.add_op("relu", {foreign}); }), "does not belong"));
  EXPECT_TRUE(contains(error_of([&] { g.add_input("x", {1}); }), "already exists"));
}

TEST(Graph, VerifierFindsCycles) {
  Graph g;
  Value *x = g.add_input("x", {4});
  Value *a = g.add_op("relu", {x}, {}, "a");
  Value *b = g.add_op("relu", {a}, {}, "b");
  g.mark_output(b);
  g.set_input(a->producer(), 0, b);  // a <- b <- a
  const std::string msg = error_of([&] { g.verify(); });
  EXPECT_TRUE(contains(msg, "cycle")) << msg;
}

TEST(Graph, TopologicalOrderAndRemoval) {
  Graph g;
  Value *x = g.add_input("x", {4});
  Value *a = g.add_op("relu", {x}, {}, "a");
  Value *b = g.add_op("relu", {a}, {}, "b");
  g.mark_output(b);
  auto order = g.topological_order();
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0]->name(), "a");
  EXPECT_TRUE(contains(error_of([&] { g.remove_node(a->producer()); }), "still used"));
  g.replace_all_uses(b, a);
  g.remove_node(b->producer());
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "b");  // outputs keep their names across rewrites
  EXPECT_EQ(g.outputs()[0]->producer()->name(), "a");
  // An output cannot become the graph input: it would lose its name.
  EXPECT_FALSE(g.can_replace(g.outputs()[0], x));
  EXPECT_TRUE(
      contains(error_of([&] { g.replace_all_uses(g.outputs()[0], x); }), "losing its name"));
  EXPECT_NO_THROW(g.verify());
}

TEST(Graph, DeadCodeEliminationRemovesOnlyUnusedNodes) {
  Graph g;
  Value *x = g.add_input("x", {4});
  Value *live = g.add_op("relu", {x}, {}, "live");
  Value *dead = g.add_op("relu", {x}, {}, "dead");
  g.add_op("relu", {dead}, {}, "dead2");
  g.mark_output(live);
  auto dce = make_dead_code_elimination();
  PassContext ctx;
  EXPECT_TRUE(dce->run(g, ctx));
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(ctx.changes().size(), 2u);
  EXPECT_FALSE(dce->run(g, ctx));  // idempotent
  EXPECT_EQ(g.nodes()[0]->name(), "live");
  EXPECT_NO_THROW(g.verify());
}

TEST(Graph, CloneIsIndependent) {
  Graph g;
  Value *x = g.add_input("x", {4});
  g.mark_output(g.add_op("relu", {x}, {}, "a"));
  Graph c = g.clone();
  EXPECT_EQ(c.to_string(), g.to_string());
  g.add_op("relu", {x}, {}, "extra");
  EXPECT_EQ(c.num_nodes(), 1u);
  EXPECT_NE(c.inputs()[0], x);
  EXPECT_NO_THROW(c.verify());
}

TEST(Graph, UnknownDimsDeferInference) {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, 4});
  Value *y = g.add_op("relu", {x});
  EXPECT_FALSE(y->has_shape());
  EXPECT_EQ(y->dtype(), DType::Float32);
  EXPECT_THROW(g.add_input("bad", {-2}), Error);
}

// Symbolic dims travel by name through ops and shape arithmetic: equal names are one symbol,
// sums, products and offsets get expressions, static dims stay numbers, and a dim from an unnamed
// input dim or one no expression fits stays unnamed.
TEST(Graph, SymbolicDimsPropagateByName) {
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, kUnknownDim, 8});
  g.set_dim_names(x, {"batch", "seq", ""});
  Value *past = g.add_input("past", {kUnknownDim, kUnknownDim, 8});
  g.set_dim_names(past, {"batch", "past", ""});
  Value *u = g.add_input("u", {kUnknownDim, 3});  // unnamed
  const Attributes axis0{{"axis", int64_t{0}}}, axis1{{"axis", int64_t{1}}};
  auto ints = [&](const std::string &name, std::vector<int64_t> v) {
    const auto n = static_cast<int64_t>(v.size());
    return g.add_constant(name, Tensor::from_vector<int64_t>({n}, v));
  };
  Value *h = g.add_op("relu", {x}, {}, "h");
  Value *cat = g.add_op("concat", {past, h}, axis1, "cat");
  // [batch*seq, 8] through shape -> slice -> reduce_prod -> concat -> reshape.
  Value *lead = g.add_op("slice", {g.add_op("shape", {h}), ints("s0", {0}), ints("s2", {2})});
  Value *rows = g.add_op("reduce_prod", {lead}, {{"keepdims", int64_t{1}}});
  Value *flat =
      g.add_op("reshape", {h, g.add_op("concat", {rows, ints("c8", {8})}, axis0)}, {}, "flat");
  Value *padded = g.add_op("pad", {h, ints("pads", {0, 1, 0, 0, 2, 0})}, {}, "padded");
  Value *doubled = g.add_op("concat", {h, h}, axis1, "doubled");
  Value *swapped = g.add_op("transpose", {h}, {{"perm", std::vector<int64_t>{2, 1, 0}}}, "t");
  Value *strided = g.add_op(
      "slice", {h, ints("from", {0}), ints("to", {1 << 30}), ints("ax", {1}), ints("step", {2})},
      {}, "strided");
  Value *from_u = g.add_op("relu", {u}, {}, "from_u");
  for (Value *v : {cat, flat, padded, doubled, swapped, strided, from_u}) g.mark_output(v);
  g.infer_symbolic_shapes();

  auto text = [](const Value *v) {
    return v->symbolic_shape() ? v->symbolic_shape()->to_string() : std::string("none");
  };
  EXPECT_EQ(text(h), "[batch, seq, 8]");
  EXPECT_EQ(text(cat), "[batch, past+seq, 8]");
  EXPECT_EQ(text(flat), "[batch*seq, 8]");
  EXPECT_EQ(text(padded), "[batch, seq+3, 8]");
  EXPECT_EQ(text(doubled), "[batch, 2*seq, 8]");
  EXPECT_EQ(text(swapped), "[8, seq, batch]");
  EXPECT_EQ(text(strided), "[batch, ?, 8]");  // ceil(seq/2): divisions stay unnamed
  EXPECT_EQ(text(from_u), "[?, 3]");
  EXPECT_TRUE(contains(g.to_string(), "%cat:float32[batch, past+seq, 8]")) << g.to_string();

  // Fixing the dims resolves the shapes; a rewrite drops the stale symbolic ones.
  g.set_input_shape(x, {2, 5, 8});
  g.set_input_shape(past, {2, 3, 8});
  EXPECT_EQ(cat->shape(), Shape({2, 8, 8}));
  EXPECT_FALSE(cat->symbolic_shape());
  EXPECT_EQ(text(from_u), "[?, 3]");
  g.infer_types();
  EXPECT_FALSE(from_u->symbolic_shape());
}

TEST(Executable, RunsChecksInputsAndIsThreadSafe) {
  Runtime rt;
  Graph g;
  Value *x = g.add_input("x", {kUnknownDim, 3});
  g.mark_output(g.add_op("relu", {x}));
  Executable *exe = g.compile(&rt);
  ASSERT_EQ(exe->steps().size(), 1u);
  EXPECT_EQ(exe->steps()[0].op, "relu");

  Tensor in = Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
  auto out = exe->execute({in});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), Shape({2, 3}));
  const std::vector<float> expected = {0, 2, 0, 4, 0, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].data<float>()[i], expected[i]);
  EXPECT_EQ(exe->execute({Tensor::zeros({5, 3})})[0].shape(), Shape({5, 3}));

  std::string msg = error_of([&] { exe->execute({Tensor::zeros({2, 4})}); });
  EXPECT_TRUE(contains(msg, "input 'x'") && contains(msg, "[?, 3]") && contains(msg, "[2, 4]"))
      << msg;
  msg = error_of([&] { exe->execute({Tensor::zeros({2, 3}, DType::Float64)}); });
  EXPECT_TRUE(contains(msg, "float64")) << msg;
  EXPECT_TRUE(
      contains(error_of([&] { exe->execute(std::vector<Tensor>{}); }), "expected 1 inputs"));
  EXPECT_TRUE(contains(error_of([&] { exe->execute({{"y", in}}); }), "missing input 'x'"));

  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        Tensor v = Tensor::from_vector<float>({1, 3}, {float(t), -1.f, float(rep)});
        auto r = exe->execute({{"x", v}});
        if (r[0].data<float>()[0] == float(t) && r[0].data<float>()[1] == 0.f &&
            r[0].data<float>()[2] == float(rep))
          ++ok;
      }
    });
  for (auto &t : threads) t.join();
  EXPECT_EQ(ok.load(), 80);
  rt.release(exe);
  EXPECT_THROW(rt.release(exe), Error);
}

TEST(Executable, ForcedBackendAndOptimize) {
  Runtime rt({.num_threads = 1, .backend = "reference"});
  EXPECT_EQ(rt.num_threads(), 1);
  Graph g;
  Value *x = g.add_input("x", {3});
  g.add_op("relu", {x}, {}, "unused");
  g.mark_output(g.add_op("relu", {x}, {}, "used"));
  g.optimize(0);
  EXPECT_EQ(g.num_nodes(), 2u);
  g.optimize();
  EXPECT_EQ(g.num_nodes(), 1u);
  Executable *exe = g.compile(&rt);
  EXPECT_EQ(exe->steps()[0].backend, "reference");
  EXPECT_THROW(g.optimize(3), Error);
  EXPECT_THROW(Runtime({.backend = "no_such_backend"}), Error);
}

}  // namespace
}  // namespace lumen
