#include "compile/insert_copies.h"

#include <algorithm>

namespace lumen {

const OpSchema &copy_step_schema() {
  static const OpSchema schema{.name = "copy"};
  return schema;
}

CopyPlan insert_copies(const std::vector<PlacementStep> &steps,
                       const std::vector<PlacementValue> &values,
                       const std::vector<Placement> &placements, const IoSpaces &io) {
  Backend &host = host_backend();
  const auto where = [&](Backend *b) { return b ? b : &host; };  // executor steps: host memory
  std::vector<Backend *> home(values.size(), &host);
  std::vector<std::vector<Device>> held(values.size());
  for (size_t v = 0; v < values.size(); ++v) {
    if (values[v].graph_input) home[v] = &io.of_input(values[v]);
    held[v] = {home[v]->device()};
  }
  CopyPlan plan;
  plan.before.resize(steps.size());
  const auto bring = [&](int v, Backend *to, std::vector<CopyStep> &copies) {
    if (v < 0 || values[v].constant) return;
    std::vector<Device> &spaces = held[v];
    if (std::find(spaces.begin(), spaces.end(), to->device()) != spaces.end()) return;
    copies.push_back({v, home[v], to});
    spaces.push_back(to->device());
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    Backend *runs_on = where(placements[i].backend);
    for (int v : steps[i].inputs) bring(v, runs_on, plan.before[i]);
    for (int v : steps[i].outputs)
      if (v >= 0) home[v] = runs_on, held[v] = {runs_on->device()};
  }
  for (size_t v = 0; v < values.size(); ++v)
    if (values[v].graph_output) bring(static_cast<int>(v), &io.of_output(values[v]), plan.after);
  return plan;
}

}  // namespace lumen
