// Which checkpoint a job continues from: the newest one in the manifest that passes its checksum
// and belongs to the job. Used by the coordinator when a job is resumed (--resume) and when a
// generation starts with no member holding the state (every worker was lost). Torch-free: what
// a checkpoint's bytes say it is comes from a function passed in (checkpoint.h's
// checkpoint_identity, which libtorch reads).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "transient/train/checkpoint_directory.h"
#include "transient/train/trainer.h"

namespace transient::train {

class EventLog;

// Reads a checkpoint's identity from its bytes; throws InputError naming `path` if they are not a
// checkpoint.
using IdentifyCheckpoint =
    std::function<CheckpointIdentity(const std::vector<char>& bytes, const std::string& path)>;

// A checkpoint of the manifest passed over, and why (corrupt, unreadable, another job's).
struct RejectedCheckpoint {
  std::string file;
  std::string reason;
};

struct ChosenCheckpoint {
  CheckpointRecord record;
  std::int64_t step = 0;
  bool newer_rejected = false;               // newer checkpoints in the manifest were rejected
  std::vector<RejectedCheckpoint> rejected;  // those, newest first
};

// The newest valid checkpoint, and the newer ones rejected, without a word to anyone: a resume
// refused later (a bad --stop-at, a damaged journal) must leave the records as they were.
// Throws InputError naming the newest one if checkpoints exist and none is valid; nullopt if
// there are none.
std::optional<ChosenCheckpoint> find_checkpoint(const CheckpointDirectory& directory,
                                                const TrainOptions& options,
                                                const IdentifyCheckpoint& identify);

// Says what find_checkpoint passed over: a `checkpoint_rejected` event each, and a warning line
// each on stderr ("...; resuming from an earlier checkpoint").
void announce_rejected(const ChosenCheckpoint& chosen, EventLog& events);

// find_checkpoint and announce_rejected at once (the coordinator, when a generation starts with
// no member holding the state); when none is valid, the rejections are logged before it throws.
std::optional<ChosenCheckpoint> choose_checkpoint(const CheckpointDirectory& directory,
                                                  const TrainOptions& options, EventLog& events,
                                                  const IdentifyCheckpoint& identify);

// Once the job goes on from `chosen`: the rejected checkpoints newer than it leave the manifest,
// their files renamed rejected-step-*.pt (kept for a look). Listed, they outranked the
// checkpoints written from here on, and --keep deleted those instead: a resume with --keep 1
// left only the corrupt one. Throws InputError if the manifest cannot be written.
void set_aside_rejected(CheckpointDirectory& directory, const ChosenCheckpoint& chosen);

}  // namespace transient::train
