#include "transient/records/job_files.h"

#include <filesystem>

#include "transient/records/internal/record_file.h"

namespace transient::records {

std::string JobFiles::in_dir(const char* name) const {
  return (std::filesystem::path(dir_) / name).string();
}

std::string JobFiles::manifest() const {
  return (std::filesystem::path(dir_) / kCheckpointsDir / kManifestFile).string();
}

std::string JobFiles::step_part(const std::string& worker) const {
  return (std::filesystem::path(dir_) / kStepPartsDir / ("steps-" + worker + ".part.csv")).string();
}

std::string JobFiles::checkpoint(const std::string& file) const {
  return (std::filesystem::path(dir_) / kCheckpointsDir / file).string();
}

bool JobFiles::holds_records() const {
  // Something there that cannot be read (a symlink loop) counts: the readers name it a problem.
  for (const std::string& path : {events(), steps(), summary(), job(), manifest()}) {
    if (internal::record_file_present(path)) return true;
  }
  return false;
}

}  // namespace transient::records
