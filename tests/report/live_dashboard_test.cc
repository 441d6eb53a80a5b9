// The live dashboard's page in headless Chromium: it reloads itself while the dashboard answers
// (the long tables the reader opened staying open), and once it does not (the job ended, its
// coordinator with it), it stays as it was and says so.
#include "transient/report/live_dashboard.h"
#include "transient/report/html_page.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "report/browser.h"
#include "report/job_dir_fixture.h"
#include "transient/core/atomic_file.h"
#include "transient/report/job_report.h"

namespace transient::report {
namespace {

const std::vector<std::string> kCharts = {"loss-step", "membership", "phases-mean"};

// The page as the dashboard serves it, reloading every second.
std::string served_page(const LiveDashboard& dashboard) {
  const auto at = parse_dashboard_address(dashboard.address(), "dashboard");
  httplib::Client client(at.host, at.port);
  client.set_read_timeout(30, 0);
  const auto page = client.Get("/");
  EXPECT_TRUE(page && page->status == 200);
  return page ? page->body : std::string();
}

// Opens http://127.0.0.1:PORT/ of `server` (its routes set) in a headless browser of a profile
// of its own, named by `profile`, until `done` holds (or a minute has passed: a loaded machine
// starts the browser slowly); then ends the browser and the server. (A headless browser's DOM of
// a page that keeps reloading is never final, so what the page asked the server is what the
// tests check.)
void browse(httplib::Server& server, const std::string& profile,
            const std::function<bool()>& done) {
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  std::thread browser([&] {
    testing::output_of("timeout 60 " +
                       testing::chromium_command(testing::find_chromium(), profile) +
                       " http://127.0.0.1:" + std::to_string(port) + "/ > /dev/null 2>&1");
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  testing::output_of("pkill -f -- '--user-data-dir=" + profile + "'");
  browser.join();
  server.stop();
  serving.join();
  // The browser's last processes may still be writing into the profile as it is removed (a file
  // gone between listing and removing it): tried again once they are done.
  std::error_code ignored;
  for (int attempt = 0; attempt < 10 && std::filesystem::exists(profile, ignored); ++attempt) {
    std::filesystem::remove_all(profile, ignored);
    if (ignored) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The descriptors this process holds.
int open_descriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

// A host holding idle connections to the dashboard holds few of its process's descriptors: its
// server queued every connection it accepted, so that 1,000 idle ones ran a coordinator out of
// them (its journal could not be written). And it reads no request body: a POST is refused
// before its body is read (a 1 MB gzip body was inflated to 1.2 GB before a 404).
// A dashboard stopped as soon as it is made (a coordinator refused right after it was built)
// stops: httplib's stop() did nothing before its server thread had begun listening, and the
// thread then listened for ever (a make test run hung in the coordinator's destructor). Each
// dashboard is stopped from a thread of its own, watched: one not stopped within 10 s fails.
TEST(LiveDashboardServer, ADashboardStoppedAsSoonAsItIsMadeStops) {
  const auto job = testing::write_job_dir("dashboard_stopped_at_once");
  for (int i = 0; i < 300; ++i) {
    auto dashboard = std::make_unique<LiveDashboard>(job.dir, "token", "127.0.0.1", 0);
    // Shared with the stopping thread, which a failure leaves behind.
    const auto stopped = std::make_shared<std::atomic<bool>>(false);
    std::thread stopping([dashboard = std::move(dashboard), stopped]() mutable {
      dashboard.reset();
      *stopped = true;
    });
    for (int waited = 0; waited < 1000 && !*stopped; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!*stopped) {
      ADD_FAILURE() << "dashboard " << i << " was not stopped within 10 s";
      stopping.detach();  // it never will be; the test process ends with it
      return;
    }
    stopping.join();
  }
}

TEST(LiveDashboardServer, IdleConnectionsHoldFewDescriptorsAndNoBodyIsRead) {
  const auto job = testing::write_job_dir("dashboard_idle");
  std::vector<int> idle;
  {
    LiveDashboard dashboard(job.dir, "token", "127.0.0.1", 0);
    const auto at = parse_dashboard_address(dashboard.address(), "dashboard");
    const int before = open_descriptors();
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(at.port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < 200; ++i) {
      // Not waiting for the connection: those the server has not accepted wait in its backlog.
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ASSERT_GE(fd, 0);
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
      idle.push_back(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // The 200 clients' own descriptors, and at most a few dozen of the server's.
    EXPECT_LT(open_descriptors() - before - 200, 40);
    for (const int fd : idle) ::close(fd);
    idle.clear();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // A POST announcing a gigabyte is answered at once, its body never awaited.
    const int post = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(::connect(post, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    timeval wait{30, 0};
    ::setsockopt(post, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    const std::string head =
        "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n";
    ASSERT_EQ(::send(post, head.data(), head.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(head.size()));
    char reply[64] = {};
    const ssize_t got_bytes = ::recv(post, reply, sizeof reply - 1, 0);
    ::close(post);
    ASSERT_GT(got_bytes, 0) << "no answer before the body";
    EXPECT_EQ(std::string(reply).rfind("HTTP/1.1 405", 0), 0u) << reply;
    httplib::Client client(at.host, at.port);
    client.set_read_timeout(30, 0);
    const auto got = client.Get("/metrics");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 200);
  }
}

// A loopback peer needs no token only when its Host names the loopback: a page of another site
// that a DNS rebinding points at 127.0.0.1 sends its own name, and read the job's page (its
// paths, pids and peers). The scheme of `Authorization: Bearer` is in any case (RFC 7235).
TEST(LiveDashboardServer, ALoopbackPeerNamingAnotherHostNeedsTheToken) {
  const auto job = testing::write_job_dir("dashboard_host");
  LiveDashboard dashboard(job.dir, "s3cret", "127.0.0.1", 0);
  const auto at = parse_dashboard_address(dashboard.address(), "dashboard");
  httplib::Client client(at.host, at.port);
  client.set_read_timeout(30, 0);
  const auto status = [&](const httplib::Headers& headers) {
    const auto got = client.Get("/metrics", headers);
    return got ? got->status : -1;
  };
  EXPECT_EQ(status({}), 200);  // Host: 127.0.0.1:PORT
  const std::string port = std::to_string(at.port);
  EXPECT_EQ(status({{"Host", "localhost:" + port}}), 200);
  EXPECT_EQ(status({{"Host", "[::1]:" + port}}), 200);
  EXPECT_EQ(status({{"Host", "attacker.example:" + port}}), 401);
  // A rebinding domain named to look like loopback (review: each got the job's page).
  EXPECT_EQ(status({{"Host", "127.0.0.1.attacker.example:" + port}}), 401);
  EXPECT_EQ(status({{"Host", "127.evil.example"}}), 401);
  EXPECT_EQ(status({{"Host", "[::1].evil:" + port}}), 401);
  EXPECT_EQ(status({{"Host", "localhost.evil:" + port}}), 401);
  EXPECT_EQ(status({{"Host", "attacker.example"}, {"Authorization", "Bearer s3cret"}}), 200);
  EXPECT_EQ(status({{"Host", "attacker.example"}, {"Authorization", "bearer s3cret"}}), 200);
  EXPECT_EQ(status({{"Host", "attacker.example"}, {"Authorization", "bearer wrong"}}), 401);
}

TEST(LiveDashboardPage, ReloadsItselfWhileTheDashboardAnswers) {
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  const auto job = testing::write_job_dir("dashboard_alive");
  {
    LiveDashboard dashboard(job.dir, "token", "127.0.0.1", 0, "--dashboard", {}, 1);
    EXPECT_NE(served_page(dashboard).find("var every_ms = 1000;"), std::string::npos);
  }
  // The page served by a server that counts what the browser asks for: the page reloads itself
  // once its probe of /metrics is answered.
  std::atomic<int> pages{0};
  std::atomic<int> probes{0};
  const std::string page = with_refresh(render_job_report(job.dir, {}), 1);
  httplib::Server server;
  server.Get("/", [&](const httplib::Request&, httplib::Response& response) {
    ++pages;
    response.set_content(page, "text/html; charset=utf-8");
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& response) {
    ++probes;
    response.set_content("transient_step 300\n", "text/plain");
  });
  browse(server, job.dir + "-chromium", [&] { return pages.load() >= 2; });
  EXPECT_GE(probes.load(), 1);
  EXPECT_GE(pages.load(), 2) << "the page was not reloaded after its dashboard answered";
}

// A long table the reader opened on the live page is open again after the page reloads itself
// (the page folds tables of more than 25 rows). The reader here is the page's own script: it opens
// the table on the first load, and on the second says whether it is open.
TEST(LiveDashboardPage, ATableTheReaderOpenedStaysOpenAcrossReloads) {
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  HtmlPage html("folded");
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < 30; ++i) rows.push_back({std::to_string(i), "event"});
  html.add_table({"t (s)", "event"}, rows);
  const std::string reader = R"(<script>
window.addEventListener('load', function () {
  var table = document.querySelector('details');
  if (!sessionStorage.getItem('opened-once')) {
    sessionStorage.setItem('opened-once', '1');
    table.open = true;
  } else {
    fetch('/seen?open=' + (table.open ? 1 : 0));
  }
});
</script>
)";
  std::string page = with_refresh(html.render(""), 1);
  page.insert(page.find("</body>"), reader);
  std::atomic<int> seen_open{-1};
  httplib::Server server;
  server.Get("/", [&](const httplib::Request&, httplib::Response& response) {
    response.set_content(page, "text/html; charset=utf-8");
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& response) {
    response.set_content("transient_step 300\n", "text/plain");
  });
  server.Get("/seen", [&](const httplib::Request& request, httplib::Response& response) {
    seen_open = std::stoi(request.get_param_value("open"));
    response.set_content("", "text/plain");
  });
  browse(server, ::testing::TempDir() + "/dashboard_folded-chromium",
         [&] { return seen_open.load() >= 0; });
  EXPECT_EQ(seen_open.load(), 1) << "(-1: the page never came back; 0: the table was folded again)";
}

TEST(LiveDashboardPage, APageWhoseDashboardIsGoneStaysAndSaysSo) {
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  const auto job = testing::write_job_dir("dashboard_gone");
  std::string page;
  {
    LiveDashboard dashboard(job.dir, "token", "127.0.0.1", 0, "--dashboard", {}, 1);
    page = served_page(dashboard);
  }  // the dashboard stops: the job has ended
  // The page as the browser holds it, its dashboard gone (nothing answers its /metrics).
  const std::string path = job.dir + "/served.html";
  write_file_atomically(path, page);
  const std::string dom =
      testing::run_chromium(testing::find_chromium(), "file://" + path, "--dump-dom", 2500);
  EXPECT_NE(dom.find("<p id=\"dashboard-gone\""), std::string::npos) << dom.substr(0, 300);
  EXPECT_NE(dom.find("The job's dashboard no longer answers (no answer): the job has ended, or "
                     "its coordinator stopped. This is the job as it was at "),
            std::string::npos);
  // ... and the page is still there, every chart drawn.
  const auto check = testing::report_check(dom);
  ASSERT_TRUE(check.is_object()) << dom.substr(0, 300);
  EXPECT_TRUE(check["errors"].empty()) << check["errors"].dump();
  for (const auto& id : kCharts) EXPECT_GT(check["charts"][id].value("points", 0), 0) << id;
}

// A page that takes long to draw (a long job's charts on a slow machine) is shown for the whole
// interval after it is drawn before it asks for the next: its wait starts at its load event, not
// while its head is read. The page here draws for 3 s and asks every 2 s; the browser gives its
// scripts 1 s after the load (Chromium counts the real time taken before the load into the
// page's timers), so the probe, were it timed from the head, would have run and, finding no
// dashboard behind a file, said so.
TEST(LiveDashboardPage, APageSlowToDrawIsShownForTheWholeIntervalAfterItIsDrawn) {
  TRANSIENT_SKIP_WITHOUT_CHROMIUM();
  const std::string dir = ::testing::TempDir() + "/dashboard_slow_page";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/served.html";
  write_file_atomically(path, with_refresh(R"(<html><head>
<title>slow</title></head><body><p>drawing</p>
<script>
var began = Date.now();
while (Date.now() - began < 3000) {}
document.body.insertAdjacentHTML('beforeend', '<p id="drawn">drawn</p>');
</script>
</body></html>
)",
                                           2));
  const std::string dom =
      testing::run_chromium(testing::find_chromium(), "file://" + path, "--dump-dom", 1000);
  ASSERT_NE(dom.find("<p id=\"drawn\">"), std::string::npos) << dom.substr(0, 600);
  EXPECT_EQ(dom.find("<p id=\"dashboard-gone\""), std::string::npos)
      << "the page asked for the next one before it had been shown for its interval";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace transient::report
