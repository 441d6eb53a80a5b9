#include "transient/records/job_records.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "transient/core/error.h"
#include "transient/records/internal/record_file.h"
#include "transient/records/job_files.h"

namespace transient::records {
namespace {

namespace fs = std::filesystem;

template <typename Read>
void append_problems(JobRecords& records, const Read& read) {
  records.problems.insert(records.problems.end(), read.problems.begin(), read.problems.end());
}

std::optional<nlohmann::json> read_json_object(const std::string& path,
                                               std::vector<ReadProblem>& problems) {
  if (!internal::record_file_present(path)) return std::nullopt;
  const auto file = internal::read_record_file(path);
  if (!file.text) {
    problems.push_back(*file.problem);
    return std::nullopt;
  }
  nlohmann::json json = nlohmann::json::parse(*file.text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    problems.push_back({path, 0, "not a JSON object (cut short or garbled)"});
    return std::nullopt;
  }
  return json;
}

// steps.csv, then the part files of a running job; per step the latest generation's rows.
void read_all_steps(const JobFiles& files, JobRecords& records) {
  std::vector<StepRow> rows;
  if (internal::record_file_present(files.steps())) {
    StepsRead read = read_steps(files.steps());
    append_problems(records, read);
    rows = std::move(read.rows);
  }
  std::error_code error;
  if (fs::is_directory(files.step_parts(), error)) {
    std::vector<fs::path> parts;
    for (auto it = fs::directory_iterator(files.step_parts(), error);
         !error && it != fs::directory_iterator(); it.increment(error)) {
      if (it->path().extension() == ".csv") parts.push_back(it->path());
    }
    if (error) {
      records.problems.push_back({files.step_parts(), 0, "cannot be listed: " + error.message()});
    }
    std::sort(parts.begin(), parts.end());
    for (const auto& part : parts) {
      StepsRead read = read_steps(part.string(), false);
      append_problems(records, read);
      rows.insert(rows.end(), read.rows.begin(), read.rows.end());
    }
  }
  std::map<std::int64_t, std::int64_t> latest_gen;
  for (const auto& row : rows) {
    auto [it, fresh] = latest_gen.emplace(row.step, row.gen);
    if (!fresh) it->second = std::max(it->second, row.gen);
  }
  std::map<std::tuple<std::int64_t, std::int64_t>, StepRow> kept;  // (step, rank): the last read
  for (const auto& row : rows) {
    if (row.gen == latest_gen[row.step]) kept[{row.step, row.rank}] = row;
  }
  for (auto& [key, row] : kept) records.steps.push_back(row);
}

}  // namespace

JobRecords read_job_records(const std::string& dir) {
  const JobFiles files(dir);
  std::error_code error;
  const fs::file_status status = fs::status(dir, error);
  if (status.type() == fs::file_type::not_found) throw InputError(dir, 0, "no such job directory");
  if (error) {
    // A name too long, a symlink loop, a folder without permission: the file system's words.
    throw InputError(dir, 0, "cannot be read: " + error.message() + "; accepted: a job directory");
  }
  if (!fs::is_directory(status)) {
    throw InputError(dir, 0, "not a directory; accepted: a job directory");
  }
  if (!files.holds_records()) {
    throw InputError(dir, 0,
                     std::string("not a job directory: it holds none of ") + kEventsFile + ", " +
                         kStepsFile + ", " + kSummaryFile + ", " + kJobFile + ", " +
                         kCheckpointsDir + "/" + kManifestFile);
  }
  JobRecords records;
  records.dir = dir;
  records.coordinator_lock = probe_coordinator_lock(files.lock());
  EventsRead events = read_events(files.events());
  append_problems(records, events);
  records.events = std::move(events.events);
  read_all_steps(files, records);
  if (internal::record_file_present(files.summary())) {
    SummaryRead summary = read_summary(files.summary());
    append_problems(records, summary);
    records.summary = std::move(summary.summary);
  }
  records.job = read_json_object(files.job(), records.problems);
  records.coordinator = read_json_object(files.coordinator(), records.problems);
  if (internal::record_file_present(files.manifest())) {
    ManifestRead manifest = read_manifest(files.manifest());
    append_problems(records, manifest);
    records.checkpoints = std::move(manifest.checkpoints);
  }
  return records;
}

}  // namespace transient::records
