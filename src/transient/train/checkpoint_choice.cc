#include "transient/train/checkpoint_choice.h"

#include <cstdio>
#include <string>
#include <vector>

#include "transient/core/error.h"
#include "transient/train/event_log.h"
#include "transient/train/option_names.h"

namespace transient::train {

namespace {

// The newest checkpoint that passes its checksum, parses and is the job's, and the newer ones
// rejected on the way (in the order met: newest first), or the first rejection's reason when
// checkpoints exist and none is valid. Reads only.
struct Scan {
  std::optional<ChosenCheckpoint> chosen;
  std::vector<RejectedCheckpoint> rejected;
};

Scan scan(const CheckpointDirectory& directory, const TrainOptions& o,
          const IdentifyCheckpoint& identify) {
  Scan result;
  auto records = directory.list();
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const std::string path = directory.path_of(*it);
    try {
      const CheckpointIdentity state = identify(directory.read_verified(*it), path);
      if (!same_model(state.model, o.model) || state.global_batch != o.global_batch ||
          state.seed != o.seed || state.step != it->step) {
        throw InputError(path, 0, "checkpoint of another job or step");
      }
      result.chosen = ChosenCheckpoint{*it, state.step, !result.rejected.empty(), {}};
      return result;
    } catch (const InputError& error) {
      result.rejected.push_back({it->file, error.what()});
    }
  }
  return result;
}

[[noreturn]] void refuse_none_valid(const CheckpointDirectory& directory, const Scan& found) {
  throw InputError(found.rejected.front().reason +
                   "; no valid checkpoint is left to resume from (the manifest is " +
                   directory.manifest_path() + ")");
}

// A `checkpoint_rejected` event for each.
void log_rejected(const std::vector<RejectedCheckpoint>& rejected, EventLog& events) {
  for (const auto& one : rejected) {
    events.append({{"event", "checkpoint_rejected"}, {"file", one.file}, {"reason", one.reason}});
  }
}

}  // namespace

std::optional<ChosenCheckpoint> find_checkpoint(const CheckpointDirectory& directory,
                                                const TrainOptions& options,
                                                const IdentifyCheckpoint& identify) {
  Scan found = scan(directory, options, identify);
  if (!found.chosen && !found.rejected.empty()) refuse_none_valid(directory, found);
  if (found.chosen) found.chosen->rejected = std::move(found.rejected);
  return found.chosen;
}

void announce_rejected(const ChosenCheckpoint& chosen, EventLog& events) {
  log_rejected(chosen.rejected, events);
  for (const auto& rejected : chosen.rejected) {
    std::fprintf(stderr, "transient: %s; resuming from an earlier checkpoint\n",
                 rejected.reason.c_str());
  }
}

std::optional<ChosenCheckpoint> choose_checkpoint(const CheckpointDirectory& directory,
                                                  const TrainOptions& o, EventLog& events,
                                                  const IdentifyCheckpoint& identify) {
  Scan found = scan(directory, o, identify);
  if (found.chosen) {
    found.chosen->rejected = std::move(found.rejected);
    announce_rejected(*found.chosen, events);
    return found.chosen;
  }
  log_rejected(found.rejected, events);
  if (!found.rejected.empty()) refuse_none_valid(directory, found);
  return std::nullopt;
}

void set_aside_rejected(CheckpointDirectory& directory, const ChosenCheckpoint& chosen) {
  if (chosen.newer_rejected) directory.set_aside_from(chosen.record.step + 1, "rejected-");
}

}  // namespace transient::train
