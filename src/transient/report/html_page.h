// One self-contained HTML page of tables and Chart.js charts: the library's JavaScript and every
// chart's data are inside the page, so it opens offline and fetches nothing.
//
// After drawing, the page's own script writes <pre id="report-check" hidden> with JSON
// {"charts": {"ID": {"points": N, "painted": true|false}, ...}, "errors": [...]}: per chart the
// number of points laid out and whether its canvas holds any pixel, and every script error
// (window.onerror, a chart that threw). Tests read it from a headless browser's DOM.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace transient::report {

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  // <h2>: a section's heading.
  void add_heading(const std::string& text);
  // <p> of plain text (escaped); `css_class` "note" or "problem" styles it.
  void add_paragraph(const std::string& text, const std::string& css_class = "");
  // A table of plain-text cells (escaped); no header row where every header is empty. A cell's
  // lines break at its spaces only: its words with a hyphen (us-east1-c, n1-standard-4) are kept
  // whole in <span class="unbroken">. The cells of the columns `unbroken` (indices) never wrap: a
  // time such as 2026-11-29T12:06:15.271Z beside others in a narrow column. A table of more than
  // 25 rows is folded: "N rows", which the reader opens (<details>).
  void add_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows,
                 const std::vector<std::size_t>& unbroken = {});
  // A chart: `config` is a Chart.js 3 configuration ({type, data, options}); `id` names it in the
  // check (letters, digits, '-'). Animation is turned off so that it is drawn at once.
  void add_chart(const std::string& id, nlohmann::json config, int height_px = 320);

  // The page, with `chart_js` (the library's source) inline.
  std::string render(const std::string& chart_js) const;

 private:
  std::string title_;
  std::string body_;
  nlohmann::json charts_ = nlohmann::json::object();
};

// `text` with &, <, >, " and ' escaped for HTML.
std::string escape_html(const std::string& text);

// The Debian path of Chart.js this build was configured with (TRANSIENT_CHARTJS_PATH).
std::string default_chart_js_path();
// The library's source read from `path`; throws InputError naming it, and the Debian package that
// provides it, if it cannot be read.
std::string read_chart_js(const std::string& path);

}  // namespace transient::report
