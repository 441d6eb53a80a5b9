// The live dashboard of a running job (issue 15): a small HTTP server (cpp-httplib) on a thread of
// its own that reads the job directory on every request, as the coordinator keeps writing it.
//
//   /         the page of `transient report JOB_DIR`, reloading itself every few seconds
//   /metrics  the job's facts in Prometheus' text format (prometheus_text() of job_facts.h)
//
// A request from a loopback peer (127.0.0.0/8, ::1) is served as it is; any other must carry the
// job's token, as `Authorization: Bearer TOKEN` or `?token=TOKEN` (compared in constant time),
// or is answered 401 and the refusal is logged on stderr (at most one line per 10 s, with how
// many were not logged). Torch-free: the coordinator owns one, a test may start one on a job
// directory of its own.
#pragma once

#include <memory>
#include <string>

#include "transient/report/report_options.h"

namespace transient::report {

class LiveDashboard {
 public:
  // Serves `job_dir` on `host` (an IPv4 or IPv6 address; "0.0.0.0" or "::" for every interface)
  // and `port` (0 = any free port); `token` is the job's token. Throws InputError naming `what`
  // (the flag the address came from) if it cannot be bound.
  LiveDashboard(std::string job_dir, std::string token, const std::string& host, int port,
                const std::string& what = "--dashboard", ReportOptions options = {},
                int refresh_s = 5);
  // Stops serving and joins the server's thread.
  ~LiveDashboard();
  LiveDashboard(const LiveDashboard&) = delete;
  LiveDashboard& operator=(const LiveDashboard&) = delete;

  // HOST:PORT as bound ([HOST]:PORT for IPv6).
  std::string address() const;
  int port() const;

  // Stops serving; requests in progress end first. Idempotent.
  void stop();

 private:
  struct Server;
  std::unique_ptr<Server> server_;
};

// HOST:PORT of --dashboard ("127.0.0.1:0", "[::1]:8080", "0.0.0.0:9100"; port 0 = any free
// port), split. Throws InputError naming `what` if it is not such.
struct DashboardAddress {
  std::string host;  // without brackets
  int port = 0;
};
DashboardAddress parse_dashboard_address(const std::string& text, const std::string& what);

// True if `address` (as a peer's address is written: "127.0.0.1", "::1", "::ffff:127.0.0.1")
// is a loopback address.
bool is_loopback_address(const std::string& address);

// Whether `given` equals `expected`, in time that depends only on their lengths.
bool tokens_equal(const std::string& given, const std::string& expected);

// `page` with a script put into its <head> that reloads it `seconds` after it was drawn (its load
// event), while the dashboard answers (its /metrics, with the page's own query: the token, if one
// was given). Once it does not (the job ended and its coordinator with it, or the coordinator
// stopped), the page stays as it was, says so at its top (<p id="dashboard-gone">), and is reloaded
// if the dashboard answers again (a coordinator started again on the same --dashboard port).
std::string with_refresh(std::string page, int seconds);

}  // namespace transient::report
