// The kiln tool's SVG helpers (svg.h).
#include "tools/kiln/svg.h"

#include <cmath>
#include <cstdio>

namespace kiln::cli::svg {

std::string fmt(double v, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

double nice_step(double top) {
  const double raw = top / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

const char* colour(size_t i) {
  static const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                   "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
  return kColours[i % 8];
}

std::string open(double width, double height) {
  const std::string w = fmt(width, "%.0f"), h = fmt(height, "%.0f");
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w +
         "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n"
         "<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

std::string close() { return "</svg>\n"; }

}  // namespace kiln::cli::svg
