// A small job directory written the way the trainer writes one (README, "The job directory"):
// 300 steps, 3 workers; w2 is killed at step 120 (a recovery with one step redone), w3 joins as
// its replacement at step 150, w1 is preempted at step 220 (a recovery with none redone); w1 is
// the slowest worker while it trains; checkpoints at steps 100, 200 and 300 (the manifest keeps
// the last two); an evaluation at the end of each of the 3 epochs. With `damaged`, steps.csv has
// a row cut short at line 58 and one with a garbled number at line 91, and events.jsonl a
// garbled line at line 4 and a last line cut short, as a crash would leave them.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace transient::testing {

struct JobDirFixture {
  std::string dir;
  int steps = 300;
  double samples_per_s = 0.0;   // written to summary.json
  std::string checkpoint_time;  // the newest checkpoint's `time`
};

inline JobDirFixture write_job_dir(const std::string& name, bool damaged = false,
                                   bool with_cost = false) {
  namespace fs = std::filesystem;
  JobDirFixture job;
  job.dir = (fs::path(::testing::TempDir()) / ("report_job_" + name)).string();
  fs::remove_all(job.dir);
  fs::create_directories(fs::path(job.dir) / "checkpoints");
  std::vector<std::string> events;
  const auto event = [&events](double t, const std::string& type, const std::string& fields) {
    const int ms = static_cast<int>(t * 1000);
    events.push_back(
        fmt::format(R"({{"t":{:.3f},"time":"2026-11-24T10:00:{:02d}.{:03d}Z","event":"{}"{}}})", t,
                    ms / 1000, ms % 1000, type, fields.empty() ? "" : "," + fields));
  };
  // Members (worker ids by rank) of each generation, and the step each starts from.
  struct Generation {
    std::vector<std::string> members;
    int start_step;
    double t;
  };
  const std::vector<Generation> generations = {{{"w0", "w1", "w2"}, 0, 0.5},
                                               {{"w0", "w1"}, 119, 7.0},
                                               {{"w0", "w1", "w3"}, 150, 9.0},
                                               {{"w0", "w3"}, 220, 14.0}};
  std::string steps =
      "step,worker,batch,data_s,compute_s,allreduce_s,optimizer_s,loss,gen,sample_begin\n";
  int line = 1;
  std::size_t g = 0;
  double t = 0.5;
  const int global_batch = 120;
  for (int step = 1; step <= job.steps; ++step) {
    while (g + 1 < generations.size() && step > generations[g + 1].start_step) ++g;
    const auto& members = generations[g].members;
    const double loss = 2.3 * std::exp(-step / 120.0) + 0.2;
    int begin = ((step - 1) * global_batch) % 12000;
    for (std::size_t rank = 0; rank < members.size(); ++rank) {
      const int batch = global_batch / static_cast<int>(members.size());
      const bool slow = members[rank] == "w1";
      const double compute = slow ? 0.030 : 0.020 + 0.001 * static_cast<double>(rank);
      const double allreduce = slow ? 0.002 : 0.012;
      ++line;
      if (damaged && line == 58) {
        steps += fmt::format("{},{},{},0.00", step, rank, batch) + "\n";
      } else if (damaged && line == 91) {
        steps += fmt::format("{},{},{},0.001,x.y,{},0.001,{},{},{}\n", step, rank, batch, allreduce,
                             loss, g, begin);
      } else {
        steps += fmt::format("{},{},{},0.001,{:.4f},{:.4f},0.001,{:.5f},{},{}\n", step, rank, batch,
                             compute, allreduce, loss, g, begin);
      }
      begin += batch;
    }
    t += 0.05;
  }
  // The events, in time order.
  event(0.0, "worker_joined", R"("worker":"w0","peer":"127.0.0.1:40001","pid":101)");
  event(0.1, "worker_joined", R"("worker":"w1","peer":"127.0.0.1:40002","pid":102)");
  event(0.2, "worker_joined", R"("worker":"w2","peer":"127.0.0.1:40003","pid":103)");
  const auto generation = [&](std::size_t i) {
    std::string members;
    for (const auto& m : generations[i].members)
      members += (members.empty() ? "\"" : ",\"") + m + "\"";
    event(generations[i].t, "generation",
          fmt::format(R"("gen":{},"members":[{}],"start_step":{},"checkpoint":"")", i, members,
                      generations[i].start_step));
  };
  generation(0);
  event(5.5, "checkpoint",
        R"("step":100,"bytes":2400000,"write_s":0.042,"file":"step-00000100.pt","worker":"w0")");
  event(5.5, "epoch",
        R"("epoch":1,"step":100,"train_loss":1.0,"test_accuracy":0.71,"test_loss":0.9)");
  event(6.4, "revocation_injected",
        R"("action":"kill","worker":"w2","rule":"kill@6s:any","gen":0)");
  event(6.5, "worker_left", R"("worker":"w2","reason":"failed","gen":0,"step":119)");
  generation(1);
  event(
      7.2, "recovery",
      R"("gen":1,"cause":"failed","lost":["w2"],"detect_s":0.05,"reform_s":0.4,"duration_s":0.7,"waited_s":0,"redone_steps":1)");
  event(8.8, "worker_joined", R"("worker":"w3","peer":"127.0.0.1:40004","pid":104)");
  generation(2);
  event(11.0, "checkpoint",
        R"("step":200,"bytes":2400000,"write_s":0.051,"file":"step-00000200.pt","worker":"w0")");
  event(11.0, "epoch",
        R"("epoch":2,"step":200,"train_loss":0.6,"test_accuracy":0.83,"test_loss":0.5)");
  event(13.8, "worker_left", R"("worker":"w1","reason":"preempted","gen":2,"step":220)");
  generation(3);
  event(
      14.1, "recovery",
      R"("gen":3,"cause":"preempted","lost":["w1"],"detect_s":0.01,"reform_s":0.2,"duration_s":0.3,"waited_s":0,"redone_steps":0)");
  if (with_cost) {
    // As the coordinators write them: the job's whole bill so far, with the market of the run
    // (spot, then on demand).
    event(10.0, "cost", R"("market":"spot","cost_usd":0.10)");
    event(14.0, "cost", R"("market":"spot","cost_usd":0.20)");
    event(18.0, "cost", R"("market":"on-demand","cost_usd":0.30)");
  }
  event(18.0, "checkpoint",
        R"("step":300,"bytes":2400000,"write_s":0.047,"file":"step-00000300.pt","worker":"w0")");
  job.checkpoint_time = "2026-11-24T10:00:18.000Z";
  event(18.0, "epoch",
        R"("epoch":3,"step":300,"train_loss":0.4,"test_accuracy":0.88,"test_loss":0.35)");
  job.samples_per_s = 1987.5;
  event(18.1, "done", R"("step":300,"test_accuracy":0.88,"wall_s":18.1,"samples_per_s":1987.5)");
  if (damaged) {
    events.insert(events.begin() + 3, "{\"t\":0.3,\"event\":\"worker_jo\x01 ined");
    events.push_back(R"({"t":18.2,"time":"2026-11-24T10:00:18.200Z","event":"wor)");
  }
  std::string events_text;
  for (const auto& e : events) events_text += e + "\n";
  if (damaged) events_text.pop_back();  // the crash cut the last line before its newline
  std::ofstream(fs::path(job.dir) / "events.jsonl") << events_text;
  std::ofstream(fs::path(job.dir) / "steps.csv") << steps;
  std::ofstream(fs::path(job.dir) / "summary.json") << fmt::format(
      R"({{"steps":300,"epochs":3.0,"test_accuracy":0.88,"test_loss":0.35,"wall_s":18.1,
"samples_per_s":{},"workers":3,"model":"mlp","dataset":"fashion-mnist","global_batch":120,
"total_steps":300,"resumed_from_step":0,"stopped":false,"finished":true,"failure":null,
"diverged_at_step":null,"step_rows":790,"generations":4,"revocations":2,"recoveries":2,
"redone_steps":1{}}})",
      job.samples_per_s, with_cost ? R"(,"cost_usd":0.30)" : "");
  std::ofstream(fs::path(job.dir) / "job.json")
      << R"({"model":"mlp","dataset":"fashion-mnist","global_batch":120,"seed":1,
"settings":{"model":"mlp","steps":300,"lr":0.1,"global_batch":120,"seed":1}})";
  std::ofstream(fs::path(job.dir) / "checkpoints" / "manifest.json")
      << R"({"format":"transient-checkpoint-v1","checkpoints":[
{"file":"step-00000200.pt","step":200,"bytes":2400123,"crc32":11},
{"file":"step-00000300.pt","step":300,"bytes":2400456,"crc32":22}]})";
  return job;
}

}  // namespace transient::testing
