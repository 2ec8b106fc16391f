#include "ladder/measurement.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "common/file_io.h"
#include "harness/stats.h"

namespace ladder::climb {

using nlohmann::json;

namespace {

std::optional<double> optional_number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

json percentiles(std::vector<double> values) {
  if (values.empty()) return nullptr;
  const harness::Distribution d = harness::summarize(std::move(values));
  return {{"p50", d.p50}, {"p90", d.p90}, {"p95", d.p95}, {"p99", d.p99}, {"count", d.count}};
}

}  // namespace

size_t Measurement::good() const {
  size_t n = 0;
  for (const auto& r : requests) n += r.good ? 1 : 0;
  return n;
}

size_t Measurement::verified() const {
  size_t n = 0;
  for (const auto& r : requests) n += r.verified ? 1 : 0;
  return n;
}

double Measurement::window_s() const {
  const json& runs = record.value("runs", json::array());
  if (runs.empty()) return 0;
  return runs[0].value("summary", json::object()).value("window_s", 0.0);
}

std::optional<double> Measurement::server_core_s() const {
  const json& runs = record.value("runs", json::array());
  if (runs.empty()) return std::nullopt;
  return optional_number(runs[0].value("cost", json::object()), "server_core_s");
}

std::string Measurement::fingerprint() const {
  return record.value("configuration", json::object()).value("fingerprint_sha256", std::string());
}

Result<Measurement> read_measurement(const std::string& dir, const ClimbPolicy& policy) {
  Measurement m;
  m.dir = dir;
  const std::string record_path = (std::filesystem::path(dir) / "record.json").string();
  LADDER_ASSIGN_OR_RETURN(std::string text, read_file(record_path));
  m.record = json::parse(text, nullptr, false);
  if (m.record.is_discarded() || !m.record.is_object()) return invalid_argument(record_path + " is not JSON");
  const std::string rows_path = (std::filesystem::path(dir) / "requests.jsonl").string();
  LADDER_ASSIGN_OR_RETURN(std::string rows, read_file(rows_path));
  const bool approx_replay = policy.replay_mode() == harness::VerifyMode::kApprox;
  std::istringstream in(rows);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) return invalid_argument(fmt::format("{} line {} is not JSON", rows_path, n));
    RequestOutcome r;
    r.key = j.value("key", "");
    r.slice = j.value("slice", "default");
    const json quality = j.value("quality", json());
    r.compared = quality.is_object();
    r.verified = j.value("verified", false);
    if (approx_replay && policy.margin_for(r.slice).verify == harness::VerifyMode::kExact) {
      r.verified = r.verified && r.compared && quality.value("exact_match", false);
    }
    r.good = j.value("good", false) && r.verified;
    const int status = j.value("http_status", 0);
    r.answered = status == 200 && !j.contains("error");
    if (!r.answered) {
      r.error = status == 0 ? std::string("no HTTP response") : fmt::format("HTTP {}", status);
      if (const std::string code = j.value("error_code", ""); !code.empty()) r.error += " " + code;
      if (const std::string e = j.value("error", ""); !e.empty()) r.error += ": " + e.substr(0, 200);
    }
    r.ttft_ms = optional_number(j, "ttft_ms");
    r.tpot_ms = optional_number(j, "tpot_ms");
    r.e2e_ms = j.value("e2e_ms", 0.0);
    m.requests.push_back(std::move(r));
  }
  return m;
}

PairedRepeat pair_by_key(const Measurement& a, const Measurement& b) {
  std::map<std::string, const RequestOutcome*> by_key;
  for (const auto& r : b.requests) by_key[r.key] = &r;
  PairedRepeat p;
  for (const auto& r : a.requests) {
    auto it = by_key.find(r.key);
    if (it == by_key.end()) continue;
    p.pairs.push_back({r.good, it->second->good});
  }
  return p;
}

std::vector<SliceQuality> slice_quality(const std::vector<const Measurement*>& runs,
                                        const ClimbPolicy& policy) {
  std::map<std::string, SliceQuality> by_slice;
  for (const Measurement* m : runs) {
    for (const auto& r : m->requests) {
      SliceQuality& q = by_slice[r.slice];
      if (q.slice.empty()) {
        const SliceMargin margin = policy.margin_for(r.slice);
        q.slice = r.slice;
        q.verify = harness::verify_mode_name(margin.verify);
        q.margin = margin.margin;
      }
      ++q.requests;
      if (!r.compared) continue;
      ++q.compared;
      q.verified += r.verified ? 1 : 0;
    }
  }
  std::vector<SliceQuality> out;
  for (auto& [name, q] : by_slice) out.push_back(q);
  return out;
}

RungFigures rung_figures(const std::vector<const Measurement*>& runs, const ClimbPolicy& policy) {
  RungFigures f;
  double window = 0, core_s = 0;
  bool all_cost = !runs.empty();
  std::vector<double> ttft, tpot, e2e;
  double proposed = 0, accepted = 0, cycles = 0, cycle_tokens = 0;
  // good[run][request]: the fraction's interval is over runs.
  std::vector<std::vector<bool>> good;
  for (const Measurement* m : runs) {
    auto& items = good.emplace_back();
    for (const auto& r : m->requests) {
      ++f.requests;
      f.good += r.good ? 1 : 0;
      f.verified += r.verified ? 1 : 0;
      items.push_back(r.good);
      if (r.ttft_ms) ttft.push_back(*r.ttft_ms);
      if (r.tpot_ms) tpot.push_back(*r.tpot_ms);
      e2e.push_back(r.e2e_ms);
    }
    window += m->window_s();
    const json& runs_json = m->record.value("runs", json::array());
    if (!runs_json.empty()) {
      const json sp = runs_json[0]
                          .value("summary", json::object())
                          .value("overall", json::object())
                          .value("speculative", json::object());
      proposed += sp.value("proposed", 0.0);
      accepted += sp.value("accepted", 0.0);
      if (auto tpc = optional_number(sp, "tokens_per_cycle")) {
        cycles += sp.value("cycles", 0.0);
        cycle_tokens += *tpc * sp.value("cycles", 0.0);
      }
    }
    if (auto c = m->server_core_s()) {
      core_s += *c;
    } else {
      all_cost = false;
    }
  }
  f.goodput_rps = window > 0 ? static_cast<double>(f.good) / window : 0;
  f.goodput_fraction = run_level_fraction(good, policy.confidence);
  if (all_cost) {
    f.server_core_s = core_s;
    if (f.verified > 0) f.core_s_per_verified = core_s / static_cast<double>(f.verified);
  }
  if (proposed > 0) f.accepted_rate = accepted / proposed;
  if (cycles > 0) f.tokens_per_cycle = cycle_tokens / cycles;
  f.ttft_ms = percentiles(std::move(ttft));
  f.tpot_ms = percentiles(std::move(tpot));
  f.e2e_ms = percentiles(std::move(e2e));
  return f;
}

json to_json(const RungFigures& f) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"requests", f.requests},
          {"good", f.good},
          {"verified", f.verified},
          {"goodput_rps", f.goodput_rps},
          {"goodput_fraction", f.goodput_fraction.fraction},
          {"goodput_fraction_ci", {f.goodput_fraction.ci_low, f.goodput_fraction.ci_high}},
          {"goodput_fraction_run_sd", f.goodput_fraction.run_sd},
          {"server_core_s", opt(f.server_core_s)},
          {"core_s_per_verified_request", opt(f.core_s_per_verified)},
          {"speculative_accepted_rate", opt(f.accepted_rate)},
          {"speculative_tokens_per_cycle", opt(f.tokens_per_cycle)},
          {"ttft_ms", f.ttft_ms},
          {"tpot_ms", f.tpot_ms},
          {"e2e_ms", f.e2e_ms}};
}

}  // namespace ladder::climb
