#include "lumen/attributes.h"

namespace lumen {
namespace {

const char *kind_name(const AttrValue &v) {
  switch (v.index()) {
    case 0:
      return "int";
    case 1:
      return "float";
    case 2:
      return "string";
    case 3:
      return "ints";
    case 4:
      return "floats";
    case 5:
      return "strings";
    case 6:
      return "tensor";
    default:
      return "graph";
  }
}

template <class T>
const T &expect(const std::string &name, const AttrValue &v, const char *wanted) {
  const T *p = std::get_if<T>(&v);
  if (!p) fail("attribute '", name, "' is ", kind_name(v), ", expected ", wanted);
  return *p;
}

}  // namespace

int64_t Attributes::get_int(const std::string &name, int64_t fallback) const {
  auto it = map_.find(name);
  return it == map_.end() ? fallback : expect<int64_t>(name, it->second, "int");
}

double Attributes::get_float(const std::string &name, double fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto *i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return expect<double>(name, it->second, "float");
}

std::string Attributes::get_string(const std::string &name, const std::string &fallback) const {
  auto it = map_.find(name);
  return it == map_.end() ? fallback : expect<std::string>(name, it->second, "string");
}

std::vector<int64_t> Attributes::get_ints(const std::string &name,
                                          const std::vector<int64_t> &fallback) const {
  auto it = map_.find(name);
  return it == map_.end() ? fallback : expect<std::vector<int64_t>>(name, it->second, "ints");
}

std::vector<double> Attributes::get_floats(const std::string &name,
                                           const std::vector<double> &fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto *ints = std::get_if<std::vector<int64_t>>(&it->second))
    return std::vector<double>(ints->begin(), ints->end());
  return expect<std::vector<double>>(name, it->second, "floats");
}

const Tensor *Attributes::get_tensor(const std::string &name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &expect<Tensor>(name, it->second, "tensor");
}

Graph *Attributes::get_graph(const std::string &name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr
                          : expect<std::shared_ptr<Graph>>(name, it->second, "graph").get();
}

bool Attributes::has_graphs() const {
  for (const auto &[name, value] : map_)
    if (std::holds_alternative<std::shared_ptr<Graph>>(value)) return true;
  return false;
}

std::string Attributes::to_string() const {
  std::ostringstream out;
  out << "{";
  bool first = true;
  auto list = [&](const auto &values) {
    out << "[";
    for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
    out << "]";
  };
  for (const auto &[name, value] : map_) {
    out << (first ? "" : ", ") << name << "=";
    first = false;
    std::visit(
        [&](const auto &v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, Tensor>)
            out << v.to_string();
          else if constexpr (std::is_same_v<T, std::shared_ptr<Graph>>)
            out << "<graph>";
          else if constexpr (std::is_same_v<T, std::string>)
            out << '"' << v << '"';
          else if constexpr (std::is_arithmetic_v<T>)
            out << v;
          else
            list(v);
        },
        value);
  }
  out << "}";
  return out.str();
}

}  // namespace lumen
