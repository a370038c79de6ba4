#include "compile/place.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

#include "compile/cost_model.h"
#include "lumen/error.h"

namespace lumen {
namespace {

std::string format_us(double us) {
  char text[32];
  if (us >= 1000)
    std::snprintf(text, sizeof text, "%.2f ms", us / 1000);
  else
    std::snprintf(text, sizeof text, "%.1f us", us);
  return text;
}

// The backends `pinned` allows, in priority order: every available one placed automatically
// (empty), the one it names (even one never placed automatically: the reference), or those of
// a comma-separated list ("cpu,vulkan": placement among them only).
std::vector<Backend *> allowed_backends(std::string_view pinned) {
  std::vector<Backend *> allowed;
  if (pinned.empty()) {
    for (Backend *b : backends())
      if (b->placed_automatically() && b->available()) allowed.push_back(b);
    return allowed;
  }
  for (size_t start = 0; start <= pinned.size();) {
    const size_t comma = std::min(pinned.find(',', start), pinned.size());
    const std::string_view name = pinned.substr(start, comma - start);
    Backend &b = get_backend(name);
    if (std::string why_not; !b.available(&why_not))
      fail("backend '", name, "' is not available here: ", why_not);
    allowed.push_back(&b);
    start = comma + 1;
  }
  std::stable_sort(allowed.begin(), allowed.end(),
                   [](Backend *a, Backend *b) { return a->priority() > b->priority(); });
  return allowed;
}

// Every step's candidate backends (nullptr alone for executor steps); throws listing the steps
// nothing may run.
std::vector<std::vector<Backend *>> candidates_of(const std::vector<PlacementStep> &steps,
                                                  std::string_view pinned) {
  std::vector<std::vector<Backend *>> candidates(steps.size());
  const std::vector<Backend *> allowed = allowed_backends(pinned);
  std::vector<std::string> missing;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlacementStep &s = steps[i];
    if (s.executor) {
      candidates[i] = {nullptr};
      continue;
    }
    const NodeQuery query{
        .op = s.op, .attrs = s.attrs, .inputs = s.input_types, .outputs_used = s.outputs_used};
    std::string limits;  // what the kernels of the allowed backends do not run here
    for (Backend *b : allowed) {
      std::string why_not;
      if (b->supports(query, s.dtype, &why_not))
        candidates[i].push_back(b);
      else if (b->supports(s.op, s.dtype))
        limits += str(limits.empty() ? "" : "; ", b->name(), ": ", why_not);
    }
    if (!candidates[i].empty()) continue;
    if (pinned.empty() && limits.empty()) place_node(s.op, s.dtype, "", s.node);  // throws
    missing.push_back(str("'", s.node, "' (", s.op, ", ", dtype_name(s.dtype),
                          limits.empty() ? "" : ": ", limits, ")"));
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 10; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 10) list += str(" and ", missing.size() - 10, " more");
    const char *nodes = missing.size() == 1 ? " node: " : " nodes: ";
    if (pinned.empty()) fail("no device placed automatically runs ", missing.size(), nodes, list);
    const bool several = pinned.find(',') != std::string_view::npos;
    fail(several ? "backends '" : "backend '", pinned, several ? "' have" : "' has",
         " no kernel for ", missing.size(), nodes, list);
  }
  return candidates;
}

// The memory spaces in play: index 0 is host memory; each has a backend that stands for it.
struct Spaces {
  std::vector<Device> devices{kHostDevice};
  std::vector<Backend *> backends{&host_backend()};
  int of(Backend *b) {
    const Device d = b ? b->device() : kHostDevice;
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i] == d) return static_cast<int>(i);
    devices.push_back(d);
    backends.push_back(b);
    return static_cast<int>(devices.size() - 1);
  }
};

// One assignment of the steps so far: each step's candidate index, where each value is held (a
// bit per memory space), and its estimated time.
struct Path {
  std::vector<int> choice;
  std::vector<uint32_t> held;
  std::vector<int> home;  // the space that produced each value (-1: constant or not yet made)
  double us = 0;
};

class WholeGraphPlacer {
 public:
  WholeGraphPlacer(const std::vector<PlacementStep> &steps,
                   const std::vector<PlacementValue> &values,
                   std::vector<std::vector<Backend *>> candidates, ThreadPool &pool,
                   const IoSpaces &io)
      : steps_(steps), values_(values), candidates_(std::move(candidates)), pool_(pool) {
    for (const auto &list : candidates_)
      for (Backend *b : list) spaces_.of(b);
    input_space_.assign(values_.size(), 0);
    for (size_t v = 0; v < values_.size(); ++v) {
      if (values_[v].graph_input) input_space_[v] = spaces_.of(&io.of_input(values_[v]));
      if (values_[v].graph_output)
        outputs_[spaces_.of(&io.of_output(values_[v]))].push_back(static_cast<int>(v));
    }
    if (spaces_.devices.size() > 32) fail("placement: more than 32 memory spaces");
  }

  std::vector<Placement> run() {
    estimates_.resize(steps_.size());
    for (size_t i = 0; i < steps_.size(); ++i)
      for (Backend *b : candidates_[i])
        estimates_[i].push_back(b ? CostModel::instance().step_us(*b, steps_[i].op, steps_[i].dtype,
                                                                  steps_[i].work, pool_)
                                  : 0);
    std::vector<Path> paths{start()};  // the best path per space of the last weighed step
    for (size_t i = 0; i < steps_.size(); ++i) {
      std::vector<Path> next;
      std::vector<int> next_space;
      for (size_t c = 0; c < candidates_[i].size(); ++c) {
        const int space = spaces_.of(candidates_[i][c]);
        for (const Path &p : paths) {
          Path extended = p;
          extended.choice.push_back(static_cast<int>(c));
          extended.us += estimates_[i][c] + fetch(extended, steps_[i].inputs, space);
          for (int v : steps_[i].outputs)
            if (v >= 0) extended.held[v] = 1u << space, extended.home[v] = space;
          // A graph output made elsewhere is copied to where the caller gets it: counted now, so
          // paths compared at the next steps carry it already.
          for (const auto &[to, values] : outputs_) extended.us += fetch(extended, values, to);
          // Executor steps keep every path (they decide nothing); others keep one per space.
          const int key = candidates_[i][c] ? space : -1 - static_cast<int>(next.size());
          auto it = std::find(next_space.begin(), next_space.end(), key);
          if (it == next_space.end()) {
            next_space.push_back(key);
            next.push_back(std::move(extended));
          } else if (extended.us < next[it - next_space.begin()].us) {
            next[it - next_space.begin()] = std::move(extended);
          }
        }
      }
      paths = std::move(next);
    }
    const Path &best = *std::min_element(paths.begin(), paths.end(),
                                         [](const Path &a, const Path &b) { return a.us < b.us; });
    return explain(best.choice);
  }

 private:
  double copy_us(int from, int to, double bytes) {
    return CostModel::instance().copy_us(*spaces_.backends[from], *spaces_.backends[to], bytes,
                                         pool_);
  }

  // Brings `inputs` into `space` on path p: the estimated time of the copies it needs.
  double fetch(Path &p, const std::vector<int> &inputs, int space) {
    double us = 0;
    for (int v : inputs) {
      if (v < 0 || (p.held[v] >> space & 1u)) continue;
      us += copy_us(p.home[v], space, values_[v].bytes);
      p.held[v] |= 1u << space;
    }
    return us;
  }

  // Before the first step: graph inputs where the caller gives them, constants everywhere.
  Path start() const {
    Path p;
    p.held.resize(values_.size());
    p.home = input_space_;
    for (size_t v = 0; v < values_.size(); ++v) p.held[v] = 1u << input_space_[v];
    for (size_t v = 0; v < values_.size(); ++v)
      if (values_[v].constant) p.held[v] = ~0u, p.home[v] = -1;
    return p;
  }

  std::vector<Placement> explain(const std::vector<int> &choice) {
    Path replay = start();
    std::vector<Placement> out(steps_.size());
    for (size_t i = 0; i < steps_.size(); ++i) {
      Placement &pl = out[i];
      const int c = choice[i];
      pl.backend = candidates_[i][c];
      if (!pl.backend) {
        pl.reason = "executor: control flow and containers run on host memory";
        fetch(replay, steps_[i].inputs, 0);
      } else {
        // Each candidate's time and the copies it would need, with the other steps where they are.
        std::string others;
        bool locally_cheapest = true;
        double chosen_total = 0;
        for (size_t k = 0; k < candidates_[i].size(); ++k) {
          Path trial = replay;
          const double copies = fetch(trial, steps_[i].inputs, spaces_.of(candidates_[i][k]));
          const std::string name(candidates_[i][k]->name());
          pl.estimates_us.emplace_back(name, estimates_[i][k]);
          const std::string text =
              format_us(estimates_[i][k]) + (copies > 0 ? " + copy " + format_us(copies) : "");
          if (static_cast<int>(k) == c) {
            pl.copies_us = copies;
            chosen_total = estimates_[i][k] + copies;
            pl.reason = name + ": " + text;
          } else {
            others += (others.empty() ? " vs " : ", ") + name + " " + text;
          }
        }
        for (size_t k = 0; k < candidates_[i].size(); ++k) {
          Path trial = replay;
          const double copies = fetch(trial, steps_[i].inputs, spaces_.of(candidates_[i][k]));
          locally_cheapest = locally_cheapest && estimates_[i][k] + copies >= chosen_total;
        }
        pl.reason += others;
        if (others.empty())
          pl.reason += str(" (the only device with a ", dtype_name(steps_[i].dtype), " ",
                           steps_[i].op, " kernel)");
        if (!locally_cheapest) pl.reason += " (keeps its data where the next steps run)";
        fetch(replay, steps_[i].inputs, spaces_.of(pl.backend));
      }
      const int space = spaces_.of(pl.backend);
      for (int v : steps_[i].outputs)
        if (v >= 0) replay.held[v] = 1u << space, replay.home[v] = space;
    }
    return out;
  }

  const std::vector<PlacementStep> &steps_;
  const std::vector<PlacementValue> &values_;
  std::vector<std::vector<Backend *>> candidates_;
  ThreadPool &pool_;
  Spaces spaces_;
  std::vector<std::vector<double>> estimates_;  // per step, per candidate
  std::vector<int> input_space_;                // per value: where a graph input is given
  std::map<int, std::vector<int>> outputs_;     // the graph outputs' values, by destination
};

}  // namespace

Backend *automatic_backend(std::string_view op, DType dtype) {
  for (Backend *backend : backends())
    if (backend->placed_automatically() && backend->available() && backend->supports(op, dtype))
      return backend;
  return nullptr;
}

Placement place_node(std::string_view op, DType dtype, std::string_view pinned,
                     std::string_view node) {
  if (pinned == "auto") pinned = {};
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
    if (backend == chosen || !backend->available() || !backend->supports(op, dtype)) continue;
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
                " kernel (also: ", others, ")");
  if (!oracles.empty()) reason += str("; not placed automatically: ", oracles);
  return {chosen, std::move(reason)};
}

Backend &IoSpaces::of_input(const PlacementValue &v) const {
  return inputs && !v.objects ? *inputs : host_backend();
}
Backend &IoSpaces::of_output(const PlacementValue &v) const {
  return outputs && !v.objects ? *outputs : host_backend();
}

std::vector<Placement> place_steps(const std::vector<PlacementStep> &steps,
                                   const std::vector<PlacementValue> &values,
                                   std::string_view pinned, ThreadPool &pool, const IoSpaces &io) {
  if (pinned == "auto") pinned = {};
  std::vector<std::vector<Backend *>> candidates = candidates_of(steps, pinned);
  const bool weigh = std::any_of(candidates.begin(), candidates.end(),
                                 [](const auto &list) { return list.size() > 1; });
  if (weigh) return WholeGraphPlacer(steps, values, std::move(candidates), pool, io).run();
  std::vector<Placement> out(steps.size());
  const bool list = pinned.find(',') != std::string_view::npos;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlacementStep &s = steps[i];
    Backend *only = candidates[i][0];
    if (s.executor)
      out[i] = {nullptr, "executor: control flow and containers run on host memory"};
    else if (pinned.empty())
      out[i] = place_node(s.op, s.dtype, "", s.node);
    else if (!list)
      out[i] = {only, str(pinned, ": pinned (backend='", pinned, "')")};
    else
      out[i] = {only, str(only->name(), ": the only one of '", pinned, "' with a ",
                          dtype_name(s.dtype), " kernel")};
  }
  return out;
}

}  // namespace lumen
