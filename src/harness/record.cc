#include "harness/record.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
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
            {"finish_reason", r.finish_reason},
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
            {"text", r.text}};
  if (!r.session.empty()) {
    j["session"] = r.session;
    j["turn"] = r.turn;
  }
  if (!r.error.empty()) j["error"] = r.error;
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

json run_to_json(const RunReport& rr) {
  const ReplayRun& run = rr.run;
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

namespace {

std::string row(const std::string& name, const GroupSummary& g) {
  return fmt::format("{:<22} {:>5} {:>5} {:>6.1f}% {:>8.3f} {:>8.1f} {:>8.1f} {:>8.1f} {:>7.1f} {:>7.1f} {:>8.1f} {:>8.1f}\n",
                     name.substr(0, 22), g.requests, g.good, 100.0 * g.goodput_fraction, g.goodput_rps, g.ttft_ms.p50,
                     g.ttft_ms.p90, g.ttft_ms.p99, g.tpot_ms.p50, g.tpot_ms.p99, g.e2e_ms.p50, g.e2e_ms.p99);
}

}  // namespace

std::string format_summary_table(const std::vector<RunReport>& runs) {
  std::string out;
  const std::string header = fmt::format("{:<22} {:>5} {:>5} {:>7} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8} {:>8}\n",
                                         "group", "reqs", "good", "good%", "good/s", "ttft50", "ttft90", "ttft99",
                                         "tpot50", "tpot99", "e2e50", "e2e99");
  for (const auto& rr : runs) {
    out += fmt::format("== {}: offered {:.3f} arrivals/s, window {:.2f}s, client CPU {:.2f}s, max send lag {:.1f} ms{}\n",
                       rr.label, rr.offered_rate, rr.run.window_s, rr.run.client_cpu_s, rr.run.max_send_lag_ms,
                       rr.summary.overall.verified < rr.summary.overall.requests
                           ? fmt::format(", {} not verified", rr.summary.overall.requests - rr.summary.overall.verified)
                           : "");
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
    out += header;
    out += row("overall", rr.summary.overall);
    for (const auto& [k, g] : rr.summary.by_tenant) out += row("tenant " + k, g);
    for (const auto& [k, g] : rr.summary.by_slice) out += row("slice " + k, g);
  }
  out += "(latencies in ms; good = verified and within every SLO)\n";
  return out;
}

}  // namespace ladder::harness
