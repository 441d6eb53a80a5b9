// The report of one training job: a self-contained HTML page drawn from its job directory (loss
// and accuracy, samples/s, the membership timeline with the recoveries, each step's phases per
// worker and the stragglers, checkpoints, cost, the summary, and the problems met while reading).
// Also what the coordinator's live dashboard will serve.
#pragma once

#include <string>

#include "transient/records/job_records.h"
#include "transient/report/report_options.h"

namespace transient::report {

// The page for `records`. Throws InputError only if Chart.js cannot be read.
std::string render_job_report(const records::JobRecords& records, const ReportOptions& options);

// The page for the job directory `job_dir`. Throws InputError if it is not a job directory (a
// damaged file in it is shown on the page, not thrown) or if Chart.js cannot be read.
std::string render_job_report(const std::string& job_dir, const ReportOptions& options);

}  // namespace transient::report
