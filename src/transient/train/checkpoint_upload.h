// A checkpoint a worker is sending to the coordinator (rank 0's writer, a leaving member's state):
// it comes on the worker's connection in parts (begin, chunks of base64, end), is written to a
// temporary file of the job's checkpoint directory as it comes, and is adopted into the directory
// (renamed into place, then listed in the manifest) once its size and CRC-32 hold. Torch-free; one
// upload per worker at a time, driven by Coordinator::handle_checkpoint.
//
// Failure: what the worker sent wrong (a step outside the job, a size outside 1 byte to 1 TiB,
// a chunk that is not base64, more bytes than announced, a damaged whole) or a disk that cannot
// take it ends the upload: its temporary file goes, and failure() says why, which the coordinator
// tells the worker in its reply to the end. Nothing already in the directory is touched.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "transient/train/checkpoint_directory.h"
#include "transient/train/checkpoint_record.h"

namespace transient::train {

class CheckpointUpload {
 public:
  // Upload `id` of the checkpoint of `step`, `bytes` long, into the temporary file `path`
  // (CheckpointDirectory::incoming_path). A step outside 0..total_steps, a size outside
  // 1 byte to 1 TiB, or a file that cannot be made: it has failed at once.
  CheckpointUpload(std::int64_t id, std::int64_t step, std::int64_t bytes, std::string path,
                   std::int64_t total_steps);
  // Closes and removes the temporary file unless the checkpoint was adopted.
  ~CheckpointUpload();
  CheckpointUpload(const CheckpointUpload&) = delete;
  CheckpointUpload& operator=(const CheckpointUpload&) = delete;

  std::int64_t id() const { return id_; }
  // The checkpoint as it will be listed (its crc32 the sender's once finished).
  const CheckpointRecord& record() const { return record_; }
  // Why it cannot be stored; "" while it can.
  const std::string& failure() const { return failure_; }
  // Seconds since it began.
  double seconds() const;

  // Appends the chunk `base64` (encoded as rendezvous_store.h encodes). REQUIRES: not failed.
  void add_chunk(const std::string& base64);
  // Ends it with `why` (a part the protocol does not know): the file goes.
  void fail(const std::string& why);
  // The end, in two halves, so that the sync can run elsewhere (the coordinator's one thread
  // does not wait for a disk): check() takes the sender's CRC-32 and checks the size and the
  // checksum, returning "" when they hold, else why not (the file gone); the file's descriptor,
  // file(), is then synced, and adopt() takes the sync's result (0, or its errno) and adopts the
  // file into `directory`, returning "" once it is listed there, else why not (the file gone).
  // REQUIRES: not failed (check), checked and not failed (file, adopt).
  std::string check(std::uint32_t crc32);
  int file() const { return fd_; }
  std::string adopt(int sync_error, CheckpointDirectory& directory);

 private:
  void close_and_remove();

  std::int64_t id_;
  CheckpointRecord record_;
  std::string path_;
  int fd_ = -1;
  std::int64_t received_ = 0;
  std::uint32_t crc32_ = 0;
  std::chrono::steady_clock::time_point started_;
  std::string failure_;
  bool adopted_ = false;
};

}  // namespace transient::train
