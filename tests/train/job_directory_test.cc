// The job directory as a coordinator opens it (job_directory.h), without a process: the lock, whose
// job a directory holds, and the settings a resume keeps. The same rules seen from the command
// line are the process tests' (trainer_test.cc, failure_test.cc).
#include "transient/train/job_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "transient/core/error.h"
#include "transient/records/job_files.h"

namespace transient::train {
namespace {

namespace fs = std::filesystem;

std::string fresh(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/job_directory_" + name + "_" + std::to_string(::getpid());
  fs::remove_all(dir);
  return dir;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TrainOptions job_in(const std::string& dir) {
  TrainOptions o;
  o.job_dir = dir;
  o.model = "mlp";
  o.seed = 5;
  o.lr = 0.1;
  return o;
}

DataFacts fashion_mnist() {
  DataFacts data;
  data.train_samples = 60000;
  data.channels = 1;
  data.height = 28;
  data.width = 28;
  data.classes = 10;
  data.test_samples = 10000;
  return data;
}

// Throws InputError whose message holds `part`; fails otherwise.
template <typename F>
void expect_refused(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "not refused; expected: " << part;
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

TEST(JobDirectory, ASecondLockOnARunningJobIsRefusedAndTheNextTakesItOnceTheFirstIsGone) {
  const std::string dir = fresh("lock");
  fs::create_directories(dir);
  auto first = std::make_unique<JobLock>(dir);
  expect_refused([&] { JobLock second(dir); }, "the job is running: its coordinator holds");
  first.reset();
  EXPECT_NO_THROW(JobLock{dir});
  fs::remove_all(dir);
}

TEST(JobDirectory, ANewJobIsLockedAndItsIdentityWrittenThenItsDirectoryIsTheJobsOnly) {
  const std::string dir = fresh("identity");
  std::shared_ptr<JobLock> lock;
  EXPECT_EQ(prepare_job_dir(job_in(dir), fashion_mnist(), lock), std::nullopt);
  ASSERT_NE(lock, nullptr);
  const auto written = nlohmann::json::parse(slurp(records::JobFiles(dir).job()));
  EXPECT_EQ(written.at("model"), "mlp");
  EXPECT_EQ(written.at("seed"), 5);
  EXPECT_EQ(written.at("settings").at("lr"), 0.1);
  EXPECT_EQ(written.at("data").at("train_samples"), 60000);
  lock.reset();

  // Again without --resume, or resumed as another job: refused, job.json as it was.
  const std::string before = slurp(records::JobFiles(dir).job());
  expect_refused([&] { prepare_job_dir(job_in(dir), fashion_mnist(), lock); },
                 "already holds a job's records; pass --resume");
  auto other = job_in(dir);
  other.resume = true;
  other.seed = 6;
  expect_refused([&] { prepare_job_dir(other, fashion_mnist(), lock); },
                 "belongs to another job: seed is 5 there, 6 here");
  // Its own job, on other data: the data set is named.
  auto same = job_in(dir);
  same.resume = true;
  auto more = fashion_mnist();
  more.train_samples = 70000;
  expect_refused([&] { prepare_job_dir(same, more, lock); },
                 "not the data set the job started with");
  EXPECT_EQ(slurp(records::JobFiles(dir).job()), before);
  // A directory with no job to go on with.
  auto nothing = job_in(fresh("empty"));
  nothing.resume = true;
  expect_refused([&] { prepare_job_dir(nothing, fashion_mnist(), lock); },
                 "--resume: the job directory holds no job to continue");
  fs::remove_all(dir);
}

TEST(JobDirectory, AResumeTakesTheJobsSettingsAndRefusesAFlagThatContradictsThem) {
  const std::string dir = fresh("settings");
  std::shared_ptr<JobLock> lock;
  prepare_job_dir(job_in(dir), fashion_mnist(), lock);
  lock.reset();
  TrainOptions resumed;
  resumed.job_dir = dir;
  resumed.resume = true;
  adopt_job_settings(resumed, true);
  EXPECT_EQ(resumed.model, "mlp");
  EXPECT_EQ(resumed.seed, 5);
  EXPECT_DOUBLE_EQ(resumed.lr, 0.1);
  TrainOptions contradicting = resumed;
  contradicting.lr = 0.3;
  contradicting.given_flags = {"--lr"};
  expect_refused([&] { adopt_job_settings(contradicting, true); },
                 "--lr is 0.3 here but 0.1 in the job being resumed");
  fs::remove_all(dir);
}

TEST(JobDirectory, TheTokenFileIsTheOwnersOnly) {
  const std::string dir = fresh("token");
  fs::create_directories(dir);
  write_private_file(dir + "/token", "secret\n");
  EXPECT_EQ(slurp(dir + "/token"), "secret\n");
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  expect_refused([&] { write_private_file(dir + "/no/such/folder/token", "x"); },
                 "cannot create the job token file");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace transient::train
