// `transient report PATH [-o FILE.html]`: a run's or a study's records as one self-contained HTML
// page; `transient status JOB_DIR`: where a job stands, in the terminal.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "transient/cli/commands.h"
#include "transient/core/atomic_file.h"
#include "transient/records/job_records.h"
#include "transient/report/job_facts.h"
#include "transient/report/report_input.h"

namespace transient::cli {

void add_report_command(CLI::App& app) {
  struct Flags {
    std::string path;    // a job directory or a simulate/plan --json output
    std::string output;  // "": report::default_report_path(path)
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Draw a job directory, a `transient simulate --json` output or a `transient plan --json` "
      "output as one self-contained HTML page (charts embedded; it opens offline).");
  cmd->add_option("path", flags->path, "a job directory, or a simulate/plan --json output file")
      ->required();
  cmd->add_option("-o,--output", flags->output,
                  "the page to write (default: JOB_DIR/report.html, or FILE.json -> FILE.html)");
  cmd->callback([flags] {
    const std::string output = report::report_output_path(flags->path, flags->output);
    // A directory or a missing one is refused naming -o before the page is drawn (a directory
    // was "cannot rename the temporary file into place: Is a directory").
    if (!flags->output.empty()) require_writable_output(output, "-o", "the page (e.g. page.html)");
    const std::string page = report::render_report(flags->path, {});
    write_file_atomically(output, page);
    std::printf("%s\n", output.c_str());
  });
}

void add_status_command(CLI::App& app) {
  auto job_dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Where a job stands: its step, the workers of its latest generation, samples/s, "
      "recoveries, the newest checkpoint's age, its cost if known, and whether it finished.");
  cmd->add_option("job_dir", *job_dir, "the job directory")->required();
  cmd->callback([job_dir] {
    const double now_s =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const auto facts = report::job_facts(records::read_job_records(*job_dir), now_s);
    std::fputs(report::status_text(facts).c_str(), stdout);
  });
}

}  // namespace transient::cli
