#include "transient/core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

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

TEST(AtomicFile, UnwritableDirectoryIsInputErrorAndKeepsNothing) {
  EXPECT_THROW(write_file_atomically("/nonexistent-dir/out.txt", "x"), InputError);
}

}  // namespace
}  // namespace transient
