// What every report page needs besides its input.
#pragma once

#include <string>

namespace transient::report {

struct ReportOptions {
  // Chart.js, read when the page is made and embedded in it ("": default_chart_js_path()).
  std::string chart_js_path;
  // The wall-clock time the page is made at, seconds since 1970 UTC (ages are counted to it);
  // 0: the system clock.
  double now_unix_s = 0.0;
};

}  // namespace transient::report
