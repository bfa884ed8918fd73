#include "paratune/tuning/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace paratune::tuning::svg {

std::string escape(std::string_view t) {
  std::string o;
  o.reserve(t.size());
  for (char c : t) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') o += c;
    }
  }
  return o;
}

std::string num(double v) {
  if (!std::isfinite(v)) v = 0;
  char b[48];
  std::snprintf(b, sizeof b, "%.2f", v);
  std::string s = b;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string line(double x1, double y1, double x2, double y2, const std::string& style, const std::string& cls) {
  return "<line" + (cls.empty() ? "" : " class=\"" + escape(cls) + "\"") + " x1=\"" + num(x1) + "\" y1=\"" + num(y1) +
         "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" style=\"" + escape(style) + "\"/>\n";
}

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& cls,
                 const std::string& title) {
  std::string s = "<rect" + (cls.empty() ? "" : " class=\"" + escape(cls) + "\"") + " x=\"" + num(x) + "\" y=\"" +
                  num(y) + "\" width=\"" + num(std::max(0.0, w)) + "\" height=\"" + num(std::max(0.0, h)) +
                  "\" fill=\"" + escape(fill) + "\"";
  if (title.empty()) return s + "/>\n";
  return s + "><title>" + escape(title) + "</title></rect>\n";
}

std::string circle(double cx, double cy, double r, const std::string& fill, const std::string& cls,
                   const std::string& title) {
  return "<circle class=\"" + escape(cls) + "\" cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) +
         "\" fill=\"" + escape(fill) + "\"><title>" + escape(title) + "</title></circle>\n";
}

std::string text(double x, double y, std::string_view s, const std::string& extra) {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (extra.empty() ? "" : " " + extra) + ">" + escape(s) +
         "</text>\n";
}

}  // namespace paratune::tuning::svg
