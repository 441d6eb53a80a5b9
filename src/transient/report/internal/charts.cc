#include "transient/report/internal/charts.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace transient::report::internal {
namespace {

nlohmann::json axis(const std::string& type, const std::string& label) {
  return {{"type", type}, {"title", {{"display", true}, {"text", label}}}};
}

nlohmann::json title_plugin(const std::string& title) {
  return {{"title", {{"display", true}, {"text", title}}}, {"legend", {{"position", "bottom"}}}};
}

}  // namespace

std::string color(std::size_t i) {
  static constexpr std::array<const char*, 10> kPalette = {
      "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kPalette[i % kPalette.size()];
}

nlohmann::json xy(double x, double y) { return {{"x", x}, {"y", y}}; }

nlohmann::json series(const std::string& label, nlohmann::json points, const std::string& colour,
                      bool line) {
  return {{"label", label},
          {"data", std::move(points)},
          {"borderColor", colour},
          {"backgroundColor", colour},
          {"showLine", line},
          {"borderWidth", line ? 1.5 : 1.0},
          {"pointRadius", line ? 0 : 3}};
}

nlohmann::json xy_chart(const std::string& title, const std::string& x_label,
                        const std::string& y_label, nlohmann::json datasets) {
  return {{"type", "scatter"},
          {"data", {{"datasets", std::move(datasets)}}},
          {"options",
           {{"plugins", title_plugin(title)},
            {"scales", {{"x", axis("linear", x_label)}, {"y", axis("linear", y_label)}}}}}};
}

nlohmann::json bar_chart(const std::string& title, const std::vector<std::string>& labels,
                         const std::string& x_label, const std::string& y_label,
                         nlohmann::json datasets, bool stacked) {
  nlohmann::json x = axis("category", x_label);
  nlohmann::json y = axis("linear", y_label);
  x["stacked"] = stacked;
  y["stacked"] = stacked;
  return {{"type", "bar"},
          {"data", {{"labels", labels}, {"datasets", std::move(datasets)}}},
          {"options", {{"plugins", title_plugin(title)}, {"scales", {{"x", x}, {"y", y}}}}}};
}

nlohmann::json bars(const std::string& label, nlohmann::json values, const std::string& colour) {
  return {{"label", label}, {"data", std::move(values)}, {"backgroundColor", colour}};
}

nlohmann::json lanes_chart(const std::string& title, const std::vector<std::string>& lanes,
                           const std::string& x_label, nlohmann::json datasets) {
  nlohmann::json x = axis("linear", x_label);
  x["min"] = 0;
  return {{"type", "bar"},
          {"data", {{"labels", lanes}, {"datasets", std::move(datasets)}}},
          {"options",
           {{"indexAxis", "y"},
            {"plugins", title_plugin(title)},
            {"scales", {{"x", x}, {"y", {{"type", "category"}}}}}}}};
}

nlohmann::json lane_bars(const std::string& label, nlohmann::json data, const std::string& colour,
                         bool thin) {
  return {{"label", label},   {"data", std::move(data)}, {"backgroundColor", colour},
          {"grouped", false}, {"minBarLength", 4},       {"barPercentage", thin ? 0.5 : 0.8}};
}

std::string in_turn(const std::vector<std::string>& names, const std::string& noun) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names.size() > 4 && i == 2) {
      return text + " -> ... -> " + names.back() + " (" + std::to_string(names.size()) +
             (noun.empty() ? "" : " " + noun) + ")";
    }
    text += (i == 0 ? "" : " -> ") + names[i];
  }
  return text;
}

std::string number_text(double value) {
  // Whole numbers (steps, runs, bytes) in full; others to 4 significant digits, never in
  // scientific notation below a million.
  if (std::abs(value) < 1e15 && value == std::floor(value)) return fmt::format("{:.0f}", value);
  if (std::abs(value) >= 1e4 && std::abs(value) < 1e6) return fmt::format("{:.0f}", value);
  return fmt::format("{:.4g}", value);
}

}  // namespace transient::report::internal
