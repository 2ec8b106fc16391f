// ServerMetrics: what /metrics exposes, in the Prometheus text format
// (version 0.0.4). Thread-safe: io threads record, the scrape renders.
// Latency definitions are DESIGN.md's "Metrics" table, measured server-side.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine_metrics.h"

namespace ladder::server {

// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // Appends `name_bucket{le=...}`, `name_sum` and `name_count` lines; labels
  // are extra `k="v"` pairs put before `le`.
  void render(const std::string& name, const std::string& labels, std::string& out) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // [bounds + 1], not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Live state owned by others, read at scrape time.
struct GaugeSnapshot {
  int64_t admission_queue = 0;   // waiting for a running slot (engine admission)
  int64_t engine_waiting = 0;    // admitted, waiting in the engine scheduler
  int64_t running = 0;           // sequences running in the engine
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_free = 0;
  int64_t prefix_hit_tokens = 0; // engine-wide, all tenants
  bool holds_kv = true;  // false (a router): no KV gauges of its own
  engine::KvHostMetrics kv_host;  // rendered when the host tier has capacity
  int64_t open_connections = 0;
  int64_t live_requests = 0;     // accepted generation requests not yet settled
  bool speculative = false;  // the engine has a draft: render `spec`
  engine::SpecMetrics spec;
  std::string state;             // loading, ready, draining
};

// One finished request, as the server saw it.
struct RequestRecord {
  std::string tenant;
  int http_status = 200;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
  double queued_s = -1;       // < 0: not measured (rejected before admission)
  double ttft_s = -1;
  double e2e_s = -1;
  double tpot_s = -1;         // the slowest choice's mean gap after its first token
  std::vector<double> itl_s;  // gaps between successive output tokens
  // Finished (stop or length) and delivered in full. The server cannot
  // verify output against a reference; `ladder replay` does.
  bool finished = false;
  bool slo_met = false;         // finished and inside every SLO it had
  bool rejected_early = false;  // a 429 before any token: admission said no
};

class ServerMetrics {
 public:
  ServerMetrics();
  void record(const RequestRecord& r);
  // Requests recorded so far by HTTP status, all tenants.
  std::map<int, uint64_t> requests_by_status() const;
  // per_tenant: include the tenant-labelled series (tenant names are private:
  // only for an admin or a separate metrics listener).
  std::string render(const GaugeSnapshot& gauges, bool per_tenant) const;

 private:
  struct TenantCounters {
    std::map<int, uint64_t> by_status;
    uint64_t prompt_tokens = 0;
    uint64_t completion_tokens = 0;
    uint64_t cached_tokens = 0;
    uint64_t finished = 0;
    uint64_t slo_met = 0;
    uint64_t slo_met_tokens = 0;
    uint64_t rejected_early = 0;
  };
  void render_counters(const std::map<std::string, TenantCounters>& by_label, const char* label,
                       std::string& out) const;
  mutable std::mutex mu_;
  std::map<std::string, TenantCounters> tenants_;
  Histogram queued_;
  Histogram ttft_;
  Histogram itl_;
  Histogram e2e_;
};

}  // namespace ladder::server
