#include "transient/report/report_input.h"

#include <algorithm>
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
    "--json` without --evaluate";

// `plan --evaluate --json`: one cluster's figures, with no front and no candidates to draw.
bool is_plan_evaluation(const nlohmann::json& json) {
  return json.is_object() && json.contains("spec") && json.contains("configuration") &&
         json.value("label", std::string()) == "evaluate";
}

std::string render_report(const std::string& path, const ReportOptions& options) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::not_found) {
    throw InputError(path, 0, "no such file or directory");
  }
  if (error) {
    // A name too long, a symlink loop: the file system's words, not its exception.
    throw InputError(path, 0, "cannot be read: " + error.message() + "; " + kAccepted);
  }
  if (fs::is_directory(status)) return render_job_report(path, options);
  if (!fs::is_regular_file(status)) {
    // A FIFO would wait for a writer, a device might never end.
    throw InputError(path, 0, std::string("not a regular file; ") + kAccepted);
  }
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
  try {
    if (is_plan_output(json)) return render_plan_report(json, path, options);
    if (is_simulation_output(json)) return render_simulation_report(json, path, options);
  } catch (const nlohmann::json::exception& error) {
    // A field of another type than simulate or plan writes, that the drawing did not check by
    // name (each it does check is named: study_report.cc).
    throw InputError(path, 0,
                     std::string("a field of the wrong type (") + error.what() + "); " + kAccepted);
  }
  if (is_plan_evaluation(json)) {
    throw InputError(path, 0,
                     "the output of `transient plan --evaluate --json`, one cluster's figures, "
                     "which report does not draw; " +
                         std::string(kAccepted));
  }
  throw InputError(path, 0, std::string("not a report's input; ") + kAccepted);
}

std::string default_report_path(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) return (fs::path(path) / "report.html").string();
  return fs::path(path).replace_extension(".html").string();
}

std::string report_output_path(const std::string& path, const std::string& output) {
  const std::string chosen = output.empty() ? default_report_path(path) : output;
  std::error_code error;
  // Only an existing file can be the input; equivalent() follows links and tells a/../a.json
  // from a.json.
  if (fs::exists(chosen, error) && fs::equivalent(path, chosen, error)) {
    throw InputError(chosen, 0,
                     "the page would replace the report's input " + path +
                         "; accepted: an output (-o FILE.html) other than the input");
  }
  // A job directory's input is every file in it (its records, checkpoints, token): inside it,
  // only a page (*.html, which the job never writes) is written. `-o JOB/events.jsonl` wrote the
  // page over the records, `-o JOB/token` over the token.
  if (fs::is_directory(path, error)) {
    const fs::path dir = fs::weakly_canonical(path, error);
    const fs::path out = fs::weakly_canonical(chosen, error);
    const auto [in_dir, in_out] = std::mismatch(dir.begin(), dir.end(), out.begin(), out.end());
    if (!error && in_dir == dir.end() && out.extension() != ".html") {
      throw InputError(chosen, 0,
                       "inside the job directory " + path +
                           ", whose files are the report's input; accepted: a page named "
                           "*.html there (the default: " +
                           default_report_path(path) + "), or one outside it");
    }
  }
  return chosen;
}

}  // namespace transient::report
