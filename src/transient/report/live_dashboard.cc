#include "transient/report/live_dashboard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "transient/core/error.h"
#include "transient/records/job_records.h"
#include "transient/report/job_facts.h"
#include "transient/report/job_report.h"

namespace transient::report {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kRefusalLogEveryS = 10;

double now_unix_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The token a request carries: `Authorization: Bearer TOKEN` (the scheme in any case, as RFC
// 7235 has it), else `?token=TOKEN`.
std::string token_of(const httplib::Request& request) {
  const std::string authorization = request.get_header_value("Authorization");
  const std::string bearer = "bearer ";
  if (authorization.size() > bearer.size() &&
      std::equal(bearer.begin(), bearer.end(), authorization.begin(),
                 [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
    const std::size_t at = authorization.find_first_not_of(' ', bearer.size());
    return at == std::string::npos ? std::string() : authorization.substr(at);
  }
  return request.get_param_value("token");
}

// Whether a Host header names this machine's loopback (localhost, 127.x, ::1; none at all, as
// HTTP/1.0 may send): a page of another site that a DNS rebinding points at the loopback address
// sends its own name, and is not let in without the token.
bool names_loopback(const std::string& host_header) {
  std::string host = host_header;
  std::string rest;  // what follows the name: nothing, or ":PORT"
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string::npos) return false;
    rest = host.substr(close + 1);
    host = host.substr(1, close - 1);
  } else if (const auto colon = host.find(':'); colon != std::string::npos) {
    rest = host.substr(colon);
    host = host.substr(0, colon);
  }
  // "[::1].attacker.example" named the attacker's site after a loopback-looking part.
  if (!rest.empty() && (rest.size() == 1 || rest.front() != ':' ||
                        !std::all_of(rest.begin() + 1, rest.end(),
                                     [](unsigned char c) { return std::isdigit(c) != 0; }))) {
    return false;
  }
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return host.empty() || host == "localhost" || is_loopback_address(host);
}

}  // namespace

struct LiveDashboard::Server {
  std::string job_dir;
  std::string token;
  std::string host;
  int port = 0;
  ReportOptions options;
  int refresh_s = 5;
  httplib::Server http;
  std::thread thread;
  std::atomic<bool> thread_done{false};  // listen_after_bind has returned
  std::once_flag stopped;

  std::mutex log_mutex;
  std::optional<Clock::time_point> last_logged;
  long unlogged = 0;

  // Whether `request` may be served; answers 401 and logs the refusal if not.
  bool admitted(const httplib::Request& request, httplib::Response& response) {
    if (is_loopback_address(request.remote_addr) &&
        names_loopback(request.get_header_value("Host"))) {
      return true;
    }
    if (!token.empty() && tokens_equal(token_of(request), token)) return true;
    response.status = 401;
    response.set_header("WWW-Authenticate", "Bearer realm=\"transient\"");
    response.set_content(
        "401: the job's token is needed from this address (Authorization: Bearer TOKEN or "
        "?token=TOKEN; TOKEN is in <job>/token)\n",
        "text/plain; charset=utf-8");
    log_refusal(request);
    return false;
  }

  void log_refusal(const httplib::Request& request) {
    std::lock_guard<std::mutex> lock(log_mutex);
    const auto now = Clock::now();
    if (last_logged &&
        std::chrono::duration<double>(now - *last_logged).count() < kRefusalLogEveryS) {
      ++unlogged;
      return;
    }
    std::string more;
    if (unlogged > 0) {
      more = " (and " + std::to_string(unlogged) + " more refused since the last one logged)";
    }
    std::fprintf(stderr, "transient: dashboard: refused %s %s from %s: no valid job token%s\n",
                 request.method.c_str(), request.path.c_str(), request.remote_addr.c_str(),
                 more.c_str());
    std::fflush(stderr);
    last_logged = now;
    unlogged = 0;
  }

  void serve_page(httplib::Response& response) {
    try {
      ReportOptions now = options;
      now.now_unix_s = 0.0;  // the page's ages are counted to this request
      response.set_content(with_refresh(render_job_report(job_dir, now), refresh_s),
                           "text/html; charset=utf-8");
      response.set_header("Cache-Control", "no-store");
    } catch (const std::exception& error) {
      response.status = 500;
      response.set_content(std::string("the job's page could not be made: ") + error.what() + "\n",
                           "text/plain; charset=utf-8");
    }
  }

  void serve_metrics(httplib::Response& response) {
    try {
      const auto facts = job_facts(records::read_job_records(job_dir), now_unix_s());
      response.set_content(prometheus_text(facts), "text/plain; version=0.0.4; charset=utf-8");
      response.set_header("Cache-Control", "no-store");
    } catch (const std::exception& error) {
      response.status = 500;
      response.set_content(
          std::string("the job's metrics could not be read: ") + error.what() + "\n",
          "text/plain; charset=utf-8");
    }
  }
};

namespace {

// httplib's pool queues every connection it accepts, without bound, each holding a descriptor of
// the process until its turn: a host opening idle connections ran the coordinator out of them (its
// journal could no longer be written). Past kWaiting queued connections, the listening thread
// serves the next itself, and accepts none meanwhile: the kernel's backlog, not this process,
// holds the rest, and the dashboard, not the job, is what such a host keeps busy.
class BoundedPool : public httplib::TaskQueue {
 public:
  explicit BoundedPool(std::size_t threads) : pool_(threads) {}
  void enqueue(std::function<void()> fn) override {
    if (waiting_.load() >= kWaiting) {
      fn();
      return;
    }
    ++waiting_;
    pool_.enqueue([this, fn = std::move(fn)] {
      --waiting_;
      fn();
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  static constexpr int kWaiting = 16;
  httplib::ThreadPool pool_;
  std::atomic<int> waiting_{0};
};

}  // namespace

LiveDashboard::LiveDashboard(std::string job_dir, std::string token, const std::string& host,
                             int port, const std::string& what, ReportOptions options,
                             int refresh_s)
    : server_(std::make_unique<Server>()) {
  Server& s = *server_;
  s.job_dir = std::move(job_dir);
  s.token = std::move(token);
  s.host = host;
  s.options = std::move(options);
  s.refresh_s = refresh_s;
  // Two threads answer: the dashboard must not take the coordinator's cores.
  s.http.new_task_queue = [] { return new BoundedPool(2); };
  // SO_REUSEADDR (a restarted coordinator takes its port back at once), not httplib's default
  // SO_REUSEPORT (which would let another process bind the same port and take its requests); and
  // the listening socket is not inherited by the workers the coordinator starts.
  s.http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    ::fcntl(sock, F_SETFD, ::fcntl(sock, F_GETFD) | FD_CLOEXEC);
  });
  s.http.set_read_timeout(10, 0);
  s.http.set_write_timeout(10, 0);
  // Only GET and HEAD are served: any other request is answered before its body is read (a
  // stranger's POST of a 1 MB gzip body was read and inflated to 1.2 GB before the 404), and no
  // body is read at all.
  s.http.set_payload_max_length(0);
  s.http.set_pre_routing_handler([](const httplib::Request& request, httplib::Response& response) {
    if (request.method == "GET" || request.method == "HEAD") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    response.status = 405;
    response.set_header("Allow", "GET, HEAD");
    return httplib::Server::HandlerResponse::Handled;
  });
  s.http.Get("/", [&s](const httplib::Request& request, httplib::Response& response) {
    if (s.admitted(request, response)) s.serve_page(response);
  });
  s.http.Get("/metrics", [&s](const httplib::Request& request, httplib::Response& response) {
    if (s.admitted(request, response)) s.serve_metrics(response);
  });
  if (port < 0 || port > 65535) {
    throw InputError(what + ": port " + std::to_string(port) +
                     " is out of range; accepted: 0..65535 (0 = any free port)");
  }
  if (port == 0) {
    s.port = s.http.bind_to_any_port(host);
  } else {
    s.port = s.http.bind_to_port(host, port) ? port : -1;
  }
  if (s.port <= 0) {
    throw InputError(what + ": cannot listen on " + host + " port " + std::to_string(port) +
                     " (an address of this host, and a port not in use; \"off\" serves no "
                     "dashboard)");
  }
  s.thread = std::thread([&s] {
    s.http.listen_after_bind();
    s.thread_done = true;
  });
}

LiveDashboard::~LiveDashboard() { stop(); }

void LiveDashboard::stop() {
  if (!server_) return;
  std::call_once(server_->stopped, [this] {
    Server& s = *server_;
    // httplib's stop() does nothing before listen_after_bind has begun (is_running), and the
    // thread then listens for ever: a dashboard stopped as soon as it was made (a coordinator
    // refused right after it was built) hung its owner. Stopped once it runs, or done.
    while (!s.thread_done) {
      if (s.http.is_running()) {
        s.http.stop();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (s.thread.joinable()) s.thread.join();
  });
}

std::string LiveDashboard::address() const {
  const bool ipv6 = server_->host.find(':') != std::string::npos;
  return (ipv6 ? "[" + server_->host + "]" : server_->host) + ":" + std::to_string(server_->port);
}

int LiveDashboard::port() const { return server_->port; }

DashboardAddress parse_dashboard_address(const std::string& text, const std::string& what) {
  const auto refuse = [&] {
    return InputError(what + ": \"" + text +
                      "\" is not ADDR:PORT; accepted e.g. 127.0.0.1:0 (0 = any free port), "
                      "0.0.0.0:9100, [::1]:9100, or off");
  };
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) throw refuse();
  DashboardAddress address;
  address.host = text.substr(0, colon);
  if (address.host.front() == '[') {
    if (address.host.size() < 3 || address.host.back() != ']') throw refuse();
    address.host = address.host.substr(1, address.host.size() - 2);
  } else if (address.host.find(':') != std::string::npos) {
    throw refuse();  // an IPv6 address goes in brackets
  }
  const std::string port = text.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) throw refuse();
  address.port = std::stoi(port);
  if (address.port > 65535) throw refuse();
  return address;
}

bool is_loopback_address(const std::string& address) {
  // An address, read as one: "127.0.0.1.attacker.example" began as 127/8 does, and a Host header
  // naming it passed for loopback (a DNS rebinding's name).
  in_addr v4{};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, address.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

bool tokens_equal(const std::string& given, const std::string& expected) {
  if (given.size() != expected.size()) return false;
  volatile unsigned char difference = 0;
  for (std::size_t i = 0; i < given.size(); ++i) {
    difference = difference | static_cast<unsigned char>(given[i] ^ expected[i]);
  }
  return difference == 0;
}

std::string with_refresh(std::string page, int seconds) {
  if (seconds <= 0) return page;
  const std::string script = R"(<script>
(function () {
  var every_ms = )" + std::to_string(seconds * 1000) +
                             R"(;
  var loaded = new Date();
  function gone(why) {
    if (document.getElementById('dashboard-gone')) return;
    var note = document.createElement('p');
    note.id = 'dashboard-gone';
    note.style.cssText = 'color: #a00; font-weight: bold;';
    note.textContent = 'The job\'s dashboard no longer answers (' + why + '): the job has ended, ' +
        'or its coordinator stopped. This is the job as it was at ' +
        loaded.toLocaleTimeString() + '; `transient report` on its directory (in the title) ' +
        'draws its page from its records.';
    document.body.insertBefore(note, document.body.firstChild);
  }
  // The long tables the reader opened (each known by its header row) stay open across reloads.
  var kept = 'transient-open-tables';
  function header(details) {
    var row = details.querySelector('tr');
    return row ? row.textContent : '';
  }
  function remember() {
    var open = [];
    document.querySelectorAll('details').forEach(function (d) { if (d.open) open.push(header(d)); });
    try { sessionStorage.setItem(kept, JSON.stringify(open)); } catch (e) {}
  }
  function restore() {
    var open = [];
    try { open = JSON.parse(sessionStorage.getItem(kept) || '[]'); } catch (e) {}
    document.querySelectorAll('details').forEach(function (d) {
      if (open.indexOf(header(d)) >= 0) d.open = true;
    });
  }
  function check() {
    fetch('/metrics' + location.search, {cache: 'no-store'}).then(function (response) {
      if (response.ok) {
        remember();
        return location.reload();
      }
      gone('HTTP ' + response.status);
      setTimeout(check, every_ms);
    }, function () {
      gone('no answer');
      setTimeout(check, every_ms);
    });
  }
  // The wait starts when the page has been drawn, so that a page slow to draw is still seen
  // for the whole interval before it is asked for again.
  function start() {
    restore();
    setTimeout(check, every_ms);
  }
  if (document.readyState === 'complete') start();
  else window.addEventListener('load', start);
})();
</script>
)";
  const auto head = page.find("<head>");
  if (head == std::string::npos) return script + page;
  page.insert(head + std::string("<head>").size() + (page.compare(head + 6, 1, "\n") == 0 ? 1 : 0),
              script);
  return page;
}

}  // namespace transient::report
