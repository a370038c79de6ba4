// Sequences, optionals and strings in the C++ API: containers check their items' type, are shared
// rather than copied, flow through a compiled graph built with the sequence ops (planned and
// dynamic runs), and string tensors copy as objects.
#include <gtest/gtest.h>

#include "lumen/container.h"
#include "lumen/lumen.h"

namespace lumen {
namespace {

Tensor filled(const Shape &shape, float value) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = value + static_cast<float>(i);
  return t;
}

TEST(Container, ChecksItemsAndShares) {
  Tensor seq = make_sequence({filled({2}, 1), filled({3}, 5)}, {DType::Float32});
  EXPECT_EQ(seq.dtype(), DType::Sequence);
  EXPECT_EQ(container_of(seq).items.size(), 2u);
  EXPECT_EQ(item_type(seq), (std::vector<DType>{DType::Sequence, DType::Float32}));
  // Containers are immutable: clone() shares.
  EXPECT_EQ(&container_of(seq.clone()), &container_of(seq));
  EXPECT_THROW(make_sequence({Tensor::zeros({2}, DType::Int64)}, {DType::Float32}), Error);
  EXPECT_THROW(Tensor::empty({}, DType::Sequence), Error);
  Tensor nested = make_optional(seq, {DType::Sequence, DType::Float32});
  EXPECT_EQ(type_name(nested.dtype(), container_of(nested).element), "optional(seq(float32))");
  EXPECT_TRUE(container_of(make_optional(Tensor(), {DType::Int64})).items.empty());
}

TEST(Container, StringsCopyAsObjects) {
  Tensor s = Tensor::empty({2, 2}, DType::String);
  const char *words[] = {"a", "a much longer string than the small-string buffer", "", "d"};
  for (int i = 0; i < 4; ++i) s.data<std::string>()[i] = words[i];
  Tensor copy = s.clone();
  s.data<std::string>()[1] = "changed";
  EXPECT_EQ(copy.data<std::string>()[1], words[1]);
  EXPECT_EQ(Tensor::zeros({3}, DType::String).data<std::string>()[2], "");
}

// y = concat_from_sequence(sequence_insert(sequence_construct(a, b), c, 0), axis 0): [c; a; b],
// and the length, with static shapes (a planned run) and an unknown batch (dynamic runs).
void check_sequence_graph(int64_t rows) {
  Runtime rt;
  Graph g;
  Value *a = g.add_input("a", {rows, 2});
  Value *b = g.add_input("b", {rows, 2});
  Value *c = g.add_input("c", {rows, 2});
  Value *seq = g.add_op("sequence_construct", {a, b});
  EXPECT_EQ(seq->dtype(), DType::Sequence);
  EXPECT_EQ(seq->element_type(), std::vector<DType>{DType::Float32});
  Value *zero = g.add_constant("zero", Tensor::from_vector<int64_t>({}, {0}));
  Value *inserted = g.add_op("sequence_insert", {seq, c, zero});
  g.mark_output(g.add_op("concat_from_sequence", {inserted}, {{"axis", int64_t{0}}}));
  g.mark_output(g.add_op("sequence_length", {inserted}));
  g.mark_output(inserted);
  EXPECT_THROW(g.add_op("relu", {inserted}), Error);
  Executable *exe = g.compile(&rt);
  for (int run = 0; run < 3; ++run) {
    const Tensor ta = filled({2, 2}, 1), tb = filled({2, 2}, 10), tc = filled({2, 2}, 100);
    const std::vector<Tensor> out = exe->execute({ta, tb, tc});
    ASSERT_EQ(out[0].shape(), (Shape{6, 2}));
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(out[0].data<float>()[i], tc.data<float>()[i]);
      EXPECT_EQ(out[0].data<float>()[4 + i], ta.data<float>()[i]);
      EXPECT_EQ(out[0].data<float>()[8 + i], tb.data<float>()[i]);
    }
    EXPECT_EQ(out[1].data<int64_t>()[0], 3);
    // The sequence output holds copies: the caller's tensors stay theirs.
    EXPECT_NE(container_of(out[2]).items[1].raw_data(), ta.raw_data());
  }
}

TEST(Container, SequenceOpsInACompiledGraph) {
  check_sequence_graph(2);
  check_sequence_graph(kUnknownDim);
}

TEST(Container, SequenceInputChecked) {
  Runtime rt;
  Graph g;
  Value *xs = g.add_container_input("xs", DType::Sequence, {DType::Float32});
  g.mark_output(g.add_op("sequence_length", {xs}));
  Executable *exe = g.compile(&rt);
  EXPECT_EQ(exe->execute({make_sequence({filled({1}, 0)}, {DType::Float32})})[0].data<int64_t>()[0],
            1);
  EXPECT_THROW(exe->execute({make_sequence({}, {DType::Int64})}), Error);
  EXPECT_THROW(exe->execute({filled({1}, 0)}), Error);
}

}  // namespace
}  // namespace lumen
