// Built-in workloads and profile files.
#include <gtest/gtest.h>

#include "transient/core/error.h"
#include "transient/perf/workload.h"

namespace transient::perf {
namespace {

TEST(Workload, BuiltinsCarryCmdareFeatures) {
  EXPECT_EQ(builtin_workloads().size(), 20u);
  const Workload& r32 = find_workload("resnet-32");
  EXPECT_EQ(r32.parameters, 1857722);
  EXPECT_EQ(r32.tensors, 104);
  EXPECT_DOUBLE_EQ(r32.gradient_bytes, 4.0 * 1857722);
  // CM-DARE's count for a step of 128, in ours (workload.h's FLOP convention).
  EXPECT_DOUBLE_EQ(r32.flops_per_step(), 3.0 * 1658696889 * kFlopsPerCmdareFlop);
  EXPECT_EQ(r32.family, "resnet");
  EXPECT_EQ(&find_workload("Res32"), &r32);
  EXPECT_EQ(&find_workload("ResNet-32"), &r32);
  EXPECT_EQ(find_workload("shakebig").name, "shake-shake-big");
  EXPECT_EQ(find_workload("ShakeShake-Small").name, "shake-shake-small");
  EXPECT_EQ(find_workload("shake small 32d").name, "shake-shake-small-32d");
  EXPECT_EQ(find_workload("cus7").name, "custom7");
  // The average tensor size published in MiB matches parameters / tensors.
  EXPECT_NEAR(r32.average_tensor_bytes, r32.gradient_bytes / r32.tensors, 0.03 * 71452);
}

TEST(Workload, UnknownNameListsTheBuiltins) {
  try {
    find_workload("vgg-16");
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("resnet-15, resnet-32"), std::string::npos);
  }
}

TEST(Workload, ProfileRoundTrip) {
  const Workload& r15 = find_workload("resnet-15");
  Workload w = r15;
  w.measured = MeasuredStep{"cpu", 1.5, 2};
  EXPECT_TRUE(w.model.empty());  // CM-DARE's ResNet-15 is none of the trainer's models
  EXPECT_FALSE(to_json(w).contains("model"));
  w.model = "/models/net.pt";
  const Workload back = parse_workload_profile(to_json(w).dump(2), "p.json");
  EXPECT_EQ(back.model, "/models/net.pt");
  EXPECT_EQ(back.name, w.name);
  EXPECT_EQ(back.family, w.family);
  EXPECT_DOUBLE_EQ(back.flops_per_step(), w.flops_per_step());
  EXPECT_EQ(back.tensors, w.tensors);
  ASSERT_TRUE(back.measured.has_value());
  EXPECT_DOUBLE_EQ(back.measured->step_time_s, 1.5);
  EXPECT_EQ(back.measured->threads, 2);
}

TEST(Workload, ProfileDefaults) {
  const Workload w = parse_workload_profile(
      R"({"name": "mlp", "forward_flops_per_sample": 1e6, "parameters": 1000})", "p.json");
  EXPECT_EQ(w.family, "generic");
  EXPECT_EQ(w.batch_per_worker, 128);
  EXPECT_DOUBLE_EQ(w.backward_flops_per_sample, 2e6);
  EXPECT_DOUBLE_EQ(w.gradient_bytes, 4000);
  EXPECT_EQ(w.tensors, 1);
}

void expect_error_at(const std::string& text, int line, const std::string& words) {
  try {
    parse_workload_profile(text, "bad.json");
    FAIL() << "expected an InputError for " << text;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "bad.json");
    EXPECT_EQ(error.line(), line) << error.what();
    EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
    EXPECT_EQ(std::string(error.what()).rfind("bad.json:", 0), 0u) << error.what();
  }
}

// Issue 18, item 11: 1e100 FLOPs per sample reached CBC and aborted it; every number of a profile
// is bounded where it is read, the bound in the error line.
TEST(Workload, EveryNumberIsBoundedWithTheBoundInTheError) {
  const std::string head = "{\n \"name\": \"x\",\n";
  expect_error_at(head + " \"forward_flops_per_sample\": 1e100\n}", 3,
                  "\"forward_flops_per_sample\" is 1e100; accepted: a number from 1 to 1e18 FLOPs");
  const std::string flops = head + " \"forward_flops_per_sample\": 1e7,\n";
  expect_error_at(flops + " \"backward_flops_per_sample\": 1e19\n}", 4, "from 1 to 1e18 FLOPs");
  expect_error_at(flops + " \"parameters\": 1e30\n}", 4,
                  "accepted: a whole number from 0 to 1e13 parameters");
  expect_error_at(flops + " \"gradient_bytes\": 1e16\n}", 4, "from 0 to 1e15 bytes");
  expect_error_at(flops + " \"parameters\": 10,\n \"batch_per_worker\": 1e7\n}", 5,
                  "accepted: a whole number from 1 to 1e6 samples");
  expect_error_at(flops + " \"parameters\": 10,\n \"tensors\": 2.5\n}", 5,
                  "accepted: a whole number from 1 to 1e7 tensors");
  expect_error_at(flops +
                      " \"parameters\": 10,\n \"measured\": {\"device\": \"K80\", "
                      "\"step_time_s\": 1e-300}\n}",
                  5, "accepted: a number from 1e-6 to 2.592e6 s");
  expect_error_at(flops +
                      " \"parameters\": 10,\n \"measured\": {\"device\": \"cpu\", "
                      "\"step_time_s\": 1,\n \"threads\": 1.5}\n}",
                  6, "\"threads\" is 1.5; accepted: a whole number from 1 to 4096 threads");
  // The bounds themselves are accepted.
  const Workload w = parse_workload_profile(
      head +
          " \"forward_flops_per_sample\": 1e18,\n \"backward_flops_per_sample\": 1,\n"
          " \"parameters\": 1e13,\n \"batch_per_worker\": 1e6\n}",
      "edge.json");
  EXPECT_EQ(w.forward_flops_per_sample, 1e18);
  EXPECT_EQ(w.parameters, 10000000000000);
  EXPECT_EQ(w.batch_per_worker, 1000000);
}

TEST(Workload, BadProfilesNameFileAndLine) {
  expect_error_at("{\n \"name\": \"x\",\n \"forward_flops_per_sample\": -3\n}", 3,
                  "accepted: a number from 1 to 1e18 FLOPs");
  expect_error_at("{\n \"name\": \"x\",\n \"forward_flops_per_sample\": 1e6,\n \"famly\": 1\n}", 4,
                  "unknown key \"famly\"");
  expect_error_at(
      "{\n \"name\": \"x\",\n \"forward_flops_per_sample\": 1e6,\n"
      " \"parameters\": 10,\n \"model\": 3\n}",
      5, "\"model\" must be a non-empty string");
  expect_error_at(
      "{\n \"name\": \"x\",\n \"forward_flops_per_sample\": 1e6,\n"
      " \"parameters\": 10,\n \"family\": \"vgg\"\n}",
      5, "accepted: resnet, shake-shake, generic");
  expect_error_at(
      "{\n \"name\": \"x\",\n \"forward_flops_per_sample\": 1e6,\n \"parameters\": 10,"
      "\n \"measured\": {\n  \"device\": \"K80\",\n  \"step_time_s\": \"fast\"\n }\n}",
      7, "step_time_s");
  expect_error_at("{\"name\": \"x\"}", 0, "missing \"forward_flops_per_sample\"");
  expect_error_at("{\n \"name\": \"x\",\n \"forward_flops_per_sample\": 1e6\n}", 0,
                  "\"parameters\" or \"gradient_bytes\"");
  expect_error_at("{\n \"name\": \"x\",\n", 3, "");  // a JSON syntax error
}

}  // namespace
}  // namespace transient::perf
