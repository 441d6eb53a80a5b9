// The discrete-event simulator: one training job on a transient cluster, run after run.
//
// Events (run_result.h): servers requested and ready (after a start-up delay), preemption notices
// and revocations drawn from the scenario's market model, periodic checkpoints, market-policy
// decision ticks, the job reaching its steps, the deadline. Between events the job progresses at
// the throughput model's speed for the current membership; membership changes cost what the
// recovery model says (recovery_model.h); revoked servers are replaced by the replacement policy,
// or, with a deadline-aware market policy, the whole cluster follows the policy's market choice.
// Every server is billed per second from the moment the cloud gives it (a spot request waits for
// availability unbilled) until it is released, revoked or the job ends; parameter servers from
// the start to the end. With a budget (Scenario::budget_usd) the run ends, unfinished, the moment
// its cost reaches it; a run that requests kMaxRequestsPerRun servers (run_result.h) gives up,
// unfinished, there.
//
// A Simulator is used by one thread; it keeps its buffers between runs so that the event loop
// does not allocate. A run is a pure function of the scenario and the seed.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transient/core/random.h"
#include "transient/sim/internal/event_queue.h"
#include "transient/sim/market_policy.h"
#include "transient/sim/recovery_model.h"
#include "transient/sim/replacement_policy.h"
#include "transient/sim/run_result.h"
#include "transient/sim/scenario.h"

namespace transient::sim {

// Whether the `optimal` market policy is the lower bound on the runs of `scenario` (one region):
// its market's spot comes and goes with the time alone (RevocationModel::spot_by_time), or it has
// and revokes each server on its own (spot_by_launch) and the cluster is one worker, whose
// servers the optimum then knows request by request (OfflineMarket::spot_server). Elsewhere the
// optimum plans on ticks of spot that no server need meet.
bool optimum_is_a_bound(const Scenario& scenario);

// What a run's timeline holds: every event, or all but the periodic checkpoints, which a printed
// timeline leaves out (a checkpoint a second for 30 days is 2.6 million entries).
enum class TimelineDetail { every_event, without_checkpoints };

class Simulator {
 public:
  // Throws InputError if the scenario names an unknown model or policy, has no workers or no
  // throughput model, periodic checkpoints under a second apart or that take their whole interval
  // to write, or asks for a market policy with other than one worker group.
  explicit Simulator(Scenario scenario);

  const Scenario& scenario() const { return scenario_; }

  // One run with its own random stream `seed`. If `timeline` is not null it receives the events
  // `detail` says.
  RunResult run(std::uint64_t seed, std::vector<TimelineEntry>* timeline = nullptr,
                TimelineDetail detail = TimelineDetail::every_event);

 private:
  enum class ServerState : std::uint8_t { pending, member, gone };
  struct Server {
    int type = 0;
    cloud::Market market = cloud::Market::spot;
    ServerState state = ServerState::pending;
    bool will_be_ready = true;  // false for a spot request that can never be filled
    double obtain_s = 0.0;      // billing starts here
    double revoke_s = 0.0;      // when the market revokes it (infinity: never)
    double usd_per_s = 0.0;
    std::uint32_t generation = 0;
  };

  void request(int type, cloud::Market market);
  void release(int server);
  void on_ready(int server);
  void on_notice(int server);
  void on_revoked(int server);
  void on_checkpoint();
  void on_budget();
  // The servers billed now, for the budget: `index` starts or stops being billed at `sign` 1/-1.
  void count_billed(int index, int sign);
  // budget_s_ for the servers billed now and those still waiting to be had.
  void schedule_budget();
  void on_decision();
  void reconcile(ClusterMode mode);
  void replace(const Server& revoked);
  void leave(int server, bool graceful);
  void try_form();
  void roll_back_to(double steps);
  void advance();
  void update_rate();
  void reschedule_done();
  void bill(Server& server);
  double speed_for_counts();
  DeadlineState deadline_state() const;
  OfflineMarket offline_market(std::uint64_t seed) const;
  void log(EventKind kind, int server, const std::string& detail);
  std::string server_text(int server) const;

  Scenario scenario_;
  std::vector<cloud::InstanceType> types_;  // worker types, then replacement types
  std::vector<int> group_type_;             // type index of each scenario worker group
  double parameter_server_usd_per_s_ = 0.0;
  int parameter_server_count_ = 0;
  std::unique_ptr<RecoveryModel> recovery_;
  std::unique_ptr<ReplacementPolicy> replacement_;
  std::unique_ptr<MarketPolicy> market_policy_;  // null when the scenario's is "none"
  double full_cluster_steps_per_s_ = 0.0;        // market-policy mode: the whole group's speed
  std::unordered_map<std::uint64_t, double> speed_cache_;  // packed counts -> steps/s

  // In market-policy mode on a market that has and revokes each spot server on its own
  // (RevocationModel::spot_by_launch): the n-th spot request of a decision tick draws its
  // revocation and its start-up, and the n-th on-demand request its start-up, from streams of
  // their own (simulator.cc, request_stream()), which the offline optimum replays.
  bool spot_by_launch_ = false;

  // State of the current run.
  std::uint64_t seed_ = 0;
  std::int64_t request_tick_ = -1;         // spot_by_launch_: the tick of the last request
  std::array<int, 2> requests_in_tick_{};  // and the spot and on-demand requests made in it
  Rng rng_{0};
  std::unique_ptr<market::MarketTimeline> timeline_;
  internal::EventQueue queue_;
  std::vector<Server> servers_;
  std::vector<int> counts_;  // members per type
  std::vector<TimelineEntry>* log_ = nullptr;
  bool log_checkpoints_ = true;  // periodic checkpoints go into log_
  RunResult result_;
  double now_s_ = 0.0;
  double last_advance_s_ = 0.0;
  double progress_steps_ = 0.0;
  double checkpoint_steps_ = 0.0;
  double rate_steps_per_s_ = 0.0;
  double pause_until_s_ = 0.0;
  int members_ = 0;
  int pending_ = 0;  // requested servers that will become ready
  int chief_ = -1;
  bool running_ = false;
  bool ended_ = false;
  double done_s_ = 0.0;  // when the job reaches its steps at the current pace (kNever: not)
  // With a budget: the run's cost is result_.cost_usd (servers gone) + the parameter servers'
  // price x now + billed_usd_per_s_ x now - billed_offset_usd_ (servers held, each billed from
  // its obtain_s), while no waiting server is had. budget_s_, kept beside the queue as done_s_
  // is, is when that reaches the budget, or the next waiting server's obtain_s if sooner
  // (budget_reached_ says which); recomputed before the next event once the servers change.
  double budget_s_ = 0.0;
  bool budget_reached_ = false;
  bool budget_stale_ = false;
  int billed_ = 0;
  double billed_usd_per_s_ = 0.0;
  double billed_offset_usd_ = 0.0;
  std::vector<int> waiting_;  // servers requested whose obtain_s is still to come
  ClusterMode mode_ = ClusterMode::idle;
};

}  // namespace transient::sim
