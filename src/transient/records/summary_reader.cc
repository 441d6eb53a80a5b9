#include "transient/records/summary_reader.h"

#include <type_traits>

#include "transient/core/bounds.h"
#include "transient/core/json_number.h"
#include "transient/records/internal/record_file.h"

namespace transient::records {
namespace {

// What a number of summary.json may be: the writer's figures (launcher.cc finish_job) are never
// negative, and 1e308 would print as inf.
constexpr Bound kSummaryCount{0.0, 1e15, "", true};
constexpr Bound kSummaryFigure{0.0, 1e15};
// A test loss is as large as a diverging model makes it; JSON holds no infinity.
constexpr Bound kSummaryLoss{0.0, 1e300};
// A job not evaluated has null (the writer's number_or_null), never a negative accuracy.
constexpr Bound kSummaryFraction{0.0, 1.0};
constexpr const char* kOrNotEvaluated = ", or null (not evaluated)";

void add_problem(const nlohmann::json& value, const char* key, const std::string& name,
                 const std::string& accepted, std::vector<ReadProblem>& problems) {
  problems.push_back({name, 0,
                      std::string("field \"") + key + "\": unexpected " + excerpt(value.dump()) +
                          (accepted.empty() ? "" : "; accepted: " + accepted)});
}

// Reads field `key` of `json` into `out` when present and not null; a value of another type, or a
// number outside `bound` (which every numeric field passes; `or_else` follows its text in the
// problem), is a problem and leaves `out` as it was.
template <typename T>
void take(const nlohmann::json& json, const char* key, T& out, const std::string& name,
          std::vector<ReadProblem>& problems, const Bound& bound = {}, const char* or_else = "") {
  const auto it = json.find(key);
  if (it == json.end() || it->is_null()) return;
  if constexpr (std::is_same_v<T, std::int64_t>) {
    // A float such as 1e300 is not converted.
    const auto number = whole_number_in(*it, static_cast<std::int64_t>(bound.lo),
                                        static_cast<std::int64_t>(bound.hi));
    if (number) {
      out = *number;
    } else {
      add_problem(*it, key, name, bound.accepted() + or_else, problems);
    }
  } else if constexpr (std::is_same_v<T, double>) {
    if (it->is_number() && bound.contains(it->get<double>())) {
      out = it->get<double>();
    } else {
      add_problem(*it, key, name, bound.accepted() + or_else, problems);
    }
  } else {
    try {
      out = it->get<T>();
    } catch (const nlohmann::json::exception&) {
      add_problem(*it, key, name, "", problems);
    }
  }
}

template <typename T>
void take(const nlohmann::json& json, const char* key, std::optional<T>& out,
          const std::string& name, std::vector<ReadProblem>& problems, const Bound& bound = {},
          const char* or_else = "") {
  T value{};
  const std::size_t before = problems.size();
  if (json.contains(key) && !json[key].is_null()) {
    take(json, key, value, name, problems, bound, or_else);
    if (problems.size() == before) out = value;
  }
}

}  // namespace

SummaryRead parse_summary(const std::string& text, const std::string& name) {
  SummaryRead read;
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    read.problems.push_back({name, 0, "not a JSON object (cut short or garbled)"});
    return read;
  }
  JobSummary s;
  auto& p = read.problems;
  take(json, "steps", s.steps, name, p, kSummaryCount);
  take(json, "total_steps", s.total_steps, name, p, kSummaryCount);
  take(json, "epochs", s.epochs, name, p, kSummaryFigure);
  take(json, "test_accuracy", s.test_accuracy, name, p, kSummaryFraction, kOrNotEvaluated);
  take(json, "test_loss", s.test_loss, name, p, kSummaryLoss);
  take(json, "wall_s", s.wall_s, name, p, kSummaryFigure);
  take(json, "samples_per_s", s.samples_per_s, name, p, kSummaryFigure);
  take(json, "model", s.model, name, p);
  take(json, "dataset", s.dataset, name, p);
  take(json, "global_batch", s.global_batch, name, p, kSummaryCount);
  take(json, "finished", s.finished, name, p);
  take(json, "stopped", s.stopped, name, p);
  take(json, "failure", s.failure, name, p);
  take(json, "diverged_at_step", s.diverged_at_step, name, p, kSummaryCount);
  take(json, "generations", s.generations, name, p, kSummaryCount);
  take(json, "revocations", s.revocations, name, p, kSummaryCount);
  take(json, "recoveries", s.recoveries, name, p, kSummaryCount);
  take(json, "redone_steps", s.redone_steps, name, p, kSummaryCount);
  take(json, "cost_usd", s.cost_usd, name, p, kSummaryFigure);
  // A summary of an earlier version says only whether the job stopped: it finished where it
  // trained all its steps (it read as paused).
  if (!json.contains("finished")) {
    s.finished = !s.stopped && !s.failure && s.total_steps > 0 && s.steps >= s.total_steps;
  }
  s.json = json;
  read.summary = std::move(s);
  return read;
}

SummaryRead read_summary(const std::string& path) {
  const auto file = internal::read_record_file(path);
  if (!file.text) return {std::nullopt, {*file.problem}};
  return parse_summary(*file.text, path);
}

}  // namespace transient::records
