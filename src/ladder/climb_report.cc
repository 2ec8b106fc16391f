#include "ladder/climb_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "harness/report_html.h"
#include "ladder/climb.h"

namespace ladder::climb {

using nlohmann::json;

namespace {

std::string esc(const std::string& s) { return harness::html_escape(s); }

std::string args_text(const RungOutcome& r) {
  std::string s = r.spec.args.empty() ? "(defaults)" : fmt::format("{}", fmt::join(r.spec.args, " "));
  if (!r.spec.model.empty()) s += " [model " + r.spec.model + "]";
  return s;
}

std::string rung_label(const RungOutcome& r) {
  return fmt::format("{} {}", r.rung, r.spec.name);
}

const char* decision_colour(const std::string& d) {
  if (d == "promoted") return "#1a7f37";
  if (d == "baseline") return "#555";
  if (d == "failed") return "#8250df";
  return "#cf222e";
}

// Horizontal bars of value in [0, max] with an optional interval, one row per rung.
struct Bar {
  std::string label;
  std::optional<double> value;
  std::optional<std::pair<double, double>> interval;
  std::string text;
  std::string colour;
};

// zero_line: bars start at 0 and a dashed line marks it; the axis is then in percent.
std::string bar_chart(const std::string& title, const std::vector<Bar>& bars, double lo, double hi,
                      bool zero_line) {
  const int width = 720, left = 170, right = 150, row = 26, top = 28;
  const int height = top + row * static_cast<int>(bars.size()) + 24;
  const double span = hi > lo ? hi - lo : 1.0;
  auto x = [&](double v) { return left + (width - left - right) * (std::clamp(v, lo, hi) - lo) / span; };
  std::string s = fmt::format(
      "<svg class=\"chart\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">"
      "<title>{}</title><text x=\"4\" y=\"16\" font-weight=\"bold\">{}</text>",
      width, height, width, height, esc(title), esc(title));
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    s += fmt::format("<text x=\"4\" y=\"{:.0f}\">{}</text>", y + 16, esc(b.label));
    if (b.value) {
      const double x0 = x(zero_line ? 0.0 : lo), x1 = x(*b.value);
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\" opacity=\"0.75\"/>",
          std::min(x0, x1), y + 4, std::max(1.0, std::fabs(x1 - x0)), b.colour);
    }
    if (b.interval) {
      const double a = x(b.interval->first), c = x(b.interval->second);
      s += fmt::format(
          "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.0f}\" y2=\"{:.0f}\" stroke=\"#000\" stroke-width=\"2\"/>"
          "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.0f}\" y2=\"{:.0f}\" stroke=\"#000\"/>"
          "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.0f}\" y2=\"{:.0f}\" stroke=\"#000\"/>",
          a, c, y + 12, y + 12, a, a, y + 6, y + 18, c, c, y + 6, y + 18);
    }
    s += fmt::format("<text x=\"{}\" y=\"{:.0f}\">{}</text>", width - right + 6, y + 16, esc(b.text));
  }
  if (zero_line && lo < 0 && hi > 0) {
    s += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>",
        x(0), x(0), top - 4, height - 20);
  }
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\" fill=\"#555\">{}</text><text x=\"{}\" y=\"{}\" fill=\"#555\" "
      "text-anchor=\"end\">{}</text></svg>",
      left, height - 6, zero_line ? signed_percent(lo) : fmt::format("{:.3g}", lo), width - right, height - 6,
      zero_line ? signed_percent(hi) : fmt::format("{:.3g}", hi));
  return s;
}

std::string goodput_charts(const LoadClimb& r, const ClimbPolicy& policy) {
  std::vector<Bar> own, change;
  double lo = 0, hi = 0;
  for (const auto& g : r.rungs) {
    Bar b{rung_label(g), std::nullopt, std::nullopt, "not measured", decision_colour(g.decision)};
    if (g.figures) {
      const auto& f = g.figures->goodput_fraction;
      b.value = f.fraction;
      b.interval = std::make_pair(f.ci_low, f.ci_high);
      b.text = fmt::format("{:.3f} [{:.3f}, {:.3f}]", f.fraction, f.ci_low, f.ci_high);
    }
    own.push_back(b);
    // Only relative, finite figures set the change axis: an unbounded end
    // (too few runs to bound it) is drawn to the axis' edge.
    if (g.goodput && g.goodput->relative) {
      for (double v : {g.goodput->ci_low, g.goodput->ci_high, g.goodput->gain}) {
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      }
    }
  }
  const double pad = std::max(0.05, 0.1 * (hi - lo));
  for (const auto& g : r.rungs) {
    if (g.rung == 1) continue;
    Bar b{fmt::format("{} vs {}", rung_label(g), g.compared_with), std::nullopt, std::nullopt, g.decision,
          decision_colour(g.decision)};
    if (g.goodput && g.goodput->relative) {
      if (std::isfinite(g.goodput->gain)) b.value = g.goodput->gain;
      b.interval = std::make_pair(std::clamp(g.goodput->ci_low, lo - pad, hi + pad),
                                  std::clamp(g.goodput->ci_high, lo - pad, hi + pad));
      b.text = fmt::format("{} [{}, {}]", signed_percent(g.goodput->gain), signed_percent(g.goodput->ci_low),
                           signed_percent(g.goodput->ci_high));
    } else if (g.goodput) {  // A never good: the interval is of an absolute change
      b.text = fmt::format("A never good; {:+.3f} good per paired request [{:+.3f}, {:+.3f}]", g.goodput->gain,
                           g.goodput->ci_low, g.goodput->ci_high);
    }
    change.push_back(b);
  }
  return bar_chart(fmt::format("Goodput fraction (verified within SLO / sent), {:g}% interval",
                               100 * policy.confidence),
                   own, 0, 1, false) +
         bar_chart("Paired goodput change against the rung serving before it (relative), interval vs 0",
                   change, lo - pad, hi + pad, true);
}

std::string latency_table(const LoadClimb& r) {
  std::string s =
      "<h3>Latency and cost</h3><table><tr><th>rung</th><th>goodput/s</th><th>good / sent</th>"
      "<th>TTFT p50</th><th>p90</th><th>p99</th><th>TPOT p50</th><th>p99</th><th>E2E p50</th><th>p90</th>"
      "<th>p95</th><th>p99</th>"
      "<th>server core-s</th><th>core-s per verified task</th><th>tokens per verify cycle</th></tr>";
  auto pct = [](const json& d, const char* k) {
    return d.is_object() && d.contains(k) ? fmt::format("{:.1f}", d[k].get<double>()) : std::string("-");
  };
  std::vector<Bar> cost;
  double max_cost = 0;
  for (const auto& g : r.rungs) {
    if (!g.figures) {
      s += fmt::format("<tr><td>{}</td><td colspan=\"14\">not measured</td></tr>", esc(rung_label(g)));
      continue;
    }
    const RungFigures& f = *g.figures;
    s += fmt::format(
        "<tr><td>{}</td><td>{:.3f}</td><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(rung_label(g)), f.goodput_rps, f.good, f.requests, pct(f.ttft_ms, "p50"), pct(f.ttft_ms, "p90"),
        pct(f.ttft_ms, "p99"), pct(f.tpot_ms, "p50"), pct(f.tpot_ms, "p99"), pct(f.e2e_ms, "p50"), pct(f.e2e_ms, "p90"), pct(f.e2e_ms, "p95"),
        pct(f.e2e_ms, "p99"), f.server_core_s ? fmt::format("{:.3f}", *f.server_core_s) : "-",
        f.core_s_per_verified ? fmt::format("{:.5f}", *f.core_s_per_verified) : "-",
        f.tokens_per_cycle
            ? fmt::format("{:.2f} (accepted {:.0f}%)", *f.tokens_per_cycle, 100 * f.accepted_rate.value_or(0))
            : "-");
    Bar b{rung_label(g), f.core_s_per_verified, std::nullopt,
          f.core_s_per_verified ? fmt::format("{:.4g} core-s", *f.core_s_per_verified) : "unknown",
          decision_colour(g.decision)};
    if (f.core_s_per_verified) max_cost = std::max(max_cost, *f.core_s_per_verified);
    cost.push_back(b);
  }
  s += "</table><p>Latencies in milliseconds, over every request of the rung's own replays. Cost per "
       "verified task: "
       "the server's CPU core-seconds during its replays / its verified requests. Tokens per verify cycle: "
       "speculative decoding, when the server's usage reports it.</p>";
  s += bar_chart("Cost per verified task (server core-seconds)", cost, 0, max_cost > 0 ? max_cost * 1.1 : 1,
                 false);
  return s;
}

std::string quality_table(const LoadClimb& r, const ClimbPolicy& policy) {
  std::set<std::string> slices;
  for (const auto& g : r.rungs) {
    for (const auto& q : g.quality) slices.insert(q.slice);
  }
  std::string s =
      "<h3>Quality per slice against the rung-1 reference</h3><table><tr><th>slice</th><th>verify</th>"
      "<th>margin</th>";
  for (const auto& g : r.rungs) s += "<th>" + esc(rung_label(g)) + "</th>";
  s += "</tr>";
  for (const auto& name : slices) {
    const SliceMargin m = policy.margin_for(name);
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.2f}</td>", esc(name),
                     harness::verify_mode_name(m.verify), m.margin);
    for (const auto& g : r.rungs) {
      auto it = std::find_if(g.quality.begin(), g.quality.end(),
                             [&](const SliceQuality& q) { return q.slice == name; });
      if (it == g.quality.end()) {
        s += "<td>-</td>";
        continue;
      }
      s += fmt::format("<td class=\"{}\">{:.2f} ({}/{}){}</td>", it->within() ? "ok" : "bad", it->fraction(),
                       it->verified, it->compared, it->within() ? "" : " below margin");
    }
    s += "</tr>";
  }
  s += "</table><p>Verified fraction of the compared requests (served, and held by the reference). Never "
       "pooled: one "
       "slice below its margin rejects the rung.</p>";
  return s;
}

std::string decisions_table(const LoadClimb& r) {
  std::string s =
      "<h3>Decisions</h3><table><tr><th>rung</th><th>name</th><th>serve arguments</th><th>decision</th>"
      "<th>why</th><th>serving after</th></tr>";
  for (const auto& g : r.rungs) {
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td style=\"color:{}\">{}</td><td>{}</td>"
        "<td>rung {}</td></tr>",
        g.rung, esc(g.spec.name), esc(args_text(g)), decision_colour(g.decision), g.decision, esc(g.reason),
        g.serving_after);
  }
  return s + "</table>";
}

// Several loads: each rung's goodput per second and decision at every load.
std::string by_load_table(const ClimbResult& r) {
  std::string s = "<h2>Goodput by load</h2><table><tr><th>rung</th>";
  for (const auto& lc : r.loads) s += "<th>load " + esc(load_label(lc.load)) + "</th>";
  s += "</tr>";
  for (size_t k = 0; k < r.policy.rungs.size(); ++k) {
    s += fmt::format("<tr><td>{} {}</td>", k + 1, esc(r.policy.rungs[k].name));
    for (const auto& lc : r.loads) {
      if (k >= lc.rungs.size()) {
        s += "<td>-</td>";
        continue;
      }
      const RungOutcome& g = lc.rungs[k];
      std::string cell = g.figures ? fmt::format("{:.3f} good/s, {:.2f} of sent", g.figures->goodput_rps,
                                                 g.figures->goodput_fraction.fraction)
                                   : std::string("not measured");
      if (g.rung > 1) cell += fmt::format(" &middot; <span style=\"color:{}\">{}</span>",
                                          decision_colour(g.decision), g.decision);
      s += "<td>" + cell + "</td>";
    }
    s += "</tr>";
  }
  s += "</table><p>Load: the multiplier of the workloads' offered load (a re-drawn --rate scaled, or the "
       "arrival times compressed). Each load is climbed from rung 1 on its own, against the one rung-1 "
       "reference.</p>";
  return s;
}

}  // namespace

std::string make_climb_report(const ClimbResult& r) {
  std::string s =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>ladder climb " + esc(r.climb_id) +
      "</title><style>body{font:14px sans-serif;margin:24px;max-width:1100px}table{border-collapse:"
      "collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
      "td.bad{background:#ffebe9;font-weight:bold}td.ok{background:#dafbe1}.verdict{font-size:18px;"
      "font-weight:bold}svg.chart{display:block;margin:12px 0;font:12px sans-serif}</style></head><body>";
  s += "<h1>ladder climb</h1><p class=\"verdict\" id=\"verdict\">" + esc(verdict_line(r)) + "</p>";
  s += fmt::format(
      "<p>climb {} &middot; policy {} (sha256 {}) &middot; paired runs in A B B A / B A A B blocks, looks at "
      "{} repeats per workload; run-level t intervals, a false promotion at most {:g}% over every look; "
      "min_gain {} &middot; SLO {} &middot; machine: {}, {} cores</p>",
      esc(r.climb_id), esc(r.policy.source), r.policy.digest_sha256.substr(0, 12),
      fmt::format("{}", fmt::join(r.policy.plan().looks, ", ")), 100 * r.policy.plan().alpha(),
      signed_percent(r.policy.min_gain),
      esc(slo_argument(r.policy.slo).empty() ? "the workloads' own" : slo_argument(r.policy.slo)),
      esc(r.machine.value("cpu_model", std::string("?"))), r.machine.value("cores", 0));
  if (r.policy.loads_named()) s += by_load_table(r);
  for (const auto& lc : r.loads) {
    s += r.policy.loads_named() ? "<h2>At load " + esc(load_label(lc.load)) + "</h2>" : "<h2>Rungs</h2>";
    s += decisions_table(lc) + "<h3>Goodput</h3>" + goodput_charts(lc, r.policy) + quality_table(lc, r.policy) +
         latency_table(lc);
  }
  s += "<h2>Workloads</h2><table><tr><th>name</th><th>file</th><th>replay arguments</th></tr>";
  for (const auto& w : r.policy.workloads) {
    s += fmt::format("<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>", esc(w.name), esc(w.path),
                     esc(fmt::format("{}", fmt::join(w.args, " "))));
  }
  s += "</table><h2>Records</h2><ul>";
  std::set<std::string> listed;  // rung 1's reference runs appear at every load
  for (const auto& lc : r.loads) {
    for (const auto& g : lc.rungs) {
      for (const auto* runs : {&g.paired, &g.own}) {
        for (const auto& m : *runs) {
          const std::string path = (std::filesystem::path(m.dir) / "record.json").string();
          if (!listed.insert(path).second) continue;
          s += fmt::format("<li>{}rung {} {} {} repeat {}: <code>{}</code> (good {}/{})</li>",
                           r.policy.loads_named() && m.side != "reference" ? "load " + load_label(lc.load) + " " : "",
                           m.rung, esc(m.side), esc(m.workload), m.repeat, esc(path), m.good(),
                           m.requests.size());
        }
      }
    }
  }
  s += "</ul><p>Ledger: <code>" + esc(r.ledger_path) + "</code></p></body></html>\n";
  return s;
}

}  // namespace ladder::climb
