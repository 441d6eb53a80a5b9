// The job directory as a coordinator opens it, before the coordinator runs (train/launcher.cc,
// `transient train` and `transient coordinator`): whose job it is (job.json's identity, the
// model file's SHA-256, the data set's facts), the settings a resumed job keeps, the lock that
// makes one coordinator a job, the token file and the journal's addresses. The file names are
// records/job_files.h's. Torch-free.
//
// Failure: bad input (a directory of another job, a finished one, a changed model file or data
// set, a contradicting flag, damaged settings) throws InputError naming the file or the flag,
// before anything in the directory is touched.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "transient/train/coordinator_journal.h"
#include "transient/train/protocol.h"
#include "transient/train/trainer.h"

namespace transient::train {

// The time now in UTC as YYYYMMDD-HHMMSS: a new job's default directory name.
std::string utc_stamp();

// Writes `contents` to `path` readable by its owner only (the job token), atomically
// (core/atomic_file.h); throws InputError naming `path` if it cannot.
void write_private_file(const std::string& path, const std::string& contents);

// With --resume, the job's settings (job.json's "settings") replace the options; a flag given
// that contradicts them is refused with the difference named (a diverged job takes a lower --lr).
// A job.json of an earlier version (no settings) is left to the identity check of
// prepare_job_dir. The launch settings ("launch") are taken where no flag is given, the number of
// workers only where the command starts them (`starts_workers`: `transient train`).
void adopt_job_settings(TrainOptions& o, bool starts_workers);

// The job directory held by the one coordinator running its job: an exclusive flock on
// JOB/.coordinator.lock, which the kernel releases when the process ends, however it ends (a
// coordinator killed leaves the job to the next). A second `train --resume` or `coordinator`
// on a running job trained it beside the first, both writing its records. The constructor throws
// InputError when another process holds it (naming the running coordinator's pid when its journal
// says it and it lives) or the lock file cannot be opened.
class JobLock {
 public:
  explicit JobLock(const std::string& job_dir);
  ~JobLock();
  JobLock(const JobLock&) = delete;
  JobLock& operator=(const JobLock&) = delete;

 private:
  int fd_ = -1;
};

// The journal's front door port, and its dashboard's address or "off" as it was. Each is taken
// as the job's, kept unless another program has it when the coordinator listens, which then
// says so and listens on another (CoordinatorOptions::port_or_another, dashboard_or_another).
// Throws InputError naming `journal_path` for an address that is not HOST:PORT.
std::uint16_t the_journals_port(const CoordinatorJournal& journal, const std::string& journal_path);
std::string the_journals_dashboard(const CoordinatorJournal& journal,
                                   const std::string& journal_path);

// A job resumed by `transient train`: its dashboard where its last run had it, unless given (a
// page left open reloads itself; one turned off stays off), and a coordinator's job's front door
// (its workers, started apart, re-join at the journal's port). A resume gave both new ports, and
// turned a dashboard that was off on. Nothing without --resume or a journal.
void keep_the_journals_addresses(TrainOptions& o);

// Creates or re-opens the job directory; refuses a directory of another job and one holding
// records without --resume, before anything in it is touched, and a resumed job's model file or
// data set that is no longer the job's (`data`: what the launcher read of it now). A new job's
// directory is locked (into `lock`, unless it holds one already) before its job.json is written.
// Returns job.json as a resumed job updates it, for the launcher to write with its records
// (nothing when it stays as it is).
std::optional<nlohmann::json> prepare_job_dir(const TrainOptions& o, const DataFacts& data,
                                              std::shared_ptr<JobLock>& lock);

}  // namespace transient::train
