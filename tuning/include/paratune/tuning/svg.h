// A minimal SVG writer: escaped text and attributes, numbers with bounded precision. Nothing else.
#pragma once

#include <string>
#include <string_view>

namespace paratune::tuning::svg {

std::string escape(std::string_view text);  // & < > " ' -> entities; control characters dropped
std::string num(double v);                  // "%.2f", trailing zeros trimmed; non-finite -> 0

std::string line(double x1, double y1, double x2, double y2, const std::string& style, const std::string& cls = "");
std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& cls = "",
                 const std::string& title = "");
std::string circle(double cx, double cy, double r, const std::string& fill, const std::string& cls,
                   const std::string& title);
std::string text(double x, double y, std::string_view s, const std::string& extra = "");

}  // namespace paratune::tuning::svg
