// The coordinator's journal, <job>/coordinator.json: what a coordinator started on the job
// directory goes on with. The coordinator writes it whenever its state changes
// (Coordinator::write_journal); it is read here, once, by `transient coordinator` taking back a
// job whose coordinator died, and by `--resume` of a paused job (the learning rate's factor,
// the bill so far). Torch-free.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "transient/elastic/membership.h"
#include "transient/train/protocol.h"

namespace transient::train {

struct CoordinatorJournal {
  JobConfig job;
  std::string front_door;  // HOST:PORT the members re-connect to
  // Generation, members, next worker number, a recovery in progress; whether the job ended.
  elastic::MembershipJournal membership;
  bool paused = false;    // ended by a stop request (or --stop-at), to be continued by --resume
  double cost_usd = 0;    // what the job's servers cost so far ...
  double cost_at_s = 0;   // ... at this time (UTC seconds since 1970; 0: not known)
  double lr_scale = 1;    // the learning rate's factor, halved by each rollback: (0, 1]
  int rollbacks = 0;      // after a divergence
  long pid = 0;           // of the coordinator that wrote it
  std::string dashboard;  // its live dashboard, HOST:PORT ("" with none)
  // Run by `transient coordinator` (its workers started apart, and left running if it dies),
  // not by `transient train`'s launcher (whose workers end with it).
  bool standalone = false;
};

nlohmann::json to_json(const CoordinatorJournal& journal);

// Reads a journal as to_json writes it (recovery, rollbacks, lr_scale, cost_usd, cost_at, paused,
// pid, dashboard and standalone may be absent). Throws InputError naming `path` and what is not as
// written.
CoordinatorJournal coordinator_journal_from_json(const nlohmann::json& json,
                                                 const std::string& path);

// The journal in the file `path`; throws InputError naming it if it cannot be read or parsed.
CoordinatorJournal load_coordinator_journal(const std::string& path);

}  // namespace transient::train
