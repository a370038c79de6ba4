// logical_and / logical_or / logical_xor on bools, shared by the backends' kernels.
#pragma once

namespace lumen::logic {

struct And {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct Or {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct Xor {
  bool operator()(bool a, bool b) const { return a != b; }
};

}  // namespace lumen::logic
