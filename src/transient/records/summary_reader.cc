#include "transient/records/summary_reader.h"

#include <type_traits>

#include "transient/core/json_number.h"
#include "transient/records/internal/record_file.h"

namespace transient::records {
namespace {

// Reads field `key` of `json` into `out` when present and not null; a value of another type is a
// problem and leaves `out` as it was.
template <typename T>
void take(const nlohmann::json& json, const char* key, T& out, const std::string& name,
          std::vector<ReadProblem>& problems) {
  const auto it = json.find(key);
  if (it == json.end() || it->is_null()) return;
  try {
    if constexpr (std::is_same_v<T, std::int64_t>) {
      out = whole_number(*it, key);  // a float such as 1e300 is not converted
    } else {
      out = it->get<T>();
    }
  } catch (const nlohmann::json::exception&) {
    problems.push_back({name, 0, std::string("field \"") + key + "\": unexpected " + it->dump()});
  }
}

template <typename T>
void take(const nlohmann::json& json, const char* key, std::optional<T>& out,
          const std::string& name, std::vector<ReadProblem>& problems) {
  T value{};
  const std::size_t before = problems.size();
  if (json.contains(key) && !json[key].is_null()) {
    take(json, key, value, name, problems);
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
  take(json, "steps", s.steps, name, p);
  take(json, "total_steps", s.total_steps, name, p);
  take(json, "epochs", s.epochs, name, p);
  take(json, "test_accuracy", s.test_accuracy, name, p);
  take(json, "test_loss", s.test_loss, name, p);
  take(json, "wall_s", s.wall_s, name, p);
  take(json, "samples_per_s", s.samples_per_s, name, p);
  take(json, "model", s.model, name, p);
  take(json, "dataset", s.dataset, name, p);
  take(json, "global_batch", s.global_batch, name, p);
  take(json, "finished", s.finished, name, p);
  take(json, "stopped", s.stopped, name, p);
  take(json, "failure", s.failure, name, p);
  take(json, "diverged_at_step", s.diverged_at_step, name, p);
  take(json, "generations", s.generations, name, p);
  take(json, "revocations", s.revocations, name, p);
  take(json, "recoveries", s.recoveries, name, p);
  take(json, "redone_steps", s.redone_steps, name, p);
  take(json, "cost_usd", s.cost_usd, name, p);
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
