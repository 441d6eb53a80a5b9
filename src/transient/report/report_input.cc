#include "transient/report/report_input.h"

#include <filesystem>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/report/job_report.h"
#include "transient/report/study_report.h"

namespace transient::report {

namespace fs = std::filesystem;

constexpr const char* kAccepted =
    "accepted: a job directory, the output of `transient simulate --json` or of `transient plan "
    "--json`";

std::string render_report(const std::string& path, const ReportOptions& options) {
  if (fs::is_directory(path)) return render_job_report(path, options);
  if (!fs::exists(path)) throw InputError(path, 0, "no such file or directory");
  nlohmann::json json;
  try {
    json = parse_json(read_file(path), path);
  } catch (const InputError& error) {
    if (fs::path(path).extension() == ".toml") {
      // A scenario: its study is simulate's to make, and it is drawn from that output.
      throw InputError(path, 0,
                       "a scenario file, which report does not simulate: run `transient simulate " +
                           path + " --json > study.json`, then `transient report study.json`; " +
                           kAccepted);
    }
    throw InputError(error.file(), error.line(), error.message() + "; " + kAccepted);
  }
  if (is_plan_output(json)) return render_plan_report(json, path, options);
  if (is_simulation_output(json)) return render_simulation_report(json, path, options);
  throw InputError(path, 0, std::string("not a report's input; ") + kAccepted);
}

std::string default_report_path(const std::string& path) {
  if (fs::is_directory(path)) return (fs::path(path) / "report.html").string();
  return fs::path(path).replace_extension(".html").string();
}

}  // namespace transient::report
