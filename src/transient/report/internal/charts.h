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
// Floating bars in lanes (`lanes`, top to bottom) against a linear x axis from 0: a timeline.
// Each dataset's data are {"x": [from, to], "y": lane}.
nlohmann::json lanes_chart(const std::string& title, const std::vector<std::string>& lanes,
                           const std::string& x_label, nlohmann::json datasets);
// A dataset of lanes_chart: spans (or, `thin`, ticks drawn over them) in `colour`.
nlohmann::json lane_bars(const std::string& label, nlohmann::json data, const std::string& colour,
                         bool thin = false);
// The names of what took a place in turn: "w1 -> w3", or a long run's first two, its last and
// how many `noun` ("w0 -> w3 -> ... -> w999 (168 workers)"; "(168)" without a noun).
std::string in_turn(const std::vector<std::string>& names, const std::string& noun = "");
// Numbers for a table cell: whole numbers in full, others to 4 significant digits.
std::string number_text(double value);

}  // namespace transient::report::internal
