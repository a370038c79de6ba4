// Errors raised by the public API. Every message names what failed (op, node, shape) and what was
// expected, so a user can fix the model or the call without a debugger.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace lumen {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Concatenates any streamable values into one string: str("got ", 3, " dims").
template <class... Args>
std::string str(const Args &...args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <class... Args>
[[noreturn]] void fail(const Args &...args) {
  throw Error(str(args...));
}

// Sizes computed from models or user input go through these: an overflow is an Error, never UB.
inline int64_t checked_mul(int64_t a, int64_t b, const char *what = "size") {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(what, " overflows int64 (", a, " * ", b, ")");
  return r;
}
inline int64_t checked_add(int64_t a, int64_t b, const char *what = "size") {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(what, " overflows int64 (", a, " + ", b, ")");
  return r;
}

}  // namespace lumen

#define LUMEN_CHECK(cond, ...)               \
  do {                                       \
    if (!(cond)) ::lumen::fail(__VA_ARGS__); \
  } while (0)
