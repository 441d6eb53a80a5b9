#include "transient/train/checkpoint_choice.h"

#include <cstdio>
#include <string>
#include <vector>

#include "transient/core/error.h"
#include "transient/train/event_log.h"
#include "transient/train/option_names.h"

namespace transient::train {

// The newest checkpoint that passes its checksum and parses; the rejected ones are logged.
// Throws InputError naming the newest one if checkpoints exist and none is valid.
std::optional<ChosenCheckpoint> choose_checkpoint(const CheckpointDirectory& directory,
                                                  const TrainOptions& o, EventLog& events,
                                                  const IdentifyCheckpoint& identify) {
  auto records = directory.list();
  std::optional<std::string> first_failure;
  std::vector<std::string> warnings;
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const std::string path = directory.path_of(*it);
    try {
      const CheckpointIdentity state = identify(directory.read_verified(*it), path);
      if (!same_model(state.model, o.model) || state.global_batch != o.global_batch ||
          state.seed != o.seed || state.step != it->step) {
        throw InputError(path, 0, "checkpoint of another job or step");
      }
      // Said only now that there is a checkpoint to fall back to: a refusal is one error line.
      for (const auto& warning : warnings) {
        std::fprintf(stderr, "transient: %s; resuming from an earlier checkpoint\n",
                     warning.c_str());
      }
      return ChosenCheckpoint{*it, state.step, !warnings.empty()};
    } catch (const InputError& error) {
      events.append(
          {{"event", "checkpoint_rejected"}, {"file", it->file}, {"reason", error.what()}});
      warnings.push_back(error.what());
      if (!first_failure) first_failure = error.what();
    }
  }
  if (first_failure) {
    throw InputError(*first_failure +
                     "; no valid checkpoint is left to resume from (the "
                     "manifest is " +
                     directory.manifest_path() + ")");
  }
  return std::nullopt;
}

void set_aside_rejected(CheckpointDirectory& directory, const ChosenCheckpoint& chosen) {
  if (chosen.newer_rejected) directory.set_aside_from(chosen.record.step + 1, "rejected-");
}

}  // namespace transient::train
