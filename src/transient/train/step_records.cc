#include "transient/train/step_records.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "transient/core/atomic_file.h"
#include "transient/records/job_files.h"

namespace transient::train {
namespace {

constexpr const char* kHeader =
    "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin";
constexpr long kCommas = 9;

// (step, generation, worker) -> the row's text.
using RowKey = std::tuple<std::int64_t, std::int64_t, std::int64_t>;

void read_rows(const std::string& path, bool has_header, std::int64_t last_step,
               std::map<RowKey, std::string>& rows) {
  std::ifstream in(path);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first && has_header) {
      first = false;
      continue;
    }
    first = false;
    // A part file cut short by a crash may end in half a line: it is dropped.
    if (std::count(line.begin(), line.end(), ',') != kCommas) continue;
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(cell);
    if (fields.size() != kCommas + 1) continue;
    try {
      const std::int64_t step = std::stoll(fields[0]);
      const std::int64_t worker = std::stoll(fields[1]);
      const std::int64_t generation = std::stoll(fields[8]);
      if (step > last_step) continue;
      rows[{step, generation, worker}] = line;
    } catch (const std::exception&) {
      continue;
    }
  }
}

// The rows of `job_dir`'s steps.csv and part files with step <= `last_step`; `parts` gets the
// part files read.
std::map<RowKey, std::string> read_all_rows(const std::string& job_dir, std::int64_t last_step,
                                            std::vector<std::filesystem::path>& parts) {
  namespace fs = std::filesystem;
  const std::string steps_path = records::JobFiles(job_dir).steps();
  std::map<RowKey, std::string> rows;
  if (fs::exists(steps_path)) read_rows(steps_path, true, last_step, rows);
  const fs::path parts_dir = records::JobFiles(job_dir).step_parts();
  if (fs::is_directory(parts_dir)) {
    for (const auto& entry : fs::directory_iterator(parts_dir)) {
      if (entry.path().extension() == ".csv") parts.push_back(entry.path());
    }
  }
  for (const auto& part : parts) read_rows(part.string(), false, last_step, rows);
  return rows;
}

}  // namespace

std::int64_t last_recorded_step(const std::string& job_dir) {
  std::vector<std::filesystem::path> parts;
  const auto rows = read_all_rows(job_dir, std::numeric_limits<std::int64_t>::max(), parts);
  return rows.empty() ? 0 : std::get<0>(rows.rbegin()->first);
}

std::int64_t merge_step_records(const std::string& job_dir, std::int64_t last_step) {
  namespace fs = std::filesystem;
  const std::string steps_path = records::JobFiles(job_dir).steps();
  std::vector<fs::path> parts;
  const auto rows = read_all_rows(job_dir, last_step, parts);
  // A step recorded by several generations (some members finished it before the group failed,
  // and a later generation trained it again after a resume) keeps the latest generation's rows.
  std::map<std::int64_t, std::int64_t> latest_generation;
  for (const auto& [key, line] : rows) {
    auto& generation = latest_generation[std::get<0>(key)];
    generation = std::max(generation, std::get<1>(key));
  }
  std::string text = std::string(kHeader) + "\n";
  std::int64_t kept = 0;
  for (const auto& [key, line] : rows) {
    if (std::get<1>(key) != latest_generation[std::get<0>(key)]) continue;
    text += line + "\n";
    ++kept;
  }
  write_file_atomically(steps_path, text);
  for (const auto& part : parts) fs::remove(part);
  return kept;
}

}  // namespace transient::train
