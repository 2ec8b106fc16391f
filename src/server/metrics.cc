#include "server/metrics.h"

#include <fmt/format.h>

#include <sys/resource.h>

#include <algorithm>

namespace ladder::server {

namespace {

const std::vector<double> kLatencyBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                            0.5,   1.0,    2.5,   5.0,  10.0,  30.0, 60.0};

// Prometheus label values escape backslash, quote and newline.
std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string fmt_double(double v) { return fmt::format("{}", v); }

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  counts_[static_cast<size_t>(it - bounds_.begin())] += 1;
  sum_ += value;
  count_ += 1;
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
  std::string prefix = labels.empty() ? "" : labels + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{{}le=\"{}\"}} {}\n", name, prefix, fmt_double(bounds_[i]), cumulative);
  }
  cumulative += counts_.back();
  out += fmt::format("{}_bucket{{{}le=\"+Inf\"}} {}\n", name, prefix, cumulative);
  std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, braces, fmt_double(sum_), name, braces, count_);
}

ServerMetrics::ServerMetrics()
    : queued_(kLatencyBounds), ttft_(kLatencyBounds), itl_(kLatencyBounds), e2e_(kLatencyBounds) {}

void ServerMetrics::record(const RequestRecord& r) {
  std::lock_guard lock(mu_);
  TenantCounters& c = tenants_[r.tenant];
  c.by_status[r.http_status] += 1;
  c.prompt_tokens += static_cast<uint64_t>(std::max<int64_t>(0, r.prompt_tokens));
  c.completion_tokens += static_cast<uint64_t>(std::max<int64_t>(0, r.completion_tokens));
  c.cached_tokens += static_cast<uint64_t>(std::max<int64_t>(0, r.cached_tokens));
  if (r.finished) c.finished += 1;
  if (r.rejected_early) c.rejected_early += 1;
  if (r.slo_met) {
    c.slo_met += 1;
    c.slo_met_tokens += static_cast<uint64_t>(std::max<int64_t>(0, r.completion_tokens));
  }
  if (r.queued_s >= 0) queued_.observe(r.queued_s);
  if (r.ttft_s >= 0) ttft_.observe(r.ttft_s);
  if (r.e2e_s >= 0) e2e_.observe(r.e2e_s);
  for (double gap : r.itl_s) itl_.observe(gap);
}

std::map<int, uint64_t> ServerMetrics::requests_by_status() const {
  std::lock_guard lock(mu_);
  std::map<int, uint64_t> out;
  for (const auto& [tenant, c] : tenants_) {
    for (const auto& [status, n] : c.by_status) out[status] += n;
  }
  return out;
}

namespace {

// The server process's CPU time (user + system), as Prometheus' standard
// process_cpu_seconds_total has it: what `ladder replay` divides by verified
// work to get the cost of a task.
double process_cpu_seconds() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

}  // namespace

void ServerMetrics::render_counters(const std::map<std::string, TenantCounters>& by_label, const char* label,
                                    std::string& out) const {
  auto labels = [&](const std::string& value, const std::string& more = "") {
    std::string l = label == nullptr ? "" : fmt::format("{}=\"{}\"", label, escape_label(value));
    if (!more.empty()) l += (l.empty() ? "" : ",") + more;
    return l.empty() ? std::string() : "{" + l + "}";
  };
  auto counter = [&](const char* name, const char* help, auto field) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n", name, help);
    for (const auto& [key, c] : by_label) out += fmt::format("{}{} {}\n", name, labels(key), field(c));
  };
  out += "# HELP ladder_requests_total Finished HTTP requests by status.\n# TYPE ladder_requests_total counter\n";
  for (const auto& [key, c] : by_label) {
    for (const auto& [status, n] : c.by_status) {
      out += fmt::format("ladder_requests_total{} {}\n", labels(key, fmt::format("status=\"{}\"", status)), n);
    }
  }
  counter("ladder_prompt_tokens_total", "Prompt tokens of served requests.",
          [](const TenantCounters& c) { return c.prompt_tokens; });
  counter("ladder_completion_tokens_total", "Output tokens of served requests.",
          [](const TenantCounters& c) { return c.completion_tokens; });
  counter("ladder_prefix_cache_hit_tokens_total", "Prompt tokens served from the prefix cache.",
          [](const TenantCounters& c) { return c.cached_tokens; });
  counter("ladder_finished_requests_total",
          "Requests that finished (stop or length) and were delivered in full; not verified against a reference.",
          [](const TenantCounters& c) { return c.finished; });
  counter("ladder_slo_met_requests_total", "Finished requests that met every SLO of theirs.",
          [](const TenantCounters& c) { return c.slo_met; });
  counter("ladder_slo_met_tokens_total", "Output tokens of finished requests that met every SLO of theirs.",
          [](const TenantCounters& c) { return c.slo_met_tokens; });
  counter("ladder_rejected_early_total", "Requests refused with 429 before any token (admission said no).",
          [](const TenantCounters& c) { return c.rejected_early; });
}

std::string ServerMetrics::render(const GaugeSnapshot& g, bool per_tenant) const {
  std::lock_guard lock(mu_);
  std::string out;
  out.reserve(8192);
  auto gauge = [&](const char* name, const char* help, int64_t v) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} gauge\n{0} {2}\n", name, help, v);
  };
  out += "# HELP ladder_server_state 1 for the server's current state.\n# TYPE ladder_server_state gauge\n";
  for (const char* s : {"loading", "ready", "draining"}) {
    out += fmt::format("ladder_server_state{{state=\"{}\"}} {}\n", s, g.state == s ? 1 : 0);
  }
  gauge("ladder_queue_depth", "Requests waiting for admission.", g.admission_queue);
  gauge("ladder_engine_waiting_sequences", "Admitted sequences waiting in the engine scheduler.", g.engine_waiting);
  gauge("ladder_running_sequences", "Sequences running in the engine.", g.running);
  if (g.holds_kv) {
    gauge("ladder_kv_blocks_used", "KV cache blocks held by sequences.", g.kv_blocks_used);
    gauge("ladder_kv_blocks_free", "KV cache blocks free (including evictable cached ones).", g.kv_blocks_free);
  }
  gauge("ladder_open_connections", "Open HTTP connections.", g.open_connections);
  gauge("ladder_live_requests", "Accepted generation requests not yet answered in full.", g.live_requests);
  if (g.holds_kv) {
    out += fmt::format("# HELP ladder_engine_prefix_cache_hit_tokens_total Prompt tokens served from the prefix "
                       "cache, all tenants.\n# TYPE ladder_engine_prefix_cache_hit_tokens_total counter\n"
                       "ladder_engine_prefix_cache_hit_tokens_total {}\n",
                       g.prefix_hit_tokens);
  }
  if (g.kv_host.bytes_capacity > 0) {
    auto counter = [&](const char* name, const char* help, int64_t v) {
      out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0} {2}\n", name, help, v);
    };
    const engine::KvHostMetrics& h = g.kv_host;
    counter("ladder_kv_host_offloaded_blocks_total", "KV blocks copied from the pool into the host tier.",
            h.offloaded_blocks);
    counter("ladder_kv_host_prefetched_blocks_total",
            "KV blocks copied back from the host tier ahead of the step that admitted their request.",
            h.prefetched_blocks);
    counter("ladder_kv_host_prefetched_late_blocks_total",
            "KV blocks copied back from the host tier by the step that admitted their request.",
            h.prefetched_late_blocks);
    counter("ladder_kv_host_recomputed_blocks_total",
            "Prompt KV blocks neither the pool nor the host tier held, computed by prefill.", h.recomputed_blocks);
    counter("ladder_kv_host_dropped_blocks_total", "KV blocks the host tier dropped to make room (LRU).",
            h.dropped_blocks);
    gauge("ladder_kv_host_blocks", "KV blocks held in the host tier.", h.blocks);
    gauge("ladder_kv_host_bytes_used", "Bytes of KV blocks held in the host tier.", h.bytes_used);
    gauge("ladder_kv_host_bytes_capacity", "Bytes the host tier may hold.", h.bytes_capacity);
  }
  if (g.speculative) {
    auto counter = [&](const char* name, const char* help, const std::string& v) {
      out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0} {2}\n", name, help, v);
    };
    counter("ladder_spec_proposed_tokens_total", "Draft tokens verified by the target.",
            std::to_string(g.spec.proposed));
    counter("ladder_spec_accepted_tokens_total", "Draft tokens the target accepted.", std::to_string(g.spec.accepted));
    counter("ladder_spec_cycles_total", "Verify cycles (each emits the accepted tokens plus one).",
            std::to_string(g.spec.cycles));
    counter("ladder_spec_draft_seconds_total", "Time spent drafting.", fmt_double(g.spec.draft_us / 1e6));
    counter("ladder_spec_verify_seconds_total", "Forward time of the steps that verified drafts.",
            fmt_double(g.spec.verify_us / 1e6));
    const double per_cycle =
        g.spec.cycles > 0 ? static_cast<double>(g.spec.accepted + g.spec.cycles) / static_cast<double>(g.spec.cycles)
                          : 0.0;
    out += fmt::format("# HELP ladder_spec_tokens_per_cycle Mean tokens emitted per verify cycle.\n"
                       "# TYPE ladder_spec_tokens_per_cycle gauge\nladder_spec_tokens_per_cycle {}\n",
                       fmt_double(per_cycle));
    gauge("ladder_spec_enabled", "1 when the last step speculated for any request.", g.spec.enabled ? 1 : 0);
    gauge("ladder_spec_k", "Draft tokens per cycle chosen by the last step (0: plain).", g.spec.k);
    out += fmt::format("# HELP ladder_spec_predicted_gain Predicted speed of speculation over plain decoding at the "
                       "last step (below 1: it loses).\n# TYPE ladder_spec_predicted_gain gauge\n"
                       "ladder_spec_predicted_gain {}\n",
                       fmt_double(g.spec.predicted_gain));
    out += fmt::format("# HELP ladder_spec_measured_gain Measured speed of speculative over plain decode steps "
                       "taken in turn, at the last step's batch size (tokens per sequence per second; 0 until "
                       "both are measured there; below 1 switches speculation off at that batch size).\n# TYPE ladder_spec_measured_gain gauge\n"
                       "ladder_spec_measured_gain {}\n",
                       fmt_double(g.spec.measured_gain));
  }
  out += fmt::format("# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                     "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {}\n",
                     fmt_double(process_cpu_seconds()));

  if (per_tenant) {
    render_counters(tenants_, "tenant", out);
  } else {
    // Without the right to see tenants: the same counters, summed.
    TenantCounters all;
    for (const auto& [name, c] : tenants_) {
      for (const auto& [status, n] : c.by_status) all.by_status[status] += n;
      all.prompt_tokens += c.prompt_tokens;
      all.completion_tokens += c.completion_tokens;
      all.cached_tokens += c.cached_tokens;
      all.finished += c.finished;
      all.slo_met += c.slo_met;
      all.slo_met_tokens += c.slo_met_tokens;
      all.rejected_early += c.rejected_early;
    }
    render_counters({{"", all}}, nullptr, out);
  }

  auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} histogram\n", name, help);
    h.render(name, "", out);
  };
  histogram("ladder_queue_wait_seconds", "Arrival to admission.", queued_);
  histogram("ladder_ttft_seconds", "Arrival to first token sampled.", ttft_);
  histogram("ladder_itl_seconds", "Gap between successive output tokens.", itl_);
  histogram("ladder_e2e_seconds", "Arrival to the last token.", e2e_);
  return out;
}

}  // namespace ladder::server
