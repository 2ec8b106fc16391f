#include "harness/record.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <tuple>
#include <fstream>
#include <thread>

#include "harness/schedule.h"

namespace ladder::harness {

using nlohmann::json;

MachineInfo probe_machine() {
  MachineInfo m;
  m.cores = std::thread::hardware_concurrency();
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) m.cpu_model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  std::ifstream mem("/proc/meminfo");
  while (std::getline(mem, line)) {
    if (line.rfind("MemTotal:", 0) == 0) {
      m.memory_bytes = std::stoull(line.substr(9)) * 1024;  // the value is in kB
      break;
    }
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) m.hostname = host;
  return m;
}

double offered_rate_of(const std::vector<WorkloadRequest>& scheduled) {
  const size_t units = arrival_unit_count(scheduled);
  const double span = arrival_span_s(scheduled);
  if (units <= 1 || span <= 0) return 0.0;
  // n arrivals spaced by 1/R from 0 span (n-1)/R; Poisson ones start one gap in.
  return static_cast<double>(units - 1) / span;
}

namespace {

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json slo_json(const Slo& s) {
  return {{"ttft_ms", optional_json(s.ttft_ms)}, {"tpot_ms", optional_json(s.tpot_ms)}, {"e2e_ms", optional_json(s.e2e_ms)}};
}

}  // namespace

json result_to_json(const RequestResult& r) {
  SloVerdict v = check_slo(r);
  json j = {{"index", r.index},
            {"source_line", r.source_line},
            {"tenant", r.tenant},
            {"slice", r.slice},
            {"scheduled_s", r.scheduled_s},
            {"sent_s", r.sent_s},
            {"send_lag_ms", r.send_lag_ms},
            {"cap_wait_ms", r.cap_wait_ms},
            {"http_status", r.http_status},
            {"outcome", outcome_name(outcome_of(r))},
            {"finish_reason", r.finish_reason},
            {"deadline_ms", optional_json(r.deadline_ms)},
            {"ttft_ms", optional_json(r.ttft_ms)},
            {"ttfat_ms", optional_json(r.ttfat_ms)},
            {"tpot_ms", optional_json(r.tpot_ms)},
            {"e2e_ms", r.e2e_ms},
            {"itl_ms", r.itl_ms},
            {"output_tokens", r.output_tokens},
            {"prompt_tokens", r.prompt_tokens},
            {"sse_events", r.sse_events},
            {"token_chunks", r.token_chunks},
            {"prompt_chars", r.prompt_chars},
            {"verified", r.verified},
            {"verify_note", r.verify_note},
            {"slo", slo_json(r.slo)},
            {"slo_met", {{"ttft", v.ttft}, {"tpot", v.tpot}, {"e2e", v.e2e}}},
            {"good", is_good(r)},
            {"key", r.key},
            {"prompt_sha256", r.prompt_sha256},
            {"text", r.text}};
  if (r.has_token_ids) j["token_ids"] = r.token_ids;
  if (!r.logprobs.empty()) j["logprob_positions"] = r.logprobs.size();
  if (r.quality) j["quality"] = to_json(*r.quality);
  const SpeculativeUsage& sp = r.speculative;
  if (sp.proposed || sp.accepted || sp.cycles || sp.accepted_prediction_tokens || sp.rejected_prediction_tokens) {
    auto opt = [](const std::optional<int64_t>& n) { return n ? json(*n) : json(nullptr); };
    j["speculative"] = {{"proposed", opt(sp.proposed)},
                        {"accepted", opt(sp.accepted)},
                        {"cycles", opt(sp.cycles)},
                        {"accepted_prediction_tokens", opt(sp.accepted_prediction_tokens)},
                        {"rejected_prediction_tokens", opt(sp.rejected_prediction_tokens)}};
  }
  if (!r.session.empty()) {
    j["session"] = r.session;
    j["turn"] = r.turn;
  }
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.error_code.empty()) j["error_code"] = r.error_code;
  if (!r.reasoning_text.empty()) j["reasoning_text"] = r.reasoning_text;
  if (!r.server_timings.is_null()) j["server_timings"] = r.server_timings;
  return j;
}

json ttft_agreement(const std::vector<RequestResult>& results) {
  std::vector<double> diff;
  for (const auto& r : results) {
    if (!r.ttft_ms || !r.server_timings.is_object()) continue;
    for (const char* key : {"ttft_ms", "time_to_first_token_ms"}) {
      auto it = r.server_timings.find(key);
      if (it != r.server_timings.end() && it->is_number()) {
        diff.push_back(*r.ttft_ms - it->get<double>());
        break;
      }
    }
  }
  json j = {{"requests_with_server_ttft", diff.size()}};
  if (!diff.empty()) j["client_minus_server_ms"] = to_json(summarize(diff));
  return j;
}

double measured_chars_per_token(const std::vector<RequestResult>& results) {
  double chars = 0, tokens = 0;
  for (const auto& r : results) {
    if (r.prompt_tokens > 0) {
      chars += static_cast<double>(r.prompt_chars);
      tokens += static_cast<double>(r.prompt_tokens);
    }
  }
  return tokens > 0 ? chars / tokens : 0.0;
}

std::vector<FailureGroup> failure_groups(const std::vector<RequestResult>& results) {
  std::vector<FailureGroup> groups;
  std::map<std::tuple<std::string, int, std::string, std::string>, size_t> at;
  for (const auto& r : results) {
    const Outcome o = outcome_of(r);
    if (o != Outcome::kError && o != Outcome::kRejectedEarly && o != Outcome::kExpired) continue;
    std::string message = r.error.empty() ? r.verify_note : r.error;
    // A coded error groups by its code (its message may carry numbers that
    // vary); an uncoded one by its message.
    auto key = std::make_tuple(std::string(outcome_name(o)), r.http_status, r.error_code,
                               r.error_code.empty() ? message : std::string());
    auto it = at.find(key);
    if (it == at.end()) {
      at[key] = groups.size();
      groups.push_back({outcome_name(o), r.http_status, r.error_code, message, 1, r.index, r.source_line});
    } else {
      ++groups[it->second].count;
    }
  }
  std::stable_sort(groups.begin(), groups.end(), [](const FailureGroup& a, const FailureGroup& b) {
    return a.outcome != b.outcome ? a.outcome == "error" : a.count > b.count;  // errors first
  });
  return groups;
}

std::map<std::string, std::vector<std::string>> slos_by_slice(const std::vector<RequestResult>& results) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& r : results) {
    std::vector<std::string> parts;
    if (r.slo.ttft_ms) parts.push_back(fmt::format("TTFT {} ms", *r.slo.ttft_ms));
    if (r.slo.tpot_ms) parts.push_back(fmt::format("TPOT {} ms", *r.slo.tpot_ms));
    if (r.slo.e2e_ms) parts.push_back(fmt::format("E2E {} ms", *r.slo.e2e_ms));
    std::string text = parts.empty() ? "none" : parts[0];
    for (size_t i = 1; i < parts.size(); ++i) text += ", " + parts[i];
    auto& list = out[r.slice];
    if (std::find(list.begin(), list.end(), text) == list.end()) list.push_back(text);
  }
  return out;
}

json run_to_json(const RunReport& rr) {
  const ReplayRun& run = rr.run;
  json failures = json::array();
  for (const auto& f : failure_groups(run.results)) {
    failures.push_back({{"outcome", f.outcome},
                        {"http_status", f.http_status},
                        {"code", f.code},
                        {"message", f.message},
                        {"count", f.count},
                        {"first_index", f.first_index},
                        {"first_line", f.first_line}});
  }
  json timeline = json::array();
  for (const auto& s : run.timeline) {
    timeline.push_back({{"t_s", s.t_s}, {"in_flight", s.in_flight}, {"server_queue", optional_json(s.server_queue)}});
  }
  return {{"label", rr.label},
          {"nominal_rate", optional_json(rr.nominal_rate)},
          {"offered_rate", rr.offered_rate},
          {"window_s", run.window_s},
          {"wall_s", run.wall_s},
          {"client",
           {{"cpu_s", run.client_cpu_s},
            {"cpu_fraction_of_one_core", run.wall_s > 0 ? run.client_cpu_s / run.wall_s : 0.0},
            {"max_send_lag_ms", run.max_send_lag_ms}}},
          {"summary", to_json(rr.summary)},
          {"quality", rr.quality.empty() ? json(nullptr) : to_json(rr.quality)},
          {"cost", to_json(rr.cost)},
          {"server_process_cpu_seconds",
           {{"before", optional_json(run.server_cpu_before_s)}, {"after", optional_json(run.server_cpu_after_s)}}},
          {"failures", failures},
          {"ttft_vs_server", ttft_agreement(run.results)},
          {"measured_chars_per_token", measured_chars_per_token(run.results)},
          {"queue_metric", run.queue_metric},
          {"timeline", std::move(timeline)}};
}

std::string iso8601_utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace ladder::harness
