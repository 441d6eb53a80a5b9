// read_job_records(): a whole job directory, with the part files of a running job merged the way
// the trainer merges them, and a path that is no job directory refused.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "transient/core/error.h"
#include "transient/records/job_files.h"
#include "transient/records/job_records.h"

namespace transient::records {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("records_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(RecordsJobFiles, NamesEveryFileOfTheDirectory) {
  const JobFiles files("/jobs/a");
  EXPECT_EQ(files.events(), "/jobs/a/events.jsonl");
  EXPECT_EQ(files.steps(), "/jobs/a/steps.csv");
  EXPECT_EQ(files.summary(), "/jobs/a/summary.json");
  EXPECT_EQ(files.job(), "/jobs/a/job.json");
  EXPECT_EQ(files.coordinator(), "/jobs/a/coordinator.json");
  EXPECT_EQ(files.manifest(), "/jobs/a/checkpoints/manifest.json");
  EXPECT_FALSE(files.holds_records());
}

TEST(RecordsJobRecords, ReadsEveryFileAndMergesRunningParts) {
  const fs::path dir = fresh_dir("merge");
  write(dir / "events.jsonl", "{\"t\":0,\"event\":\"generation\",\"gen\":0}\n");
  write(dir / "steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
        "1,0,5,0,0.1,0,0,2.0,0,0\n"
        "1,1,5,0,0.1,0,0,2.0,0,5\n"
        "2,0,5,0,0.1,0,0,1.9,0,10\n");
  // Step 2 was redone by generation 1 (one member left); step 3 is only in a part file.
  write(dir / "records" / "w0.csv", "2,0,10,0,0.2,0,0,1.9,1,10\n3,0,10,0,0.2,0,0,1.8,1,20\n");
  write(dir / "job.json", "{\"model\":\"mlp\"}");
  write(dir / "checkpoints" / "manifest.json",
        R"({"checkpoints":[{"file":"step-00000002.pt","step":2,"bytes":10,"crc32":1}]})");
  const JobRecords records = read_job_records(dir.string());
  EXPECT_TRUE(records.problems.empty()) << records.problems[0].text();
  ASSERT_EQ(records.steps.size(), 4u);
  EXPECT_EQ(records.steps[2].step, 2);
  EXPECT_EQ(records.steps[2].gen, 1);
  EXPECT_EQ(records.steps[2].batch, 10);
  EXPECT_EQ(records.steps[3].step, 3);
  EXPECT_FALSE(records.summary);  // still running: no problem
  ASSERT_TRUE(records.job);
  EXPECT_EQ((*records.job)["model"], "mlp");
  ASSERT_EQ(records.checkpoints.size(), 1u);
  EXPECT_EQ(records.events.size(), 1u);
}

TEST(RecordsJobRecords, DamagedFilesAreProblemsNotErrors) {
  const fs::path dir = fresh_dir("damaged");
  write(dir / "summary.json", "{\"steps\": 3");
  write(dir / "job.json", "[1,2]");
  const JobRecords records = read_job_records(dir.string());
  EXPECT_FALSE(records.summary);
  ASSERT_EQ(records.problems.size(), 3u);  // events.jsonl missing, summary and job.json broken
  EXPECT_NE(records.problems[0].text().find("events.jsonl: missing"), std::string::npos);
}

TEST(RecordsJobRecords, APathThatIsNoJobDirectoryIsRefused) {
  const fs::path empty = fresh_dir("empty");
  try {
    read_job_records(empty.string());
    FAIL() << "an empty directory was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("not a job directory"), std::string::npos);
  }
  EXPECT_THROW(read_job_records((empty / "nothing").string()), InputError);
  write(empty / "file.txt", "x");
  EXPECT_THROW(read_job_records((empty / "file.txt").string()), InputError);
}

// A record file that is a FIFO hung `transient status` (opening it waits for a writer). It is a
// problem naming it, never opened. Without that, the writer below (which opens the FIFO only
// once a reader waits on it) lets the read end as an empty file, and the test fails, not hangs.
TEST(RecordsJobRecords, ARecordFileThatIsAFifoIsAProblemNotAHang) {
  const fs::path dir = fresh_dir("fifo");
  write(dir / "job.json", "{\"model\":\"mlp\"}");
  ASSERT_EQ(::mkfifo((dir / "events.jsonl").c_str(), 0600), 0);
  std::atomic<bool> read_done{false};
  std::thread writer([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!read_done && std::chrono::steady_clock::now() < give_up) {
      const int fd = ::open((dir / "events.jsonl").c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        ::close(fd);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const JobRecords records = read_job_records(dir.string());
  read_done = true;
  writer.join();
  ASSERT_EQ(records.problems.size(), 1u);
  EXPECT_EQ(records.problems[0].text(),
            (dir / "events.jsonl").string() +
                ": not a regular file (a directory, FIFO or device); accepted: a regular file");
}

// A record file that is a symlink to /dev/zero read until memory ran out; one larger than 4 GiB
// (here a sparse one, which takes no disk) is refused before it is read.
TEST(RecordsJobRecords, ADeviceOrAFileOverTheCapIsRefusedUnread) {
  const fs::path dir = fresh_dir("device");
  fs::create_symlink("/dev/zero", dir / "events.jsonl");
  { std::ofstream(dir / "steps.csv") << "step"; }
  fs::resize_file(dir / "steps.csv", (std::uintmax_t{4} << 30) + 1);
  const JobRecords records = read_job_records(dir.string());
  ASSERT_EQ(records.problems.size(), 2u);
  EXPECT_NE(records.problems[0].text().find("events.jsonl: not a regular file"), std::string::npos)
      << records.problems[0].text();
  EXPECT_EQ(records.problems[1].text(),
            (dir / "steps.csv").string() +
                ": is 4294967297 bytes; accepted: a record file of at most 4 GiB");
  fs::remove(dir / "steps.csv");
}

// A symlink loop where a record file should be made the file system's exists() throw, and status
// and report print "internal failure" (exit 1): it is a problem naming the file, and the rest of
// the directory is read.
TEST(RecordsJobRecords, ASymlinkLoopIsAProblemNamingTheFile) {
  const fs::path dir = fresh_dir("loop");
  fs::create_symlink("events.jsonl", dir / "events.jsonl");
  fs::create_symlink("summary.json", dir / "summary.json");
  write(dir / "job.json", "{\"model\":\"mlp\"}");
  const JobRecords records = read_job_records(dir.string());
  ASSERT_TRUE(records.job);
  ASSERT_EQ(records.problems.size(), 2u);
  EXPECT_EQ(records.problems[0].text(), (dir / "events.jsonl").string() +
                                            ": cannot be read: Too many levels of symbolic links");
  EXPECT_NE(records.problems[1].text().find("summary.json: cannot be read"), std::string::npos);
  // Alone, it still makes a job directory (one whose events cannot be read).
  fs::remove(dir / "job.json");
  fs::remove(dir / "summary.json");
  EXPECT_EQ(read_job_records(dir.string()).problems.size(), 1u);
}

// A path the file system refuses (a name longer than it holds, a directory that is a symlink
// loop) is an InputError naming it, not the standard library's filesystem_error.
TEST(RecordsJobRecords, APathTheFileSystemRefusesIsAnInputError) {
  const fs::path dir = fresh_dir("refused");
  for (const fs::path& path : {dir / std::string(300, 'a'), dir / "loop"}) {
    if (path.filename() == "loop") fs::create_symlink("loop", path);
    try {
      read_job_records(path.string());
      ADD_FAILURE() << path << " was taken";
    } catch (const InputError& error) {
      EXPECT_EQ(error.file(), path.string());
      EXPECT_NE(error.message().find("cannot be read: "), std::string::npos) << error.what();
      EXPECT_NE(error.message().find("; accepted: a job directory"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace transient::records
