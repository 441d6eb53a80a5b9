// Fitting recovers known constants from synthetic data made from them; measurement files are
// recognised by header, and bad or unknown ones are errors naming them; the built-in constants
// are what a fit on CM-DARE's data gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "transient/core/error.h"
#include "transient/perf/internal/cluster_composition.h"
#include "transient/perf/measurement_set.h"
#include "transient/perf/throughput_fitting.h"
#include "transient/perf/trainer_calibration.h"

namespace transient::perf {
namespace {

namespace fs = std::filesystem;

const ThroughputFitOptions kOptions;

cloud::InstanceType worker(const std::string& gpu, double tflops) {
  cloud::InstanceType type;
  type.name = gpu + " worker";
  type.gpu = gpu;
  type.gpus = 1;
  type.gpu_tflops = tflops;
  type.network_gbps = kOptions.worker_network_gbps;
  return type;
}

AnalyticParams truth() {
  AnalyticParams p;
  p.efficiency = {{"resnet@K80", 0.015},
                  {"resnet@P100", 0.025},
                  {"shake-shake@K80", 0.02},
                  {"shake-shake@P100", 0.03},
                  {"generic", 0.02}};
  p.per_tensor_s = {{"K80", 8e-4}, {"P100", 4e-4}};
  p.fitted_gpu_tflops = {{"K80", 4.113}, {"P100", 9.526}};
  p.step_overhead_s = 0.012;
  p.communication.worker_per_tensor_s = 0;
  p.communication.network_efficiency = 0.5;
  p.communication.ps_per_tensor_s = 6e-5;
  p.communication.ps_network_gbps = 4.0;
  p.communication.contention_sharpness = 4.0;
  return p;
}

// Speeds of every built-in workload on K80 and P100, 1..8 workers, made by `model`.
MeasurementSet synthetic(
    const std::function<double(const Workload&, const cloud::InstanceType&, int)>& speed) {
  MeasurementSet data;
  for (const auto& w : builtin_workloads()) {
    for (const auto& [gpu, tflops] :
         {std::pair<std::string, double>{"K80", 4.113}, {"P100", 9.526}}) {
      for (int n = 1; n <= 8; ++n) {
        SpeedMeasurement m{w.name,     gpu, tflops, n, 1, speed(w, worker(gpu, tflops), n),
                           "synthetic"};
        if (n == 1) data.single_worker.push_back(m);
        if (w.name == "resnet-15" || w.name == "resnet-32" || w.name == "shake-shake-small" ||
            w.name == "shake-shake-big") {
          data.cluster.push_back(m);
        }
      }
    }
  }
  return data;
}

double analytic_speed(const AnalyticParams& p, const Workload& w, const cloud::InstanceType& type,
                      int n) {
  ClusterShape shape;
  shape.workers.push_back({type, n});
  return AnalyticThroughputModel(w, p).predict(shape).steps_per_s;
}

// A fit whose worker link never limits writes a network efficiency of 1000 (fitting on one GPU's
// clusters does): the model file it writes reads back.
TEST(ThroughputFitting, ALinkThatNeverLimitsReadsBackFromTheModelFile) {
  CommunicationParams p = CommunicationParams::builtin();
  p.network_efficiency = 1e3;
  EXPECT_DOUBLE_EQ(CommunicationParams::from_json(p.to_json(), "m.json").network_efficiency, 1e3);
  p.network_efficiency = 1e4;
  EXPECT_THROW(CommunicationParams::from_json(p.to_json(), "m.json"), InputError);
}

TEST(ThroughputFitting, AnalyticRecoversKnownConstants) {
  const AnalyticParams t = truth();
  const MeasurementSet data =
      synthetic([&](const Workload& w, const cloud::InstanceType& type, int n) {
        // Single-worker speeds without the servers' contention, as stage 1 assumes.
        if (n == 1) {
          AnalyticParams free = t;
          free.communication.ps_network_gbps = 1e9;
          free.communication.ps_per_tensor_s = 0;
          return analytic_speed(free, w, type, 1);
        }
        return analytic_speed(t, w, type, n);
      });
  const AnalyticParams fit = fit_analytic(data, kOptions);
  for (const std::string key :
       {"resnet@K80", "resnet@P100", "shake-shake@K80", "shake-shake@P100"}) {
    EXPECT_NEAR(fit.efficiency.at(key), t.efficiency.at(key), 1e-6 * t.efficiency.at(key)) << key;
  }
  // Per family and generic: geometric means over the GPUs.
  EXPECT_NEAR(fit.efficiency.at("resnet"), std::sqrt(0.015 * 0.025), 1e-8);
  EXPECT_NEAR(fit.per_tensor_s.at("K80"), 8e-4, 1e-9);
  EXPECT_NEAR(fit.per_tensor_s.at("P100"), 4e-4, 1e-9);
  EXPECT_NEAR(fit.step_overhead_s, 0.012, 1e-7);
  EXPECT_NEAR(fit.communication.network_efficiency, 0.5, 1e-5);
  // Stage 2 is a grid search: close, and its predictions closer still.
  EXPECT_NEAR(fit.communication.ps_network_gbps, 4.0, 0.4);
  EXPECT_NEAR(fit.communication.ps_per_tensor_s, 6e-5, 1.5e-5);
  for (const auto& m : data.cluster) {
    EXPECT_NEAR(
        analytic_speed(fit, find_workload(m.workload), worker(m.gpu, m.gpu_tflops), m.workers),
        m.steps_per_s, 0.03 * m.steps_per_s)
        << m.workload << " " << m.gpu << " x" << m.workers;
  }
}

TEST(ThroughputFitting, RegressionRecoversKnownCoefficients) {
  FittedParams t;
  t.form = "log-linear";
  t.features = {"flops", "tflops", "parameters", "tensors", "shake_shake"};
  t.coefficients = {-20.0, 0.8, -0.9, 0.1, 0.2, 0.3};
  const MeasurementSet data = synthetic([&](const Workload& w, const cloud::InstanceType& type,
                                            int) { return 1.0 / t.single_step_s(w, type); });
  const FittedParams fit = fit_fitted(data, {"log-linear", t.features, 0.0}, kOptions);
  ASSERT_EQ(fit.coefficients.size(), t.coefficients.size());
  for (std::size_t k = 0; k < t.coefficients.size(); ++k) {
    EXPECT_NEAR(fit.coefficients[k], t.coefficients[k], 1e-6) << k;
  }
  // The linear form, on data made by a linear model.
  FittedParams lin;
  lin.form = "linear";
  lin.features = {"flops_per_tflops", "tensors", "gradient_bytes"};
  lin.coefficients = {0.01, 60.0, 3e-4, 2e-9};
  const MeasurementSet linear_data =
      synthetic([&](const Workload& w, const cloud::InstanceType& type, int) {
        return 1.0 / lin.single_step_s(w, type);
      });
  const FittedParams lin_fit = fit_fitted(linear_data, {"linear", lin.features, 0.0}, kOptions);
  for (std::size_t k = 0; k < lin.coefficients.size(); ++k) {
    EXPECT_NEAR(lin_fit.coefficients[k], lin.coefficients[k], 1e-6 * std::abs(lin.coefficients[k]))
        << k;
  }
}

class MeasurementFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("transient_perf_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(MeasurementFiles, UnrecognisedFilesAreNamed) {
  write("speeds.csv", "alpha,beta\n1,2\n");
  try {
    read_measurements(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), (dir_ / "speeds.csv").string());
    EXPECT_NE(std::string(error.what()).find("unrecognised measurement file"), std::string::npos);
  }
  fs::remove(dir_ / "speeds.csv");
  write("notes.txt", "hello\n");
  try {
    read_measurements(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), (dir_ / "notes.txt").string());
  }
}

TEST_F(MeasurementFiles, BadRowsNameFileAndLine) {
  write("figures/speed.csv",
        "gpu,num_ps,model,num_workers,speed_steps_per_sec_mean,speed_steps_per_sec_std\n"
        "K80,1,ResNet-32,1,4.51,0.04\n"
        "K80,1,ResNet-32,two,9.06,0.09\n");
  try {
    read_measurements(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 3) << error.what();
    EXPECT_NE(std::string(error.what()).find("num_workers"), std::string::npos) << error.what();
  }
  write("figures/speed.csv",
        "gpu,num_ps,model,num_workers,speed_steps_per_sec_mean,speed_steps_per_sec_std\n"
        "K80,1,VGG-16,1,4.51,0.04\n");
  try {
    read_measurements(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 2) << error.what();
    EXPECT_NE(std::string(error.what()).find("unknown workload \"VGG-16\""), std::string::npos);
  }
}

TEST_F(MeasurementFiles, ReadsTrainerSteps) {
  write("job/steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss\n"
        "1,0,64,0.01,0.2,0.05,0.01,2.3\n"
        "1,1,64,0.01,0.3,0.04,0.01,2.3\n"
        "2,0,128,0.01,0.25,0.0,0.01,2.2\n");
  const MeasurementSet data = read_measurements(dir_.string());
  ASSERT_EQ(data.trainer_steps.size(), 2u);
  EXPECT_EQ(data.trainer_steps[0].workers, 2);
  EXPECT_DOUBLE_EQ(data.trainer_steps[0].batch, 128);
  EXPECT_DOUBLE_EQ(data.trainer_steps[0].compute_s, 0.3);
  EXPECT_NEAR(data.trainer_steps[0].allreduce_s, 0.045, 1e-12);
  EXPECT_NEAR(data.trainer_steps[0].step_s, 0.36, 1e-12);
}

// A job's rows appended to its steps.csv again were added to the steps they repeat: fit reported
// twice the workers, batch and samples/s. A row repeating the step, worker and generation of an
// earlier one is refused naming both lines, as the reader refuses any row it cannot take.
TEST_F(MeasurementFiles, ARepeatedTrainerRowIsRefusedNamingItsLine) {
  const std::string rows =
      "1,0,64,0.01,0.2,0.0,0.01,2.3,0,0\n"
      "2,0,64,0.01,0.2,0.0,0.01,2.2,0,64\n";
  write("job/steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n" +
            rows + rows);
  try {
    read_measurements(dir_.string());
    FAIL() << "the repeated rows were taken";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), (dir_ / "job" / "steps.csv").string());
    EXPECT_EQ(error.line(), 4);
    EXPECT_NE(std::string(error.what())
                  .find("repeats the row of step 1, worker 0 and generation 0 of line 2; "
                        "accepted: one row per step, worker and generation"),
              std::string::npos)
        << error.what();
  }
  // Without a gen column (older files) the generation is 0: the same refusal.
  write("job/steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s\n"
        "1,0,64,0.01,0.2,0.0,0.01\n1,1,64,0.01,0.2,0.0,0.01\n1,0,64,0.01,0.2,0.0,0.01\n");
  EXPECT_THROW(read_measurements(dir_.string()), InputError);
}

// A step trained again by a later generation (members lost mid-step, a resume) counts once, with
// that generation's members, as the trainer's merge keeps it; the earlier rows are not added in.
TEST_F(MeasurementFiles, AStepRedoneByALaterGenerationCountsItsRowsOnly) {
  write("job/steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
        "1,0,32,0.01,0.1,0.02,0.01,2.3,0,0\n"
        "1,1,32,0.01,0.1,0.02,0.01,2.3,0,32\n"
        "1,0,64,0.01,0.2,0.0,0.01,2.3,1,0\n"
        "2,0,64,0.01,0.2,0.0,0.01,2.2,1,64\n");
  const MeasurementSet data = read_measurements(dir_.string());
  ASSERT_EQ(data.trainer_steps.size(), 2u);
  EXPECT_EQ(data.trainer_steps[0].workers, 1);
  EXPECT_DOUBLE_EQ(data.trainer_steps[0].batch, 64);
  EXPECT_NEAR(data.trainer_steps[0].step_s, 0.22, 1e-12);
}

// Rows whose times add up to 0 made fit print "measured inf predicted inf -nan%": a step takes
// time, at least steps.csv's microsecond, and a row of none is refused naming its line.
TEST_F(MeasurementFiles, ATrainerStepOfNoTimeIsRefusedNamingItsLine) {
  write("job/steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
        "1,0,64,0.01,0.2,0.0,0.01,2.3,0,0\n"
        "2,0,64,0,0,0,0,2.2,0,64\n");
  try {
    read_measurements(dir_.string());
    FAIL() << "a step of no time was taken";
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 3) << error.what();
    EXPECT_NE(std::string(error.what())
                  .find("add up to 0 s, and a step takes time; accepted: a total of at least "
                        "1e-6 s"),
              std::string::npos)
        << error.what();
  }
}

// A symlink loop under --data made the directory walk throw the standard library's
// filesystem_error (an internal failure, exit 1): it is an InputError naming the entry.
TEST_F(MeasurementFiles, ASymlinkLoopIsAnInputErrorNamingIt) {
  write("job/steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s\n1,0,64,0.01,0.2,0.0,0.01\n");
  fs::create_symlink("events.jsonl", dir_ / "job" / "events.jsonl");
  try {
    read_measurements(dir_.string());
    FAIL() << "the loop was taken";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), (dir_ / "job" / "events.jsonl").string());
    EXPECT_NE(error.message().find("cannot be read: Too many levels of symbolic links"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(MeasurementFiles, TrainerJobDirectoriesCalibrate) {
  // compute 0.05 s + 1e-3 s/sample, other 0.01 s, all-reduce 0.04 s x (n-1)/n; global batch 120.
  auto job = [&](const std::string& dir, int workers, const std::string& summary) {
    std::string steps = "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss\n";
    const double batch = 120.0 / workers;
    const double allreduce = 0.04 * (workers - 1.0) / workers;
    for (int step = 1; step <= 5; ++step) {
      for (int w = 0; w < workers; ++w) {
        steps += std::to_string(step) + "," + std::to_string(w) + "," +
                 std::to_string(static_cast<int>(batch)) + ",0.004," +
                 std::to_string(0.05 + 1e-3 * batch) + "," + std::to_string(allreduce) +
                 ",0.006,1.0\n";
      }
    }
    write(dir + "/steps.csv", steps);
    write(dir + "/job.json", R"({"model": "cnn", "global_batch": 120})");
    write(dir + "/summary.json", summary);
    write(dir + "/checkpoints/step-00000005.pt", "binary");
    write(dir + "/events.jsonl",
          "{\"event\":\"generation\",\"gen\":0}\n"
          "{\"event\":\"checkpoint\",\"bytes\":2000000,\"write_s\":0.04}\n");
  };
  job("one", 1, R"({"threads_per_worker": 2})");
  job("two", 2, "{}");
  job("three", 3, R"({"threads_per_worker": 5000})");
  const MeasurementSet data = read_measurements(dir_.string());
  EXPECT_EQ(data.trainer_checkpoints.size(), 3u);
  // The workers' threads where a summary says them within what a profile holds (1 to 4096).
  ASSERT_EQ(data.trainer_threads.size(), 1u);
  EXPECT_EQ(data.trainer_threads.begin()->second, 2);
  EXPECT_NE(data.trainer_threads.begin()->first.find("one"), std::string::npos);
  const TrainerCalibrationResult result = calibrate_trainer(data);
  ASSERT_EQ(result.models.size(), 1u);
  const TrainerCalibration& c = result.models[0];
  EXPECT_EQ(c.model, "cnn");
  EXPECT_NEAR(c.compute_fixed_s, 0.05, 1e-5);
  EXPECT_NEAR(c.compute_per_sample_s, 1e-3, 1e-7);
  EXPECT_NEAR(c.other_s, 0.01, 1e-5);
  EXPECT_NEAR(c.allreduce_full_s, 0.04, 1e-5);
  ASSERT_EQ(result.runs.size(), 3u);
  for (const auto& run : result.runs) {
    EXPECT_NEAR(run.predicted_samples_per_s, run.measured_samples_per_s,
                1e-3 * run.measured_samples_per_s);
  }
  // 3 workers of 40 samples: 0.01 + 0.05 + 0.04 + 2/3 x 0.04 s per step.
  EXPECT_NEAR(c.samples_per_s(3, 120), 120 / (0.1 + 0.04 * 2 / 3), 1e-2);
}

TEST_F(MeasurementFiles, BadTrainerEventsNameFileAndLine) {
  write("job/steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss\n"
        "1,0,64,0.01,0.2,0.0,0.01,2.3\n");
  write("job/events.jsonl", "{\"event\":\"generation\"}\n{\"event\":\"checkpoint\"}\n");
  try {
    read_measurements(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 2) << error.what();
    EXPECT_NE(std::string(error.what()).find("bytes"), std::string::npos) << error.what();
  }
  write("job/events.jsonl", "{\"event\":\"generation\"}\nnot json\n");
  try {
    read_measurements(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 2) << error.what();
  }
}

// Found writing the measurement-set fuzz target (issue 18): a number beyond a double, a
// non-string "event", a folder naming 99999999999 workers and absurd figures escaped as
// nlohmann's or the standard library's exceptions, or were accepted; each is now one InputError.
TEST_F(MeasurementFiles, EveryNumberIsBoundedAndNoForeignExceptionEscapes) {
  const std::string steps =
      "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s\n1,0,64,0.01,0.2,0.0,0.01\n";
  write("job/steps.csv", steps);
  write("job/events.jsonl", "{\"event\": \"checkpoint\", \"bytes\": 1e400, \"write_s\": 1}\n");
  EXPECT_THROW(read_measurements(dir_.string()), InputError);
  write("job/events.jsonl", "{\"event\": 3}\n");
  EXPECT_NO_THROW(read_measurements(dir_.string()));  // not a checkpoint: skipped, as before
  write("job/events.jsonl", "{\"event\": \"checkpoint\", \"bytes\": 1e30, \"write_s\": 1}\n");
  EXPECT_THROW(read_measurements(dir_.string()), InputError);
  fs::remove_all(dir_ / "job");

  write("job/job.json", "{\"model\": 3}\n");
  write("job/steps.csv", steps);
  EXPECT_THROW(read_measurements(dir_.string()), InputError);
  fs::remove_all(dir_ / "job");

  write("job/steps.csv",
        "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s\n1e300,0,64,0.01,0.2,0,0\n");
  try {
    read_measurements(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 2) << error.what();
    EXPECT_NE(std::string(error.what()).find("accepted: a whole number from 0 to 1e12 steps"),
              std::string::npos)
        << error.what();
  }
  fs::remove_all(dir_ / "job");

  write("res32k80worker99999999999/run.csv", "Wall time,Step,Value\n1,1,2\n2,2,3\n");
  try {
    read_measurements(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("accepted: a whole number from 1 to 1e4 servers"),
              std::string::npos)
        << error.what();
  }
}

const std::string kCmdare = std::string(TRANSIENT_SHARED_DATA_DIR) + "/cmdare";

TEST(CmdareData, EveryFileIsRecognisedAndTheBuiltinsAreItsFit) {
  if (!fs::exists(kCmdare)) {
    FAIL() << "the shared data directory " << kCmdare << " is missing";
  }
  const MeasurementSet data = read_measurements(kCmdare);
  EXPECT_EQ(data.single_worker.size(), 40u);  // 20 CNNs on K80 and P100
  EXPECT_EQ(data.cluster.size(), 64u);        // 4 CNNs x 2 GPUs x 1..8 workers
  EXPECT_EQ(data.published.size(), 31u);
  const AnalyticParams fit = fit_analytic(data, kOptions);
  const AnalyticParams builtin = AnalyticParams::builtin();
  for (const auto& [family, efficiency] : fit.efficiency) {
    EXPECT_NEAR(builtin.efficiency_for(family), efficiency, 1e-3 * efficiency) << family;
  }
  for (const auto& [gpu, seconds] : fit.per_tensor_s) {
    EXPECT_NEAR(builtin.per_tensor_s_for(gpu), seconds, 1e-3 * seconds) << gpu;
  }
  const FittedParams fitted =
      fit_fitted(data, choose_candidate(data.single_worker, kOptions), kOptions);
  const FittedParams builtin_fitted = FittedParams::builtin();
  EXPECT_EQ(builtin_fitted.features, fitted.features);
  ASSERT_EQ(builtin_fitted.coefficients.size(), fitted.coefficients.size());
  for (std::size_t k = 0; k < fitted.coefficients.size(); ++k) {
    EXPECT_NEAR(builtin_fitted.coefficients[k], fitted.coefficients[k],
                1e-6 * std::abs(fitted.coefficients[k]))
        << k;
  }
  EXPECT_NEAR(builtin.step_overhead_s, fit.step_overhead_s, 1e-3 * fit.step_overhead_s + 1e-9);
  EXPECT_NEAR(builtin.communication.ps_network_gbps, fit.communication.ps_network_gbps,
              1e-3 * fit.communication.ps_network_gbps);
  EXPECT_NEAR(builtin.communication.contention_sharpness, fit.communication.contention_sharpness,
              1e-9);
}

using ErrorsOf = std::vector<WorkloadError> CrossValidation::*;
const ErrorsOf kAllErrors[] = {&CrossValidation::analytic_single, &CrossValidation::fitted_single,
                               &CrossValidation::analytic_cluster,
                               &CrossValidation::fitted_cluster};

// Multiplies every speed of `gpu` (or of `workload`) by `factor`.
MeasurementSet scaled(MeasurementSet data, const std::string& gpu, const std::string& workload,
                      double factor) {
  for (auto* points : {&data.single_worker, &data.cluster}) {
    for (auto& m : *points) {
      if ((!gpu.empty() && m.gpu == gpu) || (!workload.empty() && m.workload == workload)) {
        m.steps_per_s *= factor;
      }
    }
  }
  return data;
}

const WorkloadError& error_of(const std::vector<WorkloadError>& errors, const std::string& workload,
                              const std::string& gpu) {
  for (const auto& e : errors) {
    if (e.workload == workload && e.gpu == gpu) return e;
  }
  ADD_FAILURE() << "no error for " << workload << " on " << gpu;
  static const WorkloadError none;
  return none;
}

// The held-out GPU is really left out: scaling its speeds by 1.3 leaves its fold's fitted
// constants and predictions as they were and changes only the measurements they are compared with
// (so the error changes); scaling the other GPU changes the predictions.
TEST(CmdareData, LeaveOneGpuOutNeverSeesTheHeldOutGpu) {
  const MeasurementSet data = read_measurements(kCmdare);
  const CrossValidation base = cross_validate_gpus(data, kOptions);
  const CrossValidation p100_scaled = cross_validate_gpus(scaled(data, "P100", "", 1.3), kOptions);
  ASSERT_EQ(base.analytic_folds.count("P100"), 1u);
  EXPECT_EQ(base.analytic_folds.at("P100").to_json(),
            p100_scaled.analytic_folds.at("P100").to_json());
  EXPECT_EQ(base.fitted_folds.at("P100").to_json(), p100_scaled.fitted_folds.at("P100").to_json());
  EXPECT_EQ(base.analytic_folds.at("P100").fitted_gpu_tflops.count("P100"), 0u);
  EXPECT_NE(base.analytic_folds.at("K80").to_json(),
            p100_scaled.analytic_folds.at("K80").to_json());
  for (const ErrorsOf kind : kAllErrors) {
    for (const auto& e : base.*kind) {
      const WorkloadError& after = error_of(p100_scaled.*kind, e.workload, e.gpu);
      ASSERT_EQ(after.ape_percent.size(), e.ape_percent.size());
      for (std::size_t i = 0; i < e.ape_percent.size(); ++i) {
        if (e.gpu == "P100") {
          EXPECT_DOUBLE_EQ(after.predicted_steps_per_s[i], e.predicted_steps_per_s[i])
              << e.workload;
          EXPECT_DOUBLE_EQ(after.measured_steps_per_s[i], 1.3 * e.measured_steps_per_s[i]);
          EXPECT_NE(after.ape_percent[i], e.ape_percent[i]) << e.workload;
        } else {
          EXPECT_NE(after.predicted_steps_per_s[i], e.predicted_steps_per_s[i]) << e.workload;
          EXPECT_DOUBLE_EQ(after.measured_steps_per_s[i], e.measured_steps_per_s[i]);
        }
      }
    }
  }
}

// The same for leave-one-model-out: resnet-32's fold never sees resnet-32.
TEST(CmdareData, LeaveOneModelOutNeverSeesTheHeldOutModel) {
  const MeasurementSet data = read_measurements(kCmdare);
  const CrossValidation base = cross_validate(data, kOptions);
  const CrossValidation scaled_cv = cross_validate(scaled(data, "", "resnet-32", 0.7), kOptions);
  EXPECT_EQ(base.analytic_folds.at("resnet-32").to_json(),
            scaled_cv.analytic_folds.at("resnet-32").to_json());
  EXPECT_EQ(base.fitted_folds.at("resnet-32").to_json(),
            scaled_cv.fitted_folds.at("resnet-32").to_json());
  EXPECT_NE(base.analytic_folds.at("resnet-15").to_json(),
            scaled_cv.analytic_folds.at("resnet-15").to_json());
  for (const std::string gpu : {"K80", "P100"}) {
    for (const ErrorsOf kind : kAllErrors) {
      const WorkloadError& before = error_of(base.*kind, "resnet-32", gpu);
      const WorkloadError& after = error_of(scaled_cv.*kind, "resnet-32", gpu);
      ASSERT_EQ(before.ape_percent.size(), after.ape_percent.size());
      for (std::size_t i = 0; i < before.ape_percent.size(); ++i) {
        EXPECT_DOUBLE_EQ(after.predicted_steps_per_s[i], before.predicted_steps_per_s[i]);
        EXPECT_DOUBLE_EQ(after.measured_steps_per_s[i], 0.7 * before.measured_steps_per_s[i]);
        EXPECT_NE(after.ape_percent[i], before.ape_percent[i]);
      }
    }
  }
}

// docs/models.md's figures (deterministic: the fit has no randomness). Leave one GPU out, the
// analytic model meets the 10% goal both ways, on one worker and on clusters; the fitted model
// misses it on the P100 (one worker, and its clusters just).
TEST(CmdareData, LeaveOneGpuOutErrorsAreTheDocumentedOnes) {
  const CrossValidation cv = cross_validate_gpus(read_measurements(kCmdare), kOptions);
  EXPECT_EQ(cv.analytic_single.size(), 40u);
  EXPECT_NEAR(mape_percent(cv.analytic_single, "P100"), 9.3, 0.05);
  EXPECT_NEAR(mape_percent(cv.analytic_single, "K80"), 7.3, 0.05);
  EXPECT_NEAR(mape_percent(cv.fitted_single, "P100"), 19.0, 0.05);
  EXPECT_NEAR(mape_percent(cv.fitted_single, "K80"), 7.3, 0.05);
  EXPECT_NEAR(mape_percent(cv.analytic_cluster, "P100"), 7.8, 0.05);
  EXPECT_NEAR(mape_percent(cv.analytic_cluster, "K80"), 5.8, 0.05);
  EXPECT_NEAR(mape_percent(cv.fitted_cluster, "P100"), 10.3, 0.05);
  EXPECT_NEAR(mape_percent(cv.fitted_cluster, "K80"), 5.8, 0.05);
  for (const char* gpu : {"K80", "P100"}) {
    EXPECT_LE(mape_percent(cv.analytic_single, gpu), 10.0) << gpu;
    EXPECT_LE(mape_percent(cv.analytic_cluster, gpu), 10.0) << gpu;
  }
}

// The K80's clusters are compute-bound and never reach the parameter server's limit, so they
// do not identify its link: fitted on them alone, stage 2 stops at the measured servers' nominal
// link (ThroughputFitOptions::server_network_gbps) instead of 63 Gbit/s, which predicted
// shake-shake-big on 8 P100s at 13.7 steps/s (6.5 measured). At that bound the K80's clusters
// give the server's per-tensor cost and the sharpness of the full fit.
TEST(CmdareData, ServerLinkIsBoundByTheMeasuredServersNetwork) {
  const MeasurementSet data = read_measurements(kCmdare);
  MeasurementSet k80;
  for (const auto& m : data.single_worker) {
    if (m.gpu == "K80") k80.single_worker.push_back(m);
  }
  for (const auto& m : data.cluster) {
    if (m.gpu == "K80") k80.cluster.push_back(m);
  }
  const CommunicationParams fold = fit_analytic(k80, kOptions).communication;
  EXPECT_DOUBLE_EQ(fold.ps_network_gbps, kOptions.server_network_gbps);
  const CommunicationParams full = CommunicationParams::builtin();
  EXPECT_NEAR(fold.ps_per_tensor_s, full.ps_per_tensor_s, 0.05 * full.ps_per_tensor_s);
  EXPECT_EQ(fold.contention_sharpness, full.contention_sharpness);
  EXPECT_LT(full.ps_network_gbps, kOptions.server_network_gbps);  // the bound is not active here

  ThroughputFitOptions wide = kOptions;
  wide.server_network_gbps = 100.0;  // the search's range: the fit of before
  EXPECT_GT(fit_analytic(k80, wide).communication.ps_network_gbps, 50.0);
}

// docs/models.md's comparison: the same folds' constants carried across by the rules that were
// not chosen. Held-out GPU G, fitted GPU F: "per-tensor as is" = FLOPs at G's TFLOPS with F's
// efficiency and F's per-tensor cost (the rule before gpu_time_factor); "TFLOPS" = F's GPU-side
// time scaled by TFLOPS_F / TFLOPS_G.
TEST(CmdareData, LeaveOneGpuOutOtherTransferRulesAreWorse) {
  const MeasurementSet data = read_measurements(kCmdare);
  const CrossValidation cv = cross_validate_gpus(data, kOptions);
  const std::map<std::string, double> tflops = {{"K80", 4.113}, {"P100", 9.526}};
  for (const auto& [held_out, as_is_mape, tflops_mape] :
       {std::tuple<std::string, double, double>{"P100", 43.1, 16.7}, {"K80", 89.9, 27.6}}) {
    const std::string fitted = held_out == "P100" ? "K80" : "P100";
    const AnalyticParams& p = cv.analytic_folds.at(held_out);
    double as_is = 0, by_tflops = 0, count = 0;
    for (const auto& m : data.single_worker) {
      if (m.gpu != held_out) continue;
      const Workload& w = find_workload(m.workload);
      const double efficiency = p.efficiency_for(w.family, fitted);
      const double rest_s =
          p.step_overhead_s +
          internal::worker_transfer_s(w, kOptions.worker_network_gbps, p.communication);
      const double per_tensor_s = w.tensors * p.per_tensor_s_for(fitted);
      const double old_step =
          w.flops_per_step() / (tflops.at(held_out) * 1e12 * efficiency) + per_tensor_s + rest_s;
      const double scaled_step =
          (w.flops_per_step() / (tflops.at(fitted) * 1e12 * efficiency) + per_tensor_s) *
              tflops.at(fitted) / tflops.at(held_out) +
          rest_s;
      as_is += 100 * std::abs(1 / old_step - m.steps_per_s) / m.steps_per_s;
      by_tflops += 100 * std::abs(1 / scaled_step - m.steps_per_s) / m.steps_per_s;
      count += 1;
    }
    EXPECT_NEAR(as_is / count, as_is_mape, 0.5) << held_out;
    EXPECT_NEAR(by_tflops / count, tflops_mape, 0.5) << held_out;
    EXPECT_GT(by_tflops / count, mape_percent(cv.analytic_single, held_out)) << held_out;
  }
}

TEST(CmdareData, LeaveOneModelOutErrorsAreTheDocumentedOnes) {
  const CrossValidation cv = cross_validate(read_measurements(kCmdare), kOptions);
  EXPECT_NEAR(mape_percent(cv.analytic_single, "K80"), 5.5, 0.05);
  EXPECT_NEAR(mape_percent(cv.analytic_single, "P100"), 8.9, 0.05);
  EXPECT_NEAR(mape_percent(cv.fitted_single, "K80"), 5.0, 0.05);
  EXPECT_NEAR(mape_percent(cv.fitted_single, "P100"), 13.5, 0.05);
  EXPECT_NEAR(mape_percent(cv.analytic_cluster), 6.9, 0.05);
  EXPECT_NEAR(mape_percent(cv.fitted_cluster), 6.4, 0.05);
}

// K80 speeds of the first `n` workloads: 6 to 8 failed with a fold's count ("needs more
// single-worker measurements than 5; the data has 5", from the nested choice's fold of 4) though
// the data had enough; forms a fold cannot fit are not candidates, and the real minimum, 6
// workloads (the analytic model's 5 in each fold), is the one stated.
TEST(CmdareData, FewWorkloadsFitOrStateTheRealMinimum) {
  const MeasurementSet all = read_measurements(kCmdare);
  for (const int n : {5, 6, 7, 8}) {
    MeasurementSet data;
    std::vector<std::string> kept;
    for (const auto& m : all.single_worker) {
      if (m.gpu != "K80") continue;
      if (std::find(kept.begin(), kept.end(), m.workload) == kept.end()) {
        if (static_cast<int>(kept.size()) == n) continue;
        kept.push_back(m.workload);
      }
      data.single_worker.push_back(m);
    }
    ASSERT_EQ(static_cast<int>(kept.size()), n);
    if (n == 5) {
      try {
        cross_validate(data, kOptions);
        FAIL() << "5 workloads";
      } catch (const InputError& error) {
        EXPECT_EQ(std::string(error.what()),
                  "leave-one-model-out cross-validation needs single-worker speeds of at least 6 "
                  "workloads (the analytic model's 5 in each fold); the data has 5");
      }
      continue;
    }
    const CrossValidation cv = cross_validate(data, kOptions);
    EXPECT_FALSE(cv.candidate_mape.empty()) << n;
    EXPECT_EQ(static_cast<int>(cv.fitted_single.size()), n) << n;
    EXPECT_EQ(static_cast<int>(cv.analytic_single.size()), n) << n;
    const PerfModelFile model = fit_perf_model(data, kOptions, cv);
    EXPECT_EQ(model.fitted.features, cv.chosen.features) << n;
  }
}

// One GPU only: nothing to leave out.
TEST(ThroughputFitting, LeaveOneGpuOutNeedsTwoGpus) {
  MeasurementSet data = read_measurements(kCmdare);
  data.single_worker = [&] {
    std::vector<SpeedMeasurement> k80;
    for (const auto& m : data.single_worker) {
      if (m.gpu == "K80") k80.push_back(m);
    }
    return k80;
  }();
  try {
    cross_validate_gpus(data, kOptions);
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("at least 2 GPU models; the data has 1"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace transient::perf
