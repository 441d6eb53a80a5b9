#include "transient/core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "transient/core/error.h"

namespace transient {
namespace {

TEST(AtomicFile, ReplacesContentsAndLeavesNoTemporary) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("transient_atomic_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "out.txt").string();
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  EXPECT_EQ(read_file(path), "second");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

// read_file reads what the file's size says in one go, and the rest of a file whose size is not
// its length (/proc's say 0); an empty file is empty.
TEST(AtomicFile, ReadFileReadsFilesWhoseSizeIsNotTheirLength) {
  const std::string status = read_file("/proc/self/status");
  EXPECT_NE(status.find("Pid:\t" + std::to_string(::getpid()) + "\n"), std::string::npos) << status;
  const auto dir =
      std::filesystem::temp_directory_path() / ("transient_read_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string empty = (dir / "empty").string();
  write_file_atomically(empty, "");
  EXPECT_EQ(read_file(empty), "");
  const std::string bytes = (dir / "bytes").string();
  const std::string zeros_and_all(std::string(70000, '\0') + "\xff\x01end");
  write_file_atomically(bytes, zeros_and_all);
  EXPECT_EQ(read_file(bytes), zeros_and_all);
  std::filesystem::remove_all(dir);
}

// `plan --emit-scenario` writes after a long search: a file created meanwhile is kept, refused
// naming it, and no temporary is left beside it.
TEST(AtomicFile, ANewFileNeverReplacesOneThatExists) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("transient_new_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "plan.toml").string();
  write_new_file_atomically(path, "first");
  EXPECT_EQ(read_file(path), "first");
  try {
    write_new_file_atomically(path, "second");
    ADD_FAILURE() << "an existing file was replaced";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              path + ": the file exists; accepted: a new file name (remove the old one first)");
  }
  EXPECT_EQ(read_file(path), "first");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename(), "plan.toml");
    ++files;
  }
  EXPECT_EQ(files, 1);
  EXPECT_THROW(write_new_file_atomically((dir / "missing" / "x").string(), "x"), InputError);
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, UnwritableDirectoryIsInputErrorAndKeepsNothing) {
  EXPECT_THROW(write_file_atomically("/nonexistent-dir/out.txt", "x"), InputError);
}

// What write_file_atomically would refuse, told before the work whose result it writes.
TEST(AtomicFile, AnOutputIsCheckedWritableBeforehand) {
  const std::string dir = ::testing::TempDir();
  EXPECT_NO_THROW(require_writable_output(dir + "/out.json", "-o"));
  try {
    require_writable_output("/nonexistent-dir/out.json", "--plot");
    ADD_FAILURE() << "a missing directory was taken";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "/nonexistent-dir/out.json: --plot: the directory /nonexistent-dir does not "
                 "exist or is not writable; accepted: a file in a writable directory");
  }
  try {
    require_writable_output(dir, "-o");
    ADD_FAILURE() << "a directory was taken";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("-o: is a directory"), std::string::npos);
  }
}

}  // namespace
}  // namespace transient
