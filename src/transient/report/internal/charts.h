// Chart.js 3 configurations for the report pages: the few shapes they draw (lines and points on
// two numeric axes, bars by category, floating bars for timelines), with one palette.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace transient::report::internal {

// The i-th colour of the palette (cycles).
std::string color(std::size_t i);
// {"x": x, "y": y}.
nlohmann::json xy(double x, double y);
// A dataset of {x, y} points drawn as a line (`line`) or as dots.
nlohmann::json series(const std::string& label, nlohmann::json points, const std::string& colour,
                      bool line = true);
// Points and lines against two linear axes.
nlohmann::json xy_chart(const std::string& title, const std::string& x_label,
                        const std::string& y_label, nlohmann::json datasets);
// Bars by category (`labels`), stacked or side by side.
nlohmann::json bar_chart(const std::string& title, const std::vector<std::string>& labels,
                         const std::string& x_label, const std::string& y_label,
                         nlohmann::json datasets, bool stacked);
// A dataset of bar heights, one per label (null where there is none).
nlohmann::json bars(const std::string& label, nlohmann::json values, const std::string& colour);
// Numbers for a table cell: whole numbers in full, others to 4 significant digits.
std::string number_text(double value);

}  // namespace transient::report::internal
