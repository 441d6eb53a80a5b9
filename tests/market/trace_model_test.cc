#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "market/test_data.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/market/availability_trace_model.h"
#include "transient/market/node_trace_model.h"
#include "transient/market/registry.h"

namespace transient::market {
namespace {

const std::vector<std::string> kAvailabilityTraces = {
    "us-west-2a_k80_1", "us-west-2a_k80_8", "us-west-2a_v100_1", "us-west-2a_v100_8",
    "us-west-2b_k80_1", "us-west-2b_k80_8", "us-west-2b_v100_1", "us-west-2b_v100_8"};

std::unique_ptr<RevocationModel> trace(const std::string& file, const std::string& offset) {
  ModelParams params;
  params.values["file"] = file;
  params.values["offset"] = offset;
  return create_revocation_model("trace", params, testing::data_context());
}

class AvailabilityReplay : public ::testing::TestWithParam<std::string> {};

// One server slot kept filled over the whole trace from offset 0: the share of time a server can
// be had is the share of 1-ticks, and the revocations are the trace's 1 -> 0 drops, exactly.
TEST_P(AvailabilityReplay, ReproducesAvailabilityAndDrops) {
  const std::string name = GetParam();
  const nlohmann::json json =
      load_json_file(testing::data_path("spot-traces/aws-availability-2022-10/" + name + ".json"));
  const std::vector<int> ticks = json["data"].get<std::vector<int>>();
  const double gap_s = json["metadata"]["gap_seconds"].get<double>();
  int ones = 0;
  int drops = 0;
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    ones += ticks[i];
    if (i > 0) drops += ticks[i - 1] == 1 && ticks[i] == 0;
  }
  const double end_s = gap_s * ticks.size();

  const auto model = trace(name, "0s");
  const auto& replay = dynamic_cast<const AvailabilityTraceModel&>(*model);
  EXPECT_EQ(replay.drops(), drops);
  EXPECT_DOUBLE_EQ(replay.available_fraction(), static_cast<double>(ones) / ticks.size());

  Rng rng(1);
  auto timeline = model->start_run(0.0, rng);
  int available_ticks = 0;
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    available_ticks += timeline->available_at((i + 0.5) * gap_s);
  }
  EXPECT_EQ(available_ticks, ones);

  int revocations = 0;
  double available_s = 0.0;
  double t = 0.0;
  while (true) {
    t = timeline->next_available_s(t);
    if (t >= end_s) break;
    const double revoked = timeline->revocation_time_s(t, rng);
    ASSERT_GT(revoked, t);
    available_s += std::min(revoked, end_s) - t;
    if (revoked >= end_s) break;
    ++revocations;
    EXPECT_FALSE(timeline->available_at(revoked));
    t = revoked;
  }
  EXPECT_EQ(revocations, drops) << name;
  EXPECT_DOUBLE_EQ(available_s / end_s, static_cast<double>(ones) / ticks.size()) << name;
}

INSTANTIATE_TEST_SUITE_P(SkyPilot, AvailabilityReplay, ::testing::ValuesIn(kAvailabilityTraces));

TEST(AvailabilityTrace, OffsetShiftsTheReplay) {
  // us-west-2a_k80_1 starts 1,1,1,1,1,1,0,0,1: from offset 2 ticks, the first drop is 4 ticks on.
  const auto model = trace("us-west-2a_k80_1", "20m");
  Rng rng(1);
  auto timeline = model->start_run(0.0, rng);
  EXPECT_TRUE(timeline->available_at(0.0));
  EXPECT_DOUBLE_EQ(timeline->revocation_time_s(0.0, rng), 4 * 600.0);
  EXPECT_FALSE(timeline->available_at(4 * 600.0 + 1.0));
  EXPECT_DOUBLE_EQ(timeline->next_available_s(4 * 600.0), 6 * 600.0);
}

TEST(AvailabilityTrace, TraceRepeatsAfterItsEnd) {
  std::vector<std::uint8_t> ticks = {1, 1, 0, 1};
  AvailabilityTraceModel model(ticks, 10.0, 0.0, kNever, "test");
  Rng rng(1);
  auto timeline = model.start_run(0.0, rng);
  // Launched in the last tick, revoked at the repeated trace's first 0 (tick 4 + 2).
  EXPECT_DOUBLE_EQ(timeline->revocation_time_s(35.0, rng), 60.0);
  EXPECT_DOUBLE_EQ(timeline->next_available_s(25.0), 30.0);
}

TEST(AvailabilityTrace, RandomOffsetIsDeterministicForASeed) {
  const auto model = trace("us-west-2b_v100_8", "random");
  std::vector<double> a;
  std::vector<double> b;
  Rng rng_a(99);
  Rng rng_b(99);
  for (int i = 0; i < 50; ++i) {
    a.push_back(model->sample_lifetime_s(rng_a));
    b.push_back(model->sample_lifetime_s(rng_b));
  }
  EXPECT_EQ(a, b);
  Rng rng_c(100);
  std::vector<double> c;
  for (int i = 0; i < 50; ++i) c.push_back(model->sample_lifetime_s(rng_c));
  EXPECT_NE(a, c);
}

TEST(AvailabilityTrace, BadTickIsAnErrorNamingIt) {
  const std::string path = ::testing::TempDir() + "/bad_trace.json";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("{\"metadata\": {\"gap_seconds\": 600}, \"data\": [1, 1, 2]}", f);
    std::fclose(f);
  }
  try {
    AvailabilityTraceModel::read(path, 0.0, kNever);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), path + ": data[2] is 2; accepted: 0 or 1");
  }
}

// Issue 18: 4294967297 was read with get<int>() and wrapped around to 1; gap_seconds and event
// times are bounded, the bound in the error.
TEST(AvailabilityTrace, TicksAndGapsAreCheckedAsTheyAre) {
  const auto read = [](const std::string& path) {
    AvailabilityTraceModel::read(path, 0.0, kNever);
  };
  const std::string path = ::testing::TempDir() + "/checked_trace.json";
  EXPECT_EQ(testing::error_of_file(
                "checked_trace.json",
                "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [1, 4294967297, 0]}", read),
            path + ": data[1] is 4294967297; accepted: 0 or 1");
  EXPECT_EQ(
      testing::error_of_file("checked_trace.json",
                             "{\"metadata\": {\"gap_seconds\": 1e300}, \"data\": [1, 0]}", read),
      path +
          ": metadata.gap_seconds is 1e300; accepted: a number from 0.001 to 8.64e4 s "
          "between ticks");
}

TEST(NodeTrace, EventTimesAreBounded) {
  EXPECT_EQ(testing::error_of_file(
                "far_nodes.csv", "time_ms,event,node\n0,add,node1\n1e300,remove,node1\n",
                [](const std::string& path) { NodeTraceModel::read(path, 0.0, kNever); }),
            ::testing::TempDir() +
                "/far_nodes.csv:3: time_ms 1e300 is out of range; accepted: a number from 0 to "
                "3.1536e10 ms (a year)");
}

// A fleet that takes every node it can: every removal in the trace revokes one server.
int replay_fleet(const RevocationModel& model, double end_s, int* peak_servers) {
  Rng rng(5);
  auto timeline = model.start_run(0.0, rng);
  std::priority_queue<double, std::vector<double>, std::greater<double>> live;
  int revocations = 0;
  *peak_servers = 0;
  double t = 0.0;
  while (true) {
    while (timeline->available_at(t)) live.push(timeline->revocation_time_s(t, rng));
    *peak_servers = std::max(*peak_servers, static_cast<int>(live.size()));
    const double next_revocation = live.empty() ? kNever : live.top();
    const double next_available = timeline->next_available_s(t);
    t = std::min(next_revocation, next_available);
    if (t > end_s) break;
    while (!live.empty() && live.top() <= t) {
      live.pop();
      ++revocations;
    }
  }
  return revocations;
}

TEST(NodeTrace, FleetReplayRevokesAtEveryRemoval) {
  for (const std::string name : {"p3", "g4dn"}) {
    const auto model = trace(name, "0s");
    const auto& nodes = dynamic_cast<const NodeTraceModel&>(*model);
    int removes = 0;
    {
      std::FILE* f = std::fopen(
          testing::data_path("spot-traces/aws-node-events/" + name + "-trace.csv").c_str(), "r");
      ASSERT_NE(f, nullptr);
      char line[256];
      while (std::fgets(line, sizeof line, f))
        removes += std::string(line).find(",remove,") != std::string::npos;
      std::fclose(f);
    }
    EXPECT_EQ(nodes.removals(), removes) << name;
    int peak = 0;
    EXPECT_EQ(replay_fleet(*model, nodes.duration_s(), &peak), removes) << name;
    EXPECT_EQ(peak, nodes.peak_nodes()) << name;
  }
}

// A node is taken while a server holds it, and free again once the job releases that server
// (a released instance goes back to the pool); releasing a server lost at once frees nothing.
TEST(NodeTrace, AReleasedServersNodeIsFreeForTheNext) {
  using Presence = NodeTraceModel::Presence;
  const NodeTraceModel fleet({Presence{0, 0.0, 5000.0}, Presence{1, 100.0, 900.0}}, 2, 5000.0, 0.0,
                             kNever, "two nodes");
  Rng rng(1);
  auto timeline = fleet.start_run(0.0, rng);
  const double first = timeline->revocation_time_s(0.0, rng);  // node 0, the one present
  EXPECT_EQ(first, 5000.0);
  EXPECT_FALSE(timeline->available_at(50.0));
  EXPECT_EQ(timeline->next_available_s(50.0), 100.0);
  const double second = timeline->revocation_time_s(200.0, rng);  // node 1, the one free
  EXPECT_EQ(second, 900.0);
  EXPECT_FALSE(timeline->available_at(300.0));
  EXPECT_EQ(timeline->revocation_time_s(300.0, rng), 300.0);  // none free: lost at once
  timeline->released(300.0);
  EXPECT_FALSE(timeline->available_at(300.0));
  timeline->released(first);
  EXPECT_TRUE(timeline->available_at(300.0));
  EXPECT_EQ(timeline->revocation_time_s(300.0, rng), 5000.0);
  timeline->released(second);
  timeline->released(5000.0);
  EXPECT_TRUE(timeline->available_at(400.0));
  EXPECT_EQ(timeline->next_available_s(950.0), 950.0);  // node 0 (node 1 is gone)
}

TEST(NodeTrace, BadEventIsAnErrorAtItsLine) {
  const std::string path = ::testing::TempDir() + "/bad_nodes.csv";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("0,add,node1\n1000,add,node2\n2000,drop,node1\n", f);
    std::fclose(f);
  }
  try {
    NodeTraceModel::read(path, 0.0, kNever);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), path + ":3: event \"drop\"; accepted: add or remove");
  }
}

TEST(NodeTrace, RemovingAnAbsentNodeIsAnError) {
  const std::string path = ::testing::TempDir() + "/absent_nodes.csv";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("time_ms,event,node\n0,add,node1\n500,remove,node2\n", f);
    std::fclose(f);
  }
  EXPECT_THROW(NodeTraceModel::read(path, 0.0, kNever), InputError);
}

// An offset past the trace's end is refused at the parameter, where it was written (a scenario's
// line, --market-param), as the other parameters are; it named the data file.
TEST(TraceModel, OffsetBeyondTheTraceIsAnError) {
  try {
    trace("g4dn", "20h");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "market model \"trace\", parameter offset: 20 h 00 min is beyond the end of the "
              "trace g4dn-trace.csv (10 h 46 min long); accepted: an offset inside it, or random");
  }
  ModelParams params;
  params.file = "sc.toml";
  params.line = 16;
  params.values = {{"file", "us-west-2a_k80_1"}, {"offset", "29d"}};
  try {
    create_revocation_model("trace", params, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "sc.toml:16: market model \"trace\", parameter offset: 29 d 00 h is beyond the end "
              "of the trace us-west-2a_k80_1.json (27 d 01 h long); accepted: an offset inside "
              "it, or random");
  }
  params.values = {
      {"gpu", "K80"}, {"availability", "us-west-2a_k80_1"}, {"availability_offset", "28d"}};
  try {
    create_revocation_model("lifetime", params, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what())
                  .rfind("sc.toml:16: market model \"lifetime\", parameter availability_offset: "
                         "28 d 00 h is beyond the end of the trace us-west-2a_k80_1.json",
                         0),
              0u)
        << error.what();
  }
  // Inside the trace, the offset is where runs start.
  EXPECT_NE(trace("g4dn", "10h")->describe().find("offset 10 h 00 min"), std::string::npos);
}

TEST(TraceModel, MissingFileNamesTheFlag) {
  ModelParams params;
  params.values["file"] = "us-east-1z_h100_1";
  try {
    create_revocation_model("trace", params, testing::data_context());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--data-dir"), std::string::npos) << error.what();
  }
}

// Only the first row may be a header: a typo in the first event's time (the letter O) made the
// reader skip it as one, and the fleet lost a node without a word.
TEST(NodeTrace, OnlyTheFirstRowMayBeAHeader) {
  EXPECT_EQ(testing::error_of_file(
                "typo_nodes.csv", "time_ms,event,node\nO,add,n1\n0,add,n2\n",
                [](const std::string& path) { NodeTraceModel::read(path, 0.0, kNever); }),
            ::testing::TempDir() +
                "/typo_nodes.csv:2: time_ms \"O\" is not a number; accepted: rows "
                "`time_ms,add|remove,node` in time order");
  EXPECT_EQ(testing::error_of_file(
                "headerless_nodes.csv", "0,add,n1\n3600000,remove,n1\n",
                [](const std::string& path) { NodeTraceModel::read(path, 0.0, kNever); }),
            "accepted");
}

// A UTF-8 byte order mark before the first row (a file saved by a spreadsheet) is not part of it:
// the row was taken for a header and dropped, and the fleet lost a node without a word.
TEST(NodeTrace, AByteOrderMarkIsNotPartOfTheFirstRow) {
  const std::string path = ::testing::TempDir() + "/bom_nodes.csv";
  EXPECT_EQ(testing::error_of_file("bom_nodes.csv",
                                   "\xEF\xBB\xBF"
                                   "0,add,node1\n0,add,node2\n3600000,remove,node2\n",
                                   [](const std::string&) {}),
            "accepted");
  EXPECT_EQ(NodeTraceModel::read(path, 0.0, kNever)->peak_nodes(), 2);
  testing::error_of_file("bom_header_nodes.csv",
                         "\xEF\xBB\xBF"
                         "time_ms,event,node\n0,add,node1\n0,add,node2\n",
                         [](const std::string&) {});
  EXPECT_EQ(NodeTraceModel::read(::testing::TempDir() + "/bom_header_nodes.csv", 0.0, kNever)
                ->peak_nodes(),
            2);
}
}  // namespace
}  // namespace transient::market
