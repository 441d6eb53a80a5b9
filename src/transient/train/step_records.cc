#include "transient/train/step_records.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "transient/core/atomic_file.h"

namespace transient::train {
namespace {

constexpr const char* kHeader = "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss";

using RowKey = std::pair<std::int64_t, std::int64_t>;

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
    if (std::count(line.begin(), line.end(), ',') != 7) continue;
    std::istringstream fields(line);
    std::int64_t step = 0;
    std::int64_t worker = 0;
    char comma = 0;
    if (!(fields >> step >> comma >> worker) || comma != ',') continue;
    if (step > last_step) continue;
    rows[{step, worker}] = line;
  }
}

}  // namespace

std::int64_t merge_step_records(const std::string& job_dir, std::int64_t last_step) {
  namespace fs = std::filesystem;
  const std::string steps_path = (fs::path(job_dir) / "steps.csv").string();
  std::map<RowKey, std::string> rows;
  if (fs::exists(steps_path)) read_rows(steps_path, true, last_step, rows);
  std::vector<fs::path> parts;
  const fs::path records = fs::path(job_dir) / "records";
  if (fs::is_directory(records)) {
    for (const auto& entry : fs::directory_iterator(records)) {
      if (entry.path().extension() == ".csv") parts.push_back(entry.path());
    }
  }
  for (const auto& part : parts) read_rows(part.string(), false, last_step, rows);
  std::string text = std::string(kHeader) + "\n";
  for (const auto& [key, line] : rows) text += line + "\n";
  write_file_atomically(steps_path, text);
  for (const auto& part : parts) fs::remove(part);
  return static_cast<std::int64_t>(rows.size());
}

}  // namespace transient::train
