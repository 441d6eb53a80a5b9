// read_job_records(): a whole job directory, with the part files of a running job merged the way
// the trainer merges them, and a path that is no job directory refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace transient::records
