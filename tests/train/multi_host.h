// The fixture of the tests across hosts (multi_host_test.cc, multi_host_checkpoints_test.cc):
// network namespaces on a bridge (emulated_hosts.h), a coordinator on host 0 and workers on the
// others. Without libtorch.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "train/cli_process.h"
#include "train/emulated_hosts.h"
#include "train/job_records.h"

namespace transient::train::testing {

class MultiHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = EmulatedHosts::unavailable()) {
      GTEST_SKIP() << "skipped: " << *why;
    }
  }

  // `count` hosts; host 0 runs the coordinator.
  void make_hosts(int count) { hosts_ = std::make_unique<EmulatedHosts>(count); }

  // The coordinator of a job of `steps` on host 0, listening on `bind` (host 0's IPv4 address by
  // default), waiting for `min_workers`.
  std::unique_ptr<CliProcess> start_coordinator(const std::string& dir, int steps, int min_workers,
                                                std::vector<std::string> more = {},
                                                std::string bind = "") {
    if (bind.empty()) bind = hosts_->address(0);
    auto args = with(coordinator_job(dir, steps, min_workers, more), {"--bind", bind});
    return std::make_unique<CliProcess>(args, dir + "-coordinator", hosts_->on(0));
  }

  // A worker on `host` joining the coordinator at `address` with the job's token.
  std::unique_ptr<CliProcess> start_worker(const std::string& dir, int host,
                                           const std::string& address,
                                           std::vector<std::string> more = {}) {
    auto args =
        with({"worker", "--coordinator", address, "--token-file", dir + "/token", "--threads", "1"},
             more);
    return std::make_unique<CliProcess>(args, dir + "-host" + std::to_string(host),
                                        hosts_->on(host));
  }

  std::unique_ptr<EmulatedHosts> hosts_;
};

}  // namespace transient::train::testing
