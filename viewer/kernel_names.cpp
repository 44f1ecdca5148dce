// Kernel-name shortening for the terminal report (see viewer/kernel_names.h).
#include "viewer/kernel_names.h"

#include <algorithm>
#include <map>

#include "viewer/text_layout.h"

namespace ds::viewer {

std::string short_kernel_name(const std::string& name, size_t width) {
  width = std::max<size_t>(width, 8);
  if (display_columns(name) <= width) return name;
  std::string s = name;
  // The parameter list: the parenthesized group that ends the name.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') {
        ++depth;
      } else if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.resize(i);
        break;
      }
    }
  }
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);  // kernels return void
  if (display_columns(s) <= width) return s;
  {  // a<b<c, d>> -> a<b<…>>
    std::string t;
    int depth = 0;
    for (char c : s) {
      if (c == '<') {
        ++depth;
        if (depth == 2) t += "<…";
        if (depth >= 2) continue;
      } else if (c == '>' && depth >= 2) {
        if (depth-- == 2) t += '>';
        continue;
      } else if (c == '>' && depth > 0) {
        --depth;
      } else if (depth >= 2) {
        continue;
      }
      t += c;
    }
    s = t;
    if (display_columns(s) <= width) return s;
  }
  // Head and tail around "…", cut at code points.
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  const size_t head = (width - 1) * 2 / 3, tail = width - 1 - head;
  return s.substr(0, starts[head]) + "…" + s.substr(starts[starts.size() - tail]);
}

std::vector<std::string> short_kernel_names(const std::vector<std::string>& names, size_t width) {
  width = std::max<size_t>(width, 8);
  std::vector<std::string> out;
  std::map<std::string, std::vector<size_t>> alike;  // short form -> indices of distinct names
  for (size_t i = 0; i < names.size(); ++i) {
    out.push_back(short_kernel_name(names[i], width));
    auto& group = alike[out.back()];
    bool seen = false;
    for (size_t j : group) seen |= names[j] == names[i];
    if (!seen) group.push_back(i);
  }
  auto body = [](const std::string& n) { return n.rfind("void ", 0) == 0 ? n.substr(5) : n; };
  for (const auto& [brief, group] : alike) {
    if (group.size() < 2) continue;
    for (size_t i : group) {
      // Where this name parts from the one it shares the longest prefix with.
      const std::string s = body(names[i]);
      size_t from = 0;
      for (size_t j : group) {
        if (j == i) continue;
        const std::string t = body(names[j]);
        const auto [p, q] = std::mismatch(s.begin(), s.end(), t.begin(), t.end());
        from = std::max(from, static_cast<size_t>(p - s.begin()));
      }
      from -= std::min(from, width / 3);  // a little context before the difference
      while (from > 0 && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) --from;
      const std::string window = (from > 0 ? "…" : "") + s.substr(from);
      for (size_t k = 0; k < names.size(); ++k) {
        if (names[k] == names[i]) out[k] = clip(window, width);
      }
    }
  }
  return out;
}

}  // namespace ds::viewer
