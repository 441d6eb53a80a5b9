// The readers of events.jsonl, steps.csv, summary.json and the checkpoint manifest: good lines
// become typed records, a bad line becomes a problem naming file:line, never an exception.
#include <gtest/gtest.h>

#include "transient/records/event_reader.h"
#include "transient/records/manifest_reader.h"
#include "transient/records/step_reader.h"
#include "transient/records/summary_reader.h"

namespace transient::records {
namespace {

TEST(RecordsEvents, ReadsTypeTimeAndFields) {
  const auto read = parse_events(
      R"({"t":0.5,"time":"2026-11-24T01:02:03.456Z","event":"worker_joined","worker":"w0"})"
      "\n"
      R"({"t":2.25,"time":"2026-11-24T01:02:05.206Z","event":"recovery","duration_s":0.087,"redone_steps":1})"
      "\n",
      "events.jsonl");
  EXPECT_TRUE(read.problems.empty());
  ASSERT_EQ(read.events.size(), 2u);
  EXPECT_EQ(read.events[0].type, "worker_joined");
  EXPECT_EQ(read.events[0].text("worker"), "w0");
  EXPECT_EQ(read.events[0].time, "2026-11-24T01:02:03.456Z");
  EXPECT_DOUBLE_EQ(read.events[1].t, 2.25);
  EXPECT_DOUBLE_EQ(read.events[1].number("duration_s"), 0.087);
  EXPECT_EQ(read.events[1].number("absent", -1.0), -1.0);
  EXPECT_EQ(read.events[1].line, 2);
}

TEST(RecordsEvents, AGarbledOrTruncatedLineIsAProblemNamingItsLine) {
  const auto read = parse_events(
      "{\"t\":1,\"event\":\"generation\",\"gen\":0}\n"
      "garbage\x1b[2J here\n"
      "{\"t\":2,\"gen\":1}\n"
      "\n"
      "{\"t\":3,\"event\":\"done\"}\n"
      "{\"t\":4,\"event\":\"chec",
      "job/events.jsonl");
  ASSERT_EQ(read.events.size(), 2u);
  EXPECT_EQ(read.events[1].type, "done");
  EXPECT_EQ(read.events[1].line, 5);
  ASSERT_EQ(read.problems.size(), 3u);
  EXPECT_EQ(read.problems[0].text(),
            "job/events.jsonl:2: not a JSON line (cut short or garbled): garbage?[2J here");
  EXPECT_EQ(read.problems[1].line, 3);
  EXPECT_NE(read.problems[1].what.find("no \"event\""), std::string::npos);
  EXPECT_EQ(read.problems[2].line, 6);
}

// A job run by two coordinators (paused, resumed 100 s later): the second counts t from 0 again,
// and its events are put after the first's by its wall clock, on one axis (the report drew both
// runs from t = 0: membership bars that ended before they began, a cost that went back in time).
// Without a wall clock, the second run follows the first at once.
TEST(RecordsEvents, ARunAfterAnotherIsPutAfterItOnOneTimeAxis) {
  const auto read =
      parse_events(R"({"t":0.5,"time":"2026-11-30T10:00:00.500Z","event":"generation"})"
                   "\n"
                   R"({"t":4.0,"time":"2026-11-30T10:00:04.000Z","event":"stopped"})"
                   "\n"
                   R"({"t":0.25,"time":"2026-11-30T10:01:44.250Z","event":"generation"})"
                   "\n"
                   R"({"t":2.0,"time":"2026-11-30T10:01:46.000Z","event":"done"})"
                   "\n"
                   R"({"t":1.0,"event":"generation"})"
                   "\n",
                   "events.jsonl");
  ASSERT_EQ(read.events.size(), 5u);
  EXPECT_DOUBLE_EQ(read.events[0].t, 0.5);
  EXPECT_DOUBLE_EQ(read.events[1].t, 4.0);
  EXPECT_NEAR(read.events[2].t, 104.25, 1e-6);
  EXPECT_NEAR(read.events[3].t, 106.0, 1e-6);
  EXPECT_NEAR(read.events[4].t, 106.0, 1e-6);  // no clock: right after the run before
  EXPECT_EQ(*utc_seconds("2026-11-30T10:00:00.500Z") + 104.0,
            *utc_seconds("2026-11-30T10:01:44.500Z"));
}

// A job resumed after a crash from the checkpoint of step 650: the crashed run had written epochs
// 6 and 7, the resumed one writes 7 again. The records keep both; the crashed run's 7 is
// superseded, as soon as the resumed run starts before its step, and the epochs before stand.
TEST(RecordsEvents, AnEpochALaterRunTrainsAgainIsSuperseded) {
  const std::string crashed =
      R"({"t":0,"event":"generation","gen":0,"members":["w0"],"start_step":0})"
      "\n"
      R"({"t":60,"event":"epoch","epoch":6,"step":600,"test_accuracy":0.74})"
      "\n"
      R"({"t":65,"event":"checkpoint","step":650})"
      "\n"
      R"({"t":70,"event":"epoch","epoch":7,"step":700,"test_accuracy":0.78})"
      "\n";
  const std::string resumed =
      R"({"t":0.1,"event":"generation","gen":0,"members":["w0"],"start_step":650})"
      "\n";
  const std::string redone = R"({"t":5,"event":"epoch","epoch":7,"step":700,"test_accuracy":0.81})"
                             "\n";
  const auto superseded = [](const std::string& text) {
    std::string flags;
    for (const auto& e : parse_events(text, "events.jsonl").events) {
      if (e.type == "epoch") flags += e.superseded ? "S" : "-";
    }
    return flags;
  };
  EXPECT_EQ(superseded(crashed), "--");
  EXPECT_EQ(superseded(crashed + resumed), "-S");
  EXPECT_EQ(superseded(crashed + resumed + redone), "-S-");
  // Without generations (records cut short), the last event of an epoch stands.
  EXPECT_EQ(superseded(crashed.substr(crashed.find('\n') + 1) + redone), "-S-");
}

TEST(RecordsEvents, AMissingFileIsOneProblem) {
  const auto read = read_events("/nonexistent/events.jsonl");
  EXPECT_TRUE(read.events.empty());
  ASSERT_EQ(read.problems.size(), 1u);
  EXPECT_EQ(read.problems[0].text(), "/nonexistent/events.jsonl: missing");
}

TEST(RecordsSteps, ReadsRowsInTheHeadersOrder) {
  const auto read = parse_steps(
      "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
      "1,0,43,0.001,0.02,0.003,0.0005,2.30,0,0\n"
      "1,1,43,0.002,0.03,0.001,0.0005,2.30,0,43\n",
      "steps.csv");
  EXPECT_TRUE(read.problems.empty());
  ASSERT_EQ(read.rows.size(), 2u);
  EXPECT_EQ(read.rows[1].rank, 1);
  EXPECT_EQ(read.rows[1].sample_begin, 43);
  EXPECT_DOUBLE_EQ(read.rows[1].compute_s, 0.03);
  EXPECT_NEAR(read.rows[0].total_s(), 0.0245, 1e-12);
  EXPECT_EQ(read.rows[1].line, 3);

  const auto reordered = parse_steps(
      "worker,step,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
      "2,7,43,0,0,0,0,1.5,3,0\n",
      "steps.csv");
  ASSERT_EQ(reordered.rows.size(), 1u);
  EXPECT_EQ(reordered.rows[0].step, 7);
  EXPECT_EQ(reordered.rows[0].rank, 2);
  EXPECT_EQ(reordered.rows[0].gen, 3);
}

TEST(RecordsSteps, BadRowsAreProblemsAndTheRestIsKept) {
  const auto read = parse_steps(
      "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n"
      "1,0,43,0.001,0.02,0.003,0.0005,2.30,0,0\n"
      "2,0,43,0.001,zz,0.003,0.0005,2.20,0,43\n"
      "3,0,43,0.001,0.02,0.003,0.0005,nan,0,86\n"
      "4,0,43,0.00",
      "job/steps.csv");
  ASSERT_EQ(read.rows.size(), 2u);
  EXPECT_TRUE(std::isnan(read.rows[1].loss));
  ASSERT_EQ(read.problems.size(), 2u);
  EXPECT_EQ(read.problems[0].text(),
            "job/steps.csv:3: column \"compute_s\": \"zz\" is not a number");
  EXPECT_EQ(read.problems[1].line, 5);
  EXPECT_NE(read.problems[1].what.find("cut short"), std::string::npos);
}

// A count (step, worker, batch, gen, sample_begin) beyond what an integer holds, negative or
// fractional is damage, not a number to convert (the fuzzer found 1.7e42 converted to int64).
TEST(RecordsSteps, ACountThatIsNoWholeNumberIsAProblem) {
  const auto read = parse_steps(
      "1,0,43,0.001,0.02,0.003,0.0005,2.30,0,173333333333333333333333333333333333333333\n"
      "2,-1,43,0.001,0.02,0.003,0.0005,2.30,0,0\n"
      "3,0,4.5,0.001,0.02,0.003,0.0005,2.30,0,0\n"
      "4,0,43,0.001,0.02,0.003,0.0005,2.30,1e15,0\n",
      "part.csv", false);
  ASSERT_EQ(read.rows.size(), 1u);
  EXPECT_EQ(read.rows[0].gen, 1'000'000'000'000'000);
  ASSERT_EQ(read.problems.size(), 3u);
  EXPECT_EQ(read.problems[0].text(),
            "part.csv:1: column \"sample_begin\": \"173333333333333333333333333333333333333333\" "
            "is not a whole number from 0 to 1e15");
  EXPECT_NE(read.problems[1].what.find("column \"worker\": \"-1\""), std::string::npos);
  EXPECT_NE(read.problems[2].what.find("column \"batch\": \"4.5\""), std::string::npos);
}

// A phase's time (data_s, compute_s, allreduce_s, optimizer_s) that is negative or absurd is
// damage, not a speed for status and report to show: a problem naming its line, as a field that
// is no number is. The bound, 1e6 s, is in the line.
TEST(RecordsSteps, ATimeOutOfRangeIsAProblemNamingItsLine) {
  const auto read = parse_steps(
      "1,0,43,-0.5,0.02,0.003,0.0005,2.30,0,0\n"
      "2,0,43,0.001,1e308,0.003,0.0005,2.30,0,43\n"
      "3,0,43,0.001,0.02,-1e-9,0.0005,2.30,0,86\n"
      "4,0,43,0.001,0.02,0.003,1000001,2.30,0,129\n"
      "5,0,43,0,0.02,0,1e6,2.30,0,172\n",
      "part.csv", false);
  ASSERT_EQ(read.rows.size(), 1u);
  EXPECT_EQ(read.rows[0].step, 5);
  ASSERT_EQ(read.problems.size(), 4u);
  EXPECT_EQ(read.problems[0].text(),
            "part.csv:1: column \"data_s\": \"-0.5\" is not a number of seconds from 0 to 1e6");
  EXPECT_EQ(read.problems[1].text(),
            "part.csv:2: column \"compute_s\": \"1e308\" is not a number of seconds from 0 to 1e6");
  EXPECT_EQ(read.problems[2].line, 3);
  EXPECT_NE(read.problems[2].what.find("column \"allreduce_s\""), std::string::npos);
  EXPECT_EQ(read.problems[3].line, 4);
  EXPECT_NE(read.problems[3].what.find("column \"optimizer_s\""), std::string::npos);
}

TEST(RecordsSteps, AHeaderWithoutAColumnIsOneProblem) {
  const auto read = parse_steps("step,worker,batch\n1,0,3\n", "steps.csv");
  EXPECT_TRUE(read.rows.empty());
  ASSERT_EQ(read.problems.size(), 1u);
  EXPECT_EQ(read.problems[0].line, 1);
  EXPECT_NE(read.problems[0].what.find("\"data_s\""), std::string::npos);
}

TEST(RecordsSteps, PartFilesHaveNoHeader) {
  const auto read = parse_steps("5,1,43,0.001,0.02,0.003,0.0005,2.30,2,0\n", "part.csv", false);
  EXPECT_TRUE(read.problems.empty());
  ASSERT_EQ(read.rows.size(), 1u);
  EXPECT_EQ(read.rows[0].step, 5);
  EXPECT_EQ(read.rows[0].gen, 2);
}

TEST(RecordsSummary, ReadsTypedFieldsAndKeepsTheRest) {
  const auto read = parse_summary(
      R"({"steps":300,"total_steps":300,"test_accuracy":0.9,"test_loss":null,"finished":true,
          "failure":null,"recoveries":2,"samples_per_s":1234.5,"model":"mlp","extra":7})",
      "summary.json");
  EXPECT_TRUE(read.problems.empty());
  ASSERT_TRUE(read.summary);
  EXPECT_EQ(read.summary->steps, 300);
  EXPECT_TRUE(read.summary->finished);
  EXPECT_DOUBLE_EQ(*read.summary->test_accuracy, 0.9);
  EXPECT_FALSE(read.summary->test_loss);
  EXPECT_FALSE(read.summary->failure);
  EXPECT_FALSE(read.summary->cost_usd);
  EXPECT_EQ(read.summary->recoveries, 2);
  EXPECT_EQ(read.summary->model, "mlp");
  EXPECT_EQ(read.summary->json["extra"], 7);
}

// A summary of an earlier version, without "finished", finished where it trained all its steps
// and did not stop (it read as paused).
TEST(RecordsSummary, AnEarlierVersionsSummaryFinishedWhereItTrainedAllItsSteps) {
  const auto finished = parse_summary(
      R"({"steps":300,"total_steps":300,"stopped":false,"failure":null})", "summary.json");
  ASSERT_TRUE(finished.summary);
  EXPECT_TRUE(finished.problems.empty());
  EXPECT_TRUE(finished.summary->finished);
  for (
      const char* not_finished :
      {R"({"steps":200,"total_steps":300,"stopped":true,"failure":null})",
       R"({"steps":300,"total_steps":300,"stopped":false,"failure":"worker w0 failed: disk full"})",
       R"({"steps":300,"total_steps":300,"stopped":true})", R"({"steps":300})",
       R"({"steps":300,"total_steps":300,"finished":false})"}) {
    const auto read = parse_summary(not_finished, "summary.json");
    ASSERT_TRUE(read.summary) << not_finished;
    EXPECT_FALSE(read.summary->finished) << not_finished;
  }
}

TEST(RecordsSummary, AWrongTypeOrBrokenFileIsAProblem) {
  const auto typed = parse_summary(R"({"steps":"many","recoveries":1})", "summary.json");
  ASSERT_TRUE(typed.summary);
  EXPECT_EQ(typed.summary->steps, 0);
  EXPECT_EQ(typed.summary->recoveries, 1);
  ASSERT_EQ(typed.problems.size(), 1u);
  EXPECT_NE(typed.problems[0].what.find("\"steps\""), std::string::npos);

  // A count no int64 holds is a problem too, not a conversion (undefined behaviour before:
  // job_records_fuzz), and so is a fractional one.
  const auto huge = parse_summary(R"({"total_steps":9.4e109,"steps":2.5,"diverged_at_step":1e19})",
                                  "summary.json");
  ASSERT_TRUE(huge.summary);
  EXPECT_EQ(huge.summary->total_steps, 0);
  EXPECT_EQ(huge.summary->steps, 0);
  EXPECT_FALSE(huge.summary->diverged_at_step);
  EXPECT_EQ(huge.problems.size(), 3u);

  const auto broken = parse_summary(R"({"steps":3)", "job/summary.json");
  EXPECT_FALSE(broken.summary);
  ASSERT_EQ(broken.problems.size(), 1u);
  EXPECT_EQ(broken.problems[0].file, "job/summary.json");
}

// The writer's figures are never negative and an accuracy is a fraction (or null: not
// evaluated); 1e308 showed as "inf%" in status and a negative cost was taken. A number out of
// its range is a problem naming the field and what is accepted, and is left at its default.
TEST(RecordsSummary, ANumberOutOfRangeIsAProblemNamingTheField) {
  const auto read = parse_summary(
      R"({"test_accuracy":1e308,"cost_usd":-3,"samples_per_s":-1,"wall_s":1e300,
          "epochs":-0.5,"test_loss":-2,"generations":-1,"recoveries":1000000000000000,"steps":7})",
      "job/summary.json");
  ASSERT_TRUE(read.summary);
  EXPECT_FALSE(read.summary->test_accuracy);
  EXPECT_FALSE(read.summary->cost_usd);
  EXPECT_FALSE(read.summary->test_loss);
  EXPECT_EQ(read.summary->samples_per_s, 0.0);
  EXPECT_EQ(read.summary->wall_s, 0.0);
  EXPECT_EQ(read.summary->epochs, 0.0);
  EXPECT_EQ(read.summary->generations, 0);
  EXPECT_EQ(read.summary->recoveries, 1'000'000'000'000'000);
  EXPECT_EQ(read.summary->steps, 7);
  ASSERT_EQ(read.problems.size(), 7u);
  // In the order of the reader's fields.
  EXPECT_EQ(
      read.problems[0].text(),
      "job/summary.json: field \"epochs\": unexpected -0.5; accepted: a number from 0 to 1e15");
  EXPECT_EQ(read.problems[1].text(),
            "job/summary.json: field \"test_accuracy\": unexpected 1e+308; accepted: a number "
            "from 0 to 1, or null (not evaluated)");
  EXPECT_NE(read.problems[2].what.find("field \"test_loss\""), std::string::npos);
  EXPECT_NE(read.problems[3].what.find("field \"wall_s\""), std::string::npos);
  EXPECT_NE(read.problems[4].what.find("field \"samples_per_s\""), std::string::npos);
  EXPECT_EQ(read.problems[5].text(),
            "job/summary.json: field \"generations\": unexpected -1; accepted: a whole number from "
            "0 to 1e15");
  EXPECT_NE(read.problems[6].what.find("field \"cost_usd\": unexpected -3"), std::string::npos);

  // The writer's own values at the ends of the ranges are taken.
  const auto ends = parse_summary(
      R"({"test_accuracy":1,"test_loss":0,"cost_usd":0,"wall_s":0,"samples_per_s":1e15})",
      "summary.json");
  EXPECT_TRUE(ends.problems.empty()) << ends.problems[0].text();
  EXPECT_EQ(*ends.summary->test_accuracy, 1.0);
  EXPECT_EQ(*ends.summary->cost_usd, 0.0);
}

TEST(RecordsManifest, ReadsEntriesAndReportsBadOnes) {
  const auto read = parse_manifest(
      R"({"format":"transient-checkpoint-v1","checkpoints":[
          {"file":"step-00000100.pt","step":100,"bytes":1000,"crc32":12345},
          {"file":"step-00000200.pt","step":"x","bytes":1000,"crc32":1}]})",
      "manifest.json");
  ASSERT_EQ(read.checkpoints.size(), 1u);
  EXPECT_EQ(read.checkpoints[0].file, "step-00000100.pt");
  EXPECT_EQ(read.checkpoints[0].step, 100);
  EXPECT_EQ(read.checkpoints[0].bytes, 1000);
  EXPECT_EQ(read.checkpoints[0].crc32, 12345u);
  ASSERT_EQ(read.problems.size(), 1u);
  EXPECT_NE(read.problems[0].what.find("checkpoint 2"), std::string::npos);
  EXPECT_EQ(parse_manifest("[]", "m.json").problems.size(), 1u);
}

// Counts no int64 holds, negative, or a checksum past 32 bits are problems, not conversions
// (nlohmann's get<std::int64_t>() of 1e300 is undefined behaviour).
TEST(RecordsManifest, ACountThatIsNoWholeNumberIsAProblem) {
  const auto read = parse_manifest(
      R"({"checkpoints":[
          {"file":"a.pt","step":1e300,"bytes":1000,"crc32":1},
          {"file":"b.pt","step":5,"bytes":-1,"crc32":1},
          {"file":"c.pt","step":5,"bytes":1,"crc32":4294967296},
          {"file":"d.pt","step":6,"bytes":1,"crc32":4294967295}]})",
      "manifest.json");
  ASSERT_EQ(read.checkpoints.size(), 1u);
  EXPECT_EQ(read.checkpoints[0].crc32, 4294967295u);
  ASSERT_EQ(read.problems.size(), 3u);
  EXPECT_NE(read.problems[0].what.find("checkpoint 1: [json.exception.type_error.302] \"step\" "
                                       "must be a whole number from 0 to "),
            std::string::npos)
      << read.problems[0].what;
  EXPECT_NE(read.problems[1].what.find("\"bytes\" must be a whole number"), std::string::npos);
  EXPECT_NE(read.problems[2].what.find("\"crc32\" must be a whole number from 0 to 4294967295"),
            std::string::npos);
}

TEST(RecordsEvents, ACountIsAWholeNumberOrTheFallback) {
  const auto read =
      parse_events(R"({"t":1,"event":"checkpoint","step":12,"huge":1e300,"half":2.5,"text":"7"})"
                   "\n",
                   "events.jsonl");
  ASSERT_EQ(read.events.size(), 1u);
  const auto& e = read.events[0];
  EXPECT_EQ(e.count("step"), 12);
  EXPECT_EQ(e.count("huge", -1), -1);
  EXPECT_EQ(e.count("half", -1), -1);
  EXPECT_EQ(e.count("text", -1), -1);
  EXPECT_EQ(e.count("absent", 3), 3);
}

}  // namespace
}  // namespace transient::records
