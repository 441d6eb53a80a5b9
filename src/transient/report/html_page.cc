#include "transient/report/html_page.h"

#include <algorithm>
#include <filesystem>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"

namespace transient::report {
namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
th { background: #f3f3f3; }
.chart { position: relative; width: 100%; margin: 0.5em 0 1.5em; }
.note { color: #555; font-style: italic; }
.problem { color: #a00; font-family: monospace; }
.unbroken { white-space: nowrap; }
.breakable { overflow-wrap: anywhere; }
.table { overflow-x: auto; }
summary { cursor: pointer; color: #555; margin: 0.5em 0; }
)";

// Installed before the library so that an error anywhere on the page is caught.
constexpr const char* kErrorCatcher = R"(
window.reportErrors = [];
window.addEventListener('error', function (e) {
  window.reportErrors.push(String(e.message) + ' (line ' + e.lineno + ')');
});
)";

// Draws every chart, then writes what it drew into #report-check.
constexpr const char* kDrawCharts = R"(
(function () {
  var check = { charts: {}, errors: window.reportErrors };
  try {
    var configs = JSON.parse(document.getElementById('report-data').textContent);
    Object.keys(configs).forEach(function (id) {
      var entry = { points: 0, painted: false };
      check.charts[id] = entry;
      try {
        var config = configs[id];
        config.options = config.options || {};
        config.options.animation = false;
        config.options.responsive = true;
        config.options.maintainAspectRatio = false;
        var canvas = document.getElementById('chart-' + id);
        var chart = new Chart(canvas, config);
        chart.data.datasets.forEach(function (dataset, i) {
          chart.getDatasetMeta(i).data.forEach(function (element) {
            if (isFinite(element.x) && isFinite(element.y)) entry.points += 1;
          });
        });
        var pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        for (var p = 3; p < pixels.length; p += 4) {
          if (pixels[p] !== 0) { entry.painted = true; break; }
        }
      } catch (error) {
        check.errors.push('chart ' + id + ': ' + error);
      }
    });
  } catch (error) {
    check.errors.push(String(error));
  }
  // Whether the page fits its window's width (a page wider than it scrolls sideways), and the
  // tables wider than their box (by their header), which scroll sideways in it.
  check.width = { page: document.documentElement.scrollWidth, window: window.innerWidth,
                  scrolling: [] };
  document.querySelectorAll('div.table').forEach(function (box) {
    if (box.scrollWidth > box.clientWidth) {
      var first = box.querySelector('tr');
      check.width.scrolling.push(first ? first.textContent : '');
    }
  });
  var marker = document.createElement('pre');
  marker.id = 'report-check';
  marker.hidden = true;
  marker.textContent = JSON.stringify(check);
  document.body.appendChild(marker);
})();
)";

// Text placed inside <script>: a "</" could end the element early.
std::string script_safe(std::string text) {
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.replace(at, 2, "<\\/");
  return text;
}

// JSON placed inside <script>: every '<' (only ever inside a string) as \u003c, so that no text
// from the records ("</script>", "<!--<script>") can end the element or change how it is parsed.
std::string json_in_script(const nlohmann::json& json) {
  const std::string text = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::add_heading(const std::string& text) {
  body_ += "<h2>" + escape_html(text) + "</h2>\n";
}

void HtmlPage::add_paragraph(const std::string& text, const std::string& css_class) {
  body_ += (css_class.empty() ? "<p>" : "<p class=\"" + css_class + "\">") + escape_html(text) +
           "</p>\n";
}

namespace {

// Tables of more rows than this are folded (<details>): the reader opens them.
constexpr std::size_t kLongTable = 25;

// Words longer than this break anywhere when their column must narrow: a path, or a Gloo error's
// source file, would otherwise widen a table past a narrow window.
constexpr std::size_t kLongWord = 30;

// A cell's text as HTML: escaped, its words with a hyphen kept whole (a zone such as us-east1-c
// or a type such as n1-standard-4 breaks at its hyphens otherwise, as browsers break words), the
// lines breaking at spaces only, and within a long word where they must.
std::string cell_html(const std::string& text) {
  std::string html;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    auto end = text.find(' ', begin);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(begin, end - begin);
    if (word.size() > kLongWord) {
      html += "<span class=\"breakable\">" + escape_html(word) + "</span>";
    } else if (word.size() > 1 && word.find('-') != std::string::npos) {
      html += "<span class=\"unbroken\">" + escape_html(word) + "</span>";
    } else {
      html += escape_html(word);
    }
    if (end < text.size()) html += ' ';
    begin = end + 1;
  }
  return html;
}

}  // namespace

void HtmlPage::add_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows,
                         const std::vector<std::size_t>& unbroken) {
  // A long table (a long job's checkpoints, events, recoveries) is folded, so that it does not
  // bury the rest of the page: the reader opens it.
  const bool folded = rows.size() > kLongTable;
  if (folded) {
    body_ += "<details><summary>" + std::to_string(rows.size()) + " rows</summary>\n";
  }
  // In a box of its own that scrolls sideways when the table is wider than the window (one of
  // many numeric columns), so that the page itself does not.
  body_ += "<div class=\"table\"><table>\n";
  // A table of names and values has no header to show: no empty row above it.
  if (std::any_of(header.begin(), header.end(), [](const auto& cell) { return !cell.empty(); })) {
    body_ += "<tr>";
    for (const auto& cell : header) body_ += "<th>" + escape_html(cell) + "</th>";
    body_ += "</tr>\n";
  }
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (std::size_t column = 0; column < row.size(); ++column) {
      const bool whole = std::find(unbroken.begin(), unbroken.end(), column) != unbroken.end();
      body_ += whole ? "<td class=\"unbroken\">" + escape_html(row[column]) + "</td>"
                     : "<td>" + cell_html(row[column]) + "</td>";
    }
    body_ += "</tr>\n";
  }
  body_ += "</table></div>\n";
  if (folded) body_ += "</details>\n";
}

void HtmlPage::add_chart(const std::string& id, nlohmann::json config, int height_px) {
  body_ += "<div class=\"chart\" style=\"height:" + std::to_string(height_px) +
           "px\"><canvas id=\"chart-" + escape_html(id) + "\"></canvas></div>\n";
  charts_[id] = std::move(config);
}

std::string HtmlPage::render(const std::string& chart_js) const {
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<title>" + escape_html(title_) + "</title>\n<style>" + kStyle + "</style>\n";
  page += std::string("<script>") + kErrorCatcher + "</script>\n";
  page += "<script>\n" + script_safe(chart_js) + "\n</script>\n</head>\n<body>\n";
  page += "<h1>" + escape_html(title_) + "</h1>\n" + body_;
  page += "<script id=\"report-data\" type=\"application/json\">" + json_in_script(charts_) +
          "</script>\n";
  page += std::string("<script>") + kDrawCharts + "</script>\n</body>\n</html>\n";
  return page;
}

std::string default_chart_js_path() { return TRANSIENT_CHARTJS_PATH; }

std::string read_chart_js(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw InputError(path, 0,
                     "Chart.js is missing: the report's charts need Debian's libjs-chart.js "
                     "(apt-get install libjs-chart.js, or scripts/install-deps.sh)");
  }
  return read_file(path);
}

}  // namespace transient::report
