#include "harness/stats.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include <fmt/format.h>

namespace ladder::harness {

double percentile_sorted(const std::vector<double>& sorted, double p) {
  LADDER_CHECK(!sorted.empty(), "percentile of no samples");
  LADDER_CHECK(p >= 0 && p <= 100, "percentile outside [0, 100]");
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution summarize(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.p50 = percentile_sorted(values, 50);
  d.p90 = percentile_sorted(values, 90);
  d.p95 = percentile_sorted(values, 95);
  d.p99 = percentile_sorted(values, 99);
  d.max = values.back();
  return d;
}

namespace {

// Ladder's extension counts proposals and cycles; the OpenAI fields only
// accepted and rejected predictions (proposed = their sum, cycles unknown).
void add_speculative(const RequestResult& r, SpeculativeSummary& s) {
  const SpeculativeUsage& u = r.speculative;
  if (u.proposed && u.accepted) {
    ++s.requests;
    s.proposed += *u.proposed;
    s.accepted += *u.accepted;
    if (u.cycles) {
      s.cycles += *u.cycles;
      s.accepted_in_cycles += *u.accepted;
    }
  } else if (u.accepted_prediction_tokens && u.rejected_prediction_tokens) {
    ++s.requests;
    s.proposed += *u.accepted_prediction_tokens + *u.rejected_prediction_tokens;
    s.accepted += *u.accepted_prediction_tokens;
  }
}

}  // namespace

GroupSummary summarize_group(const std::vector<const RequestResult*>& results, double window_s) {
  LADDER_CHECK(window_s > 0, "summary window must be positive");
  GroupSummary g;
  g.requests = results.size();
  std::vector<double> ttft, ttfat, tpot, itl, e2e, lag, verified_e2e;
  for (const RequestResult* r : results) {
    switch (outcome_of(*r)) {
      case Outcome::kGood: break;
      case Outcome::kLate: ++g.late; break;
      case Outcome::kUnverified: ++g.unverified; break;
      case Outcome::kRejectedEarly: ++g.rejected_early; break;
      case Outcome::kExpired: ++g.expired; break;
      case Outcome::kError: ++g.errors; break;
    }
    add_speculative(*r, g.speculative);
    if (r->verified) {
      verified_e2e.push_back(r->e2e_ms);
      if (r->output_tokens > 0) g.verified_output_tokens += r->output_tokens;
    }
    if (r->prompt_tokens > 0) g.prompt_tokens += r->prompt_tokens;
    const bool completed = r->http_status == 200 && r->error.empty() && !r->finish_reason.empty();
    if (completed) {
      ++g.completed;
      e2e.push_back(r->e2e_ms);
    }
    if (r->verified) ++g.verified;
    const bool slo_ok = check_slo(*r).all();
    if (slo_ok) ++g.slo_met;
    if (r->verified && slo_ok) ++g.good;
    if (r->ttft_ms) ttft.push_back(*r->ttft_ms);
    if (r->ttfat_ms) ttfat.push_back(*r->ttfat_ms);
    if (r->tpot_ms) tpot.push_back(*r->tpot_ms);
    itl.insert(itl.end(), r->itl_ms.begin(), r->itl_ms.end());
    lag.push_back(r->send_lag_ms);
    if (r->output_tokens > 0) g.output_tokens += r->output_tokens;
  }
  g.goodput_rps = static_cast<double>(g.good) / window_s;
  g.goodput_fraction = g.requests == 0 ? 0.0 : static_cast<double>(g.good) / static_cast<double>(g.requests);
  g.output_tokens_per_s = static_cast<double>(g.output_tokens) / window_s;
  g.ttft_ms = summarize(std::move(ttft));
  g.ttfat_ms = summarize(std::move(ttfat));
  g.tpot_ms = summarize(std::move(tpot));
  g.itl_ms = summarize(std::move(itl));
  g.e2e_ms = summarize(std::move(e2e));
  g.send_lag_ms = summarize(std::move(lag));
  g.verified_e2e_ms = summarize(std::move(verified_e2e));
  SpeculativeSummary& sp = g.speculative;
  if (sp.proposed > 0) sp.accepted_rate = static_cast<double>(sp.accepted) / static_cast<double>(sp.proposed);
  if (sp.cycles > 0) {
    sp.tokens_per_cycle = static_cast<double>(sp.accepted_in_cycles + sp.cycles) / static_cast<double>(sp.cycles);
  }
  return g;
}

RunSummary summarize_run(const std::vector<RequestResult>& results, double window_s) {
  RunSummary s;
  s.window_s = window_s;
  std::vector<const RequestResult*> all;
  std::map<std::string, std::vector<const RequestResult*>> tenants, slices;
  for (const auto& r : results) {
    all.push_back(&r);
    tenants[r.tenant].push_back(&r);
    slices[r.slice].push_back(&r);
  }
  s.overall = summarize_group(all, window_s);
  for (const auto& [k, v] : tenants) s.by_tenant[k] = summarize_group(v, window_s);
  for (const auto& [k, v] : slices) s.by_slice[k] = summarize_group(v, window_s);
  return s;
}

SweepVerdict find_max_goodput_rate(std::vector<SweepPoint> points, double target) {
  std::sort(points.begin(), points.end(),
            [](const SweepPoint& a, const SweepPoint& b) { return a.offered_rate < b.offered_rate; });
  SweepVerdict v;
  if (!points.empty()) {
    v.lowest_rate = points.front().offered_rate;
    v.highest_rate = points.back().offered_rate;
  }
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].attainment < target) {
      v.limit_found = v.max_rate.has_value();
      if (i > 0) {
        const SweepPoint& a = points[i - 1];
        const SweepPoint& b = points[i];
        // attainment(a) >= target > attainment(b): the crossing lies in [a, b).
        const double f = (a.attainment - target) / (a.attainment - b.attainment);
        v.interpolated_rate = a.offered_rate + f * (b.offered_rate - a.offered_rate);
      }
      return v;
    }
    v.max_rate = points[i].offered_rate;
  }
  return v;  // never failed: the limit lies above the highest rate
}

std::string SweepVerdict::statement() const {
  if (!max_rate) return fmt::format("not met at any swept rate (lowest {} arrivals/s)", lowest_rate);
  if (!limit_found) {
    return fmt::format("not reached below {} arrivals/s (the highest swept rate still met the target)", *max_rate);
  }
  return fmt::format("{:.3g} arrivals/s (measured {}, interpolated {:.3g})", *interpolated_rate, *max_rate,
                     *interpolated_rate);
}

nlohmann::json SweepVerdict::to_json(double target) const {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"target", target},
          {"max_goodput_rate", opt(max_rate)},
          {"interpolated_rate", opt(interpolated_rate)},
          {"limit_found", limit_found},
          {"highest_rate", highest_rate},
          {"lowest_rate", lowest_rate},
          {"statement", statement()}};
}

std::vector<LatencyColumn> latency_columns(const GroupSummary& g) {
  std::vector<LatencyColumn> cols;
  auto add = [&](const char* s, const char* l, const Distribution& d, double Distribution::*field) {
    cols.push_back({s, l, d.count ? std::optional<double>(d.*field) : std::nullopt});
  };
  add("ttft50", "TTFT p50", g.ttft_ms, &Distribution::p50);
  add("ttft90", "TTFT p90", g.ttft_ms, &Distribution::p90);
  add("ttft99", "TTFT p99", g.ttft_ms, &Distribution::p99);
  add("ttfat50", "TTFAT p50", g.ttfat_ms, &Distribution::p50);
  add("tpot50", "TPOT p50", g.tpot_ms, &Distribution::p50);
  add("tpot99", "TPOT p99", g.tpot_ms, &Distribution::p99);
  add("e2e50", "E2E p50", g.e2e_ms, &Distribution::p50);
  add("e2e99", "E2E p99", g.e2e_ms, &Distribution::p99);
  add("vE2E50", "verified E2E p50", g.verified_e2e_ms, &Distribution::p50);
  add("vE2E90", "verified E2E p90", g.verified_e2e_ms, &Distribution::p90);
  add("vE2E95", "verified E2E p95", g.verified_e2e_ms, &Distribution::p95);
  add("vE2E99", "verified E2E p99", g.verified_e2e_ms, &Distribution::p99);
  add("lagmax", "send lag max", g.send_lag_ms, &Distribution::max);
  return cols;
}

nlohmann::json to_json(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90},
          {"p95", d.p95},     {"p99", d.p99},   {"max", d.max}};
}

nlohmann::json to_json(const SpeculativeSummary& s) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"requests", s.requests},           {"proposed", s.proposed},
          {"accepted", s.accepted},           {"cycles", s.cycles},
          {"accepted_rate", opt(s.accepted_rate)}, {"tokens_per_cycle", opt(s.tokens_per_cycle)}};
}

nlohmann::json to_json(const GroupSummary& g) {
  return {{"requests", g.requests},
          {"completed", g.completed},
          {"verified", g.verified},
          {"slo_met", g.slo_met},
          {"good", g.good},
          {"outcomes",
           {{"good", g.good},
            {"late", g.late},
            {"unverified", g.unverified},
            {"rejected_early", g.rejected_early},
            {"expired", g.expired},
            {"errors", g.errors}}},
          {"verified_output_tokens", g.verified_output_tokens},
          {"prompt_tokens", g.prompt_tokens},
          {"verified_e2e_ms", to_json(g.verified_e2e_ms)},
          {"speculative", to_json(g.speculative)},
          {"goodput_rps", g.goodput_rps},
          {"goodput_fraction", g.goodput_fraction},
          {"output_tokens", g.output_tokens},
          {"output_tokens_per_s", g.output_tokens_per_s},
          {"ttft_ms", to_json(g.ttft_ms)},
          {"ttfat_ms", to_json(g.ttfat_ms)},
          {"tpot_ms", to_json(g.tpot_ms)},
          {"itl_ms", to_json(g.itl_ms)},
          {"e2e_ms", to_json(g.e2e_ms)},
          {"send_lag_ms", to_json(g.send_lag_ms)}};
}

nlohmann::json to_json(const RunSummary& s) {
  nlohmann::json j;
  j["window_s"] = s.window_s;
  j["overall"] = to_json(s.overall);
  j["per_tenant"] = nlohmann::json::object();
  for (const auto& [k, v] : s.by_tenant) j["per_tenant"][k] = to_json(v);
  j["per_slice"] = nlohmann::json::object();
  for (const auto& [k, v] : s.by_slice) j["per_slice"][k] = to_json(v);
  return j;
}

}  // namespace ladder::harness
