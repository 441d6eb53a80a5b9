// What a report page gives its charts, read back from the page: each chart's configuration (the
// JSON in <script id="report-data">), a chart's dataset by label, and its points.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace transient::testing {

// The charts' configurations the page carries, by chart id.
inline nlohmann::json chart_data(const std::string& page) {
  const std::string open = "<script id=\"report-data\" type=\"application/json\">";
  const auto begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  if (begin == std::string::npos) return nlohmann::json::object();
  const auto from = begin + open.size();
  return nlohmann::json::parse(page.substr(from, page.find("</script>", from) - from));
}

// The points (or bars) of every dataset of `chart`.
inline std::size_t points_of(const nlohmann::json& chart) {
  std::size_t n = 0;
  for (const auto& set : chart["data"]["datasets"]) n += set["data"].size();
  return n;
}

// The dataset of `chart` labelled `label`, or null.
inline nlohmann::json dataset(const nlohmann::json& chart, const std::string& label) {
  for (const auto& set : chart["data"]["datasets"]) {
    if (set["label"] == label) return set;
  }
  return nullptr;
}

}  // namespace transient::testing
