#include "transient/train/coordinator_journal.h"

#include <string>
#include <vector>

#include "transient/core/error.h"
#include "transient/core/json_number.h"
#include "transient/core/structured_input.h"

namespace transient::train {

nlohmann::json to_json(const CoordinatorJournal& journal) {
  const elastic::MembershipJournal& membership = journal.membership;
  nlohmann::json json = {{"front_door", journal.front_door},
                         {"generation", membership.generation},
                         {"first_generation", membership.first_generation},
                         {"members", membership.members},
                         {"next_worker", membership.next_worker},
                         {"cost_usd", journal.cost_usd},
                         {"cost_at", journal.cost_at_s},
                         {"lr_scale", journal.lr_scale},
                         {"rollbacks", journal.rollbacks},
                         {"ended", membership.ended},
                         {"paused", journal.paused},
                         {"pid", journal.pid},
                         {"standalone", journal.standalone},
                         {"job", to_json(journal.job)}};
  if (membership.recovery) {
    json["recovery"] = {{"gen", membership.recovery->generation},
                        {"cause", membership.recovery->cause},
                        {"lost", membership.recovery->lost},
                        {"attempted_step", membership.recovery->attempted_step}};
  }
  if (!journal.dashboard.empty()) json["dashboard"] = journal.dashboard;
  return json;
}

CoordinatorJournal coordinator_journal_from_json(const nlohmann::json& json,
                                                 const std::string& path) {
  CoordinatorJournal journal;
  elastic::MembershipJournal& membership = journal.membership;
  try {
    journal.job = job_config_from_json(json.at("job"));
    journal.front_door = json.at("front_door").get<std::string>();
    membership.generation = integer_at(json, "generation");
    membership.first_generation = integer_or(json, "first_generation", 0, 0);
    membership.members = json.at("members").get<std::vector<std::string>>();
    membership.next_worker = whole_number_as<int>(json.at("next_worker"), "next_worker", 0);
    membership.ended = json.value("ended", false);
    if (const auto recovery = json.find("recovery");
        recovery != json.end() && recovery->is_object()) {
      membership.recovery = elastic::JournaledRecovery{
          integer_at(*recovery, "gen"), recovery->at("cause").get<std::string>(),
          recovery->at("lost").get<std::vector<std::string>>(),
          integer_at(*recovery, "attempted_step")};
    }
    journal.paused = json.value("paused", false);
    journal.rollbacks =
        whole_number_as<int>(json.value("rollbacks", nlohmann::json(0)), "rollbacks", 0);
    journal.pid = integer_or(json, "pid", 0, 0);
    journal.dashboard = json.value("dashboard", std::string());
    journal.standalone = json.value("standalone", false);
  } catch (const std::exception& error) {  // a JSON error, or a name not in the table
    throw InputError(path, 0, std::string("not a coordinator journal: ") + error.what());
  }
  if (membership.generation < membership.first_generation - 1) {
    throw InputError(path, 0,
                     "generation " + std::to_string(membership.generation) +
                         " is before its run's first_generation " +
                         std::to_string(membership.first_generation) +
                         "; accepted: first_generation - 1 (none formed yet) or later");
  }
  const auto scale = json.value("lr_scale", nlohmann::json(1.0));
  if (!scale.is_number() || !(scale.get<double>() > 0 && scale.get<double>() <= 1)) {
    throw InputError(path, 0,
                     "lr_scale " + scale.dump() + " is not a learning-rate factor in (0, 1]");
  }
  journal.lr_scale = scale.get<double>();
  const auto cost = json.value("cost_usd", nlohmann::json(0.0));
  if (!cost.is_number() || !(cost.get<double>() >= 0 && cost.get<double>() < 1e12)) {
    throw InputError(path, 0, "cost_usd " + cost.dump() + " is not a cost in $");
  }
  journal.cost_usd = cost.get<double>();
  const auto cost_at = json.value("cost_at", nlohmann::json(0.0));
  if (!cost_at.is_number() || !(cost_at.get<double>() >= 0 && cost_at.get<double>() < 1e11)) {
    throw InputError(path, 0, "cost_at " + cost_at.dump() + " is not a time in UTC seconds");
  }
  journal.cost_at_s = cost_at.get<double>();
  return journal;
}

CoordinatorJournal load_coordinator_journal(const std::string& path) {
  return coordinator_journal_from_json(load_json_file(path), path);
}

}  // namespace transient::train
