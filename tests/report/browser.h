// Opens a report page in headless Chromium (Debian's `chromium`) and reads back what the page's
// own script wrote into <pre id="report-check">: per chart the points laid out and whether its
// canvas was painted, and every script error. Tests skip, saying why, where Chromium is missing.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace transient::testing {

// The Chromium program, or "" if none is installed.
inline std::string find_chromium() {
  for (const char* path :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// Everything `command` prints on standard output.
inline std::string output_of(const std::string& command) {
  std::string out;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[65536];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

// The command line of headless Chromium with the profile folder `profile` (which the caller
// removes when the browser is done), up to the page and what to do with it. Its temporary files
// (the profile's singleton socket folder, /tmp/org.chromium.Chromium.*) go inside the profile
// too: a browser ended by a signal left that folder in /tmp, one for each such run.
inline std::string chromium_command(const std::string& chromium, const std::string& profile) {
  std::error_code ignored;
  std::filesystem::create_directories(profile + "/tmp", ignored);
  return "env TMPDIR=" + profile + "/tmp " + chromium +
         " --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir=" + profile;
}

// Chromium's own complaints in `log` (what it wrote on standard error), without the lines about
// the D-Bus and the launcher script that it writes on every run here.
inline std::string chromium_complaints(const std::string& log) {
  std::string kept;
  std::size_t begin = 0;
  while (begin < log.size()) {
    auto end = log.find('\n', begin);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(begin, end - begin);
    if (!line.empty() && line.find("dbus") == std::string::npos &&
        line.find("unexpected operator") == std::string::npos)
      kept += line + "\n";
    begin = end + 1;
  }
  return kept;
}

// Runs Chromium on `url` with `what` and returns what it printed; what it complained of on
// standard error goes to `complaints` when given. Each run has a profile of its own (tests that
// run at the same time do not share one), removed when the browser is done. `virtual_ms` is the
// virtual time the page's scripts get; the window is `window_width` pixels wide.
inline std::string run_chromium(const std::string& chromium, const std::string& url,
                                const std::string& what, int virtual_ms = 5000,
                                std::string* complaints = nullptr, int window_width = 1280) {
  std::string profile = ::testing::TempDir() + "/chromium_profile_XXXXXX";
  if (::mkdtemp(profile.data()) == nullptr) return "";
  const std::string log = profile + ".stderr";
  const std::string out = output_of("timeout 120 " + chromium_command(chromium, profile) +
                                    " --virtual-time-budget=" + std::to_string(virtual_ms) +
                                    " --window-size=" + std::to_string(window_width) + ",6000 " +
                                    what + " " + url + " 2>" + log);
  if (complaints) {
    std::ifstream said(log);
    *complaints = chromium_complaints(
        std::string(std::istreambuf_iterator<char>(said), std::istreambuf_iterator<char>()));
  }
  std::error_code ignored;
  std::filesystem::remove_all(profile, ignored);
  std::filesystem::remove(log, ignored);
  return out;
}

// The DOM of the page `path` after its scripts ran.
inline std::string dump_dom(const std::string& chromium, const std::string& path) {
  return run_chromium(chromium, "file://" + path, "--dump-dom");
}

// The JSON inside <pre id="report-check">, or null if the page never wrote it.
inline nlohmann::json report_check(const std::string& dom) {
  const std::string open = "<pre id=\"report-check\"";
  const auto at = dom.find(open);
  if (at == std::string::npos) return nullptr;
  const auto begin = dom.find('>', at) + 1;
  const auto end = dom.find("</pre>", begin);
  std::string text = dom.substr(begin, end - begin);
  for (const auto& [entity, plain] : {std::pair<std::string, std::string>{"&lt;", "<"},
                                      {"&gt;", ">"},
                                      {"&quot;", "\""},
                                      {"&#39;", "'"},
                                      {"&nbsp;", " "},
                                      {"&amp;", "&"}}) {
    for (auto p = text.find(entity); p != std::string::npos;
         p = text.find(entity, p + plain.size()))
      text.replace(p, entity.size(), plain);
  }
  return nlohmann::json::parse(text, nullptr, false);
}

// Opens `url` in the browser and expects no script error and every chart of `charts` to have
// drawn points on a painted canvas; on failure keeps a screenshot at `png` and prints its path.
// Returns the check (null if the page wrote none).
inline nlohmann::json expect_url_draws(const std::string& url,
                                       const std::vector<std::string>& charts,
                                       const std::string& png, int virtual_ms = 5000) {
  const std::string chromium = find_chromium();
  std::string complaints;
  const std::string dom = run_chromium(chromium, url, "--dump-dom", virtual_ms, &complaints);
  const nlohmann::json check = report_check(dom);
  bool good = check.is_object() && check["errors"].is_array() && check["errors"].empty();
  EXPECT_TRUE(check.is_object()) << "the page wrote no #report-check; DOM starts: "
                                 << dom.substr(0, 300) << "\nChromium said: " << complaints;
  if (check.is_object()) {
    EXPECT_TRUE(check["errors"].empty()) << check["errors"].dump();
    // The page fits the window's width (1280 px): neither it nor a table in it scrolls sideways.
    const auto& width = check["width"];
    const bool fits = width.is_object() && width.value("page", 0) <= width.value("window", 0) &&
                      width.value("scrolling", nlohmann::json::array()).empty();
    EXPECT_TRUE(fits) << "the page is wider than the window: " << width.dump();
    good = good && fits;
    for (const auto& id : charts) {
      const auto& chart = check["charts"].value(id, nlohmann::json());
      const bool drew =
          chart.is_object() && chart.value("points", 0) > 0 && chart.value("painted", false);
      EXPECT_TRUE(drew) << "chart " << id << " drew nothing: " << chart.dump();
      good = good && drew;
    }
  }
  if (!good) {
    run_chromium(chromium, url, "--screenshot=" + png, virtual_ms);
    ADD_FAILURE() << "screenshot of the page: " << png;
  }
  return check;
}

// The same for the page file `path`, its screenshot beside it.
inline nlohmann::json expect_page_draws(const std::string& path,
                                        const std::vector<std::string>& charts) {
  return expect_url_draws("file://" + path, charts, path + ".png");
}

}  // namespace transient::testing

#define TRANSIENT_SKIP_WITHOUT_CHROMIUM()                                               \
  do {                                                                                  \
    if (::transient::testing::find_chromium().empty())                                  \
      GTEST_SKIP() << "headless Chromium is not installed (Debian package `chromium`, " \
                      "scripts/install-deps.sh installs it): the page is not opened";   \
  } while (0)
