// The directory of a job's checkpoints and its manifest, without libtorch: the coordinator keeps
// the checkpoints its workers send, lists them and serves them by their record; what a
// checkpoint holds is checkpoint.h's (libtorch's).
//
// A checkpoint is written under a temporary name, fsync'ed, renamed into place and the directory
// fsync'ed (core's write_file_atomically); only then is the manifest rewritten the same way, so
// a crash at any instant leaves the previous manifest and every checkpoint it lists intact (a
// step's checkpoint written again with other bytes is first taken out of the manifest). The
// checksum lives in the manifest, not in the .pt file, so that the file stays a plain torch.load
// archive. Reading verifies size and checksum.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "transient/train/checkpoint_record.h"

namespace transient::train {

// The file name of the checkpoint of `step`: step-NNNNNNNN.pt.
std::string checkpoint_name(std::int64_t step);

// A directory of checkpoints and its manifest. Not thread-safe: one writer (the checkpoint
// writer thread) and readers that do not run at the same time as it (the coordinator before
// the workers start).
class CheckpointDirectory {
 public:
  CheckpointDirectory(std::string dir, int keep);

  const std::string& dir() const { return dir_; }
  std::string manifest_path() const;
  std::string path_of(const CheckpointRecord& record) const;

  // Writes `bytes` (a serialised checkpoint, checkpoint.h) as the checkpoint of `step`, then the
  // manifest listing it and the `keep` - 1 previous ones, then deletes the files no longer
  // listed. Throws InputError if a write fails (the previous manifest stays valid).
  CheckpointRecord write(std::int64_t step, std::string_view bytes);

  // A temporary name in this directory for the checkpoint of `step` that `sender` is sending
  // (remove_leftovers() removes it if it is never adopted).
  std::string incoming_path(std::int64_t step, const std::string& sender) const;
  // Takes the fsync'ed file `temporary` (from incoming_path) as the checkpoint of `record`:
  // renames it into place and lists it in the manifest as write() does. Throws InputError if a
  // step fails (the previous manifest stays valid).
  void adopt(const std::string& temporary, const CheckpointRecord& record);

  // The manifest's entries, oldest first; empty if there is no manifest. Throws InputError naming
  // the manifest if it exists but cannot be parsed.
  std::vector<CheckpointRecord> list() const;

  // Reads the file of `record` and checks its size and checksum; throws InputError naming the
  // file and what is wrong.
  std::vector<char> read_verified(const CheckpointRecord& record) const;

  // Takes the checkpoints of steps >= `step` out of the manifest and renames their files to
  // `prefix` + name (kept for a look, never resumed from); returns them. Throws InputError if the
  // manifest cannot be read or written (then nothing changed).
  std::vector<CheckpointRecord> set_aside_from(std::int64_t step, const std::string& prefix);

  // Takes the oldest checkpoints out of the manifest until it lists `keep`, never the one of step
  // `keeping`, then deletes their files; returns them (none when it lists no more than `keep`).
  // A job resumed with a lower --keep: its checkpoints stayed until the next one was written, on
  // a disk that could not hold it beside them. Throws InputError if the manifest cannot be read
  // or written (then nothing changed).
  std::vector<CheckpointRecord> trim(std::int64_t keeping);

  // Removes temporary files left by a writer that was killed mid-write.
  void remove_leftovers() const;

 private:
  void write_manifest(const std::vector<CheckpointRecord>& records) const;
  // Writes the manifest of `records` (oldest first) less the oldest beyond `keep`, never the one
  // of step `keeping` (-1: none), then deletes the files of those left out; returns them. Called
  // under the manifest's lock.
  std::vector<CheckpointRecord> publish(std::vector<CheckpointRecord> records,
                                        std::int64_t keeping) const;
  // Takes the checkpoint of `record`'s step out of the manifest if it lists other bytes for it:
  // its file is about to be replaced, and a crash before the manifest lists the new one must not
  // leave it vouching for a file whose checksum it does not hold.
  void unlist_if_replaced(const CheckpointRecord& record) const;
  void add_to_manifest(const CheckpointRecord& record) const;

  std::string dir_;
  int keep_;
};

}  // namespace transient::train
