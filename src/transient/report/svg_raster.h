// Pictures as PNG: rasterises an SVG document (the planner's Pareto front, report charts) with
// librsvg and cairo, so that every picture the project draws as SVG can also be had as PNG.
#pragma once

#include <string>

namespace transient::report {

// The PNG bytes of `svg` rendered at its own size times `scale` (2 = twice as many pixels in each
// direction), on a white background. Throws InputError("<name>: ...") if `svg` is not an SVG
// document librsvg can render; `name` stands for the document in that message.
std::string svg_to_png(const std::string& svg, const std::string& name, double scale = 1.0);

// True if `path` ends in ".png" (case-insensitive): the picture is to be written as PNG.
bool wants_png(const std::string& path);

}  // namespace transient::report
