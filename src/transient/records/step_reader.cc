#include "transient/records/step_reader.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "transient/core/csv_table.h"
#include "transient/records/internal/record_file.h"

namespace transient::records {
namespace {

constexpr std::array<const char*, 10> kColumns = {
    "step",        "worker",      "batch", "data_s", "compute_s",
    "allreduce_s", "optimizer_s", "loss",  "gen",    "sample_begin"};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream cells(line);
  while (std::getline(cells, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

bool is_non_finite(const std::string& field) {
  for (const char* text : {"nan", "-nan", "inf", "-inf"}) {
    if (field == text) return true;
  }
  return false;
}

// The columns that count (steps, ranks, samples, generations): whole numbers from 0 to this,
// which every int64 holds exactly. Beyond it a row is damage, not a count to convert.
constexpr double kLargestCount = 1e15;

bool is_count_column(std::size_t column) { return column <= 2 || column == 8 || column == 9; }

// The timing columns (data_s, compute_s, allreduce_s, optimizer_s): seconds from 0 to this, a
// phase of a step being far shorter than 11 days. A negative time or 1e308 is damage, which
// would otherwise show as a speed.
constexpr double kLongestPhaseS = 1e6;

bool is_timing_column(std::size_t column) { return column >= 3 && column <= 6; }

std::string columns_text() {
  std::string text;
  for (const char* column : kColumns) text += (text.empty() ? "" : ",") + std::string(column);
  return text;
}

}  // namespace

StepsRead parse_steps(const std::string& text, const std::string& name, bool has_header) {
  StepsRead read;
  // Where each column is in the file: the header's order, or the documented one.
  std::array<std::size_t, kColumns.size()> at{};
  for (std::size_t i = 0; i < at.size(); ++i) at[i] = i;
  std::size_t width = kColumns.size();
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool header_pending = has_header;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::vector<std::string> fields = split(line);
    if (header_pending) {
      header_pending = false;
      width = fields.size();
      for (std::size_t i = 0; i < kColumns.size(); ++i) {
        std::size_t found = fields.size();
        for (std::size_t j = 0; j < fields.size(); ++j) {
          if (fields[j] == kColumns[i]) found = j;
        }
        if (found == fields.size()) {
          read.problems.push_back({name, number,
                                   std::string("the header has no column \"") + kColumns[i] +
                                       "\"; accepted: " + columns_text()});
          return read;
        }
        at[i] = found;
      }
      continue;
    }
    if (fields.size() != width) {
      read.problems.push_back({name, number,
                               "has " + std::to_string(fields.size()) + " fields, expected " +
                                   std::to_string(width) +
                                   " (cut short or garbled): " + excerpt(line)});
      continue;
    }
    std::array<double, kColumns.size()> values{};
    bool good = true;
    for (std::size_t i = 0; i < kColumns.size() && good; ++i) {
      auto value = parse_number(fields[at[i]]);
      // A diverged step's loss is written as nan or inf: a value, not damage.
      if (!value && i == 7 && is_non_finite(fields[at[i]])) {
        value = std::strtod(fields[at[i]].c_str(), nullptr);
      }
      if (!value) {
        read.problems.push_back({name, number,
                                 std::string("column \"") + kColumns[i] + "\": \"" +
                                     excerpt(fields[at[i]]) + "\" is not a number"});
        good = false;
      } else if (is_count_column(i) &&
                 !(*value >= 0 && *value <= kLargestCount && *value == std::floor(*value))) {
        read.problems.push_back({name, number,
                                 std::string("column \"") + kColumns[i] + "\": \"" +
                                     excerpt(fields[at[i]]) +
                                     "\" is not a whole number from 0 to 1e15"});
        good = false;
      } else if (is_timing_column(i) && !(*value >= 0 && *value <= kLongestPhaseS)) {
        read.problems.push_back({name, number,
                                 std::string("column \"") + kColumns[i] + "\": \"" +
                                     excerpt(fields[at[i]]) +
                                     "\" is not a number of seconds from 0 to 1e6"});
        good = false;
      } else {
        values[i] = *value;
      }
    }
    if (!good) continue;
    StepRow row;
    row.step = static_cast<std::int64_t>(values[0]);
    row.rank = static_cast<std::int64_t>(values[1]);
    row.batch = static_cast<std::int64_t>(values[2]);
    row.data_s = values[3];
    row.compute_s = values[4];
    row.allreduce_s = values[5];
    row.optimizer_s = values[6];
    row.loss = values[7];
    row.gen = static_cast<std::int64_t>(values[8]);
    row.sample_begin = static_cast<std::int64_t>(values[9]);
    row.line = number;
    read.rows.push_back(row);
  }
  if (header_pending) read.problems.push_back({name, 0, "empty: no header " + columns_text()});
  return read;
}

StepsRead read_steps(const std::string& path, bool has_header) {
  const auto file = internal::read_record_file(path);
  if (!file.text) return {{}, {*file.problem}};
  return parse_steps(*file.text, path, has_header);
}

}  // namespace transient::records
