#include "compile/place.h"

#include "lumen/error.h"

namespace lumen {

Backend *automatic_backend(std::string_view op, DType dtype) {
  for (Backend *backend : backends())
    if (backend->placed_automatically() && backend->supports(op, dtype)) return backend;
  return nullptr;
}

Placement place_node(std::string_view op, DType dtype, std::string_view pinned,
                     std::string_view node) {
  const std::string_view type = dtype_name(dtype);
  if (!pinned.empty()) {
    Backend &backend = get_backend(pinned);
    if (!backend.supports(op, dtype))
      fail("op '", op, "' (node '", node, "'): backend '", pinned, "' has no kernel for ", type,
           " inputs");
    return {&backend, str(pinned, ": pinned (backend='", pinned, "')")};
  }
  Backend *chosen = automatic_backend(op, dtype);
  std::string others, oracles;  // other candidates; backends with a kernel never placed here
  for (Backend *backend : backends()) {
    if (backend == chosen || !backend->supports(op, dtype)) continue;
    std::string &list = backend->placed_automatically() ? others : oracles;
    list += str(list.empty() ? "" : ", ", backend->name());
  }
  if (!chosen)
    fail("op '", op, "' (node '", node, "'): no backend has a kernel for ", type, " inputs",
         oracles.empty() ? std::string()
                         : str(" ('", oracles,
                               "' has one, a test oracle run only when named: "
                               "backend='",
                               oracles, "')"));
  std::string reason =
      others.empty()
          ? str(chosen->name(), ": the only device placed automatically with a ", type, " kernel")
          : str(chosen->name(), ": the highest priority of the devices with a ", type,
                " kernel (also: ", others, "; no measured costs to weigh them yet)");
  if (!oracles.empty()) reason += str("; not placed automatically: ", oracles);
  return {chosen, std::move(reason)};
}

}  // namespace lumen
