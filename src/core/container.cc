#include "lumen/container.h"

namespace lumen {
namespace {

Tensor wrap_container(Container container) {
  auto held = std::make_shared<const Container>(std::move(container));
  const DType kind = held->kind;
  return Tensor::wrap(const_cast<Container *>(held.get()), kind, Shape{}, {}, [held] {});
}

void check_items(const std::vector<Tensor> &items, const std::vector<DType> &element,
                 const char *what) {
  if (element.empty()) fail(what, ": the element type is missing");
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].defined()) fail(what, ": item ", i, " is undefined");
    const std::vector<DType> type = item_type(items[i]);
    if (type != element)
      fail(what, ": item ", i, " is ", type_name(type[0], {type.begin() + 1, type.end()}),
           ", expected ", type_name(element[0], {element.begin() + 1, element.end()}));
  }
}

}  // namespace

Tensor make_sequence(std::vector<Tensor> items, std::vector<DType> element, const char *what) {
  check_items(items, element, what);
  return wrap_container({DType::Sequence, std::move(element), std::move(items)});
}

Tensor make_optional(Tensor item, std::vector<DType> element, const char *what) {
  std::vector<Tensor> items;
  if (item.defined()) items.push_back(std::move(item));
  check_items(items, element, what);
  return wrap_container({DType::Optional, std::move(element), std::move(items)});
}

const Container &container_of(const Tensor &t) {
  if (!t.defined() || !is_container(t.dtype()))
    fail("expected a sequence or optional, got ", t.to_string());
  return *static_cast<const Container *>(t.raw_data());
}

std::vector<DType> item_type(const Tensor &t) {
  return is_container(t.dtype()) ? item_type(t.dtype(), container_of(t).element)
                                 : std::vector<DType>{t.dtype()};
}

std::vector<DType> item_type(DType dtype, const std::vector<DType> &element) {
  std::vector<DType> type;
  type.reserve(1 + element.size());
  type.push_back(dtype);
  for (DType d : element) type.push_back(d);  // (insert() trips GCC 12's -Warray-bounds)
  return type;
}

std::string element_to_text(const std::vector<DType> &element) {
  std::string text;
  for (DType d : element) {
    if (!text.empty()) text += ',';
    text += dtype_name(d);
  }
  return text;
}

std::vector<DType> element_from_text(const std::string &text) {
  std::vector<DType> element;
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    element.push_back(dtype_from_name(text.substr(start, end - start)));
    start = end + 1;
  }
  if (is_container(element.back())) fail("element type '", text, "' must end in a tensor dtype");
  return element;
}

std::string type_name(DType dtype, const std::vector<DType> &element) {
  if (!is_container(dtype) || element.empty()) return std::string(dtype_name(dtype));
  const std::string inner = type_name(element[0], {element.begin() + 1, element.end()});
  return (dtype == DType::Sequence ? "seq(" : "optional(") + inner + ")";
}

}  // namespace lumen
