#include "transient/report/study_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "transient/core/bounds.h"
#include "transient/core/duration.h"
#include "transient/core/error.h"
#include "transient/core/json_number.h"
#include "transient/report/html_page.h"
#include "transient/report/internal/charts.h"

namespace transient::report {
namespace {

using internal::color;
using internal::number_text;
using nlohmann::json;
using Rows = std::vector<std::vector<std::string>>;

std::string chart_js_of(const ReportOptions& options) {
  return read_chart_js(options.chart_js_path.empty() ? default_chart_js_path()
                                                     : options.chart_js_path);
}

// The number at `key` of `object`; throws InputError naming the file and the field otherwise.
double number_at(const json& object, const char* key, const std::string& name) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    throw InputError(name, 0, std::string("field \"") + key + "\" is missing or not a number");
  }
  return it->get<double>();
}

// A deadline on a histogram of times: where (in the edges' unit) and the legend of the runs past
// it.
struct Deadline {
  double at = 0.0;
  std::string legend;
};

// A histogram {"edges": [b0..bn], "counts": [c1..cn]} as a bar chart with one bar per bin. With
// a deadline, the bins wholly past it are drawn in red: every run in them missed it (the bin that
// holds the deadline may hold both kinds, and keeps the first colour). A histogram of no values
// ({"edges": [], "counts": []}: the times when no run finished) is the paragraph `empty_note`.
void add_histogram(HtmlPage& page, const std::string& id, const json& histogram,
                   const std::string& what, double scale, const std::string& name,
                   const std::string& empty_note,
                   const std::optional<Deadline>& deadline = std::nullopt) {
  const auto all_numbers = [](const json& list) {
    return std::all_of(list.begin(), list.end(), [](const json& x) { return x.is_number(); });
  };
  const bool empty = histogram.is_object() && histogram.contains("edges") &&
                     histogram.contains("counts") && histogram["edges"].is_array() &&
                     histogram["counts"].is_array() && histogram["edges"].empty() &&
                     histogram["counts"].empty();
  if (empty) {
    page.add_paragraph(empty_note, "note");
    return;
  }
  if (!histogram.is_object() || !histogram.contains("edges") || !histogram.contains("counts") ||
      !histogram["edges"].is_array() || !histogram["counts"].is_array() ||
      histogram["edges"].size() != histogram["counts"].size() + 1 ||
      !all_numbers(histogram["edges"]) || !all_numbers(histogram["counts"])) {
    throw InputError(name, 0,
                     "histogram of " + what +
                         ": expected {\"edges\": [n+1 numbers], "
                         "\"counts\": [n numbers]} (both empty when there is no value)");
  }
  // The edges with one decimal more than the bins' width needs, so that no two bins read alike
  // (runs of an on-demand cluster within seconds of each other gave bins labelled 3.98-3.98).
  double narrowest = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i + 1 < histogram["edges"].size(); ++i) {
    const double width =
        (histogram["edges"][i + 1].get<double>() - histogram["edges"][i].get<double>()) / scale;
    if (width > 0) narrowest = std::min(narrowest, width);
  }
  const int decimals =
      std::isfinite(narrowest)
          ? std::clamp(static_cast<int>(std::ceil(-std::log10(narrowest))) + 1, 0, 9)
          : 3;
  std::vector<std::string> labels;
  json counts = json::array();
  json late = json::array();  // the bins wholly past the deadline
  for (std::size_t i = 0; i < histogram["counts"].size(); ++i) {
    const double from = histogram["edges"][i].get<double>();
    const double to = histogram["edges"][i + 1].get<double>();
    labels.push_back(fmt::format("{:.{}f}-{:.{}f}", from / scale, decimals, to / scale, decimals));
    const bool past = deadline && from >= deadline->at;
    counts.push_back(past ? json() : histogram["counts"][i]);
    late.push_back(past ? histogram["counts"][i] : json());
  }
  json datasets = json::array({internal::bars("runs", counts, color(0))});
  if (deadline) {
    datasets.push_back(internal::bars(deadline->legend, late, color(3)));
  }
  // Stacked, so that each bin's one bar stays over its label.
  page.add_chart(id, internal::bar_chart("distribution of " + what, labels, what, "runs",
                                         std::move(datasets), deadline.has_value()));
}

// P(miss deadline) of `figures`, where the study or plan `j` set a deadline: without one, no
// run can miss it, and a 0 would read as a promise.
std::string miss_text(const json& j, double probability) {
  return j.contains("deadline_s") ? number_text(probability) : "- (no deadline set)";
}

void render_monte_carlo(HtmlPage& page, const json& j, const std::string& name) {
  page.add_heading("Summary");
  const double runs = number_at(j, "runs", name);
  Rows rows = {{"runs", number_text(runs)},
               {"finished", number_text(number_at(j, "finished", name))},
               {"failed", number_text(number_at(j, "failed", name))},
               {"P(miss deadline)", miss_text(j, number_at(j, "deadline_miss_probability", name))}};
  if (j.contains("deadline_s"))
    rows.push_back({"deadline", format_duration(number_at(j, "deadline_s", name))});
  page.add_table({"", ""}, rows);
  Rows stats;
  for (const auto& [key, label, scale] :
       {std::tuple{"time_s", "time (h)", 3600.0}, std::tuple{"cost_usd", "cost ($)", 1.0},
        std::tuple{"revocations", "revocations", 1.0},
        std::tuple{"redone_steps", "redone steps", 1.0}}) {
    if (!j.contains(key) || !j[key].is_object())
      throw InputError(name, 0, std::string("field \"") + key + "\" is missing");
    const json& d = j[key];
    // A time that never comes (more unfinished runs than the percentile leaves) is -1.
    auto figure = [&](const char* statistic) {
      const double value = number_at(d, statistic, name);
      return value < 0 ? std::string("never") : number_text(value / scale);
    };
    stats.push_back({label, figure("mean"), figure("p50"), figure("p95"), figure("p99")});
  }
  page.add_table({"", "mean", "p50", "p95", "p99"}, stats);
  page.add_heading("Distributions");
  if (!j.contains("histograms")) {
    page.add_paragraph(
        "This output has no histograms (made by an older transient); run "
        "`transient simulate --runs N --json` again to draw them.",
        "note");
    return;
  }
  const json& h = j["histograms"];
  std::optional<Deadline> deadline;
  if (j.contains("deadline_s")) {
    const double at = number_at(j, "deadline_s", name);
    deadline = Deadline{at, "runs past the deadline (" + format_duration(at) + ")"};
  }
  add_histogram(page, "time", h.value("time_s", json()), "time (h)", 3600.0, name,
                "No run finished: there is no distribution of the time to draw.", deadline);
  add_histogram(page, "cost", h.value("cost_usd", json()), "cost ($)", 1.0, name,
                "No run was simulated: there is no distribution of the cost to draw.");
}

// A study of several regions (`[[regions]]`): the policy's runs against the multi-region optimum
// on the same markets.
void render_regions(HtmlPage& page, const json& j, const std::string& name) {
  if (!j["regions"].is_array()) throw InputError(name, 0, "field \"regions\" is not a list");
  std::string regions;
  for (const auto& region : j["regions"]) {
    regions += (regions.empty() ? "" : ", ") +
               (region.is_string() ? region.get<std::string>() : region.dump());
  }
  if (!j.contains("optimal") || !j["optimal"].is_object()) {
    throw InputError(name, 0, "field \"optimal\" is missing (the multi-region optimum)");
  }
  const json& optimal = j["optimal"];
  page.add_heading("Summary");
  // null when no run's optimum meets the deadline (then there is no ratio to show).
  const bool no_optimum = j.contains("cost_over_optimal") && j["cost_over_optimal"].is_null();
  Rows rows = {
      {"regions", regions},
      {"market policy", j.value("market_policy", std::string("-"))},
      {"runs", number_text(number_at(j, "runs", name))},
      {"finished", number_text(number_at(j, "finished", name))},
      {"P(miss deadline)", miss_text(j, number_at(j, "deadline_miss_probability", name))},
      {"cost / optimal", no_optimum ? std::string("none: no schedule meets the deadline")
                                    : number_text(number_at(j, "cost_over_optimal", name)) +
                                          " (mean over the " +
                                          number_text(number_at(j, "runs_with_optimum", name)) +
                                          " runs the optimum meets the deadline)"},
      {"moves between regions, a run",
       number_text(number_at(j, "mean_moves", name)) + " (optimal " +
           number_text(number_at(optimal, "mean_moves", name)) + ")"}};
  if (j.contains("deadline_s"))
    rows.push_back({"deadline", format_duration(number_at(j, "deadline_s", name))});
  page.add_table({"", ""}, rows);
  auto statistic = [&](const json& object, const char* key, const char* which, double scale) {
    if (!object.contains(key) || !object[key].is_object())
      throw InputError(name, 0, std::string("field \"") + key + "\" is missing");
    const double value = number_at(object[key], which, name);
    return value < 0 ? std::string("never") : number_text(value / scale);
  };
  Rows stats;
  const char* kStatistics[] = {"mean", "p50", "p95", "p99"};
  std::vector<std::string> policy_row = {"cost of the policy ($)"};
  std::vector<std::string> optimal_row = {"cost of the optimum ($)"};
  std::vector<std::string> time_row = {"time of the policy (h)"};
  json policy_costs = json::array();
  json optimal_costs = json::array();
  for (const char* which : kStatistics) {
    policy_row.push_back(statistic(j, "cost_usd", which, 1.0));
    optimal_row.push_back(no_optimum ? std::string("none")
                                     : statistic(optimal, "cost_usd", which, 1.0));
    time_row.push_back(statistic(j, "time_s", which, 3600.0));
    policy_costs.push_back(number_at(j["cost_usd"], which, name));
    if (!no_optimum) optimal_costs.push_back(number_at(optimal["cost_usd"], which, name));
  }
  page.add_table({"", "mean", "p50", "p95", "p99"}, {policy_row, optimal_row, time_row});
  page.add_heading("Cost against the optimum");
  json series = json::array(
      {internal::bars(j.value("market_policy", std::string("policy")), policy_costs, color(0))});
  if (!no_optimum) series.push_back(internal::bars("optimal", optimal_costs, color(2)));
  page.add_chart(
      "cost",
      internal::bar_chart(no_optimum ? "cost of the runs (no schedule meets the deadline)"
                                     : "cost of the runs: the policy and the multi-region optimum",
                          {"mean", "p50", "p95", "p99"}, "statistic", "USD", series, false));
}

// The servers a run's timeline names (their indices run from 0). Throws InputError naming the
// file `name` for an index past kMostServers (a run requests a few thousand at the most).
constexpr int kMostServers = 100000;

// The server a timeline event names (-1: the job's own, as when it names none). Throws InputError
// naming the file `name` for anything else (an index past kMostServers, a float, text).
int server_of(const json& event, const std::string& name) {
  const auto server = event.find("server");
  if (server == event.end()) return -1;
  const auto index = whole_number_in(*server, -1, kMostServers - 1);
  if (!index) {
    throw InputError(name, 0,
                     "a timeline event of server " + server->dump().substr(0, 32) +
                         "; accepted: servers 0.." + std::to_string(kMostServers - 1) +
                         " (-1 for the job's own events)");
  }
  return static_cast<int>(*index);
}

std::size_t server_count(const json& timeline, const std::string& name) {
  int most = -1;
  for (const auto& e : timeline) most = std::max(most, server_of(e, name));
  return static_cast<std::size_t>(most + 1);
}

// A run's servers over time, a lane per place in the cluster (a server requested while another
// is gone takes its place, so that a long run of revocations keeps as many lanes as the cluster
// has servers): starting (requested to ready), running, under a preemption notice, and how each
// ended (revoked, released); and a lane for the job's own events (the policy's decisions,
// checkpoints, the end). Hours on the x axis.
json run_lanes(const json& timeline, const std::string& name) {
  const std::size_t servers = server_count(timeline, name);
  std::vector<std::optional<std::size_t>> place_of(servers);
  std::vector<std::vector<int>> places;  // the servers of each place, in turn
  std::vector<std::size_t> vacant;       // places whose server is gone
  std::vector<std::string> first_detail;
  const auto place = [&](int server, const std::string& detail) {
    auto& known = place_of[static_cast<std::size_t>(server)];
    if (known) return *known;
    if (!vacant.empty()) {
      known = vacant.front();
      vacant.erase(vacant.begin());
      places[*known].push_back(server);
    } else {
      known = places.size();
      places.push_back({server});
      first_detail.push_back(detail);
    }
    return *known;
  };
  struct Open {
    std::string state;
    double from = 0.0;
  };
  std::vector<std::optional<Open>> open(servers);
  std::map<std::string, json> bars;  // state or event -> bars, y the server (-1: the job)
  double end_h = 0.0;
  const auto close = [&](std::size_t server, double t) {
    if (!open[server]) return;
    bars[open[server]->state].push_back(
        {{"x", {open[server]->from, t}}, {"y", static_cast<int>(server)}});
    open[server].reset();
  };
  for (const auto& e : timeline) {
    const double t = number_at(e, "time_s", name) / 3600.0;
    end_h = std::max(end_h, t);
    const std::string event = e.value("event", "");
    const int server = server_of(e, name);
    if (server < 0) {
      bars[event].push_back({{"x", {t, t}}, {"y", -1}});
      continue;
    }
    const auto s = static_cast<std::size_t>(server);
    const std::size_t at = place(server, e.value("detail", ""));
    if (event == "requested" || event == "ready" || event == "notice") {
      close(s, t);
      open[s] = Open{event == "requested" ? "starting"
                     : event == "ready"   ? "running"
                                          : "under notice",
                     t};
    } else {
      if (event == "revoked" || event == "released") {
        close(s, t);
        vacant.push_back(at);
      }
      bars[event].push_back({{"x", {t, t}}, {"y", server}});
    }
  }
  for (std::size_t s = 0; s < servers; ++s) close(s, end_h);
  // A place's label: its one server and what it is, or its servers in turn.
  std::vector<std::string> labels;
  for (std::size_t k = 0; k < places.size(); ++k) {
    std::vector<std::string> names;
    for (const int server : places[k]) names.push_back(std::to_string(server));
    labels.push_back(names.size() == 1 ? "server " + names[0] +
                                             (first_detail[k].empty() ? "" : ": " + first_detail[k])
                                       : "servers " + internal::in_turn(names));
  }
  const std::string job_lane = "job";
  for (auto& [label, data] : bars) {
    for (auto& bar : data) {
      const int server = bar["y"];
      bar["y"] = server < 0 ? job_lane : labels[*place_of[static_cast<std::size_t>(server)]];
    }
  }
  labels.push_back(job_lane);
  const std::map<std::string, std::string> colours = {
      {"starting", "#bbbbbb"}, {"running", "#2ca02c"},  {"under notice", "#ff7f0e"},
      {"revoked", "#d62728"},  {"released", "#1f77b4"}, {"decision", "#9467bd"},
      {"done", "#000000"},     {"deadline", "#8c564b"}, {"checkpoint", "#17becf"}};
  json datasets = json::array();
  std::size_t other = 5;
  // Spans first, so that the events' ticks are drawn over them.
  for (const bool spans : {true, false}) {
    for (auto& [label, data] : bars) {
      const bool span = label == "starting" || label == "running" || label == "under notice";
      if (span != spans) continue;
      const auto known = colours.find(label);
      datasets.push_back(internal::lane_bars(
          label, data, known != colours.end() ? known->second : color(other++), !spans));
    }
  }
  return internal::lanes_chart(
      "servers over time (one that replaces another in its lane), and the job's events", labels,
      "hours", std::move(datasets));
}

// The lanes a run_lanes chart draws: the cluster's places and the job's.
std::size_t lane_count(const json& chart) { return chart["data"]["labels"].size(); }

void render_one_run(HtmlPage& page, const json& j, const std::string& name) {
  page.add_heading("Summary");
  Rows rows;
  for (const auto& [key, value] : j.items()) {
    if (key == "timeline") continue;
    rows.push_back({key, value.is_number_float() ? number_text(value.get<double>())
                         : value.is_string()     ? value.get<std::string>()
                                                 : value.dump()});
  }
  page.add_table({"", ""}, rows);
  page.add_heading("Timeline");
  json lanes = run_lanes(j["timeline"], name);
  const int height = 60 + 34 * static_cast<int>(lane_count(lanes)) + 60;
  page.add_chart("timeline", std::move(lanes), height);
  Rows table;
  for (const auto& e : j["timeline"]) {
    // The job's own events (a decision, its end) name no server: "-1" was shown.
    const int server = server_of(e, name);
    table.push_back({number_text(number_at(e, "time_s", name) / 3600.0), e.value("event", ""),
                     server < 0 ? std::string() : std::to_string(server), e.value("detail", "")});
  }
  page.add_table({"hours", "event", "server", "detail"}, table);
}

// One run of a study of several regions (`simulate SCENARIO --json` with `[[regions]]`): its
// summary and where the job ran, a lane per region, from its decisions (one a `tick_s`; a tick of
// region null is the job idle before its first start). Hours on the x axis.
void render_one_region_run(HtmlPage& page, const json& j, const std::string& name) {
  if (!j["ticks"].is_array()) throw InputError(name, 0, "field \"ticks\" is not a list");
  if (!j.contains("regions") || !j["regions"].is_array()) {
    throw InputError(name, 0, "field \"regions\" is missing or not a list");
  }
  const double tick_s = number_at(j, "tick_s", name);
  if (!(tick_s > 0)) throw InputError(name, 0, "field \"tick_s\" is not a positive number");
  page.add_heading("Summary");
  Rows rows;
  for (const auto& [key, value] : j.items()) {
    if (key == "ticks") continue;
    std::string text;
    if (key == "regions") {
      for (const auto& region : value) {
        text += (text.empty() ? "" : ", ") +
                (region.is_string() ? region.get<std::string>() : region.dump());
      }
    } else {
      text = value.is_number_float() ? number_text(value.get<double>())
             : value.is_string()     ? value.get<std::string>()
                                     : value.dump();
    }
    rows.push_back({key, text});
  }
  page.add_table({"", ""}, rows);
  page.add_heading("Regions over time");
  std::vector<std::string> lanes;
  for (const auto& region : j["regions"]) {
    lanes.push_back(region.is_string() ? region.get<std::string>() : region.dump());
  }
  // Consecutive ticks alike are one span; a span's mode picks its dataset.
  std::map<std::string, json> spans;
  Rows table;
  const json& ticks = j["ticks"];
  for (std::size_t i = 0; i < ticks.size();) {
    const json& tick = ticks[i];
    if (!tick.is_object() || !tick.contains("mode") || !tick["mode"].is_string() ||
        !tick.contains("region") || !(tick["region"].is_string() || tick["region"].is_null())) {
      throw InputError(name, 0,
                       "tick " + std::to_string(i) +
                           ": expected {\"mode\": text, \"region\": a region's name or null}");
    }
    std::size_t end = i + 1;
    while (end < ticks.size() && ticks[end] == tick) ++end;
    const double from_h = i * tick_s / 3600.0;
    const double to_h = end * tick_s / 3600.0;
    const std::string mode = tick["mode"].get<std::string>();
    const std::string region = tick["region"].is_string() ? tick["region"].get<std::string>() : "";
    if (!region.empty()) {
      if (std::find(lanes.begin(), lanes.end(), region) == lanes.end()) {
        throw InputError(name, 0,
                         "tick " + std::to_string(i) + " names region \"" + region +
                             "\", which is not one of \"regions\"");
      }
      spans[mode].push_back({{"x", {from_h, to_h}}, {"y", region}});
    }
    table.push_back({number_text(from_h), region.empty() ? mode : mode + " in " + region});
    i = end;
  }
  json datasets = json::array();
  std::size_t next = 0;
  for (auto& [mode, data] : spans) {
    datasets.push_back(internal::lane_bars(mode, std::move(data), color(next++)));
  }
  const int height = 60 + 34 * static_cast<int>(lanes.size()) + 60;
  page.add_chart(
      "regions",
      internal::lanes_chart("where the job ran, by its decisions every " + format_duration(tick_s),
                            lanes, "hours", std::move(datasets)),
      height);
  page.add_table({"hours", "from then on"}, table);
}

// The time and cost a candidate is judged by: the simulated ones when it was simulated.
std::pair<double, double> time_and_cost(const json& e) {
  const bool simulated = e.value("simulated", false) && e.value("expected_time_s", -1.0) >= 0;
  return {simulated ? e.value("expected_time_s", -1.0) : e.value("predicted_time_s", -1.0),
          simulated ? e.value("expected_cost_usd", -1.0) : e.value("predicted_cost_usd", -1.0)};
}

json plan_points(const json& list) {
  json points = json::array();
  for (const auto& e : list) {
    const auto [time_s, cost] = time_and_cost(e);
    if (time_s >= 0 && cost >= 0) points.push_back(internal::xy(time_s / 3600.0, cost));
  }
  return points;
}

std::string hours_text(double seconds) { return seconds < 0 ? "-" : number_text(seconds / 3600.0); }

}  // namespace

bool is_simulation_output(const json& j) {
  return j.is_object() && j.contains("scenario") &&
         (j.contains("runs") || j.contains("timeline") || j.contains("ticks"));
}

bool is_plan_output(const json& j) {
  return j.is_object() && j.contains("candidates") && j.contains("pareto") &&
         j.contains("feasible");
}

std::string render_simulation_report(const json& j, const std::string& name,
                                     const ReportOptions& options) {
  const std::string chart_js = chart_js_of(options);
  HtmlPage page("transient simulate: " + j.value("scenario", std::string("scenario")) + " (" +
                name + ")");
  if (j.contains("timeline")) {
    if (!j["timeline"].is_array()) throw InputError(name, 0, "field \"timeline\" is not a list");
    render_one_run(page, j, name);
  } else if (j.contains("ticks")) {
    render_one_region_run(page, j, name);
  } else if (j.contains("regions")) {
    render_regions(page, j, name);
  } else {
    render_monte_carlo(page, j, name);
  }
  return page.render(chart_js);
}

namespace {

// The heading of the quantile of time that a plan writes as "p95_time_s": the quantile at its
// "confidence" (`plan --confidence`), named as the CLI names it ("p80 time (h)", "p99.6 time
// (h)"); p95, the default, when the file says none.
std::string plan_quantile_heading(const json& j, const std::string& name) {
  double share = 0.95;
  if (j.contains("confidence")) {
    const Bound accepted{0.01, 0.999, ""};
    if (!j["confidence"].is_number() || !accepted.contains(j["confidence"].get<double>())) {
      throw InputError(name, 0,
                       "field \"confidence\" is " + j["confidence"].dump() +
                           "; accepted: " + accepted.accepted() + " (plan --confidence)");
    }
    share = j["confidence"].get<double>();
  }
  // Three decimals of a percent, the trailing zeros dropped, as plan::format_quantile writes it.
  std::string digits = fmt::format("{:.3f}", share * 100);
  digits.erase(digits.find_last_not_of('0') + 1);
  if (digits.back() == '.') digits.pop_back();
  return "p" + digits + " time (h)";
}

}  // namespace

std::string render_plan_report(const json& j, const std::string& name,
                               const ReportOptions& options) {
  const std::string chart_js = chart_js_of(options);
  for (const char* key : {"candidates", "pareto", "baselines"}) {
    if (j.contains(key) && !j[key].is_array())
      throw InputError(name, 0, std::string("field \"") + key + "\" is not a list");
  }
  const std::string quantile = plan_quantile_heading(j, name);
  HtmlPage page("transient plan (" + name + ")");
  page.add_heading("Summary");
  Rows rows = {{"feasible", j.value("feasible", false) ? "yes" : "no"},
               {"reason", j.value("reason", "")},
               {"steps", j.contains("steps") && j["steps"].is_number()
                             ? number_text(j["steps"].get<double>())
                             : "-"}};
  if (j.contains("deadline_s") && j["deadline_s"].is_number())
    rows.push_back({"deadline", format_duration(j["deadline_s"].get<double>())});
  if (j.contains("budget_usd") && j["budget_usd"].is_number())
    rows.push_back({"budget ($)", number_text(j["budget_usd"].get<double>())});
  const json recommended = j.value("recommended", json());
  rows.push_back(
      {"recommended", recommended.is_object() ? recommended.value("configuration", "") : "none"});
  if (recommended.is_object()) {
    // What the CLI prints under "recommended": its figures, its verdict and the policy to run.
    const auto [time_s, cost] = time_and_cost(recommended);
    rows.push_back({"expected time (h)", hours_text(time_s)});
    rows.push_back({quantile, hours_text(recommended.value("p95_time_s", -1.0))});
    rows.push_back({"expected cost ($)", cost < 0 ? "-" : number_text(cost)});
    rows.push_back(
        {"P(miss deadline)", miss_text(j, recommended.value("deadline_miss_probability", 0.0))});
    rows.push_back({"verdict", recommended.value("verdict", "")});
    const json policy = recommended.value("policy", json());
    if (policy.is_object() && policy.contains("text") && policy["text"].is_string())
      rows.push_back({"policy", policy["text"].get<std::string>()});
  }
  page.add_table({"", ""}, rows);
  page.add_heading("Time against cost");
  // Chart.js draws the first dataset on top: the recommended plan first, larger.
  json sets = json::array();
  if (recommended.is_object()) {
    sets.push_back(
        internal::series("recommended", plan_points(json::array({recommended})), color(2), false));
    sets.back()["pointRadius"] = 7;
  }
  const bool no_candidates = !j.contains("candidates") || j["candidates"].empty();
  if (!no_candidates) {
    sets.push_back(internal::series("candidates", plan_points(j["candidates"]), color(0), false));
  }
  if (j.contains("baselines"))
    sets.push_back(internal::series("baselines", plan_points(j["baselines"]), color(7), false));
  json front = plan_points(j["pareto"]);
  std::sort(front.begin(), front.end(), [](const json& a, const json& b) {
    return a["x"].get<double>() < b["x"].get<double>();
  });
  sets.push_back(internal::series("Pareto front", front, color(3)));
  page.add_chart("pareto",
                 internal::xy_chart("expected time against expected cost (simulated where "
                                    "simulated, else predicted)",
                                    "hours", "USD", sets),
                 400);
  // The candidates, then the baselines the chart marks in grey (all on-demand, cheapest spot,
  // DeepVM's two rules), each named by its label.
  const auto add_plans = [&](const char* heading, const json& list) {
    page.add_heading(heading);
    Rows table;
    for (const auto& e : list) {
      const auto [time_s, cost] = time_and_cost(e);
      table.push_back(
          {e.value("label", ""), e.value("configuration", ""),
           number_text(e.value("usd_per_h", 0.0)), hours_text(time_s),
           hours_text(e.value("p95_time_s", -1.0)), cost < 0 ? "-" : number_text(cost),
           j.contains("deadline_s") ? number_text(e.value("deadline_miss_probability", 0.0)) : "-",
           e.value("acceptable", false) ? "yes" : "no", e.value("verdict", "")});
    }
    page.add_table({"label", "configuration", "$/h", "time (h)", quantile, "cost ($)", "P(miss)",
                    "acceptable", "verdict"},
                   table, {0});  // "plan\n1" read as two words
  };
  if (no_candidates) {
    // As the CLI says it: no table of headers alone.
    page.add_heading("Candidates");
    page.add_paragraph("none: no configuration meets the request, even without revocations");
  } else {
    add_plans("Candidates", j["candidates"]);
  }
  if (j.contains("baselines")) add_plans("Baselines", j["baselines"]);
  return page.render(chart_js);
}

}  // namespace transient::report
