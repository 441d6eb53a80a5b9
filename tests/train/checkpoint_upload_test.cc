// A checkpoint sent to the coordinator in parts (checkpoint_upload.h), without a process: what
// arrives whole is listed, what arrives wrong leaves no file and says why. The same seen on the
// wire is elastic_test.cc's (a chunk that is not base64, a rollback overtaking an upload).
#include "transient/train/checkpoint_upload.h"

#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "transient/train/rendezvous_store.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;

std::string fresh(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/checkpoint_upload_" + name + "_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::uint32_t crc_of(const std::string& bytes) {
  return static_cast<std::uint32_t>(::crc32(::crc32(0L, Z_NULL, 0),
                                            reinterpret_cast<const Bytef*>(bytes.data()),
                                            static_cast<uInt>(bytes.size())));
}

// The files of `dir` but the manifest and the directory's lock (.lock): checkpoints, listed or
// on their way.
std::string checkpoint_files(const std::string& dir) {
  std::string names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name != "manifest.json" && name[0] != '.') names += (names.empty() ? "" : " ") + name;
  }
  return names;
}

TEST(CheckpointUpload, WhatArrivesWholeIsListedUnderItsStep) {
  const std::string dir = fresh("whole");
  CheckpointDirectory directory(dir, 3);
  const std::string bytes = "the state of step 40, in two chunks";
  CheckpointUpload upload(7, 40, static_cast<std::int64_t>(bytes.size()),
                          directory.incoming_path(40, "w0"), 100);
  EXPECT_EQ(upload.failure(), "");
  upload.add_chunk(encode_store_value(bytes.substr(0, 10)));
  upload.add_chunk(encode_store_value(bytes.substr(10)));
  // Checked, synced, adopted: the coordinator syncs on a thread of its own between the two halves.
  ASSERT_EQ(upload.check(crc_of(bytes)), "");
  EXPECT_EQ(upload.adopt(::fsync(upload.file()) == 0 ? 0 : errno, directory), "");
  const auto listed = directory.list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].step, 40);
  EXPECT_EQ(listed[0].file, "step-00000040.pt");
  EXPECT_EQ(listed[0].crc32, crc_of(bytes));
  const auto read = directory.read_verified(listed[0]);
  EXPECT_EQ(std::string(read.begin(), read.end()), bytes);
  EXPECT_EQ(checkpoint_files(dir), "step-00000040.pt");  // no temporary file left beside it
  fs::remove_all(dir);
}

TEST(CheckpointUpload, WhatArrivesWrongLeavesNoFileAndSaysWhy) {
  const std::string dir = fresh("wrong");
  CheckpointDirectory directory(dir, 3);
  const std::string bytes = "0123456789";
  {
    CheckpointUpload damaged(1, 5, 10, directory.incoming_path(5, "w0"), 100);
    damaged.add_chunk(encode_store_value(bytes));
    EXPECT_EQ(damaged.check(crc_of(bytes) + 1),
              "the checkpoint of step 5 arrived damaged (size or CRC-32 differs from what was "
              "sent)");
  }
  {
    CheckpointUpload short_of_bytes(2, 5, 11, directory.incoming_path(5, "w0"), 100);
    short_of_bytes.add_chunk(encode_store_value(bytes));
    EXPECT_NE(short_of_bytes.check(crc_of(bytes)).find("arrived damaged"), std::string::npos);
  }
  {
    CheckpointUpload garbage(3, 5, 10, directory.incoming_path(5, "w0"), 100);
    garbage.add_chunk("!!!!");
    EXPECT_EQ(garbage.failure(), "a chunk of the checkpoint of step 5 is not base64");
  }
  {
    CheckpointUpload too_long(4, 5, 4, directory.incoming_path(5, "w0"), 100);
    too_long.add_chunk(encode_store_value(bytes));
    EXPECT_EQ(too_long.failure(), "more bytes than announced");
  }
  for (const auto& [step, size] : {std::pair<std::int64_t, std::int64_t>{101, 10},
                                   {-1, 10},
                                   {5, 0},
                                   {5, (std::int64_t{1} << 40) + 1}}) {
    CheckpointUpload refused(5, step, size, directory.incoming_path(5, "w0"), 100);
    EXPECT_EQ(refused.failure(), "a checkpoint of step " + std::to_string(step) + " and " +
                                     std::to_string(size) + " bytes is refused");
  }
  {
    CheckpointUpload unknown(6, 5, 10, directory.incoming_path(5, "w0"), 100);
    unknown.fail("unknown checkpoint part \"middle\"");
    EXPECT_EQ(unknown.failure(), "unknown checkpoint part \"middle\"");
  }
  {
    // Given up half-way (its worker left): the file goes with it.
    CheckpointUpload abandoned(8, 5, 10, directory.incoming_path(5, "w0"), 100);
    abandoned.add_chunk(encode_store_value(bytes.substr(0, 4)));
    EXPECT_NE(checkpoint_files(dir), "");
  }
  EXPECT_EQ(checkpoint_files(dir), "");
  EXPECT_TRUE(directory.list().empty());
  fs::remove_all(dir);
}

TEST(CheckpointUpload, ADirectoryThatCannotTakeItIsNamed) {
  const std::string parent = fresh("no-directory");
  const std::string dir = parent + "/gone";
  CheckpointDirectory directory(dir, 3);
  CheckpointUpload upload(1, 5, 10, directory.incoming_path(5, "w0"), 100);
  EXPECT_EQ(upload.failure().rfind("cannot write " + dir + "/", 0), 0u) << upload.failure();
  fs::remove_all(parent);
}

}  // namespace
}  // namespace transient::train
