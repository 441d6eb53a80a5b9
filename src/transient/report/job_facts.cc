#include "transient/report/job_facts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

#include "transient/core/duration.h"
#include "transient/core/json_number.h"
#include "transient/core/text.h"
#include "transient/report/internal/step_series.h"

namespace transient::report {
namespace {

// The cost so far from "cost" events: the latest one's cost_usd. The coordinator writes the
// job's whole bill in each (what its earlier runs cost, whatever their market, and this run's so
// far), so the figures of the markets are not to be added: a job paused on spot and resumed on
// on-demand was shown twice its bill.
std::optional<double> cost_from_events(const std::vector<records::Event>& events) {
  std::optional<double> bill;
  for (const auto& e : events) {
    if (e.type == "cost" && e.json.contains("cost_usd") && e.json["cost_usd"].is_number())
      bill = e.number("cost_usd");
  }
  return bill;
}

// The summary if it is the last run's, else null: a job resumed (or continued by another
// coordinator) keeps the summary its earlier run wrote until the new run writes its own, and was
// shown as paused, at the earlier run's speed and cost, all the while it ran.
const records::JobSummary* current_summary(const records::JobRecords& records) {
  if (!records.summary) return nullptr;
  // A coordinator holds the job and its journal does not say the job ended: a run is under way,
  // whatever events it has written yet (a continued coordinator waiting for its workers had
  // written none, and the job was shown paused).
  if (records.coordinator_lock == records::CoordinatorLock::kHeld && records.coordinator &&
      !records.coordinator->value("ended", false)) {
    return nullptr;
  }
  bool a_run_ended = false;
  bool another_began = false;  // after a run's end (events cut short say nothing of it)
  for (const auto& e : records.events) {
    if (e.type == "done" || e.type == "stopped" || e.type == "failed") {
      a_run_ended = true;
      another_began = false;
    } else if (a_run_ended && (e.type == "worker_joined" || e.type == "generation" ||
                               e.type == "coordinator_restarted")) {
      another_began = true;
    }
  }
  return another_began ? nullptr : &*records.summary;
}

// `s`: the summary if current (current_summary).
std::string state_of(const records::JobRecords& records, const records::JobSummary* s,
                     std::string& failure) {
  if (s != nullptr) {
    if (s->failure) {
      failure = *s->failure;
      return "failed";
    }
    if (s->finished) return "finished";
    return "paused";
  }
  if (records.coordinator && records.coordinator->value("ended", false)) return "ended";
  // Nothing says the run ended and no coordinator holds the job: it was killed or crashed (it
  // was shown running for ever, with a time left that never changed). Where the lock cannot be
  // told (another host's file system, no lock file), the job is taken to run.
  if (records.coordinator_lock == records::CoordinatorLock::kFree) return "interrupted";
  return "running";
}

}  // namespace

std::string workers_text(const JobFacts& facts) {
  if (facts.generation >= 0) {
    const std::string members = join(facts.workers);
    return fmt::format("{} in generation {} ({})", facts.workers.size(), facts.generation,
                       members.empty() ? "none" : members);
  }
  if (facts.first_generation_size > 0) {
    return fmt::format("no generation formed yet; the first waits for {}, {} joined",
                       facts.first_generation_size, facts.joined);
  }
  return "no generation formed yet";
}

std::string test_accuracy_text(const JobFacts& facts) {
  std::string text = fmt::format("{:.2f}%", 100.0 * *facts.test_accuracy);
  if (facts.evaluated_step && *facts.evaluated_step != facts.step) {
    text += fmt::format(" (evaluated after step {})", *facts.evaluated_step);
  }
  return text;
}

std::string time_left_text(const JobFacts& facts) {
  if (facts.steps_done) {
    return "its steps are done: the model is being evaluated and its last checkpoint written";
  }
  return "about " + format_duration(*facts.time_left_s) +
         " (the steps left at the pace of the last ones)";
}

std::optional<double> parse_utc_iso8601(const std::string& text) {
  return records::utc_seconds(text);
}

JobFacts job_facts(const records::JobRecords& records, double now_unix_s) {
  JobFacts f;
  f.dir = records.dir;
  f.problems = records.problems;
  const records::JobSummary* const summary = current_summary(records);
  f.state = state_of(records, summary, f.failure);
  if (f.state == "interrupted") {
    // Which command ran the job, its journal says (one of an earlier version does not).
    const std::string dir = shell_word(records.dir);
    const auto& journal = records.coordinator;
    const auto standalone =
        journal && journal->contains("standalone") && (*journal)["standalone"].is_boolean()
            ? std::optional<bool>((*journal)["standalone"].get<bool>())
            : std::nullopt;
    f.continue_with = !standalone ? "transient train --resume --job-dir " + dir +
                                        " if `transient train` ran it, or transient coordinator "
                                        "--job-dir " +
                                        dir + " if a standalone coordinator did"
                      : *standalone
                          ? "transient coordinator --job-dir " + dir + " (its workers re-join it)"
                          : "transient train --resume --job-dir " + dir;
  }
  const auto points = internal::step_points(records.steps, records.events);
  const internal::RankNames names(records.events);
  f.generation = names.last_gen();
  f.workers = names.last_members();
  const records::EventCounts counts = records::count_events(records.events);
  f.recoveries = counts.recoveries;
  f.redone_steps = counts.redone_steps;
  f.revocations = counts.revocations;
  std::set<std::string> joined;  // and not gone
  // Since the last generation formed: the members that left (a resumed run of an earlier
  // version reused the ids), and whether the job waits for a worker (no one trains: no speed, no
  // time left).
  std::set<std::string> left;
  bool waiting = false;
  for (const auto& e : records.events) {
    if (e.type == "worker_joined") joined.insert(e.text("worker"));
    if (e.type == "worker_left") {
      joined.erase(e.text("worker"));
      left.insert(e.text("worker"));
    }
    if (e.type == "generation") {
      waiting = false;
      left.clear();
      // A generation starts at the step its members hold: a resumed run's at its checkpoint's, a
      // rollback's before the divergence (the step was the highest any earlier run reached).
      if (e.json.contains("start_step")) f.step = e.count("start_step", f.step);
    }
    if (e.type == "waiting") waiting = true;
    // A divergence's step never completed (the job stopped before its update).
    if (e.type != "diverged") f.step = std::max(f.step, e.count("step", f.step));
    if (e.type == "checkpoint") {
      f.checkpoint_step = e.count("step");
      const auto written = parse_utc_iso8601(e.time);
      f.checkpoint_age_s =
          written ? std::optional<double>(std::max(0.0, now_unix_s - *written)) : std::nullopt;
    }
    // An epoch's evaluation, or the one at the job's end (-1: there was none); not an epoch's
    // that a later run trained again (its accuracy was shown, evaluated after a step the job
    // went back on).
    if (((e.type == "epoch" && !e.superseded) || e.type == "done") &&
        e.json.contains("test_accuracy") && e.json["test_accuracy"].is_number() &&
        e.number("test_accuracy") >= 0) {
      f.test_accuracy = e.number("test_accuracy");
      f.evaluated_step = e.count("step");
    }
  }
  // The step rows are the freshest word (the events name a step now and then), and hold none
  // that a later start went back on (the rows after its checkpoint are dropped as it starts).
  if (!points.empty()) f.step = std::max(f.step, points.back().step);
  f.workers.erase(std::remove_if(f.workers.begin(), f.workers.end(),
                                 [&](const std::string& id) { return left.count(id) > 0; }),
                  f.workers.end());
  if (!f.checkpoint_step && !records.checkpoints.empty())
    f.checkpoint_step = records.checkpoints.back().step;
  std::int64_t stop_at = 0;  // the run's --stop-at (0: none)
  if (records.coordinator && records.coordinator->contains("job") &&
      (*records.coordinator)["job"].is_object()) {
    const auto& job = (*records.coordinator)["job"];
    if (const auto total = whole_number_in(job.value("total_steps", nlohmann::json()), 0)) {
      f.total_steps = *total;
    }
    if (const auto workers = whole_number_in(job.value("workers", nlohmann::json()), 0)) {
      f.first_generation_size = *workers;
    }
    if (const auto stop = whole_number_in(job.value("stop_at_step", nlohmann::json()), 1)) {
      stop_at = *stop;
    }
  }
  f.joined = static_cast<std::int64_t>(joined.size());
  // While a job runs its speed is that of its last steps; once it ended, the summary's.
  const std::size_t recent = std::min<std::size_t>(points.size(), 20);
  f.samples_per_s =
      waiting ? 0.0 : internal::samples_per_s(points, points.size() - recent, points.size());
  if (waiting) {
    // Nobody trains while the job waits for a worker: no pace to tell the time left by.
  } else if (f.state == "running" && recent > 0 && f.total_steps > f.step) {
    double seconds = 0.0;
    for (std::size_t i = points.size() - recent; i < points.size(); ++i)
      seconds += points[i].duration_s;
    // To the step it pauses after (--stop-at), where it stops before its last.
    const std::int64_t until =
        stop_at > f.step && stop_at < f.total_steps ? stop_at : f.total_steps;
    f.time_left_s = static_cast<double>(until - f.step) * seconds / recent;
  } else if (f.state == "running" && f.total_steps > 0 && f.step >= f.total_steps) {
    f.steps_done = true;
    f.time_left_s = 0.0;
  }
  f.cost_usd = cost_from_events(records.events);
  if (const records::JobSummary* s = summary) {
    f.step = std::max(f.step, s->steps);
    if (s->total_steps > 0) f.total_steps = s->total_steps;
    if (s->samples_per_s > 0) f.samples_per_s = s->samples_per_s;
    f.recoveries = std::max(f.recoveries, s->recoveries);
    f.redone_steps = std::max(f.redone_steps, s->redone_steps);
    f.revocations = std::max(f.revocations, s->revocations);
    if (s->cost_usd) f.cost_usd = s->cost_usd;
    // A finished job's is its last step's; a paused one's its last evaluation's (its step is the
    // events').
    if (s->test_accuracy) f.test_accuracy = s->test_accuracy;
    if (s->test_accuracy && s->finished) f.evaluated_step = s->steps;
  }
  return f;
}

std::string status_text(const JobFacts& f) {
  // What the records say is shown as printable text: a failure's text may quote a worker's.
  std::string out = fmt::format("job {}: {}{}\n", f.dir, f.state,
                                f.failure.empty() ? "" : " (" + printable(f.failure) + ")");
  if (f.state == "interrupted") {
    out += std::string(kInterruptedCause) + "; continue with " + printable(f.continue_with) + "\n";
  }
  out += f.total_steps > 0 ? fmt::format("step {} of {}\n", f.step, f.total_steps)
                           : fmt::format("step {}\n", f.step);
  out += "workers: " + printable(workers_text(f)) + "\n";
  out += fmt::format("samples/s: {:.0f}\n", f.samples_per_s);
  if (f.time_left_s) out += "time left: " + time_left_text(f) + "\n";
  out += fmt::format("recoveries: {} ({} redone), workers lost: {}\n", f.recoveries,
                     counted(f.redone_steps, "step"), f.revocations);
  if (f.checkpoint_step) {
    out += fmt::format(
        "newest checkpoint: step {}{}\n", *f.checkpoint_step,
        f.checkpoint_age_s ? ", " + format_duration(*f.checkpoint_age_s) + " ago" : std::string());
  } else {
    out += "newest checkpoint: none\n";
  }
  out += f.cost_usd ? "cost: " + usd_text(*f.cost_usd) + "\n"
                    : "cost: unknown (the job was given no prices)\n";
  if (f.test_accuracy) out += "test accuracy: " + test_accuracy_text(f) + "\n";
  if (!f.problems.empty()) {
    out +=
        counted(static_cast<long long>(f.problems.size()), "problem") + " reading the records:\n";
    for (const auto& p : f.problems) out += "  " + p.text() + "\n";
  }
  return out;
}

std::string prometheus_text(const JobFacts& f) {
  std::string out;
  const auto metric = [&out](const char* name, const char* type, const char* help, double value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  metric("transient_step", "gauge", "Steps completed.", static_cast<double>(f.step));
  metric("transient_workers", "gauge", "Workers in the latest generation.",
         static_cast<double>(f.workers.size()));
  metric("transient_samples_per_second", "gauge", "Training samples per second.", f.samples_per_s);
  metric("transient_recoveries_total", "counter", "Recoveries from lost workers.",
         static_cast<double>(f.recoveries));
  if (f.checkpoint_age_s) {
    metric("transient_checkpoint_age_seconds", "gauge", "Seconds since the newest checkpoint.",
           *f.checkpoint_age_s);
  }
  if (f.cost_usd)
    metric("transient_cost_usd", "gauge", "What the servers cost so far, USD.", *f.cost_usd);
  if (f.time_left_s) {
    metric("transient_seconds_left", "gauge",
           "Seconds of training left at the pace of the last steps.", *f.time_left_s);
  }
  return out;
}

std::string usd_text(double usd) {
  if (usd == 0 || std::fabs(usd) >= 0.01 || !std::isfinite(usd)) return fmt::format("${:.2f}", usd);
  // Two significant digits in plain decimals ($0.000014, where "{:.2g}" wrote $1.4e-05).
  const int decimals = std::min(12, 1 - static_cast<int>(std::floor(std::log10(std::fabs(usd)))));
  return fmt::format("${:.{}f}", usd, decimals);
}

}  // namespace transient::report
