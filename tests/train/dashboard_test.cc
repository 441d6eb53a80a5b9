// The coordinator's live dashboard (issue 15): a real `transient train` / `transient coordinator`
// serves its job's report page and /metrics while it runs; the page draws in headless Chromium;
// a peer other than loopback needs the job's token.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include "report/browser.h"
#include "train/cli_process.h"
#include "train/cpu_budget.h"
#include "train/emulated_hosts.h"
#include "train/job_records.h"
#include "transient/report/live_dashboard.h"

namespace transient::train {
namespace {

using namespace testing;

// The dashboard's HOST:PORT from the job's journal, once written.
std::string dashboard_of(const std::string& job_dir) {
  const auto path = fs::path(job_dir) / "coordinator.json";
  EXPECT_TRUE(wait_until([&] { return fs::exists(path); }, 60)) << path;
  return nlohmann::json::parse(slurp(path.string())).value("dashboard", "");
}

std::string token_of(const std::string& job_dir) {
  std::string token = slurp(job_dir + "/token");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  return token;
}

// Prometheus' text format: every sample's name and value (comments skipped).
std::map<std::string, double> parse_metrics(const std::string& text) {
  std::map<std::string, double> metrics;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    double value = 0;
    EXPECT_TRUE(static_cast<bool>(fields >> name >> value)) << line;
    metrics[name] = value;
  }
  return metrics;
}

// GET /metrics of the dashboard at `address`; empty if it did not answer 200.
std::map<std::string, double> fetch_metrics(const std::string& address) {
  const auto at = report::parse_dashboard_address(address, "dashboard");
  httplib::Client client(at.host, at.port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  const auto response = client.Get("/metrics");
  if (!response || response->status != 200) return {};
  EXPECT_NE(response->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  return parse_metrics(response->body);
}

int count_of(const std::string& text, const std::string& part) {
  int count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

TEST(Dashboard, MetricsWhileTheJobRunsAndAfterAgreeWithItsSummary) {
  const std::string dir = fresh_dir("dashboard-metrics");
  constexpr int kSteps = 200;
  CliProcess job(with(small_job(dir, 2, kSteps), {"--checkpoint-every", "25"}), dir);
  const std::string address = dashboard_of(dir);
  ASSERT_TRUE(std::regex_match(address, std::regex(R"(127\.0\.0\.1:\d+)"))) << address;
  ASSERT_TRUE(wait_for_checkpoint(dir, 25));
  // While it runs (held meanwhile: it was sized to run on for 800 steps): the facts so far, a
  // checkpoint's age once there is one.
  std::map<std::string, double> running;
  {
    HeldWorkers held(dir);
    ASSERT_EQ(held.pids().size(), 2u);
    ASSERT_TRUE(wait_until(
        [&] {
          running = fetch_metrics(address);
          return job.exited() || (running.count("transient_checkpoint_age_seconds") > 0 &&
                                  running["transient_step"] >= 1);
        },
        120));
  }
  ASSERT_FALSE(running.empty()) << "the job ended before /metrics answered with a checkpoint";
  for (const char* name : {"transient_step", "transient_workers", "transient_samples_per_second",
                           "transient_recoveries_total", "transient_checkpoint_age_seconds"}) {
    EXPECT_EQ(running.count(name), 1u) << name;
  }
  EXPECT_GE(running["transient_step"], 1);
  EXPECT_LE(running["transient_step"], kSteps);
  EXPECT_EQ(running["transient_workers"], 2);
  EXPECT_GE(running["transient_checkpoint_age_seconds"], 0);

  const auto done = job.wait();
  ASSERT_EQ(done.exit_code, kExitFinished) << done.err;
  EXPECT_EQ(count_of(done.err, "transient: dashboard on http://" + address + "/\n"), 1) << done.err;

  // After: the dashboard's server on the finished job's directory says what summary.json says.
  report::LiveDashboard after(dir, token_of(dir), "127.0.0.1", 0);
  auto final = fetch_metrics(after.address());
  const auto summary = summary_of(dir);
  ASSERT_FALSE(final.empty());
  EXPECT_EQ(final["transient_step"], summary.at("steps").get<double>());
  EXPECT_EQ(final["transient_recoveries_total"], summary.at("recoveries").get<double>());
  EXPECT_EQ(final["transient_workers"], summary.at("workers").get<double>());
  EXPECT_GT(final["transient_samples_per_second"], 0);
  EXPECT_EQ(final.count("transient_checkpoint_age_seconds"), 1u);
  // A local job knows no prices: its cost is left out rather than said to be 0.
  if (summary.contains("cost_usd") && summary.at("cost_usd").is_number()) {
    EXPECT_NEAR(final["transient_cost_usd"], summary.at("cost_usd").get<double>(), 1e-9);
  } else {
    EXPECT_EQ(final.count("transient_cost_usd"), 0u);
  }
}

TEST(Dashboard, TheLivePageOfARunningJobDrawsInABrowserAndReloadsItself) {
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  const std::string dir = fresh_dir("dashboard-page");
  CliProcess job(with(small_job(dir, 2, 200000), {"--checkpoint-every", "200"}), dir);
  const std::string address = dashboard_of(dir);
  ASSERT_FALSE(address.empty());
  ASSERT_TRUE(wait_for_training(dir));
  ASSERT_TRUE(wait_until([&] { return fetch_metrics(address)["transient_step"] >= 300; }));
  // Then its workers train on slowly (a twentieth of a CPU between them): the job runs on while
  // the browser draws its page, without taking the machine from the browser. At full speed they
  // took 22 s of CPU while a browser on a loaded machine drew the page.
  std::optional<CpuBudget> slow;
  if (!CpuBudget::unavailable()) {
    slow.emplace(0.05);
    slow->add_descendants(job.pid());
  }

  const auto at = report::parse_dashboard_address(address, "dashboard");
  httplib::Client client(at.host, at.port);
  client.set_read_timeout(30, 0);
  const auto page = client.Get("/");
  ASSERT_TRUE(page && page->status == 200);
  EXPECT_NE(page->body.find("var every_ms = 5000;"), std::string::npos);  // it reloads itself
  EXPECT_NE(page->body.find("<title>transient report: " + dir + "</title>"), std::string::npos);

  // The page as the browser gets it over HTTP from the running job (less virtual time than the
  // 5 s the page waits after its load before it reloads, so that the DOM read is the page's first
  // load: on a loaded machine drawing it takes seconds, which were counted into a wait that began
  // at its head, and the DOM was read during the reload).
  ::transient::testing::expect_url_draws(
      "http://" + address + "/", {"loss-step", "samples-per-s", "membership", "phases-mean"},
      dir + "-page.png", 3000);
  EXPECT_FALSE(job.exited()) << "the job ended while its page was being checked";
  job.kill_group();
  slow.reset();
}

// A peer on another host gets nothing without the job's token; with it, the metrics.
TEST(Dashboard, APeerOnAnotherHostNeedsTheJobsToken) {
  if (const auto why = EmulatedHosts::unavailable()) GTEST_SKIP() << "skipped: " << *why;
  EmulatedHosts hosts(2);
  const std::string dir = fresh_dir("dashboard-token");
  // A coordinator waiting for its first worker: the job directory is there to be served.
  CliProcess coordinator(with(coordinator_job(dir, 1000, 1),
                              {"--bind", hosts.address(0), "--dashboard", hosts.address(0) + ":0"}),
                         dir + "-coordinator", hosts.on(0));
  const std::string address = dashboard_of(dir);
  ASSERT_EQ(address.rfind(hosts.address(0) + ":", 0), 0u) << address;
  const std::string url = "http://" + address + "/metrics";
  const auto status_from_host1 = [&](const std::string& curl_flags, const std::string& at) {
    return ::transient::testing::output_of(
        "ip netns exec " + hosts.name(1) +
        " curl -s -o /dev/null --max-time 20 -w '%{http_code}' " + curl_flags + " '" + at + "'");
  };
  const std::string token = token_of(dir);
  ASSERT_FALSE(token.empty());
  EXPECT_EQ(status_from_host1("", url), "401");
  EXPECT_EQ(status_from_host1("-H 'Authorization: Bearer wrong'", url), "401");
  EXPECT_EQ(status_from_host1("", "http://" + address + "/"), "401");
  EXPECT_EQ(status_from_host1("-H 'Authorization: Bearer " + token + "'", url), "200");
  EXPECT_EQ(status_from_host1("", url + "?token=" + token), "200");
  // What it served is the metrics.
  const std::string body = ::transient::testing::output_of(
      "ip netns exec " + hosts.name(1) + " curl -s --max-time 20 -H 'Authorization: Bearer " +
      token + "' '" + url + "'");
  EXPECT_NE(body.find("\ntransient_step 0\n"), std::string::npos) << body;
  coordinator.kill_group();
  const auto done = coordinator.wait();
  // The refusals were logged (rate-limited: the first one at least).
  EXPECT_NE(done.err.find("transient: dashboard: refused GET /metrics from " + hosts.address(1)),
            std::string::npos)
      << done.err;
}

TEST(Dashboard, OffServesNoneAndABadAddressIsRefused) {
  const std::string dir = fresh_dir("dashboard-off");
  const auto paused =
      run_cli(with(small_job(dir, 1, 5), {"--dashboard", "off", "--stop-at", "3"}), dir);
  ASSERT_EQ(paused.exit_code, kExitPaused) << paused.err;
  EXPECT_EQ(paused.err.find("dashboard on"), std::string::npos) << paused.err;
  // Resumed, it stays off (it came back on a port of its own).
  const auto done = run_cli(with(small_job(dir, 1, 5), {"--resume"}), dir + "-resumed");
  ASSERT_EQ(done.exit_code, kExitFinished) << done.err;
  EXPECT_EQ(done.err.find("dashboard on"), std::string::npos) << done.err;
  EXPECT_FALSE(nlohmann::json::parse(slurp(dir + "/coordinator.json")).contains("dashboard"));

  const std::string bad = fresh_dir("dashboard-bad");
  const auto refused =
      run_cli(with(small_job(bad, 1, 5), {"--dashboard", "localhost"}), bad + "-refused");
  EXPECT_EQ(refused.exit_code, kExitBadInput) << refused.err;
  EXPECT_NE(refused.err.find("--dashboard: \"localhost\" is not ADDR:PORT"), std::string::npos)
      << refused.err;
}

TEST(Dashboard, AddressesAndTokens) {
  EXPECT_EQ(report::parse_dashboard_address("127.0.0.1:0", "x").port, 0);
  EXPECT_EQ(report::parse_dashboard_address("[::1]:9100", "x").host, "::1");
  EXPECT_EQ(report::parse_dashboard_address("0.0.0.0:9100", "x").port, 9100);
  EXPECT_THROW(report::parse_dashboard_address("::1:9100", "x"), std::exception);
  EXPECT_THROW(report::parse_dashboard_address("host:70000", "x"), std::exception);
  EXPECT_TRUE(report::is_loopback_address("127.0.0.1"));
  EXPECT_TRUE(report::is_loopback_address("127.3.2.1"));
  EXPECT_TRUE(report::is_loopback_address("::1"));
  EXPECT_TRUE(report::is_loopback_address("::ffff:127.0.0.1"));
  EXPECT_FALSE(report::is_loopback_address("10.0.0.1"));
  EXPECT_FALSE(report::is_loopback_address("::ffff:10.0.0.1"));
  EXPECT_FALSE(report::is_loopback_address("fd00::1"));
  // Names are no addresses: a DNS rebinding's "127.0.0.1.attacker.example" passed (review).
  EXPECT_FALSE(report::is_loopback_address("127.0.0.1.attacker.example"));
  EXPECT_FALSE(report::is_loopback_address("127.evil.example"));
  EXPECT_FALSE(report::is_loopback_address("localhost"));
  EXPECT_TRUE(report::tokens_equal("abc", "abc"));
  EXPECT_FALSE(report::tokens_equal("abd", "abc"));
  EXPECT_FALSE(report::tokens_equal("ab", "abc"));
  EXPECT_FALSE(report::tokens_equal("", "abc"));
}

}  // namespace
}  // namespace transient::train
