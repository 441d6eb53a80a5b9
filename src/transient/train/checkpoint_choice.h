// Which checkpoint a job continues from: the newest one in the manifest that passes its checksum
// and belongs to the job. Used by the coordinator when a job is resumed (--resume) and when a
// generation starts with no member holding the state (every worker was lost).
#pragma once

#include <cstdint>
#include <optional>

#include "transient/train/checkpoint.h"
#include "transient/train/trainer.h"

namespace transient::train {

class EventLog;

struct ChosenCheckpoint {
  CheckpointRecord record;
  std::int64_t step = 0;
};

// The newest valid checkpoint; each rejected one is logged as `checkpoint_rejected`. Throws
// InputError naming the newest one if checkpoints exist and none is valid; nullopt if there are
// none.
std::optional<ChosenCheckpoint> choose_checkpoint(const CheckpointDirectory& directory,
                                                  const TrainOptions& options, EventLog& events);

}  // namespace transient::train
