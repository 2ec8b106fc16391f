#include "harness/summary_table.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace ladder::harness {

using nlohmann::json;

namespace {

std::string outcome_row(const std::string& name, const GroupSummary& g) {
  return fmt::format("{:<24} {:>5} {:>5} {:>5} {:>5} {:>6} {:>5} {:>5} {:>6.1f}% {:>8.3f}\n", name.substr(0, 24),
                     g.requests, g.good, g.late, g.unverified, g.rejected_early, g.expired, g.errors,
                     100.0 * g.goodput_fraction, g.goodput_rps);
}

std::string latency_row(const std::string& name, const GroupSummary& g) {
  std::string out = fmt::format("{:<24}", name.substr(0, 24));
  for (const auto& c : latency_columns(g)) {
    out += c.value ? fmt::format(" {:>7.1f}", *c.value) : fmt::format(" {:>7}", "-");
  }
  return out + "\n";
}

std::string opt_num(const std::optional<double>& v, const char* spec = "{:.3g}") {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

std::string quality_row(const QualityGroup& g) {
  return fmt::format("{:<24} {:>5} {:>5} {:>5} {:>5} {:>5} {:>7} {:>6.3f} {:>6} {:>6} {:>8} {:>8}\n",
                     (g.kind + " " + g.name).substr(0, 24), g.requests, g.compared, g.passed, g.exact, g.by_token_ids,
                     g.task_checked ? fmt::format("{}/{}", g.task_passed, g.task_checked) : std::string("-"),
                     g.mean_match, g.compared ? fmt::format("{:.3f}", g.min_match) : std::string("-"),
                     g.earliest_divergence ? std::to_string(*g.earliest_divergence) : std::string("-"),
                     opt_num(g.mean_kl), opt_num(g.max_kl));
}

template <typename Row>
void group_rows(std::string& out, const RunSummary& s, Row row) {
  out += row("overall", s.overall);
  for (const auto& [k, g] : s.by_tenant) out += row("tenant " + k, g);
  for (const auto& [k, g] : s.by_slice) out += row("slice " + k, g);
}

}  // namespace

std::string format_summary_table(const std::vector<RunReport>& runs) {
  std::string out;
  if (!runs.empty()) {
    out += "SLOs per slice:";
    for (const auto& [slice, slos] : slos_by_slice(runs.front().run.results)) {
      out += " " + slice + ": ";
      for (size_t i = 0; i < slos.size(); ++i) out += (i ? " | " : "") + slos[i];
      out += ";";
    }
    out += "\n";
  }
  for (const auto& rr : runs) {
    const GroupSummary& o = rr.summary.overall;
    out += fmt::format("== {}: offered {:.3f} arrivals/s, window {:.2f}s, client CPU {:.2f}s, max send lag {:.1f} ms{}\n",
                       rr.label, rr.offered_rate, rr.run.window_s, rr.run.client_cpu_s, rr.run.max_send_lag_ms,
                       o.verified < o.requests ? fmt::format(", {} not verified", o.requests - o.verified) : "");
    const json agree = ttft_agreement(rr.run.results);
    if (agree.contains("client_minus_server_ms")) {
      out += fmt::format("   client TTFT - server TTFT over {} requests: p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms\n",
                         agree["requests_with_server_ttft"].get<size_t>(), agree["client_minus_server_ms"]["p50"].get<double>(),
                         agree["client_minus_server_ms"]["p99"].get<double>(),
                         agree["client_minus_server_ms"]["max"].get<double>());
    }
    if (double cpt = measured_chars_per_token(rr.run.results); cpt > 0) {
      out += fmt::format("   prompt characters per server-counted token: {:.2f}\n", cpt);
    }
    out += fmt::format("{:<24} {:>5} {:>5} {:>5} {:>5} {:>6} {:>5} {:>5} {:>7} {:>8}\n", "outcomes", "reqs", "good",
                       "late", "unver", "rej.ea", "exp", "err", "good%", "good/s");
    group_rows(out, rr.summary, outcome_row);
    out += fmt::format("{:<24}", "latency (ms)");
    for (const auto& c : latency_columns(o)) out += fmt::format(" {:>7}", c.short_name);
    out += "\n";
    group_rows(out, rr.summary, latency_row);
    if (!rr.quality.empty()) {
      out += fmt::format("{:<24} {:>5} {:>5} {:>5} {:>5} {:>5} {:>7} {:>6} {:>6} {:>6} {:>8} {:>8}\n",
                         "quality (worst first)", "reqs", "cmp", "pass", "exact", "ids", "task", "match", "min.m",
                         "1stdiv", "meanKL", "maxKL");
      for (const auto& g : rr.quality.slices) out += quality_row(g);
      for (const auto& g : rr.quality.tenants) out += quality_row(g);
      if (std::string note = quality_note(rr.quality); !note.empty()) out += note + "\n";
    }
    const SpeculativeSummary& sp = o.speculative;
    if (sp.requests > 0) {
      out += fmt::format("speculative: {} requests, {} of {} draft tokens accepted ({}), {} tokens per verify cycle\n",
                         sp.requests, sp.accepted, sp.proposed, opt_num(sp.accepted_rate, "{:.3f}"),
                         opt_num(sp.tokens_per_cycle, "{:.3f}"));
    }
    out += cost_line(rr.cost) + "\n";
    const auto failures = failure_groups(rr.run.results);
    if (!failures.empty()) out += "not served (errors first):\n";
    for (const auto& f : failures) {
      out += fmt::format("  {:<14} x{:<4} HTTP {:<3} {:<20} {} (first: request {}, line {})\n", f.outcome, f.count,
                         f.http_status, f.code.empty() ? "-" : f.code, f.message.substr(0, 160), f.first_index,
                         f.first_line);
    }
  }
  out += "(units: latencies in ms; rates in arrivals/s (requests or sessions); good = verified and within every SLO;\n"
         " late = verified but an SLO missed; rej.ea = rejected early (HTTP 429 at admission); exp = expired in the\n"
         " server's queue; vE2E = E2E of verified requests; KL in nats; CPU in core-seconds)\n";
  return out;
}

}  // namespace ladder::harness
