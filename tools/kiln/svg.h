// Small helpers for the kiln tool's SVG charts (`kiln bench compare`'s bars,
// `kiln info --model`'s curves): number formatting, XML escaping, axis
// steps and one colour-blind-safe palette.
#pragma once

#include <string>

namespace kiln::cli::svg {

// printf-style formatting of one number ("%.1f" for coordinates).
std::string fmt(double v, const char* format);
// &, <, >, " escaped for XML text and attribute values.
std::string xml_escape(const std::string& s);
// A round grid step (1, 2 or 5 times a power of ten) giving about five
// steps from 0 to `top` (> 0).
double nice_step(double top);
// The Okabe–Ito palette, cycled: colour(i) for series i.
const char* colour(size_t i);
// The document's opening tag (white background, sans-serif 12 px) and
// closing tag.
std::string open(double width, double height);
std::string close();

}  // namespace kiln::cli::svg
