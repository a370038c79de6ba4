// Node attributes: a small typed map. Names follow ONNX (strides, pads, dilations, group, axis,
// perm, alpha, ...) so the importer passes them through unchanged.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "lumen/tensor.h"

namespace lumen {

class Graph;

// A subgraph (the branches of `if`, the body of `loop` and `scan`) is owned by its node's
// attributes; Graph::clone copies it deeply.
using AttrValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                 std::vector<std::string>, Tensor, std::shared_ptr<Graph>>;

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  bool has(const std::string &name) const { return map_.count(name) != 0; }
  void set(const std::string &name, AttrValue value) { map_[name] = std::move(value); }
  void erase(const std::string &name) { map_.erase(name); }
  const std::map<std::string, AttrValue> &items() const { return map_; }
  bool empty() const { return map_.empty(); }

  // Typed getters: the default is returned when the attribute is absent; a present attribute of
  // the wrong kind is a lumen::Error naming it. Ints are accepted where floats are expected.
  int64_t get_int(const std::string &name, int64_t fallback) const;
  double get_float(const std::string &name, double fallback) const;
  std::string get_string(const std::string &name, const std::string &fallback) const;
  std::vector<int64_t> get_ints(const std::string &name,
                                const std::vector<int64_t> &fallback) const;
  std::vector<double> get_floats(const std::string &name,
                                 const std::vector<double> &fallback) const;
  const Tensor *get_tensor(const std::string &name) const;  // nullptr when absent
  Graph *get_graph(const std::string &name) const;          // nullptr when absent
  bool has_graphs() const;                                  // whether any attribute is a subgraph

  std::string to_string() const;  // "{axis=1, perm=[0, 2, 1]}"

 private:
  std::map<std::string, AttrValue> map_;
};

}  // namespace lumen
