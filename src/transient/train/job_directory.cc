// The job directory as a coordinator opens it: job_directory.h. Torch-free.
#include "transient/train/job_directory.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/records/job_files.h"
#include "transient/records/summary_reader.h"
#include "transient/train/channel.h"
#include "transient/train/option_fields.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;

nlohmann::json job_identity(const TrainOptions& o) {
  return {{"model", o.model},
          {"dataset", o.dataset},
          {"global_batch", o.global_batch},
          {"seed", o.seed},
          {"train_subset", o.train_subset}};
}

// The fields of `o` kept as `kept` (option_fields.h): job.json's "settings" (what the job
// computes, which --resume keeps, so that a resumed job is the same job whatever flags are left
// out) or "launch" (how it is run, which a resumed job keeps unless a flag says otherwise; the
// workers' device is the machine's, and not kept, and their threads are kept as given: 0 is
// the cores of the machine each run is on).
nlohmann::json kept_fields(const TrainOptions& o, Kept kept) {
  nlohmann::json json = nlohmann::json::object();
  visit_option_fields(o, [&](const OptionField& field, const auto& value, const auto&) {
    if (field.kept == kept) json[field.key] = field_json(value);
  });
  return json;
}

nlohmann::json job_settings(const TrainOptions& o) { return kept_fields(o, Kept::kSettings); }
nlohmann::json launch_settings(const TrainOptions& o) { return kept_fields(o, Kept::kLaunch); }

// The launch settings a resumed job takes from job.json, each unless its flag is given; the
// number of workers only where the command starts them (`transient train`: a coordinator's
// --min-workers is its own).
void adopt_launch_settings(const nlohmann::json& launch, bool starts_workers,
                           const std::function<bool(const std::string&)>& given, TrainOptions& o) {
  visit_option_fields(o, [&](const OptionField& field, auto& value, const auto&) {
    if (field.kept != Kept::kLaunch || given(field.flag)) return;
    if (field.key == std::string_view("workers") && !starts_workers) return;
    value = field_value(launch, field.key, std::optional(value));  // absent: as it is
  });
}

}  // namespace

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y%m%d-%H%M%S", &tm);
  return text;
}

void write_private_file(const std::string& path, const std::string& contents) {
  try {
    write_file_atomically(path, contents, 0600);
  } catch (const InputError& error) {
    throw InputError(path, 0, "cannot create the job token file (" + error.message() + ")");
  }
}

void adopt_job_settings(TrainOptions& o, bool starts_workers) {
  const std::string job_json = records::JobFiles(o.job_dir).job();
  if (!o.resume || !fs::exists(job_json)) return;
  const auto recorded = load_json_file(job_json);
  if (!recorded.contains("settings") || !recorded.at("settings").is_object()) return;
  const auto& settings = recorded.at("settings");
  const auto mine = job_settings(o);
  const auto given = [&o](const std::string& flag) { return o.given(flag); };
  // A job that diverged goes on at a lower learning rate when one is given (the advice its
  // failure printed); every other setting is the job's.
  const auto summary = records::read_summary(records::JobFiles(o.job_dir).summary()).summary;
  const bool diverged = summary && summary->diverged_at_step.value_or(0) > 0;
  const double asked_lr = o.lr;
  // How the job being resumed stands on `key`, in its flags' terms: a length in steps has no
  // epochs (its "epochs" is the unused default), one in epochs no steps, a global batch no
  // per-worker batch. nullopt: its value, as recorded.
  const auto counted_in_steps = settings.value("steps", nlohmann::json(0)) != nlohmann::json(0);
  const auto in_its_terms = [&](const std::string& key) -> std::optional<std::string> {
    if (key == "epochs" && counted_in_steps) {
      return settings.at("steps").dump() + " steps (--steps), not epochs";
    }
    if (key == "steps" && !counted_in_steps && settings.contains("epochs")) {
      return settings.at("epochs").dump() + " epochs (--epochs), not a count of steps";
    }
    if (key == "per_worker_batch" && settings.value("per_worker_batch", nlohmann::json(0)) == 0 &&
        settings.contains("global_batch")) {
      return "a global batch of " + settings.at("global_batch").dump() + " (--global-batch)";
    }
    return std::nullopt;
  };
  visit_option_fields(o, [&](const OptionField& field, const auto&, const auto&) {
    const std::string key = field.key;
    if (field.kept != Kept::kSettings || key == "data_dir" || key == "val_data") return;
    if (diverged && key == "lr") return;
    if (!given(field.flag) || !settings.contains(key)) return;
    // A model file that has moved: given at its new place (its SHA-256 is checked against the
    // job's once the job directory is opened).
    if (key == "model" && settings.at(key).is_string() &&
        is_model_file(settings.at(key).get<std::string>()) && is_model_file(o.model)) {
      return;
    }
    const std::string flag = field.flag;
    const auto theirs = in_its_terms(key);
    // --epochs 2 for a job of steps matched the unused default, and was silently ignored.
    if (!theirs && mine.at(key) == settings.at(key)) return;
    throw InputError(job_json, 0,
                     flag + " is " + mine.at(key).dump() + " here but " +
                         (theirs ? "the job being resumed trains " + *theirs
                                 : settings.at(key).dump() + " in the job being resumed") +
                         "; a resumed job keeps its settings: drop " + flag +
                         ", or start a new job in another --job-dir");
  });
  try {
    visit_option_fields(o, [&](const OptionField& field, auto& value, const auto& absent) {
      const std::string key = field.key;
      if (field.kept != Kept::kSettings || key == "data_dir" || key == "val_data") return;
      if (key == "model" && given("--model")) return;  // a model file at its new place (above)
      value = field_value(settings, field.key, absent);
    });
    // Where the data is: where it was, unless a folder is given (the data has moved); a job of
    // an earlier version did not record it.
    if (!given("--data-dir") && o.data.empty()) {
      o.data_dir = settings.value("data_dir", o.data_dir);
    }
    if (!given("--val-data")) o.val_data = settings.value("val_data", o.val_data);
    if (diverged && given("--lr")) o.resume_lr = asked_lr;
    if (recorded.contains("launch") && recorded.at("launch").is_object()) {
      adopt_launch_settings(recorded.at("launch"), starts_workers, given, o);
    }
  } catch (const std::exception& error) {  // a JSON error, or a name not in the table
    throw InputError(job_json, 0, std::string("its settings are damaged: ") + error.what());
  }
}

JobLock::JobLock(const std::string& job_dir) {
  const std::string path = records::JobFiles(job_dir).lock();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    throw InputError(path, 0, std::string("cannot be opened: ") + std::strerror(errno));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    if (error != EWOULDBLOCK) {
      throw InputError(path, 0, std::string("cannot be locked: ") + std::strerror(error));
    }
    // Its pid as its journal says, if that process lives (a coordinator that has just taken
    // the job may not have written its own yet).
    std::string pid;
    try {
      const long journaled = load_coordinator_journal(records::JobFiles(job_dir).coordinator()).pid;
      if (journaled > 0 && ::kill(static_cast<pid_t>(journaled), 0) == 0) {
        pid = " (pid " + std::to_string(journaled) + ")";
      }
    } catch (const InputError&) {
    }
    throw InputError(job_dir, 0,
                     "the job is running: its coordinator" + pid +
                         " holds the job directory; accepted: one coordinator a job (wait for "
                         "it to end, or pause it with Ctrl-C)");
  }
}

JobLock::~JobLock() { ::close(fd_); }

std::uint16_t the_journals_port(const CoordinatorJournal& journal,
                                const std::string& journal_path) {
  return parse_endpoint(journal.front_door, journal_path).port;
}

std::string the_journals_dashboard(const CoordinatorJournal& journal,
                                   const std::string& journal_path) {
  if (journal.dashboard.empty()) return "off";
  return parse_endpoint(journal.dashboard, journal_path).text();
}

void keep_the_journals_addresses(TrainOptions& o) {
  const std::string journal_path = records::JobFiles(o.job_dir).coordinator();
  if (!o.resume || !fs::exists(journal_path)) return;
  const auto journal = load_coordinator_journal(journal_path);
  if (journal.standalone && !o.given("--port")) {
    if (!o.given("--bind")) o.bind = parse_endpoint(journal.front_door, journal_path).host;
    o.port = the_journals_port(journal, journal_path);
    o.port_or_another = true;
  }
  if (!o.given("--dashboard")) {
    o.dashboard = the_journals_dashboard(journal, journal_path);
    o.dashboard_or_another = true;
  }
}

std::optional<nlohmann::json> prepare_job_dir(const TrainOptions& o, const DataFacts& data,
                                              std::shared_ptr<JobLock>& lock) {
  const std::string job_json = records::JobFiles(o.job_dir).job();
  if (fs::exists(o.job_dir) && !fs::is_directory(o.job_dir)) {
    throw InputError(o.job_dir, 0, "--job-dir: exists and is not a directory");
  }
  const bool existing = fs::is_directory(o.job_dir) && records::JobFiles(o.job_dir).holds_records();
  if (existing && !o.resume) {
    throw InputError(o.job_dir, 0,
                     "the job directory already holds a job's records; pass --resume to continue "
                     "that job, or choose another --job-dir");
  }
  if (!existing && o.resume) {
    throw InputError(o.job_dir, 0,
                     "--resume: the job directory holds no job to continue (no job.json); drop "
                     "--resume to start a new job there");
  }
  if (existing) {
    if (!fs::exists(job_json)) {
      throw InputError(job_json, 0, "missing: the directory holds records of an unknown job");
    }
    const auto recorded = load_json_file(job_json);
    const auto identity = job_identity(o);
    for (auto& [key, value] : identity.items()) {
      // A model file that moved is the job's by its SHA-256 (below), wherever it is now.
      if (key == "model" && recorded.contains(key) && recorded.at(key).is_string() &&
          recorded.contains("model_sha256") &&
          same_model(recorded.at(key).get<std::string>(), o.model)) {
        continue;
      }
      if (!recorded.contains(key) || recorded.at(key) != value) {
        throw InputError(job_json, 0,
                         "the job directory belongs to another job: " + key + " is " +
                             (recorded.contains(key) ? recorded.at(key).dump() : "absent") +
                             " there, " + value.dump() +
                             " here; choose another --job-dir or "
                             "pass the same --model, --dataset, --global-batch and --seed");
      }
    }
    // A finished job has nothing to continue: resuming it would train no step and write its
    // summary and a "done" event again, over the figures of the run that trained it.
    const std::string summary_path = records::JobFiles(o.job_dir).summary();
    const auto read = records::read_summary(summary_path);
    // Written whole or not at all (atomically): damaged, it cannot say whether the job finished,
    // and a finished job resumed over it trained nothing and wrote its summary anew, the run
    // that trained it forgotten.
    if (fs::exists(summary_path) && !read.problems.empty()) {
      throw InputError(read.problems.front().text() +
                       "; it says whether the job finished and what its runs did: restore it, "
                       "or remove it to resume from the newest checkpoint");
    }
    const auto& summary = read.summary;
    if (summary && summary->finished) {
      throw InputError(summary_path, 0,
                       "the job has finished (step " + std::to_string(summary->steps) + " of " +
                           std::to_string(summary->total_steps) +
                           "); there is nothing to continue, and its records are left as they "
                           "are; drop --resume and choose another --job-dir for a new job");
    }
    // A model file or data set changed since the job started would go on from its checkpoint
    // with another network or other samples (a forward changed under the same tensors trained
    // on silently; a folder of more images changed the epoch's order mid-epoch).
    if (recorded.contains("model_sha256") && recorded.at("model_sha256") != o.model_sha256) {
      throw InputError(o.model, 0,
                       "--model: not the model file the job started with (SHA-256 " +
                           recorded.at("model_sha256").get<std::string>() + " then, " +
                           o.model_sha256 +
                           " now); put that file back, or start a new job in another --job-dir");
    }
    if (const auto then = recorded.find("data"); then != recorded.end()) {
      if (!then->is_object()) throw InputError(job_json, 0, "\"data\" is not an object");
      DataFacts started;
      try {
        started = data_facts_from_json(*then);
      } catch (const nlohmann::json::exception& error) {
        throw InputError(job_json, 0, std::string("\"data\": ") + error.what());
      }
      // A job started before the test set was recorded is compared on the rest.
      if (started.test_samples == 0) started.test_samples = data.test_samples;
      if (!(started == data)) {
        // Only the test set differs, and it is a folder of its own: that folder is named.
        DataFacts trained_on = started;
        trained_on.test_samples = data.test_samples;
        const bool in_validation = !o.val_data.empty() && trained_on == data;
        throw InputError(in_validation ? o.val_data : o.data_dir, 0,
                         "not the data set the job started with (" + to_text(started) + " then, " +
                             to_text(data) + " now); give the job's data set (" +
                             (in_validation ? "--val-data" : "--data-dir") +
                             "), or start a new job in another --job-dir");
      }
    }
    // The data or the model file has moved (given on --resume), or a launch flag says how the
    // job runs from now on: the next resume does the same.
    if (recorded.contains("settings") && recorded.at("settings").is_object()) {
      auto updated = recorded;
      updated["model"] = o.model;
      updated["settings"]["model"] = o.model;
      updated["settings"]["data_dir"] = o.data_dir;
      updated["settings"]["val_data"] = o.val_data;
      updated["launch"] = launch_settings(o);
      if (updated != recorded) return updated;
    }
    return std::nullopt;
  }
  std::error_code error;
  fs::create_directories(o.job_dir, error);
  if (error) {
    throw InputError(o.job_dir, 0, "--job-dir: cannot be made (" + error.message() + ")");
  }
  if (!lock) lock = std::make_shared<JobLock>(o.job_dir);  // before its first file
  auto identity = job_identity(o);
  identity["settings"] = job_settings(o);
  identity["launch"] = launch_settings(o);
  identity["created_utc"] = utc_stamp();
  // What --resume checks the model file and the data set against.
  if (!o.model_sha256.empty()) identity["model_sha256"] = o.model_sha256;
  identity["data"] = to_json(data);
  write_file_atomically(job_json, identity.dump(2) + "\n");
  return std::nullopt;
}

}  // namespace transient::train
