// String semantics shared by the string ops' shape inference (which must count what the kernels
// will produce) and their kernels. Case folding is ASCII-only: other UTF-8 bytes pass unchanged.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::strings {

// Python's str.split: by `delimiter` (consecutive ones give empty pieces), or with an empty
// delimiter by runs of whitespace (no empty pieces). At most `maxsplit` splits when >= 0.
inline std::vector<std::string> split(std::string_view s, std::string_view delimiter,
                                      int64_t maxsplit) {
  std::vector<std::string> pieces;
  auto room = [&] { return maxsplit < 0 || static_cast<int64_t>(pieces.size()) < maxsplit; };
  if (!delimiter.empty()) {
    size_t start = 0;
    for (size_t at; room() && (at = s.find(delimiter, start)) != std::string_view::npos;) {
      pieces.emplace_back(s.substr(start, at - start));
      start = at + delimiter.size();
    }
    pieces.emplace_back(s.substr(start));
    return pieces;
  }
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && space(s[i])) ++i;
    if (i == s.size()) break;
    if (!room()) {  // the rest, trailing whitespace stripped
      size_t end = s.size();
      while (end > i && space(s[end - 1])) --end;
      pieces.emplace_back(s.substr(i, end - i));
      break;
    }
    size_t end = i;
    while (end < s.size() && !space(s[end])) ++end;
    pieces.emplace_back(s.substr(i, end - i));
    i = end;
  }
  return pieces;
}

inline std::string to_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

inline std::string to_upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// StringNormalizer's stopword test: exact, or ignoring (ASCII) case.
inline bool is_stopword(const std::string &word, const std::vector<std::string> &stopwords,
                        bool case_sensitive) {
  const std::string key = case_sensitive ? word : to_lower(word);
  return std::any_of(stopwords.begin(), stopwords.end(), [&](const std::string &stop) {
    return key == (case_sensitive ? stop : to_lower(stop));
  });
}

}  // namespace lumen::strings
