// A small well-formedness check for the SVG the plots write (no XML library in the build): one root element,
// every tag closed in order, attributes quoted, '&' only in the five predefined entities or numeric references,
// no '<' in text. Returns "" when well-formed, else what is wrong and where.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace paratune::tuning::testing {

inline std::string xml_problem(const std::string& s) {
  std::vector<std::string> stack;
  size_t i = 0, roots = 0;
  auto at = [&](size_t p) { return " at byte " + std::to_string(p); };
  auto check_amp = [&](size_t p, size_t end) -> std::string {
    for (size_t k = p; k < end; ++k) {
      if (s[k] != '&') continue;
      const size_t semi = s.find(';', k);
      if (semi == std::string::npos || semi > end) return "bare &" + at(k);
      const std::string ent = s.substr(k + 1, semi - k - 1);
      if (ent != "amp" && ent != "lt" && ent != "gt" && ent != "quot" && ent != "apos" && ent.rfind('#', 0) != 0)
        return "unknown entity &" + ent + ";" + at(k);
    }
    return "";
  };
  if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
  while (i < s.size()) {
    const size_t lt = s.find('<', i);
    const size_t text_end = lt == std::string::npos ? s.size() : lt;
    if (auto p = check_amp(i, text_end); !p.empty()) return p;
    if (stack.empty() && s.find_first_not_of(" \t\r\n", i) < text_end) return "text outside the root" + at(i);
    if (lt == std::string::npos) break;
    const size_t gt = s.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag" + at(lt);
    std::string tag = s.substr(lt + 1, gt - lt - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag" + at(lt);
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "</" + name + "> does not close <" + (stack.empty() ? "" : stack.back()) + ">" + at(lt);
      stack.pop_back();
    } else {
      const bool self = !tag.empty() && tag.back() == '/';
      if (self) tag.pop_back();
      size_t k = 0;
      while (k < tag.size() && !std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
      const std::string name = tag.substr(0, k);
      if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return "bad tag name" + at(lt);
      // attributes: name="value" pairs
      while (k < tag.size()) {
        while (k < tag.size() && std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
        if (k >= tag.size()) break;
        const size_t eq = tag.find('=', k);
        if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"') return "unquoted attribute in <" + name + ">" + at(lt);
        const size_t close = tag.find('"', eq + 2);
        if (close == std::string::npos) return "unterminated attribute in <" + name + ">" + at(lt);
        if (auto p = check_amp(lt + 1 + eq + 2, lt + 1 + close); !p.empty()) return p;
        k = close + 1;
      }
      if (stack.empty()) ++roots;
      if (roots > 1) return "a second root element" + at(lt);
      if (!self) stack.push_back(name);
    }
    i = gt + 1;
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  if (roots != 1) return "no root element";
  return "";
}

}  // namespace paratune::tuning::testing
