#include "transient/plan/pareto_svg.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "transient/plan/request.h"

namespace transient::plan {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// `value` with as many decimals as `step` needs (0.25 -> 2, 0.5 -> 1, 2 -> 0).
std::string tick_text(double value, double step) {
  int decimals = 0;
  while (decimals < 6 && std::abs(step * std::pow(10.0, decimals) -
                                  std::round(step * std::pow(10.0, decimals))) > 1e-6) {
    ++decimals;
  }
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace

std::vector<double> axis_ticks(double max) {
  const double rough = max / 5;
  const double power = std::pow(10.0, std::floor(std::log10(rough)));
  double step = 10 * power;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * power >= rough) {
      step = m * power;
      break;
    }
  }
  std::vector<double> ticks;
  for (int i = 0; ticks.empty() || ticks.back() < max * (1 - 1e-9); ++i) ticks.push_back(i * step);
  return ticks;
}

std::string render_pareto_svg(const PlanResult& result, const std::string& title,
                              const ParetoLimits& limits) {
  constexpr double kWidth = 880, kHeight = 480, kLeft = 70, kRight = 350, kTop = 40, kBottom = 50;
  std::vector<const Evaluation*> all;
  for (const auto& e : result.pareto) all.push_back(&e);
  for (const auto& e : result.candidates) all.push_back(&e);
  for (const auto& e : result.baselines) all.push_back(&e);
  double max_h = 0.0, max_usd = 0.0;
  for (const auto* e : all) {
    if (std::isfinite(e->predicted_time_s)) max_h = std::max(max_h, e->predicted_time_s / 3600);
    if (std::isfinite(e->predicted_cost_usd)) max_usd = std::max(max_usd, e->predicted_cost_usd);
  }
  // A limit within twice the points' reach is drawn on the chart; a farther one only said in the
  // legend, so that it does not squeeze the points into a corner.
  const auto on_chart = [](double limit, double reach) {
    return limit > 0 && (reach <= 0 || limit <= 2 * reach);
  };
  const bool deadline_drawn = limits.deadline_s && on_chart(*limits.deadline_s / 3600, max_h);
  const bool budget_drawn = limits.budget_usd && on_chart(*limits.budget_usd, max_usd);
  if (deadline_drawn) max_h = std::max(max_h, *limits.deadline_s / 3600);
  if (budget_drawn) max_usd = std::max(max_usd, *limits.budget_usd);
  const std::vector<double> h_ticks = axis_ticks(max_h > 0 ? max_h * 1.05 : 1.0);
  const std::vector<double> usd_ticks = axis_ticks(max_usd > 0 ? max_usd * 1.05 : 1.0);
  max_h = h_ticks.back();
  max_usd = usd_ticks.back();
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x = [&](double s) { return kLeft + plot_w * std::min(s / 3600 / max_h, 1.0); };
  auto y = [&](double usd) { return kTop + plot_h * (1.0 - std::min(usd / max_usd, 1.0)); };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"14\">{3}</text>\n",
      kWidth, kHeight, kLeft, escape(title));
  // Axes with five ticks each.
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n"
      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"black\"/>\n"
      "<text x=\"{4}\" y=\"{5}\" text-anchor=\"middle\">expected time without revocations "
      "(hours)</text>\n"
      "<text x=\"18\" y=\"{6}\" transform=\"rotate(-90 18 {6})\" text-anchor=\"middle\">"
      "expected cost ($)</text>\n",
      kLeft, kTop + plot_h, kLeft + plot_w, kTop, kLeft + plot_w / 2, kHeight - 12,
      kTop + plot_h / 2);
  for (const double h : h_ticks) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x(h * 3600), kTop + plot_h, kTop + plot_h + 5, kTop + plot_h + 18,
        tick_text(h, h_ticks[1]));
  }
  for (const double usd : usd_ticks) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"black\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft - 5, y(usd), kLeft, kLeft - 8, y(usd) + 4, tick_text(usd, usd_ticks[1]));
  }
  // The request's limits, dashed.
  if (deadline_drawn) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#555\" "
        "stroke-dasharray=\"6 4\"><title>deadline</title></line>\n"
        "<text x=\"{3:.1f}\" y=\"{4}\" fill=\"#555\" text-anchor=\"end\">deadline</text>\n",
        x(*limits.deadline_s), kTop, kTop + plot_h, x(*limits.deadline_s) - 4, kTop + 12);
  }
  if (budget_drawn) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#555\" "
        "stroke-dasharray=\"6 4\"><title>budget</title></line>\n"
        "<text x=\"{3}\" y=\"{4:.1f}\" fill=\"#555\" text-anchor=\"end\">budget</text>\n",
        kLeft, y(*limits.budget_usd), kLeft + plot_w, kLeft + plot_w - 4,
        y(*limits.budget_usd) - 4);
  }
  // The front as a line through its points.
  std::string path;
  for (const auto& e : result.pareto) {
    path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", x(e.predicted_time_s),
                        y(e.predicted_cost_usd));
  }
  if (!path.empty()) {
    svg +=
        "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"" + path + "\"/>\n";
  }
  for (const auto& e : result.pareto) {
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#1f77b4\"><title>{}"
        "</title></circle>\n",
        x(e.predicted_time_s), y(e.predicted_cost_usd), escape(e.configuration.text()));
  }
  for (const auto& e : result.candidates) {
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"7\" height=\"7\" fill=\"none\" "
        "stroke=\"#2ca02c\"><title>{}: {}</title></rect>\n",
        x(e.predicted_time_s) - 3.5, y(e.predicted_cost_usd) - 3.5, e.label,
        escape(e.configuration.text()));
  }
  // Baselines: a labelled cross each.
  const char* colours[] = {"#d62728", "#ff7f0e", "#9467bd", "#8c564b"};
  double legend_y = kTop + 10;
  for (std::size_t i = 0; i < result.baselines.size(); ++i) {
    const auto& e = result.baselines[i];
    const char* colour = colours[i % 4];
    const double cx = x(e.predicted_time_s), cy = y(e.predicted_cost_usd);
    svg += fmt::format(
        "<path d=\"M{0:.1f},{1:.1f} l10,10 m0,-10 l-10,10\" stroke=\"{2}\" stroke-width=\"2\">"
        "<title>{3}</title></path>\n",
        cx - 5, cy - 5, colour, escape(e.configuration.text()));
    svg +=
        fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" fill=\"{}\">x {}: {:.2f} h, ${:.2f}</text>\n",
                    kLeft + plot_w + 12, legend_y, colour, escape(e.label),
                    e.predicted_time_s / 3600, e.predicted_cost_usd);
    legend_y += 18;
  }
  svg += fmt::format(
      "<text x=\"{0:.0f}\" y=\"{1:.0f}\" fill=\"#1f77b4\">o Pareto front</text>\n"
      "<text x=\"{0:.0f}\" y=\"{2:.0f}\" fill=\"#2ca02c\">&#9633; candidates</text>\n",
      kLeft + plot_w + 12, legend_y, legend_y + 18);
  legend_y += 36;
  if (result.recommended) {
    const auto& e = *result.recommended;
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"9\" fill=\"none\" stroke=\"black\" "
        "stroke-width=\"2\"/>\n<text x=\"{:.0f}\" y=\"{:.0f}\">&#9675; recommended: {:.2f} h, "
        "${:.2f}</text>\n",
        x(e.predicted_time_s), y(e.predicted_cost_usd), kLeft + plot_w + 12, legend_y,
        e.predicted_time_s / 3600, e.predicted_cost_usd);
    legend_y += 18;
  }
  const auto limit_legend = [&](const char* what, const std::string& value, bool drawn) {
    svg +=
        fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" fill=\"#555\">- - {} {}{}</text>\n",
                    kLeft + plot_w + 12, legend_y, what, value, drawn ? "" : " (beyond the axis)");
    legend_y += 18;
  };
  if (limits.deadline_s) limit_legend("deadline", format_hours(*limits.deadline_s), deadline_drawn);
  if (limits.budget_usd) limit_legend("budget", format_usd(*limits.budget_usd), budget_drawn);
  svg += "</svg>\n";
  return svg;
}

}  // namespace transient::plan
