// Graph IR: building, inference errors, verifier, printer, rewriting, dead-code elimination.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

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
