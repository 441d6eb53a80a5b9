#include "transient/report/job_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "transient/core/duration.h"
#include "transient/core/text.h"
#include "transient/report/html_page.h"
#include "transient/report/internal/charts.h"
#include "transient/report/internal/step_series.h"
#include "transient/report/job_facts.h"

namespace transient::report {
namespace {

using internal::color;
using internal::number_text;
using internal::series;
using internal::xy;
using internal::xy_chart;
using nlohmann::json;
using Rows = std::vector<std::vector<std::string>>;

// A field's value for a table cell: strings without their quotes.
std::string cell(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return number_text(value.get<double>());
  return value.dump();
}

// A setting of job.json as the page shows it: the settings that 0 or "" leaves to a default (the
// flags' help of `transient train` says which) say what decided instead, so that "steps 0" of a
// job that ran 938 steps reads "0 (not given: the epochs decide)"; and one that another of the
// job's `settings` overrides says so (the epochs of a job given --steps).
std::string setting_cell(const std::string& key, const json& value, const json& settings) {
  static const std::map<std::string, std::string, std::less<>> kNotGiven = {
      {"steps", "not given: the epochs decide"},
      {"per_worker_batch", "not given: the global batch holds"},
      {"image_size", "not given: the first image's shorter side"},
      {"train_subset", "all"},
      {"test_subset", "all"},
      {"clip_grad_norm", "never"},
      {"val_data", "not given: the data set's test set, or a tenth held out"}};
  // --steps decides the job's length over --epochs, which keeps its default.
  if (key == "epochs" && settings.contains("steps") && settings["steps"].is_number() &&
      settings["steps"].get<double>() > 0) {
    return cell(value) + " (not used: the steps decide)";
  }
  const auto meaning = kNotGiven.find(key);
  const bool unset = (value.is_number() && value.get<double>() == 0) ||
                     (value.is_string() && value.get<std::string>().empty());
  if (meaning == kNotGiven.end() || !unset) return cell(value);
  return (value.is_string() ? std::string("\"\"") : cell(value)) + " (" + meaning->second + ")";
}

// A chart of the job over its steps or seconds, drawn from its start (x from 0) and, where
// `from_none`, its y from 0: Chart.js centres a single point, or a flat line, in an axis of its
// own (a job evaluated once was a dot in steps 399..401; a steady speed a line in an axis of
// 9,214.2857142857 .. 9,214.2857142858).
json job_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
               json datasets, bool from_none) {
  json chart = xy_chart(title, x_label, y_label, std::move(datasets));
  json& scales = chart["options"]["scales"];
  scales["x"]["min"] = 0;
  if (from_none) scales["y"]["min"] = 0;
  return chart;
}

// The workers a recovery lost, as words ("w0, w2"); anything else as its JSON.
std::string lost_text(const json& lost) {
  if (!lost.is_array()) return cell(lost);
  std::string text;
  for (const auto& worker : lost) {
    text += (text.empty() ? "" : ", ") +
            (worker.is_string() ? worker.get<std::string>() : cell(worker));
  }
  return text;
}

// A long job's steps drawn in groups of consecutive steps (means), so that a page of a 100,000-step
// job stays a few megabytes and quick to draw: at most `most` groups of [begin, end) indices.
std::vector<std::pair<std::size_t, std::size_t>> step_groups(std::size_t steps, std::size_t most) {
  const std::size_t size = std::max<std::size_t>(1, (steps + most - 1) / most);
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  for (std::size_t begin = 0; begin < steps; begin += size)
    groups.emplace_back(begin, std::min(steps, begin + size));
  return groups;
}
constexpr std::size_t kMostPoints = 3000;  // per line
constexpr std::size_t kMostBars = 800;     // per bar chart

// The places of the cluster, as the membership events tell them: a worker that joins while a
// lost one is not yet replaced takes its place (a replacement), any other a place of its own; a
// worker stopped on purpose is not lost. So a long job on spot servers has as many places as
// its cluster, however many replacements it had.
struct Places {
  std::vector<std::vector<std::string>> workers;  // of each place, in turn
  std::map<std::string, std::size_t> index;       // worker -> its place

  // The place of `worker`: its own, or for a worker not seen before a vacant one if `vacant` is
  // given and holds one (taken from it), else a new one.
  std::size_t of(const std::string& worker, std::vector<std::size_t>* vacant = nullptr) {
    if (const auto known = index.find(worker); known != index.end()) return known->second;
    if (vacant != nullptr && !vacant->empty()) {
      const std::size_t taken = vacant->front();
      vacant->erase(vacant->begin());
      workers[taken].push_back(worker);
      return index[worker] = taken;
    }
    workers.push_back({worker});
    return index[worker] = workers.size() - 1;
  }

  // A place's workers in turn ("w1 -> w3"; internal::in_turn).
  std::string label(std::size_t place) const {
    return internal::in_turn(workers[place], "workers");
  }
};

Places cluster_places(const std::vector<records::Event>& events) {
  Places places;
  std::vector<std::size_t> vacant;  // places of lost workers not replaced yet
  for (const auto& e : events) {
    const std::string worker = e.text("worker");
    if ((e.type == "worker_joined" || e.type == "worker_rejoined") && !worker.empty()) {
      places.of(worker, e.type == "worker_joined" ? &vacant : nullptr);
    } else if (e.type == "generation" && e.json.contains("members")) {
      for (const auto& m : e.json["members"]) {
        if (m.is_string()) places.of(m.get<std::string>());
      }
    } else if ((e.type == "worker_left" || e.type == "worker_failed") && !worker.empty()) {
      const std::size_t place = places.of(worker);
      const std::string reason = e.type == "worker_failed" ? "failed" : e.text("reason");
      if (reason != "stopped") vacant.push_back(place);
    }
  }
  return places;
}

// What a page is drawn from: the records and the figures derived from them once.
struct Job {
  const records::JobRecords& records;
  std::vector<internal::StepPoint> points;
  internal::RankNames names;
  JobFacts facts;
  Places places;  // of the cluster: the membership's lanes, the phases' charts
};

void add_problems(HtmlPage& page, const std::vector<records::ReadProblem>& problems) {
  if (problems.empty()) return;
  page.add_heading(fmt::format("Problems reading the records ({})", problems.size()));
  page.add_paragraph(
      "These lines could not be read and are left out of everything below; the rest is shown.",
      "note");
  for (const auto& p : problems) page.add_paragraph(p.text(), "problem");
}

void add_summary(HtmlPage& page, const Job& job) {
  const JobFacts& f = job.facts;
  page.add_heading("Summary");
  const std::string why = !f.failure.empty()         ? ": " + f.failure
                          : f.state == "interrupted" ? std::string(" (") + kInterruptedCause + ")"
                                                     : std::string();
  Rows rows = {{"state", f.state + why}};
  if (!f.continue_with.empty()) rows.push_back({"continue with", f.continue_with});
  rows.push_back({"step", f.total_steps > 0 ? fmt::format("{} of {}", f.step, f.total_steps)
                                            : std::to_string(f.step)});
  rows.push_back({"samples/s", number_text(f.samples_per_s)});
  if (f.time_left_s) rows.push_back({"time left", time_left_text(f)});
  rows.push_back(
      {"recoveries", fmt::format("{} ({} redone)", f.recoveries, counted(f.redone_steps, "step"))});
  rows.push_back({"workers lost", std::to_string(f.revocations)});
  rows.push_back({"cost", f.cost_usd ? usd_text(*f.cost_usd) : "unknown (no prices)"});
  if (f.test_accuracy) rows.push_back({"test accuracy", test_accuracy_text(f)});
  rows.push_back({"workers", workers_text(f)});
  if (f.checkpoint_step) {
    rows.push_back({"newest checkpoint",
                    fmt::format("step {}{}", *f.checkpoint_step,
                                f.checkpoint_age_s ? ", " + format_duration(*f.checkpoint_age_s) +
                                                         " before this page"
                                                   : std::string())});
  }
  page.add_table({"", ""}, rows);
  if (job.records.summary) {
    Rows summary;
    for (const auto& [key, value] : job.records.summary->json.items())
      summary.push_back({key, cell(value)});
    page.add_paragraph("summary.json:");
    page.add_table({"field", "value"}, summary);
  } else {
    page.add_paragraph("No summary.json: the job is running or ended without one.", "note");
  }
  if (job.records.job && job.records.job->contains("settings") &&
      (*job.records.job)["settings"].is_object()) {
    const json& given = (*job.records.job)["settings"];
    Rows settings;
    for (const auto& [key, value] : given.items()) {
      settings.push_back({key, setting_cell(key, value, given)});
    }
    page.add_paragraph("Settings (job.json):");
    page.add_table({"setting", "value"}, settings);
  }
}

// Loss and accuracy against step and time: the training loss of every step (steps.csv) and the
// evaluations (every *_loss and *_accuracy field) at the end of epochs (events "epoch") and of the
// job (the "done" event: a job ends mid-epoch when --steps says so, and is evaluated there). An
// epoch that a resumed run trained again is its last run's (both runs' points were drawn).
void add_training(HtmlPage& page, const Job& job) {
  page.add_heading("Training");
  json loss_by_step = json::array(), loss_by_time = json::array();
  for (const auto& [begin, end] : step_groups(job.points.size(), kMostPoints)) {
    double sum = 0.0;
    int finite = 0;
    for (std::size_t i = begin; i < end; ++i) {
      if (std::isfinite(job.points[i].loss)) sum += job.points[i].loss, ++finite;
    }
    if (finite == 0) continue;
    const auto& last = job.points[end - 1];
    loss_by_step.push_back(xy(static_cast<double>(last.step), sum / finite));
    loss_by_time.push_back(xy(last.t, sum / finite));
  }
  std::map<std::string, std::pair<json, json>> evaluations;  // field -> (by step, by time)
  for (const auto& e : job.records.events) {
    const bool final = e.type == "done";
    if ((e.type != "epoch" || e.superseded) && !final) continue;
    for (const auto& [key, value] : e.json.items()) {
      const bool loss = key.size() > 5 && key.compare(key.size() - 5, 5, "_loss") == 0;
      const bool accuracy = key.size() > 9 && key.compare(key.size() - 9, 9, "_accuracy") == 0;
      if ((!loss && !accuracy) || !value.is_number() || key == "train_loss") continue;
      if (final && value.get<double>() < 0) continue;  // -1: the job was not evaluated
      auto& [by_step, by_time] = evaluations[key];
      if (by_step.is_null()) by_step = json::array(), by_time = json::array();
      // A job that ends with an epoch was evaluated once there: one point.
      if (final && !by_step.empty() && by_step.back()["x"] == e.number("step")) continue;
      by_step.push_back(xy(e.number("step"), value.get<double>()));
      by_time.push_back(xy(e.t, value.get<double>()));
    }
  }
  // An accuracy is a fraction, drawn on 0..1 whatever its values.
  const auto add_pair = [&](const std::string& id, const std::string& what, json by_step_sets,
                            json by_time_sets) {
    const bool accuracy = id == "accuracy";
    auto by_step =
        job_chart(what + " against step", "step", what, std::move(by_step_sets), accuracy);
    auto by_time = job_chart(what + " against time", "seconds since the start", what,
                             std::move(by_time_sets), accuracy);
    if (accuracy) {
      for (json* chart : {&by_step, &by_time}) (*chart)["options"]["scales"]["y"]["max"] = 1;
    }
    page.add_chart(id + "-step", std::move(by_step));
    page.add_chart(id + "-time", std::move(by_time));
  };
  json loss_step = json::array(), loss_time = json::array();
  json accuracy_step = json::array(), accuracy_time = json::array();
  if (!loss_by_step.empty()) {
    loss_step.push_back(series("training loss", loss_by_step, color(0)));
    loss_time.push_back(series("training loss", loss_by_time, color(0)));
  }
  std::size_t colour = 1;
  for (auto& [key, sets] : evaluations) {
    const bool loss = key.find("_loss") != std::string::npos;
    (loss ? loss_step : accuracy_step).push_back(series(key, sets.first, color(colour), false));
    (loss ? loss_time : accuracy_time).push_back(series(key, sets.second, color(colour), false));
    ++colour;
  }
  if (!loss_step.empty()) {
    add_pair("loss", "loss", loss_step, loss_time);
  } else {
    page.add_paragraph("No loss recorded: steps.csv has no readable row.", "note");
  }
  if (!accuracy_step.empty()) {
    add_pair("accuracy", "accuracy", accuracy_step, accuracy_time);
  } else {
    page.add_paragraph(
        "No accuracy recorded yet: the job evaluates at the end of each epoch and when it "
        "finishes.",
        "note");
  }
}

void add_throughput(HtmlPage& page, const Job& job) {
  page.add_heading("Samples per second");
  if (job.points.empty()) {
    page.add_paragraph("No step timings recorded.", "note");
    return;
  }
  // Over windows of about 1% of the steps, from the steps' own durations.
  const std::size_t window = std::max<std::size_t>(1, job.points.size() / 100);
  json points = json::array();
  for (std::size_t i = 0; i < job.points.size(); i += window) {
    const std::size_t end = std::min(job.points.size(), i + window);
    points.push_back(xy(job.points[end - 1].t, internal::samples_per_s(job.points, i, end)));
  }
  page.add_chart(
      "samples-per-s",
      job_chart("samples/s over time (from the step timings)", "seconds since the start",
                "samples/s", json::array({series("samples/s", points, color(2))}), true));
}

// Lanes of the membership timeline, one per place in the cluster (cluster_places): each
// worker's time joined (waiting for a generation), training, and how it left; one more lane for
// the recoveries.
void add_membership(HtmlPage& page, const Job& job) {
  page.add_heading("Membership");
  const auto& events = job.records.events;
  if (events.empty()) {
    page.add_paragraph("No events recorded.", "note");
    return;
  }
  const Places& places = job.places;
  struct Open {
    std::string state;
    double from = 0.0;
  };
  std::map<std::string, Open> open;
  std::map<std::string, std::vector<json>> segments;  // state -> bars (y: the worker)
  const auto close = [&](const std::string& worker, double t) {
    auto it = open.find(worker);
    if (it == open.end()) return;
    segments[it->second.state].push_back({{"x", {it->second.from, t}}, {"y", worker}});
    open.erase(it);
  };
  double end_t = 0.0;
  for (const auto& e : events) {
    end_t = std::max(end_t, e.t);
    const std::string worker = e.text("worker");
    if (e.type == "worker_rejoined" && !worker.empty()) {
      // A member re-joining a restarted coordinator trained on meanwhile, in its generation (no
      // generation event follows: it was drawn waiting for the rest of the job).
      if (open.count(worker) && open[worker].state == "training") continue;
      close(worker, e.t);
      open[worker] = {"training", e.t};
    } else if (e.type == "worker_joined" && !worker.empty()) {
      close(worker, e.t);
      open[worker] = {"joined", e.t};
    } else if (e.type == "stopped" || e.type == "done" || e.type == "failed" ||
               e.type == "job_failed") {
      // The run ended: its workers went with it (they were drawn training through a pause).
      while (!open.empty()) close(open.begin()->first, e.t);
    } else if (e.type == "generation" && e.json.contains("members")) {
      for (const auto& m : e.json["members"]) {
        if (!m.is_string()) continue;
        const std::string id = m.get<std::string>();
        if (open.count(id) && open[id].state == "training") continue;
        close(id, e.t);
        open[id] = {"training", e.t};
      }
    } else if ((e.type == "worker_left" || e.type == "worker_failed") && !worker.empty()) {
      close(worker, e.t);
      const std::string reason = e.type == "worker_failed" ? "failed" : e.text("reason");
      segments["left: " + (reason.empty() ? std::string("unknown") : reason)].push_back(
          {{"x", {e.t, e.t}}, {"y", worker}});
    }
  }
  for (const auto& [worker, place] : places.index) close(worker, end_t);
  const std::string recovery_lane = "recoveries";
  Rows recovery_rows;
  for (const auto& e : events) {
    if (e.type != "recovery") continue;
    const double duration = e.number("duration_s");
    segments["recovery"].push_back({{"x", {e.t - duration, e.t}}, {"y", recovery_lane}});
    recovery_rows.push_back({number_text(e.t), cell(e.json.value("gen", json())), e.text("cause"),
                             lost_text(e.json.value("lost", json())),
                             number_text(e.number("detect_s")), number_text(e.number("reform_s")),
                             number_text(duration), std::to_string(e.count("redone_steps"))});
  }
  // The lanes' labels replace the ids.
  std::vector<std::string> labels;
  for (std::size_t place = 0; place < places.workers.size(); ++place) {
    labels.push_back(places.label(place));
  }
  std::map<std::string, std::string> lane_label;  // worker -> its lane's label
  for (const auto& [worker, place] : places.index) lane_label[worker] = labels[place];
  if (!recovery_rows.empty()) labels.push_back(recovery_lane);
  const std::map<std::string, std::string> colours = {{"joined", "#bbbbbb"},
                                                      {"training", "#2ca02c"},
                                                      {"left: preempted", "#ff7f0e"},
                                                      {"left: failed", "#d62728"},
                                                      {"left: silent", "#9467bd"},
                                                      {"left: stopped", "#1f77b4"},
                                                      {"left: unreachable", "#8c564b"},
                                                      {"left: misconfigured", "#7f7f7f"},
                                                      {"recovery", "#000000"}};
  json datasets = json::array();
  std::size_t other = 5;
  for (auto& [state, bars] : segments) {
    for (auto& bar : bars) {
      const std::string id = bar["y"];
      if (lane_label.count(id)) bar["y"] = lane_label[id];
    }
    const auto known = colours.find(state);
    datasets.push_back(
        internal::lane_bars(state, bars, known != colours.end() ? known->second : color(other++)));
  }
  json config = internal::lanes_chart(
      "workers over time (a replacement in the lane of the worker it replaces)", labels,
      "seconds since the start", std::move(datasets));
  page.add_chart("membership", config, 60 + 34 * static_cast<int>(labels.size()) + 60);
  if (!recovery_rows.empty()) {
    page.add_paragraph(
        "Recoveries (duration_s: from the first sign of the loss to the first step "
        "of the new generation):");
    page.add_table({"t (s)", "generation", "cause", "lost", "detect_s", "reform_s", "duration_s",
                    "redone_steps"},
                   recovery_rows);
  }
  Rows changes;
  static const std::set<std::string> kShown = {"worker_joined",     "worker_rejoined",
                                               "worker_left",       "worker_failed",
                                               "generation_failed", "revocation_injected",
                                               "generation",        "recovery",
                                               "diverged",          "done",
                                               "stopped",           "failed",
                                               "job_failed",        "coordinator_restarted"};
  for (const auto& e : events) {
    if (!kShown.count(e.type)) continue;
    std::string details;
    for (const auto& [key, value] : e.json.items()) {
      if (key == "t" || key == "time" || key == "event") continue;
      // An empty text says nothing ("checkpoint=" of a generation that loads none).
      if (value.is_string() && value.get<std::string>().empty()) continue;
      details += (details.empty() ? "" : ", ") + key + "=" + cell(value);
    }
    changes.push_back({number_text(e.t), e.time, e.type, details});
  }
  page.add_paragraph("Membership events:");
  page.add_table({"t (s)", "time (UTC)", "event", "details"}, changes, {0, 1, 2});
}

// Each step's phases per worker, and the stragglers: the member with the most data + compute
// seconds in a step (the others wait for it in the all-reduce).
void add_phases(HtmlPage& page, const Job& job) {
  page.add_heading("Where the steps' time went");
  page.add_paragraph(
      "The straggler of a step is the worker with the most data + compute seconds: "
      "the others wait for it in the all-reduce. Long jobs are drawn in groups of "
      "consecutive steps (their means).",
      "note");
  const auto& rows = job.records.steps;
  if (rows.empty()) {
    page.add_paragraph("No step timings recorded.", "note");
    return;
  }
  static const std::array<const char*, 4> kPhases = {"data_s", "compute_s", "allreduce_s",
                                                     "optimizer_s"};
  const auto phase = [](const records::StepRow& r, std::size_t i) {
    return i == 0 ? r.data_s : i == 1 ? r.compute_s : i == 2 ? r.allreduce_s : r.optimizer_s;
  };
  std::vector<std::string> workers;
  std::map<std::string, std::map<std::int64_t, const records::StepRow*>> by_worker;
  for (const auto& r : rows) {
    const std::string w = job.names.worker_of(r.gen, r.rank, r.step);
    if (!by_worker.count(w)) workers.push_back(w);
    by_worker[w][r.step] = &r;
  }
  const auto groups = step_groups(job.points.size(), kMostBars);
  std::vector<std::string> step_labels;
  for (const auto& [begin, end] : groups) {
    const auto first = job.points[begin].step, last = job.points[end - 1].step;
    step_labels.push_back(first == last ? std::to_string(first)
                                        : fmt::format("{}-{}", first, last));
  }
  // Mean of each phase per worker.
  json means = json::array();
  for (std::size_t i = 0; i < kPhases.size(); ++i) {
    json values = json::array();
    for (const auto& w : workers) {
      double sum = 0.0;
      for (const auto& [step, r] : by_worker[w]) sum += phase(*r, i);
      values.push_back(sum / static_cast<double>(by_worker[w].size()));
    }
    means.push_back(internal::bars(kPhases[i], values, color(i)));
  }
  page.add_chart("phases-mean", internal::bar_chart("mean seconds per step, by phase and worker",
                                                    workers, "worker", "seconds", means, true));
  // Each step's phases, a chart per place in the cluster (its workers in turn: a long job's
  // replacements would otherwise be a chart each).
  Places places = job.places;
  for (const auto& w : workers) places.of(w);  // workers the events do not name
  for (std::size_t k = 0; k < places.workers.size(); ++k) {
    std::map<std::int64_t, const records::StepRow*> steps;
    for (const auto& w : places.workers[k]) {
      const auto rows_of = by_worker.find(w);
      if (rows_of != by_worker.end()) steps.insert(rows_of->second.begin(), rows_of->second.end());
    }
    if (steps.empty()) continue;  // a worker that trained no step
    json sets = json::array();
    for (std::size_t i = 0; i < kPhases.size(); ++i) {
      json values = json::array();
      for (const auto& [begin, end] : groups) {
        double sum = 0.0;
        int trained = 0;
        for (std::size_t p = begin; p < end; ++p) {
          const auto it = steps.find(job.points[p].step);
          if (it != steps.end()) sum += phase(*it->second, i), ++trained;
        }
        values.push_back(trained == 0 ? json() : json(sum / trained));
      }
      sets.push_back(internal::bars(kPhases[i], values, color(i)));
    }
    page.add_chart("phases-" + std::to_string(k),
                   internal::bar_chart("phases of each step: " + places.label(k), step_labels,
                                       "step", "seconds", sets, true),
                   260);
  }
  json slowest = json::array(), median = json::array();
  std::map<std::string, int> slowest_count;
  for (const auto& p : job.points)
    ++slowest_count[job.names.worker_of(p.gen, p.slowest_rank, p.step)];
  for (const auto& [begin, end] : step_groups(job.points.size(), kMostPoints)) {
    double slow = 0.0, middle = 0.0;
    for (std::size_t i = begin; i < end; ++i) {
      slow += job.points[i].slowest_busy_s;
      middle += job.points[i].median_busy_s;
    }
    const double n = static_cast<double>(end - begin);
    const double step = static_cast<double>(job.points[end - 1].step);
    slowest.push_back(xy(step, slow / n));
    median.push_back(xy(step, middle / n));
  }
  page.add_chart("stragglers",
                 job_chart("stragglers: data + compute seconds of each step's slowest worker",
                           "step", "seconds",
                           json::array({series("slowest worker", slowest, color(3)),
                                        series("median worker", median, color(0))}),
                           true));
  Rows table;
  for (const auto& w : workers) {
    const int n = slowest_count.count(w) ? slowest_count[w] : 0;
    table.push_back({w, std::to_string(by_worker[w].size()), std::to_string(n),
                     fmt::format("{:.0f}%", 100.0 * n / static_cast<double>(job.points.size()))});
  }
  page.add_table({"worker", "steps trained", "steps as the slowest", "share of all steps"}, table);
}

void add_checkpoints(HtmlPage& page, const Job& job) {
  page.add_heading("Checkpoints");
  std::map<std::int64_t, const records::CheckpointEntry*> kept;
  for (const auto& c : job.records.checkpoints) kept[c.step] = &c;
  json write_s = json::array(), megabytes = json::array();
  Rows table;
  std::set<std::int64_t> listed;
  for (const auto& e : job.records.events) {
    if (e.type != "checkpoint") continue;
    const auto step = e.count("step");
    const auto it = kept.find(step);
    const double bytes =
        it != kept.end() ? static_cast<double>(it->second->bytes) : e.number("bytes");
    write_s.push_back(xy(e.t, e.number("write_s")));
    megabytes.push_back(xy(e.t, bytes / 1e6));
    table.push_back({std::to_string(step), number_text(e.t), e.time,
                     number_text(e.number("write_s")), fmt::format("{:.0f}", bytes),
                     it != kept.end() ? "kept" : "removed"});
    listed.insert(step);
  }
  for (const auto& c : job.records.checkpoints) {
    if (listed.count(c.step)) continue;
    table.push_back({std::to_string(c.step), "", "", "", std::to_string(c.bytes), "kept"});
  }
  if (table.empty()) {
    page.add_paragraph("No checkpoint recorded.", "note");
    return;
  }
  if (!write_s.empty()) {
    json config = job_chart("checkpoints: when, how long, how big", "seconds since the start",
                            "seconds to write",
                            json::array({series("seconds to write", write_s, color(4), false),
                                         series("MB", megabytes, color(5), false)}),
                            true);
    config["data"]["datasets"][1]["yAxisID"] = "size";
    config["options"]["scales"]["size"] = {{"type", "linear"},
                                           {"position", "right"},
                                           {"min", 0},
                                           {"title", {{"display", true}, {"text", "MB"}}},
                                           {"grid", {{"drawOnChartArea", false}}}};
    page.add_chart("checkpoints", config, 260);
  }
  page.add_table({"step", "t (s)", "time (UTC)", "write_s", "bytes", "in manifest.json"}, table,
                 {2});
}

// The job's bill over time, from its "cost" events, and what each market took of it. Each event
// holds the market its run bills at and the job's whole bill so far (cost_usd: what the earlier
// runs cost, whatever their market, and this run's), so the bill is the events' figures and what
// an event adds to the one before it was spent at its market. A job that ran on one market is
// one line; one paused on spot and resumed on on-demand is the bill's line ("all markets") and a
// line per market, each with a point at every event (flat while the job ran on another), that
// add up to the bill (each market's figures were drawn as its own bill: the bill twice over).
void add_cost(HtmlPage& page, const Job& job) {
  page.add_heading("Cost");
  std::vector<const records::Event*> billed;
  std::vector<std::string> markets;  // in the order the job ran on them
  const auto market_of = [](const records::Event& e) {
    return e.text("market").empty() ? std::string("market not recorded") : e.text("market");
  };
  for (const auto& e : job.records.events) {
    if (e.type != "cost" || !e.json.contains("cost_usd") || !e.json["cost_usd"].is_number())
      continue;
    billed.push_back(&e);
    if (std::find(markets.begin(), markets.end(), market_of(e)) == markets.end())
      markets.push_back(market_of(e));
  }
  if (billed.empty()) {
    page.add_paragraph(job.facts.cost_usd
                           ? fmt::format("The job cost {}; it recorded no cost over time.",
                                         usd_text(*job.facts.cost_usd))
                           : "No prices: this job was not given its servers' prices, so its cost "
                             "is unknown.",
                       "note");
    return;
  }
  json bill = json::array();
  std::vector<json> spent_points(markets.size(), json::array());
  std::vector<double> spent_usd(markets.size(), 0.0);
  double before_usd = 0.0;
  for (const records::Event* e : billed) {
    const double bill_usd = e->number("cost_usd");
    const auto m = static_cast<std::size_t>(
        std::find(markets.begin(), markets.end(), market_of(*e)) - markets.begin());
    spent_usd[m] += bill_usd - before_usd;
    before_usd = bill_usd;
    bill.push_back(xy(e->t, bill_usd));
    for (std::size_t i = 0; i < markets.size(); ++i)
      spent_points[i].push_back(xy(e->t, spent_usd[i]));
  }
  json sets = json::array();
  if (markets.size() == 1) {
    sets.push_back(series(markets.front(), bill, color(0)));
  } else {
    sets.push_back(series("all markets", bill, color(0)));
    for (std::size_t i = 0; i < markets.size(); ++i)
      sets.push_back(series(markets[i], spent_points[i], color(i + 1)));
  }
  page.add_chart("cost",
                 xy_chart("cost over time by market", "seconds since the start", "USD", sets));
}

double now_or_clock(double now_unix_s) {
  if (now_unix_s > 0) return now_unix_s;
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string render_job_report(const records::JobRecords& records, const ReportOptions& options) {
  const std::string chart_js = read_chart_js(options.chart_js_path.empty() ? default_chart_js_path()
                                                                           : options.chart_js_path);
  Job job{records, internal::step_points(records.steps, records.events),
          internal::RankNames(records.events), job_facts(records, now_or_clock(options.now_unix_s)),
          cluster_places(records.events)};
  HtmlPage page("transient report: " + records.dir);
  add_problems(page, records.problems);
  add_summary(page, job);
  add_training(page, job);
  add_throughput(page, job);
  add_membership(page, job);
  add_phases(page, job);
  add_checkpoints(page, job);
  add_cost(page, job);
  return page.render(chart_js);
}

std::string render_job_report(const std::string& job_dir, const ReportOptions& options) {
  return render_job_report(records::read_job_records(job_dir), options);
}

}  // namespace transient::report
