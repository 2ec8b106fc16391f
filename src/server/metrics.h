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
  int64_t admission_queue = 0;   // waiting for a slot (admission)
  int64_t engine_waiting = 0;    // admitted, waiting in the engine scheduler
  int64_t running = 0;           // sequences running in the engine
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_free = 0;
  int64_t prefix_hit_tokens = 0; // engine-wide, all tenants
  int64_t open_connections = 0;
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
  std::vector<double> itl_s;  // gaps between successive output tokens
  bool verified = false;      // finished without error (stop or length)
  bool slo_met = false;       // verified and inside every SLO it had
};

class ServerMetrics {
 public:
  ServerMetrics();
  void record(const RequestRecord& r);
  std::string render(const GaugeSnapshot& gauges) const;

 private:
  struct TenantCounters {
    std::map<int, uint64_t> by_status;
    uint64_t prompt_tokens = 0;
    uint64_t completion_tokens = 0;
    uint64_t cached_tokens = 0;
    uint64_t verified = 0;
    uint64_t slo_met = 0;
    uint64_t goodput_tokens = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, TenantCounters> tenants_;
  Histogram queued_;
  Histogram ttft_;
  Histogram itl_;
  Histogram e2e_;
};

}  // namespace ladder::server
