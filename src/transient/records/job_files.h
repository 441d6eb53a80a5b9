// The names of a job directory's files, in one place (README, "The job directory"). The trainer
// writes them; records/ reads them; nothing else spells a name out.
#pragma once

#include <string>

namespace transient::records {

inline constexpr const char* kEventsFile = "events.jsonl";           // one JSON event per line
inline constexpr const char* kStepsFile = "steps.csv";               // one row per step and member
inline constexpr const char* kSummaryFile = "summary.json";          // what the job came to
inline constexpr const char* kJobFile = "job.json";                  // the job's identity
inline constexpr const char* kCoordinatorFile = "coordinator.json";  // the coordinator's journal
inline constexpr const char* kCheckpointsDir = "checkpoints";        // the kept checkpoints
inline constexpr const char* kManifestFile = "manifest.json";        // in checkpoints/
inline constexpr const char* kStepPartsDir = "records";  // steps.csv parts, while running
inline constexpr const char* kTokenFile = "token";       // the job's secret (mode 0600)
// Locked (flock) by the coordinator running the job, so that there is one at a time.
inline constexpr const char* kLockFile = ".coordinator.lock";

// The paths of one job directory's files. A value; cheap to copy.
class JobFiles {
 public:
  explicit JobFiles(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  std::string events() const { return in_dir(kEventsFile); }
  std::string steps() const { return in_dir(kStepsFile); }
  std::string summary() const { return in_dir(kSummaryFile); }
  std::string job() const { return in_dir(kJobFile); }
  std::string coordinator() const { return in_dir(kCoordinatorFile); }
  std::string checkpoints() const { return in_dir(kCheckpointsDir); }
  std::string manifest() const;
  std::string step_parts() const { return in_dir(kStepPartsDir); }
  // One member's part of steps.csv while the job runs: records/steps-<worker>.part.csv.
  std::string step_part(const std::string& worker) const;
  std::string checkpoint(const std::string& file) const;  // checkpoints/<file>
  std::string token() const { return in_dir(kTokenFile); }
  std::string lock() const { return in_dir(kLockFile); }

  // True if the directory holds any of the files a job writes (it is a job directory).
  bool holds_records() const;

 private:
  std::string in_dir(const char* name) const;

  std::string dir_;
};

}  // namespace transient::records
