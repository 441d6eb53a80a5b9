// `transient report PATH`: which page a path asks for (a job directory, a `simulate --json` output
// or a `plan --json` output, told apart by what the path is and holds) and where it goes.
#pragma once

#include <string>

#include "transient/report/report_options.h"

namespace transient::report {

// The page for `path`. Throws InputError naming `path` if it is none of the three inputs (with
// what would be accepted), and for the errors of the page's own renderer.
std::string render_report(const std::string& path, const ReportOptions& options);

// Where the page of `path` goes by default: PATH/report.html for a directory, else PATH with its
// extension replaced by .html (a.json -> a.html).
std::string default_report_path(const std::string& path);

// Where the page of `path` goes: `output`, or default_report_path(path) when it is "". Throws
// InputError naming it if it is the input file itself (the same file, by any name), which the
// page would replace.
std::string report_output_path(const std::string& path, const std::string& output);

}  // namespace transient::report
